"""Changing one note file on local disk so that it is never seen half-written and never clobbers
a version the caller did not see. Blocking functions: the writer runs them in a worker thread.

A write goes to a hidden temporary file in the note's own folder (the same file system, so the
rename is atomic; hidden, so the vault reader and the file watcher skip it), is fsynced, checked
once more against the expected version, and renamed over the note; the folder is fsynced so the
rename itself survives a power cut. A killed process leaves the old note or the new one, and at
worst a hidden `.NAME.XXXXXXXX.dle-tmp` file, which the next write in that folder sweeps away
(a folder is looked through at most once a minute: an import writes thousands of notes into one).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dle_desktop.core.hashing import simple_hash
from dle_desktop.errors import WriteError, WriteRefused
from dle_desktop.fileio import NameTaken, fsync_dir, move_into_place, temp_path, write_atomic

TEMP_SUFFIX = ".dle-tmp"
#: A temporary file of ours this old is left over from a crash (a live write takes milliseconds).
STALE_TEMP_S = 600.0
#: How often one folder is looked through for leftovers: a scan on every write would make N
#: notes written into one folder cost N² directory entries (10,000 imported notes: minutes).
SWEEP_INTERVAL_S = 60.0

#: Expected version of a note that must not exist yet (a create).
ABSENT = "<absent>"


class Changed(Exception):
    """The file is not the expected version; `current` is what it holds now (None: missing)."""

    def __init__(self, current: str | None) -> None:
        super().__init__("the note changed")
        self.current = current


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_swept: dict[str, float] = {}  # folder → when it was last looked through (monotonic)


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
        raise WriteRefused(
            f"{os.path.basename(real)} is not UTF-8 text; the app does not rewrite it (its odd bytes "
            "would be lost): convert it to UTF-8 in an editor first"
        ) from None


def matches(current: str | None, expected: str) -> bool:
    if expected == ABSENT:
        return current is None
    return current is not None and simple_hash(current) == expected


def _sweep_stale_temps(real: str) -> None:
    """Remove the temporary files of ours in `real`'s folder that a crash left behind."""
    folder = os.path.dirname(real)
    now = time.monotonic()
    with _locks_guard:
        last = _swept.get(folder)
        if last is not None and now - last < SWEEP_INTERVAL_S:
            return
        _swept[folder] = now
    cutoff = time.time() - STALE_TEMP_S
    try:
        with os.scandir(folder) as it:
            for item in it:
                if item.name.startswith(".") and item.name.endswith(TEMP_SUFFIX):
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


def commit(
    real: str, expected: str, new_text: str | None, make_folders: Callable[[str], None] | None = None
) -> str | None:
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

        def unchanged() -> None:
            # The last look before the rename: an editor's save in the meantime wins.
            now = read_note(real)
            if not matches(now, expected):
                raise Changed(now)

        create = expected == ABSENT
        try:
            write_atomic(real, new_text, suffix=TEMP_SUFFIX, check=None if create else unchanged, exclusive=create)
        except NameTaken:
            raise Changed(read_note(real)) from None
        except OSError as exc:
            raise _os_error(exc, name) from None
        _sweep_stale_temps(real)
        return current


def replace_note(real: str, data: bytes) -> None:
    """Make the file at `real` hold `data`, whatever it holds now (the Obsidian REST API's PUT of
    a whole file), by the same atomic write as `commit`. OSError when it cannot be written."""
    with _lock_for(real):
        write_atomic(real, data, suffix=TEMP_SUFFIX)
        _sweep_stale_temps(real)


def _delete(real: str, expected: str) -> None:
    """Delete the note only if it is still the expected version: it is first renamed aside (atomic),
    so an edit that lands between the check and the delete is never the thing deleted."""
    aside = temp_path(real, TEMP_SUFFIX)
    try:
        move_into_place(real, aside)
    except FileNotFoundError:
        raise Changed(None) from None
    except OSError as exc:
        raise _os_error(exc, os.path.basename(real)) from None
    moved = read_note(aside)
    if matches(moved, expected):
        os.unlink(aside)
        fsync_dir(os.path.dirname(real))
        return
    try:
        os.link(aside, real)
        os.unlink(aside)
    except OSError:
        move_into_place(aside, real)
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
