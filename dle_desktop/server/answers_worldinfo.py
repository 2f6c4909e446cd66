"""What the World Info routes answer (routes_worldinfo.py); see answers.py for the conventions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from dle_desktop.server.answers import Answer


class ImportCounts(Answer):
    create: int
    rename: int = Field(description="written under an `_imported` name: the name was taken")
    skip: int
    overwrite: int


class ImportRow(Answer):
    uid: str = Field(description="the entry's uid in the book")
    title: str
    path: str = Field(description="the note's path in the vault ('' when the entry cannot become a note)")
    action: Literal["create", "rename", "skip", "overwrite"]
    diff: str | None = Field(description="overwrite: the unified diff of the note now → the imported one")
    warnings: list[str] = Field(description="what this entry will and will not do here, in words")
    kept: list[str] = Field(description="SillyTavern fields kept in the frontmatter for the round trip only")
    text: str = Field(description="the note as it will be written")


class ImportPreview(Answer):
    vault: str
    folder: str
    book: str
    kind: str = Field(description="what the book was read as: world-info, array, card-v2 or card-v3")
    counts: ImportCounts
    writes: int = Field(description="notes the import will write")
    rows: list[ImportRow] = Field(description="one per entry, in the book's order")
    problems: list[str] = Field(description="book-wide: entries that could not be read, names that ran out, ...")
    notes: list[str] = Field(description="said once for the book (the priority direction flipped, ...)")
    digest: str = Field(description="send it back with the import: it is refused if the plan changed meanwhile")


class ImportDone(Answer):
    batch: str = Field(description="the import's batch in the write history: POST /worldinfo/import/undo takes it")
    vault: str
    folder: str
    book: str
    written: list[str] = Field(description="the notes written, by path")
    skipped: list[str]
    cancelled: bool
    removed: list[str] = Field(description="cancelled: the notes it had written and took back")
    left: list[str] = Field(description="notes that could not be taken back, with why")
    counts: ImportCounts
    problems: list[str]


class ImportUndone(Answer):
    batch: str
    undone: list[str] = Field(description="the notes taken back, by path")
    conflicts: list[str] = Field(description="notes changed since the import: left as they are, with why")
    refused: list[str] = Field(description="notes that could not be taken back at all, with why")
    complete: bool


class ExportLine(Answer):
    title: str
    path: str
    lost: list[str] = Field(description="what World Info cannot express of this entry, in words")


class ExportReport(Answer):
    entries: int
    lines: list[ExportLine] = Field(description="the entries that lose something, entry by entry")


class WorldInfoExport(Answer):
    book: dict[str, Any] = Field(
        description='the World Info book (`{"entries": {"0": {...}}}`) as SillyTavern imports it: save it as '
        "<name>.json and import it in SillyTavern's World Info panel"
    )
    report: ExportReport
