"""Getting a World Info book's bytes: a file, a stream (stdin, an upload), or a SillyTavern user's
`worlds/` folder, each refused before it is read whole when it is bigger than any real book."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from dle_desktop.core.worldinfo import MAX_BOOK_BYTES, WiBook, WorldInfoError, read_book_bytes
from dle_desktop.errors import InputError, NotFound
from dle_desktop.worldinfo.model import BookListing

DEFAULT_USER = "default-user"
BOOK_SUFFIX = ".json"


def _too_big(what: str, size: int | None) -> InputError:
    shown = f"{size / (1024 * 1024):.0f} MB" if size is not None else "more than that"
    return InputError(
        f"{what} is {shown}; a World Info book or character card is at most "
        f"{MAX_BOOK_BYTES // (1024 * 1024)} MB, so it was not read (nothing was imported)"
    )


def parse_book(data: bytes, name: str) -> WiBook:
    """The book in `data`, or InputError with the reader's message (malformed JSON, a PNG without
    a card, no entries where a book should have them)."""
    if len(data) > MAX_BOOK_BYTES:
        raise _too_big(name, len(data))
    try:
        return read_book_bytes(data, name=name)
    except WorldInfoError as exc:
        raise InputError(str(exc)) from None


def read_book_file(path: str | Path) -> WiBook:
    """A book from a file: a WI export, an array of entries, a character card (JSON or PNG)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise InputError(f"{path} is not a file")
        if size > MAX_BOOK_BYTES:
            raise _too_big(str(path), size)
        with path.open("rb") as fh:
            data = fh.read(MAX_BOOK_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except OSError as exc:
        raise InputError(f"{path} cannot be read: {exc.strerror or exc}") from None
    return parse_book(data, path.stem or path.name)


def read_book_stream(stream: BinaryIO, name: str) -> WiBook:
    """A book from a stream (standard input, pasted text): at most one byte past the limit is read."""
    data = stream.read(MAX_BOOK_BYTES + 1)
    if len(data) > MAX_BOOK_BYTES:
        raise _too_big(name, None)
    return parse_book(data, name)


def worlds_dir(install_root: Path, user: str = DEFAULT_USER, data_root: Path | None = None) -> Path:
    """A SillyTavern user's World Info folder. `data_root`: where that install keeps its users
    (config.yaml's dataRoot; default `<install>/data`)."""
    if not user or user in (".", "..") or "/" in user or "\\" in user or "\x00" in user:
        raise InputError(f"{user!r} is not a SillyTavern user name")
    return Path(data_root if data_root is not None else Path(install_root) / "data") / user / "worlds"


def list_books(install_root: Path, user: str = DEFAULT_USER, data_root: Path | None = None) -> list[BookListing]:
    """Every `worlds/*.json` of the user, by name, with its entry count. A file that is no readable
    book is listed with the reason (a user looking for their book must see it is there)."""
    listings = []
    for path in _book_files(worlds_dir(install_root, user, data_root)):
        try:
            size = path.stat().st_size
        except OSError as exc:
            listings.append(BookListing(path.stem, path, None, 0, f"cannot be read: {exc.strerror or exc}"))
            continue
        try:
            book = read_book_file(path)
        except InputError as exc:
            listings.append(BookListing(path.stem, path, None, size, str(exc)))
            continue
        listings.append(BookListing(path.stem, path, len(book.entries), size))
    return listings


def _book_files(folder: Path) -> list[Path]:
    try:
        return sorted(
            (p for p in folder.iterdir() if p.suffix.lower() == BOOK_SUFFIX and not p.name.startswith(".")),
            key=lambda p: p.name.casefold(),
        )
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"the World Info folder {folder} cannot be listed: {exc.strerror or exc}") from None


def find_book(install_root: Path, name: str, user: str = DEFAULT_USER, data_root: Path | None = None) -> Path:
    """The file of the user's book called `name` (its file name without `.json`; an exact match
    first, then one that differs only in case)."""
    folder = worlds_dir(install_root, user, data_root)
    if not name or os.sep in name or "/" in name or "\x00" in name or name in (".", ".."):
        raise InputError(f"{name!r} is not a World Info book name")
    exact = folder / f"{name}{BOOK_SUFFIX}"
    if exact.is_file():
        return exact
    files = _book_files(folder)
    matches = [p for p in files if p.stem.casefold() == name.casefold()]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(p.stem for p in files) or "none"
    raise NotFound(f"SillyTavern user {user} has no World Info book named {name!r} (books: {known})")
