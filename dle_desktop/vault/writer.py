"""The one way the app changes a note: create it, replace its body, set or remove frontmatter
fields, or undo one of its own writes. Qt-free; async, run on the engine's loop.

Every write names the version it was based on (the content hash the index holds for the note,
`Entry.content_hash`, or a NoteVersion read here). If the file is not that version any more,
nothing is written and WriteConflict carries the three texts a person needs to decide. Creating
never replaces a file. Each write is recorded in the write history (before, after, when, which
feature) and the note is re-indexed at once through the `on_written` hook; inside
`deferred_reindex()` the writes of a batch (an import of 1,000 notes) are re-indexed once, at the
end. Writes made under one batch id are undone together by `undo_batch`.

Folder vaults are written atomically (vault/note_files.py). Obsidian REST vaults are written the
way DLE does, with PUT, after a GET that checks the version: OLRA has no conditional PUT, so an
edit made in Obsidian in the instant between the two is the one gap left.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.hashing import simple_hash
from dle_desktop.errors import NoteExists, WriteConflict, WriteError, WriteRefused
from dle_desktop.vault import note_files
from dle_desktop.vault.filenames import check_note_path, confine_note, inside, note_path_for_title
from dle_desktop.vault.frontmatter_edit import REMOVE, edit_fields, replace_body
from dle_desktop.vault.note_files import ABSENT, Changed
from dle_desktop.vault.sources import FolderSource, VaultSource
from dle_desktop.vault.write_history import WriteHistory, WriteRecord

log = logging.getLogger(__name__)

#: How long a write waits for the index to take the note before it returns anyway (the file
#: watcher or the next sync still picks it up).
INDEX_WAIT_S = 30.0

#: (vault name, vault-relative paths written) → None, an awaitable, or a concurrent Future.
OnWritten = Callable[[str, set[str]], Any]

#: Inside `NoteWriter.deferred_reindex()`: vault name → paths written and not yet re-indexed. A
#: context variable, not a flag on the writer: only the coroutine that asked (and what it awaits)
#: defers; another feature writing meanwhile is re-indexed at once as always.
_deferred: contextvars.ContextVar[dict[str, set[str]] | None] = contextvars.ContextVar("deferred_reindex", default=None)


@dataclass(frozen=True)
class NoteVersion:
    """A note as read: its text and content hash (both None when there is no such note)."""

    vault: str
    path: str
    text: str | None
    hash: str | None

    @property
    def exists(self) -> bool:
        return self.text is not None


#: What a write is based on: a NoteVersion read earlier, or just its content hash.
Base = NoteVersion | str


@dataclass(frozen=True)
class WriteResult:
    vault: str
    path: str
    before_text: str | None
    after_text: str | None
    record: WriteRecord | None  # None: nothing changed (the text was already so) or no history kept
    written: bool  # False when the new text equalled the old: nothing was written

    @property
    def after_hash(self) -> str | None:
        return None if self.after_text is None else simple_hash(self.after_text)


@dataclass(frozen=True)
class BatchUndo:
    """What `undo_batch` did: the writes it took back, and the notes it left because they changed
    after the batch wrote them (each a WriteConflict with the texts to compare) or could not be
    undone at all (WriteRefused, e.g. a delete in an Obsidian REST vault)."""

    batch: str
    undone: tuple[WriteResult, ...]
    conflicts: tuple[WriteConflict, ...]
    refused: tuple[WriteError, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.conflicts and not self.refused


class _FolderBackend:
    def __init__(self, source: FolderSource) -> None:
        self.source = source

    def _real(self, rel: str) -> str:
        return confine_note(self.source.root, rel)

    async def read(self, rel: str) -> str | None:
        return await asyncio.to_thread(lambda: note_files.read_note(self._real(rel)))

    async def commit(self, rel: str, expected: str, new_text: str | None, just_read: str | None = None) -> set[str]:
        # The file is read again under the lock, just before the rename: `just_read` is not enough.
        def run() -> set[str]:
            real = self._real(rel)
            root_real = os.path.realpath(self.source.root)
            if not os.path.isdir(root_real):
                raise WriteError(f"the vault folder {self.source.root} does not exist")
            note_files.commit(real, expected, new_text, note_files.make_folders(root_real, inside))
            # A symlinked note inside the vault is written where it really is; both paths changed.
            return {rel, os.path.relpath(real, root_real).replace(os.sep, "/")}

        return await asyncio.to_thread(run)


class _SourceBackend:
    """Any other source (Obsidian REST): read, compare, then write through the source."""

    def __init__(self, source: VaultSource) -> None:
        self.source = source

    async def read(self, rel: str) -> str | None:
        return await self.source.read_optional(rel)

    async def commit(self, rel: str, expected: str, new_text: str | None, just_read: str | None = None) -> set[str]:
        # A text read a moment ago for the same check saves a second GET of a large note.
        current = just_read if just_read is not None else await self.read(rel)
        if not note_files.matches(current, expected):
            raise Changed(current)
        if new_text is None:
            raise WriteRefused(
                f"{rel}: notes cannot be deleted through {self.source.describe()} (DLE's Obsidian REST "
                "subset has no DELETE); delete it in Obsidian"
            )
        await self.source.write_text(rel, new_text)
        return {rel}


class NoteWriter:
    """Writes notes into the vaults `sources` names (a list, or a callable giving the current one)."""

    def __init__(
        self,
        sources: Iterable[VaultSource] | Callable[[], Iterable[VaultSource]],
        *,
        history: WriteHistory | None = None,
        on_written: OnWritten | None = None,
        read_only: Mapping[str, str] | None = None,
    ) -> None:
        self._sources = sources if callable(sources) else list(sources)
        self.history = history
        self.on_written = on_written
        #: vault name → why it must not be written (the bundled sample vault).
        self.read_only = dict(read_only or {})

    # -- looking up -----------------------------------------------------------------------------
    def _source(self, vault: str) -> VaultSource:
        sources = list(self._sources() if callable(self._sources) else self._sources)
        for source in sources:
            if source.name == vault:
                return source
        names = ", ".join(repr(s.name) for s in sources) or "none"
        raise WriteRefused(f"no vault is named {vault!r} (open vaults: {names}); nothing written")

    def _backend(self, vault: str, for_write: bool = True) -> _FolderBackend | _SourceBackend:
        source = self._source(vault)
        if for_write and vault in self.read_only:
            raise WriteRefused(self.read_only[vault])
        return _FolderBackend(source) if isinstance(source, FolderSource) else _SourceBackend(source)

    async def read(self, vault: str, path: str) -> NoteVersion:
        """The note as it is now, to base a write on."""
        rel = check_note_path(path)
        text = await self._backend(vault, for_write=False).read(rel)
        return NoteVersion(vault, rel, text, None if text is None else simple_hash(text))

    def history_for(self, vault: str, path: str, limit: int = 100) -> list[WriteRecord]:
        """The app's writes of one note, newest first ([] without a history)."""
        if self.history is None:
            return []
        return self.history.for_note(vault, check_note_path(path), limit)

    # -- writing --------------------------------------------------------------------------------
    async def create(self, vault: str, path: str, text: str, *, feature: str, batch: str | None = None) -> WriteResult:
        """A new note at `path`. NoteExists when any file is there already: edit that note instead.
        `batch`: the id shared by the writes of one action, for `undo_batch`."""
        rel = check_note_path(path)
        backend = self._backend(vault)
        try:
            changed = await backend.commit(rel, ABSENT, text)
        except Changed as exc:
            raise NoteExists(
                f"{rel} already exists in {vault}; nothing written (open it and edit it instead, or "
                "choose another title)",
                vault,
                rel,
                exc.current,
            ) from None
        return await self._finish(vault, rel, changed, feature, "create", None, text, batch=batch)

    async def create_titled(
        self, vault: str, title: str, text: str, *, folder: str = "", feature: str, batch: str | None = None
    ) -> WriteResult:
        """A new note named after `title` the way DLE names it (`folder/<sanitised title>.md`)."""
        return await self.create(vault, note_path_for_title(title, folder), text, feature=feature, batch=batch)

    async def write(
        self,
        vault: str,
        path: str,
        text: str,
        *,
        base: Base,
        feature: str,
        action: str = "replace",
        batch: str | None = None,
    ) -> WriteResult:
        """Replace the whole note with `text`, if it is still the version `base`."""
        return await self._edit(vault, path, base, feature, action, lambda _current: text, batch=batch)

    async def replace_body(self, vault: str, path: str, body: str, *, base: Base, feature: str) -> WriteResult:
        """Replace what follows the frontmatter; the frontmatter stays byte for byte."""
        return await self._edit(vault, path, base, feature, "edit-body", lambda current: replace_body(current, body))

    async def set_fields(
        self, vault: str, path: str, changes: Mapping[str, Any], *, base: Base, feature: str
    ) -> WriteResult:
        """Set frontmatter fields (a value of REMOVE removes that field); only their text changes."""
        return await self._edit(
            vault, path, base, feature, "edit-fields", lambda current: edit_fields(current, changes)
        )

    async def remove_fields(
        self, vault: str, path: str, names: Sequence[str], *, base: Base, feature: str
    ) -> WriteResult:
        return await self.set_fields(vault, path, dict.fromkeys(names, REMOVE), base=base, feature=feature)

    async def undo(self, record_id: int, *, feature: str = "undo") -> WriteResult:
        """Put back what a recorded write replaced, if the note is still as that write left it: a
        create is undone by deleting the note, a delete by creating it again."""
        if self.history is None:
            raise WriteRefused("no write history is kept, so there is nothing to undo")
        record = self.history.get(record_id)
        if record is None:
            raise WriteRefused(f"write #{record_id} is not in the history (older writes are forgotten)")
        if record.undone:
            raise WriteRefused(f"write #{record_id} was already undone (by write #{record.undone_by})")
        backend = self._backend(record.vault)
        expected = ABSENT if record.after_text is None else simple_hash(record.after_text)
        try:
            changed = await backend.commit(record.path, expected, record.before_text)
        except Changed as exc:
            raise self._conflict(
                record.vault,
                record.path,
                expected if expected != ABSENT else None,
                record.after_text,
                exc.current,
                record.before_text,
                f"{record.path} changed after the write being undone; nothing was undone",
            ) from None
        return await self._finish(
            record.vault, record.path, changed, feature, "undo", record.after_text, record.before_text, undoes=record.id
        )

    async def undo_batch(self, batch: str, *, feature: str = "undo") -> BatchUndo:
        """Undo every write of `batch` not undone yet, newest first, re-indexed once at the end. A
        note changed since the batch wrote it is left as it is (a WriteConflict in the answer);
        the batch's other writes are still undone."""
        if self.history is None:
            raise WriteRefused("no write history is kept, so there is nothing to undo")
        records = [r for r in await asyncio.to_thread(self.history.for_batch, batch) if not r.undone]
        undone: list[WriteResult] = []
        conflicts: list[WriteConflict] = []
        refused: list[WriteError] = []
        async with self.deferred_reindex():
            for record in records:
                try:
                    undone.append(await self.undo(record.id, feature=feature))
                except WriteConflict as exc:
                    conflicts.append(exc)
                except WriteError as exc:
                    refused.append(exc)
        return BatchUndo(batch, tuple(undone), tuple(conflicts), tuple(refused))

    @contextlib.asynccontextmanager
    async def deferred_reindex(self) -> AsyncIterator[None]:
        """The writes made inside are re-indexed once, when it ends (however it ends), instead of
        one by one: N notes written cost one index pass, not N. Nested uses join the outer one."""
        if _deferred.get() is not None:
            yield
            return
        pending: dict[str, set[str]] = {}
        token = _deferred.set(pending)
        try:
            yield
        finally:
            _deferred.reset(token)
            for vault, paths in pending.items():
                if paths:
                    await self._reindex(vault, paths)

    # -- the common path ------------------------------------------------------------------------
    async def _edit(
        self,
        vault: str,
        path: str,
        base: Base,
        feature: str,
        action: str,
        transform: Callable[[str], str],
        batch: str | None = None,
    ) -> WriteResult:
        rel = check_note_path(path)
        backend = self._backend(vault)
        base_hash, base_text = (base.hash, base.text) if isinstance(base, NoteVersion) else (base, None)
        if not base_hash:
            raise WriteRefused(f"{rel}: a change must name the version it was based on; nothing written")
        current = await backend.read(rel)
        if current is None or simple_hash(current) != base_hash:
            raise self._conflict_for(vault, rel, base_hash, base_text, current, transform)
        new_text = transform(current)
        if new_text == current:
            return WriteResult(vault, rel, current, current, None, written=False)
        try:
            changed = await backend.commit(rel, base_hash, new_text, just_read=current)
        except Changed as exc:
            raise self._conflict_for(vault, rel, base_hash, current, exc.current, transform) from None
        return await self._finish(vault, rel, changed, feature, action, current, new_text, batch=batch)

    def _conflict_for(
        self,
        vault: str,
        rel: str,
        base_hash: str,
        base_text: str | None,
        current: str | None,
        transform: Callable[[str], str],
    ) -> WriteConflict:
        # What would have been written: the change applied to the version it was meant for, or,
        # when only its hash is known, to the note as it is now.
        proposed = None
        for source_text in (base_text, current):
            if source_text is not None:
                try:
                    proposed = transform(source_text)
                except Exception:  # noqa: BLE001 - the conflict is the news; a failed preview is not
                    proposed = None
                break
        why = "was deleted" if current is None else "changed on disk"
        return self._conflict(
            vault,
            rel,
            base_hash,
            base_text,
            current,
            proposed,
            f"{rel} {why} since it was read; nothing written. Compare the versions and choose",
        )

    @staticmethod
    def _conflict(
        vault: str,
        rel: str,
        expected_hash: str | None,
        expected_text: str | None,
        current: str | None,
        proposed: str | None,
        message: str,
    ) -> WriteConflict:
        return WriteConflict(
            message,
            vault=vault,
            path=rel,
            expected_hash=expected_hash,
            expected_text=expected_text,
            current_text=current,
            proposed_text=proposed,
        )

    async def _finish(
        self,
        vault: str,
        rel: str,
        changed: set[str],
        feature: str,
        action: str,
        before: str | None,
        after: str | None,
        undoes: int | None = None,
        batch: str | None = None,
    ) -> WriteResult:
        record = None
        if self.history is not None:
            try:
                record = await asyncio.to_thread(
                    self.history.record,
                    vault=vault,
                    path=rel,
                    feature=feature,
                    action=action,
                    before_text=before,
                    after_text=after,
                    before_hash=None if before is None else simple_hash(before),
                    after_hash=None if after is None else simple_hash(after),
                    undoes=undoes,
                    batch=batch,
                )
            except Exception:
                log.exception("%s/%s was written but its write history could not be saved", vault, rel)
        pending = _deferred.get()
        if pending is not None:
            pending.setdefault(vault, set()).update(changed)
        else:
            await self._reindex(vault, changed)
        return WriteResult(vault, rel, before, after, record, written=True)

    async def _reindex(self, vault: str, changed: set[str]) -> None:
        if self.on_written is None:
            return
        try:
            result = self.on_written(vault, set(changed))
            if isinstance(result, concurrent.futures.Future):
                result = asyncio.wrap_future(result)
            if inspect.isawaitable(result):
                await asyncio.wait_for(result, INDEX_WAIT_S)
        except TimeoutError:
            log.warning(
                "indexing %s took longer than %g s; the next sync picks it up", ", ".join(changed), INDEX_WAIT_S
            )
        except Exception:
            log.exception("re-indexing %s after writing it failed", ", ".join(sorted(changed)))
