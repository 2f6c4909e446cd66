"""Builds index snapshots from vault sources, re-parsing only what changed.

A full sync lists every vault and reads only files whose stamp changed (folders) or all files
(REST, like DLE), re-parsing only those whose content hash changed. A path sync (from the file
watcher) touches just the named files. Each sync ends in one new immutable snapshot; nothing is
published until the whole sync succeeded, so a cancelled or failed sync leaves the last good
index in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.changes import ChangeSet, diff_snapshots
from dle_desktop.core.entry import Entry, Skip, TagConfig
from dle_desktop.core.fields import DEFAULT_DEFINITIONS, FieldDefinitions, parse_field_definitions
from dle_desktop.core.index import (
    IndexSnapshot,
    VaultSlice,
    build_snapshot,
    derived_fields,
    entry_values,
    patch_snapshot,
    same_view,
    with_derived,
)
from dle_desktop.core.user_activity import UserActivity
from dle_desktop.errors import VaultError
from dle_desktop.vault.cache import FileRecord, IndexCache
from dle_desktop.vault.collector import collector_paused
from dle_desktop.vault.read_batch import (
    PROCESS_MIN_NOTES,
    BatchJob,
    BatchProcesses,
    ParseSettings,
    ReadRecord,
    read_folder_batch,
    record_of,
)
from dle_desktop.vault.sources import FolderSource, VaultSource

log = logging.getLogger(__name__)

#: Files read and parsed per worker-thread hop: big enough to amortise the hop, small enough
#: that progress moves and the engine loop keeps serving requests in between.
BATCH = 200

ProgressFn = Callable[[int, int, str], None]
#: the entries parsed so far by a first index (a window can show them before it ends)
PartialFn = Callable[[list[Entry]], None]
#: the least time between two partial results
PARTIAL_EVERY_S = 0.75


@dataclass(frozen=True)
class ParseOptions:
    tags: TagConfig = TagConfig()
    lenient: bool = True
    field_definitions_path: str = "DeepLore/field-definitions.yaml"
    conflict_mode: str = "all"

    def signature(self) -> str:
        return f"{self.tags.signature()}|lenient={int(self.lenient)}"


@dataclass(frozen=True)
class SyncResult:
    snapshot: IndexSnapshot
    changes: ChangeSet
    seconds: float
    parsed: int = 0  # files actually re-parsed
    read: int = 0  # files actually read
    vault_errors: dict[str, str] = field(default_factory=dict)


class VaultIndexer:
    def __init__(
        self,
        sources: Sequence[VaultSource],
        options: ParseOptions = ParseOptions(),
        cache: IndexCache | None = None,
        activity: UserActivity | None = None,
    ) -> None:
        self.sources = [s for s in sources if s.enabled]
        #: a sync gives way to the window's user between its pieces (listing folders, publishing)
        self.activity = activity or UserActivity()
        self.options = options
        self.cache = cache
        self.field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS
        self.snapshot: IndexSnapshot | None = None
        self._records: dict[str, dict[str, FileRecord]] = {}
        self._partial_at = 0.0  # when a first index last handed out its partial result
        self._partial_count = 0  # and how many entries it held
        self._problems: dict[str, tuple[str, ...]] = {}
        self._errors: dict[str, str] = {}
        #: per vault: (records dict the order was computed for, sorted paths)
        self._order: dict[str, tuple[dict[str, Any], list[str]]] = {}
        self._lock = asyncio.Lock()
        self.cache_dirty = False
        #: a folder sync of this many notes or more reads them in worker processes
        self.process_min_notes = PROCESS_MIN_NOTES

    # -- helpers --------------------------------------------------------------------------
    @property
    def primary(self) -> VaultSource | None:
        return self.sources[0] if self.sources else None

    def source(self, name: str) -> VaultSource | None:
        return next((s for s in self.sources if s.name == name), None)

    def _cache_key(self, source: VaultSource) -> str:
        return f"{source.kind}|{source.name}|{source.describe()}|{self.options.signature()}"

    def _slices(self) -> list[VaultSlice]:
        out = []
        for s in self.sources:
            records = self._records.get(s.name, {})
            order = self._order.get(s.name)
            if order is None or order[0] is not records:
                # Re-sorting 10k paths on every keystroke adds up; the path order only changes
                # when a note appears or disappears.
                prev = order[1] if order is not None else None
                paths = (
                    prev
                    if prev is not None and len(prev) == len(records) and all(p in records for p in prev)
                    else sorted(records)
                )
                order = (records, paths)
                self._order[s.name] = order
            results = [records[p].result for p in order[1]]
            entries = tuple(r for r in results if isinstance(r, Entry))
            skipped = tuple(r for r in results if isinstance(r, Skip))
            out.append(VaultSlice(s.name, entries, skipped, self._problems.get(s.name, ()), self._errors.get(s.name)))
        return out

    def _publish(self, started: float, parsed: int, read: int) -> SyncResult:
        old = self.snapshot
        new = build_snapshot(self._slices(), self.field_definitions, self.options.conflict_mode, previous=old)
        if old is not None and same_view(old, new):
            # A sync that changed nothing (a forced re-parse, a touched file) keeps the published
            # snapshot: its version, keyword automaton and BM25 stay valid, and nothing downstream
            # (clients watching index_version, the AI-search cache) is invalidated for nothing.
            self._adopt_parsed(old)
            return SyncResult(old, ChangeSet(), time.perf_counter() - started, parsed, read, dict(self._errors))
        changes = diff_snapshots(old, new)
        self.snapshot = new
        return SyncResult(new, changes, time.perf_counter() - started, parsed, read, dict(self._errors))

    def _adopt_parsed(self, snapshot: IndexSnapshot) -> None:
        """Point the file records back at the kept snapshot's parsed entries (equal by value),
        so the next edit can still be patched into it (patch_snapshot needs them by identity)."""
        held = snapshot._finalized
        for records in self._records.values():
            for path, rec in records.items():
                if not isinstance(rec.result, Entry):
                    continue
                prev = held.get(rec.result.uid)
                if prev is not None and prev[0] is not rec.result and entry_values(prev[0]) == entry_values(rec.result):
                    records[path] = FileRecord(rec.stamp, rec.content_hash, prev[0])

    def _patch(
        self,
        vault: str,
        paths: list[str],
        prior: dict[str, FileRecord],
        records: dict[str, FileRecord],
        started: float,
        parsed: int,
        read: int,
    ) -> SyncResult | None:
        """The fast path for edits that change no title and add or remove no note: swap the
        edited entries into the current snapshot (a keystroke in a 10k vault costs milliseconds)."""
        old = self.snapshot
        if old is None or (self.options.conflict_mode != "all" and len(self.sources) > 1):
            return None
        replacements = []
        for p in paths:
            before, after = prior.get(p), records.get(p)
            if before is None or after is None:
                return None  # a note appeared or disappeared
            if after.result is before.result:
                continue
            if not (isinstance(before.result, Entry) and isinstance(after.result, Entry)):
                return None  # skipped-note list changes: full build
            replacements.append((before.result, after.result))
        if not replacements:
            return SyncResult(old, ChangeSet(), time.perf_counter() - started, parsed, read, dict(self._errors))
        new = patch_snapshot(old, replacements)
        if new is None:
            return None
        modified = tuple(f"{a.vault}:{a.path}" for a, b in replacements if a.content_hash != b.content_hash)
        keys_changed = tuple(f"{a.vault}:{a.path}" for a, b in replacements if a.keys != b.keys)
        self.snapshot = new
        return SyncResult(
            new,
            ChangeSet(modified=modified, keys_changed=keys_changed),
            time.perf_counter() - started,
            parsed,
            read,
            dict(self._errors),
        )

    # -- warm start -----------------------------------------------------------------------
    def load_cache(self) -> IndexSnapshot | None:
        """Publish the last saved index at once (no file is read); None when nothing is cached."""
        if self.cache is None or not self.sources:
            return None
        with collector_paused():  # the loaded entries and the snapshot built on them all stay alive
            return self._load_cache()

    def _load_cache(self) -> IndexSnapshot | None:
        assert self.cache is not None
        loaded_any = False
        titles = None
        finalized: dict[str, Entry] = {}
        derived: dict[str, Any] = {}
        for s in self.sources:
            hit = self.cache.load(self._cache_key(s))
            if hit is None:
                continue
            records, meta = hit
            self._records[s.name] = records
            if s is self.primary and isinstance(meta.get("field_definitions"), FieldDefinitions):
                self.field_definitions = meta["field_definitions"]
            if s is self.primary and isinstance(meta.get("titles"), dict):
                titles = meta["titles"]
            if isinstance(meta.get("finalized"), dict):
                finalized.update(meta["finalized"])
            if isinstance(meta.get("derived"), dict):
                derived.update(meta["derived"])
            loaded_any = True
        if not loaded_any:
            return None
        slices = self._slices()
        # Finalized copies saved with the cache are used only for the exact parse they came from.
        reuse = None
        if titles is not None and (finalized or derived):
            raw_by_uid = {e.uid: e for sl in slices for e in sl.entries}
            checked = {
                uid: f
                for uid, f in finalized.items()
                if isinstance(f, Entry)
                and (r := raw_by_uid.get(uid)) is not None
                and r.content_hash == f.content_hash
                and r.title == f.title
            }
            if self.options.conflict_mode != "merge":  # a merged entry is not its parse plus links
                for uid, saved in derived.items():
                    r = raw_by_uid.get(uid)
                    if r is None or not isinstance(saved, tuple) or len(saved) != 6:
                        continue
                    if saved[:2] == (r.content_hash, r.title):  # saved for this very parse
                        checked[uid] = with_derived(r, saved[2:])
            reuse = (titles, checked)
        self.snapshot = build_snapshot(
            slices,
            self.field_definitions,
            self.options.conflict_mode,
            extra_warnings=("index loaded from cache; checking the vaults for changes",),
            reuse=reuse,
        )
        return self.snapshot

    def save_cache(self) -> None:
        if self.cache is None:
            return
        snap = self.snapshot
        for s in self.sources:
            if s.name in self._records and s.name not in self._errors:
                meta: dict[str, Any] = {"field_definitions": self.field_definitions} if s is self.primary else {}
                if snap is not None and snap._titles is not None:
                    # How finalized entries differ from their parsed form: a warm start then
                    # publishes without resolving 70k links again. For an entry that is its
                    # file's parse plus links, the links alone (the parse is in the records:
                    # saving the whole entry twice doubled the file); any other in full.
                    parsed = {
                        rec.result.uid: rec.result
                        for rec in self._records[s.name].values()
                        if isinstance(rec.result, Entry)
                    }
                    meta["finalized"], meta["derived"] = {}, {}
                    for uid, (raw, fin) in list(snap._finalized.items()):
                        if fin is raw or fin.vault != s.name:
                            continue
                        if parsed.get(uid) is raw:
                            meta["derived"][uid] = (raw.content_hash, raw.title, *derived_fields(fin))
                        else:
                            meta["finalized"][uid] = fin
                    if s is self.primary:
                        meta["titles"] = snap._titles
                try:
                    self.cache.save(self._cache_key(s), self._records[s.name], meta, self.activity.give_way)
                except OSError as exc:
                    log.warning("could not save the index cache for %s: %s", s.name, exc)

    # -- field definitions ----------------------------------------------------------------
    async def _load_field_definitions(self) -> bool:
        """Read the primary vault's field definitions; True when their shape changed."""
        primary = self.primary
        if primary is None:
            return False
        path = self.options.field_definitions_path
        try:
            text = await primary.read_optional(path)
        except VaultError as exc:
            log.warning("field definitions unreadable (%s); keeping the current ones", exc)
            return False
        new = DEFAULT_DEFINITIONS if text is None else parse_field_definitions(text, path)
        changed = new.signature() != self.field_definitions.signature()
        self.field_definitions = new
        return changed

    # -- reading --------------------------------------------------------------------------
    def _batch_job(
        self,
        source: VaultSource,
        paths: Sequence[str],
        stamps: dict[str, str | None],
        prior: dict[str, FileRecord],
        force: bool,
    ) -> BatchJob:
        settings = ParseSettings(self.options.tags, self.field_definitions, self.options.lenient, force)
        hashes = {p: rec.content_hash for p in paths if (rec := prior.get(p)) is not None}
        return BatchJob(source.name, tuple(paths), {p: stamps.get(p) for p in paths}, hashes, settings)

    @staticmethod
    def _records_of(read: dict[str, ReadRecord], prior: dict[str, FileRecord]) -> dict[str, FileRecord]:
        """A batch's records, each unchanged note keeping the parse it had."""
        return {
            p: FileRecord(stamp, digest, prior[p].result if res is None else res)
            for p, (stamp, digest, res) in read.items()
        }

    async def _read_parse(
        self,
        source: VaultSource,
        paths: list[str],
        stamps: dict[str, str | None],
        prior: dict[str, FileRecord],
        force: bool,
    ) -> dict[str, FileRecord]:
        """Read `paths`, re-parsing only files whose content hash changed (or all with `force`)."""
        job = self._batch_job(source, paths, stamps, prior, force)
        if isinstance(source, FolderSource):
            return self._records_of(await asyncio.to_thread(read_folder_batch, source, job), prior)

        sem = asyncio.Semaphore(source.max_concurrency)

        async def fetch(path: str) -> tuple[str, str | None, str | None]:
            async with sem:
                try:
                    return path, await source.read_text(path), None
                except FileNotFoundError:
                    return path, None, "missing"
                except VaultError as exc:
                    return path, None, str(exc)

        fetched = await asyncio.gather(*(fetch(p) for p in paths))
        present = [(p, t, e) for p, t, e in fetched if e != "missing"]
        read = await asyncio.to_thread(lambda: {p: record_of(job, p, t, e) for p, t, e in present})
        return self._records_of(read, prior)

    async def _batches(
        self,
        source: VaultSource,
        to_read: list[str],
        stamps: dict[str, str | None],
        prior: dict[str, FileRecord],
        force: bool,
    ) -> AsyncGenerator[tuple[list[str], dict[str, FileRecord]], None]:
        """Each batch of `to_read` with its records, in order. A big folder sync reads its batches
        in worker processes, a few at a time; if they cannot start or break, the rest is read here."""
        chunks = [to_read[i : i + BATCH] for i in range(0, len(to_read), BATCH)]
        if isinstance(source, FolderSource) and len(to_read) >= self.process_min_notes:
            processes = BatchProcesses()
            loop = asyncio.get_running_loop()
            futures: list[asyncio.Future[dict[str, ReadRecord]]] = []
            try:
                pool = processes.executor()
                futures = [
                    loop.run_in_executor(
                        pool, read_folder_batch, source, self._batch_job(source, c, stamps, prior, force)
                    )
                    for c in chunks
                ]
                while chunks:
                    await asyncio.sleep(0)  # a batch already back does not suspend: let a cancel land
                    read = await futures[0]
                    futures.pop(0)
                    yield chunks.pop(0), self._records_of(read, prior)
            except (BrokenProcessPool, OSError, RuntimeError) as exc:
                log.warning("reading %s in worker processes failed (%s); reading the rest here", source.name, exc)
            finally:
                for f in futures:
                    f.cancel()
                processes.close()
        for chunk in chunks:
            yield chunk, await self._read_parse(source, chunk, stamps, prior, force)

    async def _sync_vault(
        self,
        source: VaultSource,
        force: bool,
        progress: ProgressFn | None,
        counters: list[int],
        total_hint: list[int],
        partial: PartialFn | None = None,
    ) -> None:
        prior = self._records.get(source.name, {})
        try:
            listing = await source.list_notes(self.activity.give_way)
        except VaultError as exc:
            # Keep what we had; say why. DLE does the same for a failing vault.
            self._errors[source.name] = f"could not be read: {exc}"
            return
        self._errors.pop(source.name, None)
        stamps = listing.stamps
        if not stamps and prior and not listing.partial:
            log.warning("vault %s listed no notes but had %d before", source.name, len(prior))
        records: dict[str, FileRecord] = {}
        to_read: list[str] = []
        for path, stamp in stamps.items():
            old = prior.get(path)
            if not force and old is not None and stamp is not None and old.stamp == stamp:
                records[path] = old
            else:
                to_read.append(path)
        total_hint[0] += len(to_read)
        async with contextlib.aclosing(self._batches(source, to_read, stamps, prior, force)) as batches:
            async for chunk, read in batches:
                records.update(read)
                counters[0] += len(chunk)
                counters[1] += sum(
                    1 for p in chunk if p in records and (p not in prior or records[p].result is not prior[p].result)
                )
                if progress:
                    progress(counters[0], total_hint[0], f"reading {source.name}")
                if partial is not None and time.perf_counter() - self._partial_at >= PARTIAL_EVERY_S:
                    done = [rec.result for v in self._records.values() for rec in v.values()]
                    entries = [r for r in (*done, *(rec.result for rec in records.values())) if isinstance(r, Entry)]
                    # each partial result costs the window a snapshot and a table of its own: only
                    # when the count has doubled, so a first index of 10,000 notes shows about six
                    if len(entries) >= 2 * self._partial_count:
                        self._partial_at, self._partial_count = time.perf_counter(), len(entries)
                        partial(entries)
        if listing.partial:
            # Paths we could not see are not deleted: keep their previous records.
            for path, rec in prior.items():
                records.setdefault(path, rec)
        self._records[source.name] = records
        self._problems[source.name] = listing.problems

    # -- public ---------------------------------------------------------------------------
    async def sync_all(
        self,
        progress: ProgressFn | None = None,
        force: bool = False,
        save_cache: bool = True,
        partial: PartialFn | None = None,
    ) -> SyncResult:
        """Reconcile every vault with the index. `force` re-parses every file. With
        `save_cache=False` the cache is only marked dirty, for a caller that saves it after
        announcing the new index. `partial` sees, on a first index only (no snapshot yet), the
        entries parsed so far, at most every PARTIAL_EVERY_S and each time at least twice as many
        (their links are not resolved)."""
        if self.snapshot is not None:
            partial = None
        self._partial_at, self._partial_count = time.perf_counter(), 0
        async with self._lock:
            started = time.perf_counter()
            saved = (
                {k: dict(v) for k, v in self._records.items()},
                dict(self._problems),
                dict(self._errors),
                self.field_definitions,
            )
            try:
                if await self._load_field_definitions():
                    force = True
                counters, total = [0, 0], [0]
                # What a sync parses and builds stays alive; on a cold index the collector would
                # otherwise walk the growing heap over and over, for a tenth of the time.
                with collector_paused():
                    for source in self.sources:
                        await self._sync_vault(source, force, progress, counters, total, partial)
                    if self.sources and len(self._errors) == len(self.sources) and self.snapshot is None:
                        raise VaultError("; ".join(f"{k} {v}" for k, v in self._errors.items()))
                    await self.activity.give_way_async()  # building the snapshot holds the lock a while
                    result = self._publish(started, parsed=counters[1], read=counters[0])
            except BaseException:
                # Cancelled or failed half-way: nothing of this sync is kept.
                self._records, self._problems, self._errors, self.field_definitions = saved
                raise
            if result.changes.has_changes or result.changes.first_build or counters[0]:
                if save_cache:
                    await asyncio.to_thread(self.save_cache)
                    self.cache_dirty = False
                else:
                    self.cache_dirty = True
            return result

    async def sync_paths(self, vault: str, paths: Iterable[str]) -> SyncResult:
        """Re-read just these vault-relative paths (created, modified or deleted)."""
        async with self._lock:
            started = time.perf_counter()
            source = self.source(vault)
            if source is None:
                raise VaultError(f"no enabled vault named {vault!r}")
            paths = sorted({p for p in paths if p.lower().endswith(".md")})
            prior = self._records.get(vault, {})
            records = dict(prior)
            present: list[str] = []
            stamps: dict[str, str | None] = {}
            for p in paths:
                try:
                    stamp = source.stamp_sync(p) if isinstance(source, FolderSource) else None
                except OSError as exc:  # unreadable right now: keep what we had, say why
                    self._problems[vault] = (*self._problems.get(vault, ()), f"{p}: {exc.strerror or exc}")
                    continue
                if isinstance(source, FolderSource) and stamp is None:
                    records.pop(p, None)  # deleted
                else:
                    present.append(p)
                    stamps[p] = stamp
            fresh = await self._read_parse(source, present, stamps, prior, force=False) if present else {}
            for p in present:
                if p in fresh:
                    records[p] = fresh[p]
                else:
                    records.pop(p, None)
            self._records[vault] = records
            reparsed = sum(1 for p, rec in fresh.items() if p not in prior or rec.result is not prior[p].result)
            result = self._patch(vault, paths, prior, records, started, reparsed, len(present))
            if result is None:
                result = self._publish(started, parsed=reparsed, read=len(present))
            if result.changes.has_changes:
                self.cache_dirty = True  # saved by the engine's debounced timer, not per keystroke
            return result
