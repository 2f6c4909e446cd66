"""The data folder holds chats, keys and logs: it is the user's alone (folders 0700, files 0600
on POSIX). Modes are given per file and folder, never through the process umask, so notes the
app writes into a user's vault keep the user's own defaults."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

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
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if _POSIX:
        os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask; an older folder kept its own
    return path


def make_private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if missing (before SQLite opens it, which would use the umask)."""
    os.close(private_opener(str(path), os.O_CREAT | os.O_WRONLY))
    return path


def tighten(path: Path) -> None:
    """Make a file an older version left world-readable private; missing files are fine."""
    if _POSIX:
        try:
            os.chmod(path, PRIVATE_FILE_MODE)
        except FileNotFoundError:
            pass


def write_private_atomic(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` as a private file, atomically: a crash mid-write leaves the
    previous file (a temp file of its own in the same folder, fsync, rename; the temp file is
    removed when anything fails)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    binary = isinstance(data, bytes)
    try:
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8", opener=private_opener) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
