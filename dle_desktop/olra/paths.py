"""Vault paths as they arrive in an OLRA URL: decoded like JavaScript's `decodeURIComponent`,
checked strictly, and confined to the vault folder (symlinks included).

Everything after `/vault/` is one percent-encoded string (DLE encodes each segment with
`encodeURIComponent` and joins them with `/`). A path ending in `/`, or an empty one, names a
folder (a listing); anything else names a file. What could leave the vault, or be read two ways
by the file system, is refused before any file is touched: `..` and `.` segments, a leading `/`
(after decoding), empty segments, a drive letter (`C:`), a backslash, NUL and other control
characters, malformed percent-encoding or UTF-8, and (at `confine`) anything whose real path,
symlinks resolved, lies outside the vault folder."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_to_bytes

_WINDOWS = os.name == "nt"
#: A '%' that is not followed by two hex digits: decodeURIComponent throws a URIError.
_BAD_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_DRIVE = re.compile(r"[A-Za-z]:")
#: Names Windows reserves whatever their extension (`CON`, `nul.md`, `COM1.txt`, ...).
_WINDOWS_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?", re.I)
_WINDOWS_FORBIDDEN = set('<>:"|?*')


class PathRefused(Exception):
    """A path that is not served: `status` (400 malformed, 403 outside the vault) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class VaultPath:
    """A checked vault path: its segments (none for the vault's root) and whether it names a folder."""

    parts: tuple[str, ...]
    is_dir: bool

    @property
    def rel(self) -> str:
        """The vault-relative path with '/' separators (no trailing '/')."""
        return "/".join(self.parts)

    @property
    def hidden(self) -> bool:
        """Inside a dot-folder or a dot-file (`.obsidian`, `.git`, `.trash`, editors' temp files)."""
        return any(p.startswith(".") for p in self.parts)


def decode_uri_component(raw: bytes | str) -> str:
    """JavaScript's `decodeURIComponent`: every `%XX` decoded, the bytes read as strict UTF-8
    (lone surrogates and overlong forms included); `+` stays `+`. PathRefused(400) where
    JavaScript would throw a URIError."""
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if _BAD_PERCENT.search(data):
        raise PathRefused(400, "the path has a '%' that is not followed by two hex digits (malformed percent-encoding)")
    try:
        return unquote_to_bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise PathRefused(400, "the path is not valid UTF-8 once percent-decoded") from None


def parse_vault_path(raw: bytes | str) -> VaultPath:
    """The part of the URL after `/vault/` (still percent-encoded) as a checked VaultPath."""
    text = decode_uri_component(raw)
    if text == "":
        return VaultPath((), True)
    if text.startswith("/"):
        raise PathRefused(400, "the path starts with '/' once decoded: vault paths are relative to the vault")
    is_dir = text.endswith("/")
    body = text[:-1] if is_dir else text
    if "\\" in body:
        raise PathRefused(400, "the path has a backslash: vault paths use '/' only")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in body):
        raise PathRefused(400, "the path has a NUL or another control character")
    parts = tuple(body.split("/"))
    for i, part in enumerate(parts):
        if part == "":
            raise PathRefused(400, "the path has an empty segment ('//')")
        if part in (".", ".."):
            raise PathRefused(400, "'.' and '..' segments are not allowed in vault paths")
        if _DRIVE.match(part) and (i == 0 or _WINDOWS):
            raise PathRefused(400, f"{part[:2]!r} looks like a drive letter: vault paths are relative to the vault")
        if _WINDOWS and (_WINDOWS_FORBIDDEN & set(part) or part[-1] in ". " or _WINDOWS_RESERVED.fullmatch(part)):
            raise PathRefused(400, f"{part[:100]!r} is not a file name Windows can store as it is")
    return VaultPath(parts, is_dir)


def real_root(root: Path) -> str:
    """The vault folder's real path (symlinks resolved), which every served path must stay inside."""
    return os.path.realpath(root)


def confine(root_real: str, parts: tuple[str, ...]) -> str:
    """The real path of `parts` under the vault folder whose real path is `root_real`: every
    symlink on the way resolved (missing trailing parts are kept as they are). PathRefused(403)
    when it lies outside the vault folder."""
    target = os.path.realpath(os.path.join(root_real, *parts))
    if target != root_real and not target.startswith(root_real.rstrip(os.sep) + os.sep):
        raise PathRefused(403, "the path leads outside the vault folder (through a symbolic link); it is not served")
    return target
