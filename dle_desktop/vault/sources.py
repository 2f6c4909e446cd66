"""Where vault files come from. A source only lists, reads and writes raw text; parsing,
reuse and indexing happen above it (vault/indexer.py), the same way for every kind of source."""

from __future__ import annotations

import asyncio
import errno
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from dle_desktop.core.user_activity import GiveWay, no_wait
from dle_desktop.errors import NoteOutsideVault, VaultError, VaultPathError
from dle_desktop.fileio import write_atomic

#: DLE lists at most this many folder levels (Obsidian REST listing recursion cap).
MAX_FOLDER_DEPTH = 20


@dataclass(frozen=True)
class Listing:
    """The notes a source holds right now.

    `stamps` maps each vault-relative `.md` path to a cheap change stamp (mtime and size for
    folders) or None where the source cannot tell without reading (REST).
    `partial` is True when some sub-folder could not be listed: callers must then keep the
    entries they already had for paths they did not see, rather than treat them as deleted.
    """

    stamps: dict[str, str | None]
    partial: bool = False
    problems: tuple[str, ...] = ()


def check_relative_path(path: str) -> str:
    """Normalise a vault-relative path to '/'-separated form, refusing escapes."""
    if not isinstance(path, str) or not path.strip():
        raise VaultPathError("empty vault path")
    p = path.replace("\\", "/")
    if p.startswith("/") or (len(p) > 1 and p[1] == ":"):
        raise VaultPathError(f"absolute paths are not vault paths: {path!r}")
    parts = [s for s in p.split("/") if s != ""]
    if any(s in (".", "..") for s in parts):
        raise VaultPathError(f"'.' and '..' are not allowed in vault paths: {path!r}")
    if "\x00" in p:
        raise VaultPathError("NUL byte in vault path")
    return "/".join(parts)


class VaultSource(ABC):
    """One vault: a name, an enabled flag, and raw file access."""

    kind: str = "abstract"
    #: How many reads the indexer may run at once against this source.
    max_concurrency: int = 8

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.name = name
        self.enabled = enabled

    @abstractmethod
    def describe(self) -> str:
        """Where this vault lives, for people and logs. Never contains a secret."""

    @abstractmethod
    async def list_notes(self, give_way: GiveWay = no_wait) -> Listing:
        """Every `.md` file in the vault. Raises VaultError when nothing can be listed. A long
        listing calls `give_way` between folders (`core.user_activity`)."""

    @abstractmethod
    async def read_text(self, path: str) -> str:
        """The raw text of one file. Raises VaultError (FileNotFoundError when it is gone)."""

    async def read_optional(self, path: str) -> str | None:
        """Like read_text, but None when the file does not exist."""
        try:
            return await self.read_text(path)
        except FileNotFoundError:
            return None

    @abstractmethod
    async def write_text(self, path: str, text: str) -> None:
        """Create or replace one file, creating folders as needed."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has none."""


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_unless_link(target: str) -> int | None:
    """A descriptor for reading `target`, or None when it is a symbolic link. Where the system
    can refuse to follow a link when opening, that refusal is the test (one call instead of a
    `lstat` and an `open` per note); elsewhere `islink` is."""
    if not _NOFOLLOW:
        return None if os.path.islink(target) else os.open(target, _READ_FLAGS)
    try:
        return os.open(target, _READ_FLAGS | _NOFOLLOW)
    except OSError as exc:
        # Linux and macOS say ELOOP for a link; the BSDs say EMLINK or EFTYPE: ask then.
        if exc.errno == errno.ELOOP or (not isinstance(exc, FileNotFoundError) and os.path.islink(target)):
            return None
        raise


@dataclass
class FolderSource(VaultSource):
    """A vault folder on local disk: the main path, no Obsidian needed."""

    name: str
    root: Path
    enabled: bool = True
    kind: str = field(default="folder", init=False)
    max_concurrency: int = field(default=16, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser()

    def describe(self) -> str:
        return str(self.root)

    def _abs(self, path: str) -> Path:
        return self.root.joinpath(*PurePosixPath(check_relative_path(path)).parts)

    def list_sync(self, give_way: GiveWay = no_wait) -> Listing:
        if not self.root.is_dir():
            raise VaultError(f"vault folder does not exist or is not a folder: {self.root}")
        stamps: dict[str, str | None] = {}
        problems: list[str] = []
        seen_dirs: set[tuple[int, int]] = set()
        root_str = str(self.root)

        def walk(dir_path: str, rel: str, depth: int) -> None:
            try:
                st = os.stat(dir_path)
            except OSError as exc:
                problems.append(f"{rel or '.'}: {exc.strerror or exc}")
                return
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:  # a symlink loop
                return
            seen_dirs.add(key)
            give_way()
            try:
                with os.scandir(dir_path) as it:
                    items = list(it)
            except OSError as exc:
                problems.append(f"{rel or '.'}: {exc.strerror or exc}")
                return
            for item in items:
                # Obsidian hides dot-files and dot-folders (.obsidian, .trash, .git).
                if item.name.startswith("."):
                    continue
                child_rel = f"{rel}/{item.name}" if rel else item.name
                try:
                    if item.is_dir():
                        if depth + 1 >= MAX_FOLDER_DEPTH:
                            problems.append(f"{child_rel}: deeper than {MAX_FOLDER_DEPTH} folders, not read")
                            continue
                        walk(item.path, child_rel, depth + 1)
                    elif item.name.lower().endswith(".md") and item.is_file():
                        s = item.stat()
                        stamps[child_rel] = f"{s.st_mtime_ns}:{s.st_size}"
                except OSError as exc:
                    problems.append(f"{child_rel}: {exc.strerror or exc}")

        walk(root_str, "", 0)
        return Listing(stamps=stamps, partial=bool(problems), problems=tuple(problems))

    async def list_notes(self, give_way: GiveWay = no_wait) -> Listing:
        return await asyncio.to_thread(self.list_sync, give_way)

    def stamp_sync(self, path: str) -> str | None:
        try:
            s = self._abs(path).stat()
        except FileNotFoundError:
            return None
        return f"{s.st_mtime_ns}:{s.st_size}"

    def _check_real_path(self, path: str, target: str, real_folders: dict[str, str] | None, is_link: bool) -> None:
        """The one rule for links, shared with the Obsidian REST emulation: a note whose real path
        is not inside the vault's real folder is not read.

        `real_folders` remembers the real path of each folder (and of the vault, under "") for
        one batch of reads: resolving every folder of every note again cost a quarter of a
        cold index. A note that is itself a symbolic link (`is_link`) is resolved in full."""
        memo: dict[str, str] = {} if real_folders is None else real_folders
        root = memo.get("")
        if root is None:
            root = memo[""] = os.path.realpath(self.root)
        folder, name = os.path.split(target)
        real_folder = memo.get(folder)
        if real_folder is None:
            real_folder = memo[folder] = os.path.realpath(folder)
        real = os.path.realpath(target) if is_link else os.path.join(real_folder, name)
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise NoteOutsideVault(
                f"{path}: its real path is outside the vault folder (a symbolic link to a file or folder "
                "elsewhere); links out of the vault are not followed"
            )

    def read_sync(self, path: str, real_folders: dict[str, str] | None = None) -> str:
        """The note's text. `real_folders`: a memo of resolved folders shared by one batch of
        reads (see `_check_real_path`); leave it out for a single read."""
        target = os.path.join(self.root, *check_relative_path(path).split("/"))
        try:
            fd = _open_unless_link(target)
            if fd is None:  # the note is a symbolic link: resolved in full, then opened
                self._check_real_path(path, target, real_folders, is_link=True)
                fd = os.open(target, _READ_FLAGS)
            else:  # the opened file is no link: only its folder needs resolving
                try:
                    self._check_real_path(path, target, real_folders, is_link=False)
                except BaseException:
                    os.close(fd)
                    raise
            with open(fd, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise
        except IsADirectoryError as exc:
            raise VaultError(f"{path}: is a folder, not a note") from exc
        except OSError as exc:
            raise VaultError(f"{path}: {exc.strerror or exc}") from exc
        # Notes are UTF-8; a stray bad byte must not lose the whole note.
        return data.decode("utf-8", errors="replace")

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread(self.read_sync, path)

    def write_sync(self, path: str, text: str) -> None:
        target = self._abs(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text, suffix=".dle-tmp")

    async def write_text(self, path: str, text: str) -> None:
        await asyncio.to_thread(self.write_sync, path, text)
