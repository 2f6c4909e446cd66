"""The vector store: L2-normalised float32 rows in memory-mapped files with SQLite metadata, one
folder per scope (collection, source, embedding profile), exact cosine scans for small scopes and an
hnswlib graph above a size threshold. Crash-safe: killing the process at any moment leaves each
scope exactly as its last committed SQLite transaction describes it (see store_scope.py).

Layout under `root` (= <data>/vectors; nothing outside it is ever touched):

    .lock                                 held while a VectorStore has the folder open
    c-<sha256(collection)[:32]>/          one folder per collection: purge removes exactly this
        s-<sha256([source, profile])[:32]>/   one folder per scope
            meta.sqlite                   scope names, dimension, committed row count; items
            vectors.<gen>.f32             the rows
            hnsw.<seq>.bin                the graph of a large scope
    .trash-*, c-*/.tmp-*                  purges and scope creations in flight (removed on open)

Concurrency: every operation holds a store-wide lock shared (purge, purge_all and close take it
exclusively), and the scope's readers-writer lock: queries and listings share it, inserts, deletes
and compaction take it alone. One background thread builds, extends, calibrates and saves graphs,
a bounded step at a time; queries never wait for it (store_scope.py explains how rows the graph
does not cover yet are scanned exactly). One VectorStore per folder, also across processes (`.lock`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from dle_desktop.fileio import make_private_dir, private_opener
from dle_desktop.vectors.contracts import Hit, StoredItem
from dle_desktop.vectors.store_ann import HNSW_EF_CONSTRUCTION, HNSW_M
from dle_desktop.vectors.store_scope import BrokenScope, Scope, create, dedupe, peek
from dle_desktop.vectors.store_util import (
    RWLock,
    check_hashes,
    check_int64,
    check_items,
    check_name,
    check_top_k,
    fsync_dir,
    normalise_query,
    normalise_rows,
)

log = logging.getLogger(__name__)

__all__ = ["VectorStore", "VectorStoreBusy"]

MAX_OPEN_SCOPES = 64  # idle scopes past this many are closed (file handles, memory)
STEP_SECONDS = 0.25  # target length of one background indexing step (queries may wait for one)
CHECKPOINT_SECONDS = 300.0  # a long build saves its progress this often
SAVE_MIN = 1_000  # additions that make a caught-up graph worth writing again
CLOSE_SAVE_MIN = 256  # additions that close() saves rather than redo next time


class VectorStoreBusy(RuntimeError):
    """The folder is already open in another VectorStore (in this process or another)."""


class VectorStore:
    def __init__(
        self,
        root: Path,
        ann_threshold: int = 20_000,
        ann_ef: int | None = None,
        *,
        ann_background: bool = True,
        ann_m: int = HNSW_M,
        ann_ef_construction: int = HNSW_EF_CONSTRUCTION,
        max_open_scopes: int = MAX_OPEN_SCOPES,
    ) -> None:
        """`ann_threshold`: live rows from which a scope is searched through hnswlib (below it,
        exactly). `ann_ef`: a fixed search breadth instead of the one calibrated per scope for
        recall@10 >= 0.99 (either way at least 2 * top_k). `ann_background=False` builds graphs
        only through build_index() (tests, benchmarks)."""
        self.root = Path(root)
        self.ann_threshold = check_int64(ann_threshold, "ann_threshold")
        self.ann_ef = None if ann_ef is None else check_int64(ann_ef, "ann_ef")
        if self.ann_threshold < 0 or (self.ann_ef is not None and self.ann_ef < 1):
            raise ValueError("ann_threshold must be >= 0 and ann_ef >= 1")
        self._m = ann_m
        self._ef_construction = ann_ef_construction
        self._max_open = max(1, max_open_scopes)
        make_private_dir(self.root)
        self._lock_file: IO[bytes] | None = _lock_folder(self.root)
        self._struct = RWLock()
        self._reg = threading.Lock()
        self._create_lock = threading.Lock()
        self._open: OrderedDict[Path, Scope] = OrderedDict()
        self._closed = False
        self._builder = _Builder(self) if ann_background else None
        self._step_rows: dict[Path, int] = {}
        try:
            self._clean_leftovers()
        except BaseException:
            self._release_folder()
            raise

    # ------------------------------------------------------------------------------------------
    # the API the service codes against

    def list_hashes(self, collection: str, source: str, profile_key: str) -> list[int]:
        path = self._scope_dir(collection, source, profile_key)
        with self._struct.read(), self._use(path) as scope:
            if scope is None:
                return []
            with scope.lock.read():
                return scope.hashes()

    def insert(
        self, collection: str, source: str, profile_key: str, items: list[StoredItem], vectors: np.ndarray
    ) -> int:
        path = self._scope_dir(collection, source, profile_key)
        checked = check_items(items)
        rows = normalise_rows(vectors, len(checked))
        if not checked:
            return 0
        with self._struct.read():
            self._check_open()
            while True:
                with self._use(path) as scope:
                    if scope is not None:
                        with scope.lock.write():
                            return scope.insert(checked, rows)
                with self._create_lock:
                    if not path.exists():
                        keep = dedupe(checked)
                        return create(path, (collection, source, profile_key), [checked[i] for i in keep], rows[keep])
                    if not path.is_dir():
                        raise RuntimeError(f"{path} is in the way of a vector scope and is not a folder")

    def delete(self, collection: str, source: str, profile_key: str, hashes: list[int]) -> int:
        path = self._scope_dir(collection, source, profile_key)
        wanted = check_hashes(hashes)
        with self._struct.read(), self._use(path) as scope:
            if scope is None or not wanted:
                return 0
            with scope.lock.write():
                removed = scope.delete(wanted)
                if removed and scope.wants_compaction():
                    scope.compact()
                return removed

    def query(self, collection: str, source: str, profile_key: str, vector: np.ndarray, top_k: int) -> list[Hit]:
        path = self._scope_dir(collection, source, profile_key)
        q = normalise_query(vector)
        k = check_top_k(top_k)
        with self._struct.read(), self._use(path) as scope:
            if scope is None:
                return []
            with scope.lock.read():
                use_ann = scope.live >= self.ann_threshold
                hits = scope.search(q, k, use_ann, self.ann_ef)
                wants_index = use_ann and scope.ann_needs_work()
        if wants_index and self._builder is not None:
            self._builder.request(path)
        return hits

    def purge(self, collection: str) -> int:
        cdir = self._collection_dir(collection)
        with self._struct.write():
            self._check_open()
            self._close_scopes(lambda p: p.parent == cdir)
            if not cdir.is_dir():
                return 0
            count = sum(1 for e in cdir.iterdir() if e.is_dir() and e.name.startswith("s-"))
            self._remove_dir(cdir)
            return count

    def purge_all(self) -> None:
        with self._struct.write():
            self._check_open()
            self._close_scopes(lambda p: True)
            for entry in sorted(self.root.iterdir()):
                if entry.name.startswith("c-") and entry.is_dir() and not entry.is_symlink():
                    self._remove_dir(entry)

    def collections(self) -> list[dict]:
        out = []
        with self._struct.read():
            self._check_open()
            for sdir in self._scope_dirs():
                info = self._scope_info(sdir)
                if info is not None:
                    out.append(info)
        return sorted(out, key=lambda d: (d["collection"], d["source"], d["profile_key"]))

    def profile_keys(self, collection: str, source: str) -> list[tuple[str, int]]:
        """(profile key, item count) of each scope `collection` has for `source`."""
        cdir = self._collection_dir(collection)
        out = []
        with self._struct.read():
            self._check_open()
            for sdir in sorted(cdir.glob("s-*")) if cdir.is_dir() else ():
                info = self._scope_info(sdir) if sdir.is_dir() else None
                if info is not None and info["source"] == source:
                    out.append((info["profile_key"], info["count"]))
        return out

    def _scope_info(self, sdir: Path) -> dict | None:
        """Names and counts of a scope folder, open or not (caller holds `_struct`)."""
        with self._reg:
            scope = self._open.get(sdir)
            if scope is None:
                return peek(sdir)
            scope.users += 1
        try:
            with scope.lock.read():
                return scope.info()
        finally:
            self._release(scope)

    def close(self) -> None:
        if self._closed:
            return
        if self._builder is not None:
            self._builder.stop()
        with self._struct.write():
            if self._closed:
                return
            with self._reg:
                for scope in self._open.values():
                    ann = scope.ann
                    if ann is not None and (ann.unsaved >= CLOSE_SAVE_MIN or (ann.unsaved and not ann.saved_count)):
                        try:
                            scope.ann_save()
                        except Exception:
                            log.exception("saving the vector index of %s failed", scope.path)
                    scope.close()
                self._open.clear()
            self._closed = True
            self._release_folder()

    # ------------------------------------------------------------------------------------------
    # extras: maintenance, tests, benchmarks

    def compact(self, collection: str, source: str, profile_key: str) -> int:
        """Rewrite a scope's vector file without its deleted rows now; returns the rows dropped."""
        path = self._scope_dir(collection, source, profile_key)
        with self._struct.read(), self._use(path) as scope:
            if scope is None:
                return 0
            with scope.lock.write():
                return scope.compact()

    def build_index(
        self,
        collection: str,
        source: str,
        profile_key: str,
        *,
        num_threads: int = -1,
        step_rows: int = 10_000,
        recalibrate: bool = False,
    ) -> dict:
        """Build or extend a scope's hnswlib graph now (whatever its size), calibrate ef when due
        (or when asked), save it if anything changed. Returns index_info() plus the seconds taken;
        {} for an unknown or empty scope."""
        path = self._scope_dir(collection, source, profile_key)
        t0 = time.perf_counter()
        with self._struct.read(), self._use(path) as scope:
            if scope is None or not scope.live:
                return {}
            with scope.build_lock:
                more = True
                while more:
                    with scope.lock.read():
                        ann = scope.ann_prepare(self._m, self._ef_construction)
                        if ann.wants_rebuild():
                            ann = scope.ann_reset(self._m, self._ef_construction)
                        more = scope.ann_step(step_rows, num_threads)
                        if more and ann.unsaved and time.monotonic() - ann.last_save > CHECKPOINT_SECONDS:
                            scope.ann_save()  # a long build interrupted resumes from here
                with scope.lock.read():
                    ann = scope.ann_prepare(self._m, self._ef_construction)
                    while scope.ann_step(step_rows, num_threads):  # rows inserted meanwhile
                        pass
                    changed = ann.unsaved > 0 or not ann.saved_count
                    if recalibrate or scope.ann_calibration_due():
                        scope.ann_calibrate()
                        changed = True
                    if changed:
                        scope.ann_save()
                    return self._index_info(scope) | {"seconds": time.perf_counter() - t0}

    def index_info(self, collection: str, source: str, profile_key: str) -> dict:
        """The state of a scope's graph as loaded in memory ({} if none): element count, labels
        covered, live rows left to exact scans, ef and how it was calibrated, what is saved."""
        path = self._scope_dir(collection, source, profile_key)
        with self._struct.read(), self._use(path) as scope:
            if scope is None or scope.ann is None:
                return {}
            with scope.lock.read():
                return self._index_info(scope)

    @staticmethod
    def _index_info(scope: Scope) -> dict:
        ann = scope.ann
        assert ann is not None
        return {
            "count": ann.count,
            "covered": ann.covered,
            "uncovered": scope._uncovered(ann)[1],
            "ef": ann.ef,
            "recall": ann.recall,
            "calibration": ann.calibration,
            "saved_count": ann.saved_count,
            "unsaved": ann.unsaved,
            "next_label": scope.next_label,
        }

    def wait_for_index(self, timeout: float = 60.0) -> bool:
        """Block until the background builder has nothing queued (tests). False on timeout."""
        return self._builder.wait_idle(timeout) if self._builder is not None else True

    def check(self) -> list[str]:
        """Open every scope and compare its files with its metadata; the problems found."""
        problems = []
        with self._struct.read():
            self._check_open()
            for sdir in self._scope_dirs():
                with self._use(sdir) as scope:
                    if scope is None:
                        problems.append(f"{sdir.relative_to(self.root)}: not a readable scope")
                        continue
                    with scope.lock.read():
                        problems += [f"{sdir.relative_to(self.root)}: {p}" for p in scope.check()]
        return problems

    # ------------------------------------------------------------------------------------------
    # internals

    def _collection_dir(self, collection: str) -> Path:
        check_name(collection, "collection")
        return self.root / ("c-" + hashlib.sha256(collection.encode("utf-8")).hexdigest()[:32])

    def _scope_dir(self, collection: str, source: str, profile_key: str) -> Path:
        check_name(source, "source")
        check_name(profile_key, "profile_key")
        key = json.dumps([source, profile_key]).encode("utf-8")
        return self._collection_dir(collection) / ("s-" + hashlib.sha256(key).hexdigest()[:32])

    def _scope_dirs(self) -> list[Path]:
        return [s for c in sorted(self.root.glob("c-*")) if c.is_dir() for s in sorted(c.glob("s-*")) if s.is_dir()]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vector store is closed")

    @contextmanager
    def _use(self, path: Path) -> Iterator[Scope | None]:
        """The open scope at `path` (opened and recovered if needed), or None if there is none.
        Callers hold `_struct`; the scope stays open (not evicted) until the block ends."""
        self._check_open()
        with self._reg:
            scope = self._open.get(path)
            if scope is None and path.is_dir():
                try:
                    scope = Scope(path)
                except BrokenScope as exc:
                    self._quarantine(path, exc)
                else:
                    self._open[path] = scope
            if scope is not None:
                scope.users += 1
                self._open.move_to_end(path)
        try:
            yield scope
        finally:
            if scope is not None:
                self._release(scope)

    def _release(self, scope: Scope) -> None:
        with self._reg:
            scope.users -= 1
            if len(self._open) > self._max_open:
                for path, idle in list(self._open.items()):
                    if len(self._open) <= self._max_open:
                        break
                    if (
                        idle.users == 0
                        and not idle.build_lock.locked()
                        and not (self._builder is not None and self._builder.pending(path))
                    ):
                        del self._open[path]
                        idle.close()

    def _close_scopes(self, which) -> None:
        """Close (and forget) the open scopes matching `which`; caller holds `_struct` exclusively."""
        with self._reg:
            for path in [p for p in self._open if which(p)]:
                self._open.pop(path).close()
                self._step_rows.pop(path, None)
        if self._builder is not None:
            self._builder.forget(which)

    def _remove_dir(self, path: Path) -> None:
        """Remove a folder atomically as far as readers of the store can tell: rename, then delete."""
        trash = self.root / f".trash-{uuid.uuid4().hex}"
        os.rename(path, trash)
        fsync_dir(self.root)
        shutil.rmtree(trash, ignore_errors=True)

    def _quarantine(self, path: Path, exc: Exception) -> None:
        broken = path.with_name(f".broken-{path.name}-{uuid.uuid4().hex[:8]}")
        log.error("vector scope %s is unreadable (%s); moved aside to %s", path, exc, broken.name)
        os.rename(path, broken)

    def _clean_leftovers(self) -> None:
        for entry in self.root.iterdir():
            if entry.name.startswith(".trash-") and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.name.startswith("c-") and entry.is_dir() and not entry.is_symlink():
                for sub in entry.iterdir():
                    if sub.name.startswith(".tmp-") and sub.is_dir():
                        shutil.rmtree(sub, ignore_errors=True)
                if not any(entry.iterdir()):
                    entry.rmdir()

    def _release_folder(self) -> None:
        if self._lock_file is not None:
            _unlock_folder(self._lock_file)
            self._lock_file = None

    # -- background indexing --------------------------------------------------------------------

    def _index_step(self, path: Path) -> bool:
        """One bounded piece of work on a scope's graph; True when more remains (builder thread)."""
        with self._struct.read():
            if self._closed:
                return False
            with self._use(path) as scope:
                if scope is None or not scope.build_lock.acquire(blocking=False):
                    return False
                try:
                    with scope.lock.read():
                        if scope.live < self.ann_threshold or not scope.live:
                            return False
                        ann = scope.ann_prepare(self._m, self._ef_construction)
                        if ann.wants_rebuild():
                            ann = scope.ann_reset(self._m, self._ef_construction)
                        rows = self._step_rows.get(path, 64)
                        t0 = time.perf_counter()
                        more = scope.ann_step(rows, _background_threads())
                        if more:
                            took = time.perf_counter() - t0
                            self._step_rows[path] = int(min(50_000, max(16, rows * STEP_SECONDS / max(took, 1e-3))))
                            if ann.unsaved and time.monotonic() - ann.last_save > CHECKPOINT_SECONDS:
                                scope.ann_save()
                            return True
                        if scope.ann_calibration_due():
                            scope.ann_calibrate()
                            scope.ann_save()
                        elif ann.unsaved >= max(SAVE_MIN, ann.saved_count // 10) or (
                            ann.unsaved and not ann.saved_count
                        ):
                            scope.ann_save()
                        return False
                finally:
                    scope.build_lock.release()


def _background_threads() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


class _Builder:
    """One daemon thread working through the scopes whose graphs need work, a step at a time,
    round robin."""

    def __init__(self, store: VectorStore) -> None:
        self._store = store
        self._cond = threading.Condition()
        self._queue: OrderedDict[Path, None] = OrderedDict()
        self._busy: Path | None = None
        self._stopped = False
        self._thread: threading.Thread | None = None

    def request(self, path: Path) -> None:
        with self._cond:
            if self._stopped:
                return
            self._queue[path] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="vector-index", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self, path: Path) -> bool:
        with self._cond:
            return path in self._queue or self._busy == path

    def forget(self, which) -> None:
        with self._cond:
            for path in [p for p in self._queue if which(p)]:
                del self._queue[path]

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                path, _ = self._queue.popitem(last=False)
                self._busy = path
            more = False
            try:
                more = self._store._index_step(path)
            except Exception:
                log.exception("building the vector index of %s failed", path)
            with self._cond:
                self._busy = None
                if more and not self._stopped:
                    self._queue[path] = None
                self._cond.notify_all()


def _lock_folder(root: Path) -> IO[bytes]:
    f = open(root / ".lock", "a+b", opener=private_opener)  # noqa: SIM115 - returned open: the lock lasts as long as the store
    try:
        if sys.platform == "win32":  # os.name == "nt", spelled so that type checkers follow it
            import msvcrt

            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
            log.warning("cannot lock %s (%s); continuing without protection against a second store", root, exc)
            return f
        f.close()
        raise VectorStoreBusy(f"the vector store at {root} is already open (another window or process?)") from None
    return f


def _unlock_folder(f: IO[bytes]) -> None:
    try:
        if sys.platform == "win32":
            import msvcrt

            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
    except OSError:
        pass
    f.close()
