"""World Info in and out of the vault: the import's preview and its writing (one batch in the
write history, one Undo, one re-index), and the export of indexed entries as a World Info book.

Built by the engine (`Engine.worldinfo`); the async methods run on the engine's loop. Every note
goes through the note writer, so each write is atomic, checked against the version it was
planned for and recorded under the import's batch id. An import either completes or leaves
nothing: a cancel, an error on any note, or the task being cancelled undoes what it had written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.config import POSITION_NAMES, ROLE_NAMES
from dle_desktop.core.worldinfo import (
    ExportDefaults,
    ExportReport,
    NoteSpec,
    WiBook,
    book_notes,
    convert_book,
    export_book,
)
from dle_desktop.errors import DleError, InputError, NotAvailableHere, NotFound, WriteError, WriteRefused
from dle_desktop.fileio import write_atomic
from dle_desktop.state.settings import Settings
from dle_desktop.vault.filenames import confine_note, note_path_for_title
from dle_desktop.vault.frontmatter_edit import compose_note
from dle_desktop.vault.sources import FolderSource, VaultSource
from dle_desktop.vault.write_history import BatchSummary
from dle_desktop.vault.writer import BatchUndo, NoteWriter
from dle_desktop.worldinfo import books
from dle_desktop.worldinfo.model import (
    COLLISIONS,
    BookListing,
    Collision,
    ImportPlan,
    ImportResult,
    PlanRow,
    RowAction,
)
from dle_desktop.worldinfo.naming import MAX_RENAME_TRIES, check_folder, imported_names, note_diff

log = logging.getLogger(__name__)

#: The feature name the import's writes carry in the write history.
IMPORT_FEATURE = "wi-import"
UNDO_FEATURE = "wi-import-undo"
#: Progress events reach the window at most this often (the callback still hears every note).
EVENT_INTERVAL_S = 0.1
#: Notes an import writes at once. Measured here (2 cores, ext4): 1,000 notes take 3.5 s one at a
#: time, 1.35 s four at a time, 1.15 s eight at a time; four leave the engine's worker threads
#: (six on two cores) room for everything else.
WRITERS = 4

ProgressFn = Callable[[int, int], None]
EventFn = Callable[..., None]


class ImportFailed(WriteError):
    """An import stopped on an error; what it had written was undone (`left`: what could not be)."""

    def __init__(self, message: str, *, batch: str, removed: tuple[str, ...], left: tuple[str, ...]) -> None:
        super().__init__(message)
        self.batch = batch
        self.removed = removed
        self.left = left


def export_defaults(settings: Settings) -> ExportDefaults:
    """The global injection settings, as the fallback of a note without its own. The scan depth is
    left to SillyTavern's own global setting (null in the book): writing ours into every entry
    would also make import → export → import add `scanDepth` to notes that had none."""
    return ExportDefaults(
        position=POSITION_NAMES.get(settings.injection_position, "after"),
        depth=settings.injection_depth,
        role=ROLE_NAMES.get(settings.injection_role, "system"),
    )


def _make_notes(book: WiBook, tags: TagConfig, folder: str) -> list[tuple[NoteSpec, tuple[str, str] | DleError]]:
    """Each entry's note: (its text in house style, its path), or why it cannot be written."""
    out: list[tuple[NoteSpec, tuple[str, str] | DleError]] = []
    for spec in convert_book(book, tags):
        try:
            out.append((spec, (compose_note(spec.fields, spec.body), note_path_for_title(spec.title, folder))))
        except DleError as exc:
            out.append((spec, exc))
    return out


def _in_folder(path: str, folder: str) -> bool:
    return not folder or path.casefold().startswith(folder.casefold() + "/")


def _left_lines(undo: BatchUndo) -> tuple[str, ...]:
    return tuple(f"{exc.path}: {exc}" for exc in undo.conflicts) + tuple(str(exc) for exc in undo.refused)


class WorldInfoService:
    def __init__(
        self,
        writer: NoteWriter,
        *,
        sources: Callable[[], Iterable[VaultSource]],
        snapshot: Callable[[], IndexSnapshot | None],
        tags: Callable[[], TagConfig] = TagConfig,
        settings: Callable[[], Settings] = Settings,
        on_event: EventFn | None = None,
    ) -> None:
        self.writer = writer
        self._sources = sources
        self._snapshot = snapshot
        self._tags = tags
        self._settings = settings
        self._on_event = on_event
        #: batch id → the cancel flag of an import running now
        self._running: dict[str, threading.Event] = {}

    # -- books ----------------------------------------------------------------------------------
    def list_books(
        self, install_root: Path, user: str = books.DEFAULT_USER, data_root: Path | None = None
    ) -> list[BookListing]:
        return books.list_books(install_root, user, data_root)

    @staticmethod
    def read_book(source: str | Path | bytes, name: str | None = None) -> WiBook:
        """A book from a file path or from bytes (an upload, pasted JSON); InputError when it is none."""
        if isinstance(source, bytes | bytearray):
            return books.parse_book(bytes(source), name or "pasted book")
        return books.read_book_file(Path(source))

    # -- the preview ----------------------------------------------------------------------------
    def _source(self, vault: str) -> VaultSource:
        sources = list(self._sources())
        for source in sources:
            if source.name == vault:
                return source
        names = ", ".join(repr(s.name) for s in sources) or "none"
        raise NotFound(f"no vault is named {vault!r} (open vaults: {names})")

    async def _existing(self, source: VaultSource, folder: str) -> dict[str, str]:
        """The notes that may be in the way, case-folded path → path: what the index knows of the
        vault, and for a folder vault the target folder as it is on disk right now."""
        found: dict[str, str] = {}
        snapshot = self._snapshot()
        if snapshot is not None:
            for e in snapshot.entries:
                if e.vault == source.name and _in_folder(e.path, folder):
                    found[e.path.casefold()] = e.path
            for s in snapshot.skipped:
                if s.vault == source.name and _in_folder(s.path, folder):
                    found[s.path.casefold()] = s.path
        if isinstance(source, FolderSource):
            root = source.root

            def scan() -> list[str]:
                real = confine_note(root, folder) if folder else os.path.realpath(root)
                try:
                    with os.scandir(real) as it:
                        return [item.name for item in it]
                except (FileNotFoundError, NotADirectoryError):
                    return []

            for name in await asyncio.to_thread(scan):
                path = f"{folder}/{name}" if folder else name
                found[path.casefold()] = path
        elif snapshot is None:
            listing = await source.list_notes()
            for path in listing.stamps:
                if _in_folder(path, folder):
                    found[path.casefold()] = path
        return found

    async def plan_import(
        self, book: WiBook, *, vault: str, folder: str = "", collision: Collision = "rename"
    ) -> ImportPlan:
        """What importing `book` into `vault`/`folder` would do, one row per entry; nothing is
        written. `collision`: what happens to an entry whose note name is taken in the vault."""
        if collision not in COLLISIONS:
            raise InputError(f"unknown collision choice {collision!r} (choose {', '.join(COLLISIONS)})")
        folder = check_folder(folder)
        source = self._source(vault)
        if vault in self.writer.read_only:
            raise WriteRefused(self.writer.read_only[vault])
        # The mapping and the note texts are CPU work (10,000 entries: seconds): off the loop.
        notes_made = await asyncio.to_thread(_make_notes, book, self._tags(), folder)
        existing = await self._existing(source, folder)
        problems = list(book.problems)
        notes = list(book_notes(book))
        if not notes_made:
            problems.append(f"{book.name} has no entries to import")
        if not isinstance(source, FolderSource):
            notes.append(
                f"{vault} is an Obsidian REST vault: notes cannot be deleted through it, so a cancelled or "
                "failed import, and Undo, cannot remove the notes it created there (they are listed)"
            )
        taken: set[str] = set()  # the paths earlier rows of this plan write
        rows: list[PlanRow] = []
        for spec, made in notes_made:
            warnings = list(spec.warnings)
            if isinstance(made, DleError):
                problems.append(f"{spec.title}: cannot be made into a note ({made}); skipped")
                rows.append(PlanRow(spec.uid, spec.title, "", "skip", None, (*warnings, str(made)), spec.kept, ""))
                continue
            text, path = made
            key = path.casefold()
            action: RowAction = "create"
            diff = base_hash = None
            if key in taken or (key in existing and collision == "rename"):
                free = next(
                    (p for p in imported_names(path) if p.casefold() not in taken and p.casefold() not in existing),
                    None,
                )
                if free is None:
                    action = "skip"
                    warnings.append(f"{path} and its {MAX_RENAME_TRIES} '_imported' names are all taken: skipped")
                    problems.append(
                        f"{spec.title}: {path} and its {MAX_RENAME_TRIES} '_imported' names are all taken; "
                        "the entry is skipped (rename or move those notes, or choose overwrite)"
                    )
                else:
                    why = "another entry of this book has the same name" if key in taken else f"{path} exists"
                    warnings.append(f"{why}: written as {free}")
                    action, path = "rename", free
            elif key in existing:
                path = existing[key]
                if collision == "skip":
                    action = "skip"
                    warnings.append(f"{path} exists: skipped")
                else:
                    action, diff, base_hash = await self._overwrite(vault, path, text, warnings)
            if action != "skip":
                taken.add(path.casefold())
            rows.append(PlanRow(spec.uid, spec.title, path, action, diff, tuple(warnings), spec.kept, text, base_hash))
        return ImportPlan(vault, folder, book.name, tuple(rows), tuple(problems), tuple(notes))

    async def _overwrite(
        self, vault: str, path: str, text: str, warnings: list[str]
    ) -> tuple[RowAction, str | None, str | None]:
        try:
            now = await self.writer.read(vault, path)
        except WriteError as exc:
            warnings.append(f"{path} cannot be overwritten ({exc}): skipped")
            return "skip", None, None
        if now.text is None:  # gone since it was listed
            return "create", None, None
        if now.text == text:
            warnings.append(f"{path} already holds exactly this note: nothing to write")
            return "skip", None, None
        return "overwrite", note_diff(now.text, text, path), now.hash

    # -- writing --------------------------------------------------------------------------------
    def _event(self, **data: Any) -> None:
        if self._on_event is not None:
            try:
                self._on_event("wi_import", **data)
            except Exception:
                log.exception("a World Info import listener failed")

    def cancel_import(self, batch: str | None = None) -> bool:
        """Ask the running import (`batch`; None: every one) to stop; it undoes what it wrote.
        Thread-safe. False when no such import runs."""
        events = [e for b, e in list(self._running.items()) if batch is None or b == batch]
        for event in events:
            event.set()
        return bool(events)

    @property
    def running(self) -> tuple[str, ...]:
        return tuple(self._running)

    async def run_import(
        self,
        plan: ImportPlan,
        *,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> ImportResult:
        """Write the plan's rows as one batch, re-indexed once at the end. `progress` hears (rows
        done, rows) after each row; `cancel` is looked at before each note is started. Cancelled,
        or failed on any note: what was written is undone and nothing of the import stays.

        A few notes are written at once (WRITERS): each write waits mostly on the disk (fsync of
        the note, of its folder, of the history), and those waits overlap."""
        if self.writer.history is None:
            raise WriteRefused("no write history is kept, so an import could not be undone; nothing written")
        if plan.vault in self.writer.read_only:
            raise WriteRefused(self.writer.read_only[plan.vault])
        batch = f"wi-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        cancel = cancel if cancel is not None else threading.Event()
        self._running[batch] = cancel
        total = len(plan.rows)
        finished: list[int] = []  # positions of the rows done, in the order they finished
        failure: list[tuple[int, PlanRow, Exception]] = []
        rows = iter(enumerate(plan.rows))
        last_event = 0.0

        async def writer() -> None:
            nonlocal last_event
            for position, row in rows:  # one iterator shared by the writers: each row is taken once
                if failure or cancel.is_set():
                    return
                try:
                    await self._write_row(plan.vault, row, batch)
                except Exception as exc:  # noqa: BLE001 - any failure stops the import; re-raised as ImportFailed
                    failure.append((position, row, exc))
                    return
                finished.append(position)
                done = len(finished)
                if progress is not None:
                    progress(done, total)
                now = time.monotonic()
                if done == total or now - last_event >= EVENT_INTERVAL_S:
                    last_event = now
                    self._event(batch=batch, phase="writing", done=done, total=total)

        self._event(batch=batch, phase="writing", done=0, total=total)
        try:
            async with self.writer.deferred_reindex():
                tasks = [asyncio.create_task(writer()) for _ in range(min(WRITERS, max(total, 1)))]
                try:
                    # asyncio.wait, not gather: a cancel of this task must not cut a write short
                    # (its thread would finish it unrecorded); the writers finish theirs first.
                    await asyncio.wait(tasks)
                except asyncio.CancelledError:
                    cancel.set()
                    await asyncio.wait(tasks)
                    await self._take_back(batch, total)
                    self._event(batch=batch, phase="failed", done=len(finished), total=total, message="cancelled")
                    raise
                if failure:
                    position, row, exc = min(failure, key=lambda f: f[0])
                    undo = await self._take_back(batch, total)
                    self._event(batch=batch, phase="failed", done=len(finished), total=total, message=str(exc))
                    raise self._failure(batch, total, row, position + 1, len(finished), exc, undo) from exc
                if len(finished) < total:
                    return await self._cancelled(batch, total, len(finished), plan)
        finally:
            self._running.pop(batch, None)
        self._event(batch=batch, phase="done", done=total, total=total)
        written = tuple(r.path for r in plan.rows if r.action != "skip")
        skipped = tuple(r.path for r in plan.rows if r.action == "skip")
        return ImportResult(batch, written, skipped, cancelled=False)

    async def _write_row(self, vault: str, row: PlanRow, batch: str) -> None:
        if row.action == "skip":
            return
        if row.action == "overwrite":
            if row.base_hash is None:
                raise InputError(f"{row.path}: an overwrite row must name the note version it replaces")
            await self.writer.write(
                vault, row.path, row.text, base=row.base_hash, feature=IMPORT_FEATURE, action="replace", batch=batch
            )
        else:
            await self.writer.create(vault, row.path, row.text, feature=IMPORT_FEATURE, batch=batch)

    async def _take_back(self, batch: str, total: int) -> BatchUndo:
        self._event(batch=batch, phase="undoing", done=0, total=total)
        return await self.writer.undo_batch(batch, feature=UNDO_FEATURE)

    async def _cancelled(self, batch: str, total: int, done: int, plan: ImportPlan) -> ImportResult:
        undo = await self._take_back(batch, total)
        self._event(batch=batch, phase="cancelled", done=done, total=total)
        removed = tuple(r.path for r in undo.undone)
        skipped = tuple(r.path for r in plan.rows if r.action == "skip")
        return ImportResult(batch, (), skipped, cancelled=True, removed=removed, left=_left_lines(undo))

    @staticmethod
    def _failure(
        batch: str, total: int, row: PlanRow | None, position: int, written: int, exc: BaseException, undo: BatchUndo
    ) -> ImportFailed:
        where = f" at {row.path} (entry {position} of {total})" if row is not None else ""
        cause = str(exc) if isinstance(exc, DleError) else f"{type(exc).__name__}: {exc}"
        removed = tuple(r.path for r in undo.undone)
        left = _left_lines(undo)
        message = f"the import stopped{where}: {cause}. "
        if left:
            message += (
                f"{len(removed)} of the notes it had written were removed again; these could not be: " + "; ".join(left)
            )
        else:
            message += f"The {written} notes it had written were removed again: the vault is as it was"
        return ImportFailed(message, batch=batch, removed=removed, left=left)

    async def undo_import(self, batch: str) -> BatchUndo:
        """Undo a whole import (one re-index). Notes edited since are left as they are and listed
        in the answer's `conflicts`; the others are undone all the same."""
        if batch in self._running:
            raise WriteRefused("that import is still running: cancel it instead (a cancelled import removes its notes)")
        undo = await self.writer.undo_batch(batch, feature=UNDO_FEATURE)
        if not undo.undone and not undo.conflicts and not undo.refused:
            history = self.writer.history
            if history is None or not await asyncio.to_thread(history.for_batch, batch):
                raise NotFound(f"no import {batch!r} is in the write history")
            raise WriteRefused(f"import {batch} was already undone")
        return undo

    async def recent_imports(self, limit: int = 20) -> list[BatchSummary]:
        """The imports in the write history, newest first (each with how much of it was undone)."""
        history = self.writer.history
        if history is None:
            return []
        return await asyncio.to_thread(history.batches, "wi-", limit)

    # -- export ---------------------------------------------------------------------------------
    def entries_for_export(
        self, *, folder: str | None = None, tag: str | None = None, vault: str | None = None
    ) -> list[Entry]:
        snapshot = self._snapshot()
        if snapshot is None:
            raise NotAvailableHere("the vault is not indexed yet; export once the index is ready")
        folder_rel = check_folder(folder) if folder else ""
        wanted_tag = tag.strip().lstrip("#").casefold() if tag else None
        if vault is not None:
            self._source(vault)
        chosen = [
            e
            for e in snapshot.entries
            if (vault is None or e.vault == vault)
            and _in_folder(e.path, folder_rel)
            and (wanted_tag is None or wanted_tag in {t.casefold() for t in e.tags})
        ]
        if not chosen:
            what = [
                f"vault {vault}" if vault else "",
                f"folder {folder_rel}" if folder_rel else "",
                f"tag {tag}" if tag else "",
            ]
            scope = ", ".join(w for w in what if w) or "the index"
            raise InputError(f"no lore entries in {scope}; nothing to export")
        return chosen

    async def export(
        self, *, folder: str | None = None, tag: str | None = None, vault: str | None = None
    ) -> tuple[dict[str, Any], ExportReport]:
        """The indexed entries (filtered by vault, folder and tag) as a World Info book, and the
        report of what World Info cannot express, entry by entry."""
        chosen = self.entries_for_export(folder=folder, tag=tag, vault=vault)
        return await asyncio.to_thread(export_book, chosen, export_defaults(self._settings()), self._tags())


def book_json(book: dict[str, Any]) -> str:
    """A book's file text, as SillyTavern writes its own (UTF-8, indented)."""
    return json.dumps(book, ensure_ascii=False, indent=4) + "\n"


def save_book(path: str | Path, book: dict[str, Any]) -> None:
    """Write a book file atomically (never a half-written book where an old one was)."""
    write_atomic(path, book_json(book))
