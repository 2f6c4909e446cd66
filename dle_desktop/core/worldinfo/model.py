"""The shapes World Info import and export share: a read book, one converted note, the export report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: A bigger input is refused before it is parsed: no real lorebook comes near it, and parsing
#: one would hold several times its size in memory.
MAX_BOOK_BYTES = 50 * 1024 * 1024


class WorldInfoError(ValueError):
    """Input that is no readable lorebook; str(exc) is a message for a user."""


@dataclass(frozen=True)
class WiEntry:
    """One SillyTavern World Info entry, normalised from either the WI or the character-book form."""

    uid: str
    comment: str
    keys: tuple[str, ...]
    secondary_keys: tuple[str, ...]
    content: str
    #: The entry exactly as it was read (a character-book entry keeps its own field names;
    #: `reader.st_fields` gives any entry in ST World Info names).
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class WiBook:
    name: str
    kind: str  # "world-info" | "array" | "card-v2" | "card-v3"
    entries: tuple[WiEntry, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoteSpec:
    """What one World Info entry becomes: a note's frontmatter fields (in order) and body."""

    uid: str
    title: str
    fields: dict[str, Any]
    body: str
    kept: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExportDefaults:
    """The global injection settings a note without its own falls back to."""

    position: str = "after"
    depth: int = 4
    role: str = "system"
    scan_depth: int | None = None


@dataclass(frozen=True)
class ExportLine:
    title: str
    path: str
    lost: tuple[str, ...]  # what World Info cannot express, in words


@dataclass(frozen=True)
class ExportReport:
    entries: int
    lines: tuple[ExportLine, ...]
