"""What the World Info service hands out: a book found in SillyTavern, an import's preview and its
outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Collision = Literal["rename", "skip", "overwrite"]
RowAction = Literal["create", "rename", "skip", "overwrite"]
COLLISIONS: tuple[Collision, ...] = ("rename", "skip", "overwrite")


@dataclass(frozen=True)
class BookListing:
    """One World Info book of a SillyTavern user. `entries` is None and `error` says why when the
    file could not be read as a book (it is listed all the same, never left out silently)."""

    name: str
    path: Path
    entries: int | None
    size: int
    error: str | None = None


@dataclass(frozen=True)
class PlanRow:
    """One entry of the book and what the import will do with it."""

    uid: str
    title: str
    path: str  # vault-relative, where the note goes (or the note it overwrites, or would have hit)
    action: RowAction
    diff: str | None  # overwrite: the unified diff of the note now → the imported one
    warnings: tuple[str, ...]
    kept: tuple[str, ...]  # ST fields kept in the frontmatter for the round trip
    text: str  # the note's full text
    #: overwrite: the content hash of the note the diff was made against; the import writes only
    #: over that version (a note edited after the preview stops the import, which is undone).
    base_hash: str | None = None


@dataclass(frozen=True)
class ImportPlan:
    vault: str
    folder: str
    book: str
    rows: tuple[PlanRow, ...]
    problems: tuple[str, ...]  # book-wide: entries that could not be read, names that ran out, ...
    notes: tuple[str, ...] = ()  # said once for the book (the priority direction, what REST vaults cannot undo)

    @property
    def writes(self) -> int:
        return sum(1 for row in self.rows if row.action != "skip")

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("create", "rename", "skip", "overwrite"), 0)
        for row in self.rows:
            counts[row.action] += 1
        return counts


@dataclass(frozen=True)
class ImportResult:
    """`written`: the notes the import left in the vault; on a cancel or a failure that is empty
    and `removed` lists what was written and taken back. `left`: notes that could not be taken
    back (changed meanwhile, or a vault that cannot delete), with why."""

    batch: str
    written: tuple[str, ...]
    skipped: tuple[str, ...]
    cancelled: bool
    removed: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
