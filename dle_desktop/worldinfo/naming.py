"""Where imported notes go: the target folder checked, DLE's `_imported` names for a taken name,
and the diff shown before a note is overwritten."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from dle_desktop.errors import InputError, VaultPathError
from dle_desktop.vault.filenames import MAX_NAME_BYTES, NOTE_SUFFIX, check_note_path
from dle_desktop.vault.sources import check_relative_path

#: DLE tries `<stem>_imported`, `<stem>_imported_2`, ... this many names before it gives up.
MAX_RENAME_TRIES = 20
IMPORTED_SUFFIX = "_imported"


def check_folder(folder: str) -> str:
    """The vault-relative folder the notes go into ('' = the vault's top), normalised; InputError
    for one that leads out of the vault, is absolute, or is hidden from the index."""
    text = (folder or "").strip()
    if not text.strip("/\\"):
        return ""
    try:
        rel = check_relative_path(text)
    except VaultPathError as exc:
        raise InputError(f"the import folder {folder!r} is not a folder inside the vault: {exc}") from None
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in rel.split("/")):
        raise InputError(f"the import folder {folder!r} has a name longer than {MAX_NAME_BYTES} bytes")
    if any(part.startswith(".") for part in rel.split("/")):
        raise InputError(
            f"the import folder {folder!r} has a name starting with '.', which the index skips (the notes "
            "would vanish); choose another folder"
        )
    return rel


def _fit(stem: str, limit: int) -> str:
    encoded = stem.encode("utf-8")
    if len(encoded) <= limit:
        return stem
    return encoded[:limit].decode("utf-8", errors="ignore").rstrip(" .") or "_"


def imported_names(path: str) -> Iterator[str]:
    """DLE's other names for a taken `folder/stem.md`: `stem_imported.md`, `stem_imported_2.md`, …
    `stem_imported_20.md` (the stem shortened first where the suffix would pass the name limit)."""
    folder, _, name = path.rpartition("/")
    stem = name[: -len(NOTE_SUFFIX)] if name.lower().endswith(NOTE_SUFFIX) else name
    for attempt in range(1, MAX_RENAME_TRIES + 1):
        suffix = IMPORTED_SUFFIX if attempt == 1 else f"{IMPORTED_SUFFIX}_{attempt}"
        fitted = _fit(stem, MAX_NAME_BYTES - len(NOTE_SUFFIX) - len(suffix.encode("utf-8")))
        candidate = f"{fitted}{suffix}{NOTE_SUFFIX}"
        yield check_note_path(f"{folder}/{candidate}" if folder else candidate)


def note_diff(old: str, new: str, path: str) -> str:
    """A unified diff of the note as it is → as the import would write it ('' when they are the
    same). Lines are compared without their line breaks: a last line without one would otherwise
    run into the next line of the diff."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=f"{path} (in the vault)", tofile=f"{path} (imported)", lineterm=""
    )
    text = "\n".join(lines)
    return f"{text}\n" if text else ""
