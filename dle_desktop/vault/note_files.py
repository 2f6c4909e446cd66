"""Changing one note file on local disk so that it is never seen half-written and never clobbers
a version the caller did not see. Blocking functions: the writer runs them in a worker thread.

A write goes to a hidden temporary file in the note's own folder (the same file system, so the
rename is atomic; hidden, so the vault reader and the file watcher skip it), is fsynced, checked
once more against the expected version, and renamed over the note; the folder is fsynced so the
rename itself survives a power cut. A killed process leaves the old note or the new one, and at
worst a hidden `.NAME.XXXXXXXX.dle-tmp` file, which the next write of that note sweeps away.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dle_desktop.core.hashing import simple_hash
from dle_desktop.errors import WriteError, WriteRefused

_POSIX = os.name == "posix"
TEMP_SUFFIX = ".dle-tmp"
#: A temporary file of ours this old is left over from a crash (a live write takes milliseconds).
STALE_TEMP_S = 600.0

#: Expected version of a note that must not exist yet (a create).
ABSENT = "<absent>"


class Changed(Exception):
    """The file is not the expected version; `current` is what it holds now (None: missing)."""

    def __init__(self, current: str | None) -> None:
        super().__init__("the note changed")
        self.current = current


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(real: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(real, threading.Lock())


def read_note(real: str) -> str | None:
    """The note's text, None when there is no such file. WriteRefused for what is not UTF-8 text:
    the writer would otherwise turn its odd bytes into U+FFFD for good."""
    try:
        with open(real, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise WriteRefused(f"{os.path.basename(real)} is a folder, not a note") from None
    except OSError as exc:
        raise WriteError(f"{os.path.basename(real)} cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WriteRefused(f"{os.path.basename(real)} is not UTF-8 text; the app does not rewrite it (its odd bytes "
                           "would be lost): convert it to UTF-8 in an editor first") from None


def matches(current: str | None, expected: str) -> bool:
    if expected == ABSENT:
        return current is None
    return current is not None and simple_hash(current) == expected


def _fsync_dir(folder: str) -> None:
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


def _temp_path(real: str) -> str:
    return os.path.join(os.path.dirname(real), f".{os.path.basename(real)}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


def _write_temp(real: str, data: bytes) -> str:
    tmp = _temp_path(real)
    mode = None
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except OSError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o666)  # a new note gets the user's umask, like any file they make
    try:
        if mode is not None and _POSIX:
            os.fchmod(fd, mode)  # an edited note keeps its permissions
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _sweep_stale_temps(real: str) -> None:
    folder, prefix = os.path.dirname(real), f".{os.path.basename(real)}."
    cutoff = time.time() - STALE_TEMP_S
    try:
        with os.scandir(folder) as it:
            for item in it:
                if item.name.startswith(prefix) and item.name.endswith(TEMP_SUFFIX):
                    try:
                        if item.stat(follow_symlinks=False).st_mtime < cutoff:
                            os.unlink(item.path)
                    except OSError:
                        continue
    except OSError:
        return


def _os_error(exc: OSError, what: str) -> WriteError:
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return WriteError(f"the disk is full; {what} was not written")
    if isinstance(exc, PermissionError):
        return WriteRefused(f"{what} cannot be written: permission denied")
    return WriteError(f"{what} could not be written: {exc.strerror or exc}")


def commit(real: str, expected: str, new_text: str | None, make_folders: Callable[[str], None] | None = None) -> str | None:
    """Make the file at `real` hold `new_text` (None: delete it), but only if it now holds the
    version `expected` (its content hash, or ABSENT). Returns the text it held before; raises
    Changed (nothing written) when it held something else."""
    name = os.path.basename(real)
    with _lock_for(real):
        current = read_note(real)
        if not matches(current, expected):
            raise Changed(current)
        if new_text is None:
            _delete(real, expected)
            return current
        parent = os.path.dirname(real)
        if make_folders is not None:
            make_folders(parent)
        try:
            tmp = _write_temp(real, new_text.encode("utf-8"))
        except OSError as exc:
            raise _os_error(exc, name) from None
        try:
            if expected == ABSENT:
                _link_new(tmp, real)
            else:
                # The last look before the rename: an editor's save in the meantime wins.
                now = read_note(real)
                if not matches(now, expected):
                    raise Changed(now)
                os.replace(tmp, real)
        except OSError as exc:
            raise _os_error(exc, name) from None
        finally:
            _unlink_quietly(tmp)  # after a link or a failure; after a rename it is gone already
        _fsync_dir(parent)
        _sweep_stale_temps(real)
        return current


def _link_new(tmp: str, real: str) -> None:
    """Give the finished temporary file the note's name only if that name is still free: a hard
    link fails if anything took the name, where a rename would silently replace it."""
    try:
        os.link(tmp, real)
    except FileExistsError:
        raise Changed(read_note(real)) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        # A file system without hard links (FAT, some network shares): check, then rename.
        if os.path.lexists(real):
            raise Changed(read_note(real)) from None
        os.replace(tmp, real)


def _delete(real: str, expected: str) -> None:
    """Delete the note only if it is still the expected version: it is first renamed aside (atomic),
    so an edit that lands between the check and the delete is never the thing deleted."""
    aside = _temp_path(real)
    try:
        os.rename(real, aside)
    except FileNotFoundError:
        raise Changed(None) from None
    except OSError as exc:
        raise _os_error(exc, os.path.basename(real)) from None
    moved = read_note(aside)
    if matches(moved, expected):
        os.unlink(aside)
        _fsync_dir(os.path.dirname(real))
        return
    try:
        os.link(aside, real)
        os.unlink(aside)
    except OSError:
        os.replace(aside, real)
    raise Changed(moved)


def make_folders(root_real: str, inside: Callable[[str, str], bool]) -> Callable[[str], None]:
    """A folder maker for `commit` that refuses folders that end up outside the vault (a symlink
    made between the path check and now)."""

    def make(parent: str) -> None:
        try:
            os.makedirs(parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise WriteRefused(f"a part of {Path(parent).name} is a file, not a folder") from None
        except OSError as exc:
            raise _os_error(exc, f"the folder {Path(parent).name}") from None
        if not inside(os.path.realpath(parent), root_real):
            raise WriteRefused("the path leads outside the vault folder (through a symbolic link); nothing written")

    return make
