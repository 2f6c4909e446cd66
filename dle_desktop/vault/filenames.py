"""Note titles → file names, and vault-relative paths → files the writer may touch.

The title rules are DLE's `sanitizeFilename` (every `< > : " / \\ | ? *` becomes `_`, leading and
trailing dots go, trailing spaces go, Windows device names get a leading `_`, nothing left means
`Untitled`), so a note the app writes for a title lands where DLE would have put it. Four rules
are added because DLE leaves them to chance: line breaks become spaces (DLE's import does that,
its Librarian does not), other control characters become `_`, the name is cut to fit the 255-byte
limit file systems put on one name, and a dot left at the end once spaces are trimmed goes too
(Windows cannot store it).

Where a path may lead is checked twice: as text (no `..`, no absolute path, no hidden segment:
the vault reader skips dot-names, so a note written there would vanish from the index) and on
disk (every symlink resolved, the result must stay inside the vault folder's real path).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dle_desktop.errors import VaultPathError
from dle_desktop.vault.sources import check_relative_path

NOTE_SUFFIX = ".md"
#: Most file systems cap one name at 255 bytes (ext4, APFS, NTFS counts UTF-16 units: stricter
#: for nobody using UTF-8 byte counts).
MAX_NAME_BYTES = 255
UNTITLED = "Untitled"

_DLE_FORBIDDEN = re.compile(r'[<>:"/\\|?*]')
_LINE_BREAKS = re.compile(r"[\r\n]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_EDGE_DOTS = re.compile(r"^\.+|\.+$")
_WINDOWS_DEVICE = re.compile(r"^(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])$", re.I)


def sanitize_title(title: str) -> str:
    """The file name stem DLE would use for `title` (without `.md`)."""
    safe = _LINE_BREAKS.sub(" ", str(title))
    safe = _CONTROL.sub("_", safe)
    safe = _DLE_FORBIDDEN.sub("_", safe)
    safe = _EDGE_DOTS.sub("", safe).rstrip()
    if _WINDOWS_DEVICE.match(safe):
        safe = "_" + safe
    safe = _fit_bytes(safe, MAX_NAME_BYTES - len(NOTE_SUFFIX))
    # Cutting can expose a trailing dot or space again.
    safe = _EDGE_DOTS.sub("", safe).rstrip()
    return safe or UNTITLED


def _fit_bytes(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore")


def note_path_for_title(title: str, folder: str = "") -> str:
    """`folder/<sanitised title>.md`, checked like every other path the writer takes."""
    name = sanitize_title(title) + NOTE_SUFFIX
    return check_note_path(f"{folder.strip('/')}/{name}" if folder.strip("/") else name)


def check_note_path(path: str) -> str:
    """Normalise a vault-relative note path, refusing escapes, hidden names and non-notes."""
    rel = check_relative_path(path)
    parts = rel.split("/")
    if any(part.startswith(".") for part in parts):
        raise VaultPathError(
            f"{rel}: names starting with '.' are hidden from the vault (the index skips them); choose another name"
        )
    if not rel.lower().endswith(NOTE_SUFFIX):
        raise VaultPathError(f"{rel}: only Markdown notes ({NOTE_SUFFIX}) are written by the note writer")
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in parts):
        raise VaultPathError(f"{rel}: a file or folder name is longer than {MAX_NAME_BYTES} bytes")
    return rel


def inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def confine_note(root: Path, rel: str) -> str:
    """The real path of vault-relative `rel` under `root`, symlinks resolved; VaultPathError when
    it leads outside the vault folder. Missing trailing parts are fine (a note being created)."""
    root_real = os.path.realpath(root)
    target = os.path.realpath(os.path.join(root_real, *rel.split("/")))
    if not inside(target, root_real):
        raise VaultPathError(
            f"{rel}: the path leads outside the vault folder (through a symbolic link); nothing written"
        )
    return target
