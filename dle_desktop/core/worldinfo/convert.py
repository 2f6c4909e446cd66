"""World Info entry → DLE note, by DLE's import mapping (dle-behaviour.md §5.8)."""

from __future__ import annotations

from dle_desktop.core.entry import TagConfig
from dle_desktop.core.worldinfo.model import NoteSpec, WiBook, WiEntry


def convert_entry(entry: WiEntry, tags: TagConfig = TagConfig()) -> NoteSpec:
    raise NotImplementedError


def convert_book(book: WiBook, tags: TagConfig = TagConfig()) -> list[NoteSpec]:
    raise NotImplementedError


def book_notes(book: WiBook) -> tuple[str, ...]:
    """Book-level notes for the preview (said once per book, not per entry)."""
    raise NotImplementedError
