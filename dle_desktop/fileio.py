"""Reading and writing files and JSON, in one place.

Writing: `write_atomic` is the one way a file's contents are replaced. The data goes to a hidden
temporary file of its own in the same folder (same file system, so the rename is atomic; hidden,
so vault readers and file watchers skip it), is fsynced, renamed over the target, and the folder
is fsynced so the rename itself survives a power cut. A crash leaves the old file or the new one;
a failure of any kind removes the temporary file.

Modes: the data folder holds chats, keys and logs: it is the user's alone (folders 0700, files
0600 on POSIX), so a `private` write makes the file 0600. An ordinary write keeps the permissions
of the file it replaces, and a new file gets the user's umask like any file they make: notes the
app writes into a user's vault keep the user's own defaults. Modes are given per file and folder,
never through the process umask.

JSON: `parse_json_text` / `parse_json_bytes` turn text or bytes into data, or raise `InputError`
with a sentence that names what was read (`what`: "the request body", "chat file x.json") and why
it is not JSON. Request bodies and files share it, so a body and a file fail the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from dle_desktop.core.pipeline.chat_input import has_lone_surrogate
from dle_desktop.errors import InputError

#: A \uD800-\uDFFF escape: JSON's grammar allows an unpaired one, but it is not Unicode text and
#: could be neither stored (SQLite wants UTF-8) nor sent back.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

#: Texts longer than this are parsed in a worker thread by `parse_json_bytes_async`, so an event
#: loop keeps answering other requests meanwhile.
OFF_LOOP_CHARS = 256 * 1024


def decode_utf8(data: bytes, what: str) -> str:
    """UTF-8 (a BOM is dropped). Decoded here rather than by json.loads(bytes), which would also
    guess UTF-16/32: text that is not UTF-8 must be named as such, not reported as bad JSON."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (invalid byte at offset {exc.start})") from None


def _loads(text: str, what: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{what} is not valid JSON: it is nested too deeply") from None
    except ValueError:  # an integer longer than Python's digit limit (4300)
        raise InputError(f"{what} is not valid JSON: a number in it is too long") from None
    if SURROGATE_ESCAPE.search(text) and has_lone_surrogate(data):
        raise InputError(f"{what} has a \\u escape of an unpaired surrogate (\\ud800-\\udfff), which is not text")
    return data


def parse_json_text(text: str, what: str) -> Any:
    return _loads(text, what)


def parse_json_bytes(data: bytes, what: str) -> Any:
    return _loads(decode_utf8(data, what), what)


async def parse_json_bytes_async(data: bytes, what: str) -> Any:
    """`parse_json_bytes` for an event loop: a big text is parsed in a worker thread."""
    text = decode_utf8(data, what)
    if len(text) < OFF_LOOP_CHARS:
        return _loads(text, what)
    return await asyncio.to_thread(_loads, text, what)


def read_text_file(path: str | Path, what: str) -> str:
    """A UTF-8 text file, or InputError naming `what` and `path` (missing, unreadable, not UTF-8)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} file {path} cannot be read: {exc}") from None


def read_json_file(path: str | Path, what: str) -> Any:
    """A JSON file, or InputError: `{what} file {path} ...` says what is wrong with it."""
    return parse_json_text(read_text_file(path, what), f"{what} file {path}")


# -- private files and folders ---------------------------------------------------------------------

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_POSIX = os.name == "posix"


def private_opener(path: str, flags: int) -> int:
    """`open(..., opener=private_opener)`: a new file is created 0600, an older one is tightened."""
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    if _POSIX:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def make_private_dir(path: Path) -> Path:
    """`path` and every folder this call creates on the way to it, 0700."""
    created = []
    missing = path
    while not missing.exists() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if _POSIX:
        # mkdir's mode is filtered by the umask (and not given to the parents it makes); an older
        # folder kept its own.
        for folder in {path, *created}:
            os.chmod(folder, PRIVATE_DIR_MODE)
    return path


def make_private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if missing (before SQLite opens it, which would use the umask)."""
    os.close(private_opener(str(path), os.O_CREAT | os.O_WRONLY))
    return path


def make_private_tree(root: Path) -> None:
    """Make `root` and every folder under it 0700 and every file 0600 (what an older version, or
    a library writing with the umask, left readable). Links are not followed; a file that goes
    away meanwhile is fine."""
    if not _POSIX or not root.is_dir() or root.is_symlink():
        return
    os.chmod(root, PRIVATE_DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name, mode in [(d, PRIVATE_DIR_MODE) for d in dirs] + [(f, PRIVATE_FILE_MODE) for f in files]:
            path = os.path.join(folder, name)
            try:
                if not os.path.islink(path):
                    os.chmod(path, mode)
            except OSError:
                continue


def tighten(path: Path) -> None:
    """Make a file an older version left world-readable private; missing files are fine."""
    if _POSIX:
        try:
            os.chmod(path, PRIVATE_FILE_MODE)
        except FileNotFoundError:
            pass


# -- atomic writes ---------------------------------------------------------------------------------

TEMP_SUFFIX = ".tmp"
_LINKLESS_ERRNOS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS)


class NameTaken(FileExistsError):
    """An `exclusive` write found the target's name already taken; nothing was written."""


def fsync_dir(folder: str | Path) -> None:
    """Make a rename or an unlink in `folder` durable. Best effort: a folder that cannot be opened
    or synced costs durability only, never the write that already happened."""
    if not _POSIX:
        return  # Windows cannot open a folder for fsync; NTFS journals the rename itself
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path(path: str | Path, suffix: str = TEMP_SUFFIX) -> str:
    """A fresh hidden name beside `path`: `.NAME.XXXXXXXX<suffix>`."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}.{secrets.token_hex(4)}{suffix}")


def remove_quietly(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _kept_mode(path: str) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


@contextlib.contextmanager
def atomic_file(
    path: str | Path,
    *,
    private: bool = False,
    suffix: str = TEMP_SUFFIX,
    check: Callable[[], None] | None = None,
    exclusive: bool = False,
) -> Iterator[IO[bytes]]:
    """Write `path` through the binary file object this yields; on a clean exit the file is
    fsynced and takes `path`'s name. `check` runs just before that (what it raises aborts the
    write); `exclusive` takes the name only if it is still free (NameTaken otherwise), where a
    rename would silently replace what appeared meanwhile. The temporary file is removed when
    anything fails, an interrupt included."""
    target = os.fspath(path)
    mode = PRIVATE_FILE_MODE if private else _kept_mode(target)
    tmp = temp_path(target, suffix)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    # A new ordinary file gets the user's umask, like any file they make.
    fd = os.open(tmp, flags, PRIVATE_FILE_MODE if private else 0o666)
    try:
        try:
            if mode is not None and _POSIX:
                os.fchmod(fd, mode)  # private stays 0600 whatever the umask; an edited file keeps its permissions
            fh = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check()
        if exclusive:
            _link_new(tmp, target)
            remove_quietly(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        remove_quietly(tmp)
        raise
    fsync_dir(os.path.dirname(target) or ".")


def write_atomic(
    path: str | Path,
    data: str | bytes,
    *,
    private: bool = False,
    suffix: str = TEMP_SUFFIX,
    check: Callable[[], None] | None = None,
    exclusive: bool = False,
) -> None:
    """Replace `path` with `data` (text is written as UTF-8, as is), atomically: see `atomic_file`."""
    with atomic_file(path, private=private, suffix=suffix, check=check, exclusive=exclusive) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_private_atomic(path: Path, data: str | bytes) -> None:
    """A file of the data folder: `write_atomic`, 0600."""
    write_atomic(path, data, private=True)


def _link_new(tmp: str, target: str) -> None:
    """A hard link fails if anything took the name; a file system without hard links (FAT, some
    network shares) gets a check, then a rename."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise NameTaken(errno.EEXIST, "the name is taken", target) from None
    except OSError as exc:
        if exc.errno not in _LINKLESS_ERRNOS:
            raise
        if os.path.lexists(target):
            raise NameTaken(errno.EEXIST, "the name is taken", target) from None
        os.replace(tmp, target)


def move_into_place(source: str | Path, target: str | Path) -> None:
    """Give a finished file or folder (a verified download, a folder built under a temporary name)
    its final name, atomically, and make the rename durable."""
    os.replace(source, target)
    fsync_dir(os.path.dirname(os.path.abspath(target)))
