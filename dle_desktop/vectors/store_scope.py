"""One vector scope on disk: a folder holding `meta.sqlite` (scope info and one row per live item)
and `vectors.<gen>.f32` (row-major float32, unit rows, read through numpy.memmap), plus
`hnsw.<seq>.bin` once the scope is large (store_ann.py).

SQLite is the single commit point. The info row names the current vector file (`gen`), how many
of its rows are committed (`rows`) and the current index file; every other file in the folder is
either named there or garbage from an interrupted write, removed when the scope is opened:

- insert: rows are written after the committed ones and fsynced, then the items and the new row
  count are committed in one SQLite transaction. Rows past the committed count (a crash between
  the two) are truncated away on open.
- delete: one transaction removes the items; their rows stay in the file, dead, until compaction.
- compaction: the live rows are copied to `vectors.<gen+1>.f32` and fsynced, then one transaction
  renumbers the rows and switches `gen`; the old file is deleted afterwards. No file is ever
  overwritten in place or renamed over another (Windows refuses both for a mapped file).
- index: saved to a new `hnsw.<seq>.bin`, fsynced, then named in the info row.

Items carry a `label` besides their `row`: assigned in insertion order, never reused, unchanged by
compaction. The approximate index is keyed by labels, so compaction does not invalidate it, and the
rows it does not cover yet are always a suffix of the file (labels and rows grow together): queries
search the graph and scan that suffix exactly. The graph leaves out the newest few hundred rows on
purpose; they are the held-out queries that calibrate its search breadth (`ann_calibrate`).

Locking: callers hold `lock` (store_util.RWLock) for reading (list, query, index building) or
writing (insert, delete, compaction); `_db_lock` serialises use of the one SQLite connection.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dle_desktop.fileio import PRIVATE_DIR_MODE, make_private_dir, make_private_file, move_into_place, private_opener
from dle_desktop.vectors.contracts import Hit, StoredItem, VectorConflict
from dle_desktop.vectors.store_ann import (
    CALIBRATION_QUERIES,
    HOLDOUT_MAX,
    HOLDOUT_MIN_QUERIES,
    HOLDOUT_SHARE,
    MIX,
    TARGET_RECALL_HELDOUT,
    TARGET_RECALL_MIX,
    AnnIndex,
    calibrate,
)
from dle_desktop.vectors.store_util import RWLock, fsync_dir, fsync_file, truncate_file, write_rows

log = logging.getLogger(__name__)

FORMAT = 1
DB_NAME = "meta.sqlite"
COMPACT_MIN_DEAD = 64
COMPACT_DEAD_SHARE = 0.25
SQL_CHUNK = 500  # values per IN (...) list, well under SQLite's variable limit
SCAN_CHUNK = 16_384  # rows per block in calibration scans
_VEC_RE = re.compile(r"^vectors\.(\d+)\.f32$")
_ANN_RE = re.compile(r"^hnsw\.(\d+)\.bin$")

SCHEMA = """
CREATE TABLE info(
    id INTEGER PRIMARY KEY CHECK (id = 0),
    format INTEGER NOT NULL,
    collection TEXT NOT NULL,
    source TEXT NOT NULL,
    profile_key TEXT NOT NULL,
    dim INTEGER NOT NULL,
    gen INTEGER NOT NULL,          -- current vector file: vectors.<gen>.f32
    rows INTEGER NOT NULL,         -- committed rows in that file (dead ones included)
    next_label INTEGER NOT NULL,
    ann_file TEXT,                 -- current hnswlib file, NULL if none
    ann_count INTEGER NOT NULL DEFAULT 0,   -- its element count
    ann_labels INTEGER NOT NULL DEFAULT 0,  -- it covers every live item with label < ann_labels
    ann_ef INTEGER NOT NULL DEFAULT 0,      -- calibrated ef (0: not calibrated)
    ann_calibrated_at INTEGER NOT NULL DEFAULT 0,
    ann_recall REAL,
    ann_calibration TEXT                    -- which queries measured it
);
CREATE TABLE items(
    label INTEGER PRIMARY KEY,     -- stable id, insertion order, never reused
    row INTEGER NOT NULL UNIQUE,   -- row in the vector file
    hash INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX items_hash ON items(hash, idx);
"""


class BrokenScope(Exception):
    """The folder is not a readable scope (not a database, or no scope info in it)."""


def vector_file(gen: int) -> str:
    return f"vectors.{gen}.f32"


def connect(path: Path) -> sqlite3.Connection:
    make_private_file(path)  # it holds the texts SillyTavern sent; SQLite's -wal/-shm copy its mode
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    return db


def _chunks(values: Sequence, size: int = SQL_CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def dedupe(items: list[StoredItem]) -> list[int]:
    """Positions of the first occurrence of each (hash, index, text) in the batch."""
    seen: set[tuple[int, int, str]] = set()
    keep = []
    for i, it in enumerate(items):
        key = (it.hash, it.index, it.text)
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return keep


def create(path: Path, names: tuple[str, str, str], items: list[StoredItem], vectors: np.ndarray) -> int:
    """Create the scope folder with its first batch (already validated, normalised and de-duplicated),
    atomically: everything is written under a temporary name, then renamed into place."""
    parent = path.parent
    make_private_dir(parent)
    tmp = parent / f".tmp-{path.name}-{time.time_ns()}"
    tmp.mkdir(mode=PRIVATE_DIR_MODE)
    make_private_dir(tmp)  # mkdir's mode passes through the umask
    try:
        write_rows(tmp / vector_file(0), 0, vectors)
        db = connect(tmp / DB_NAME)
        try:
            db.execute("BEGIN")
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            n = len(items)
            db.execute(
                "INSERT INTO info(id, format, collection, source, profile_key, dim, gen, rows, next_label)"
                " VALUES (0, ?, ?, ?, ?, ?, 0, ?, ?)",
                (FORMAT, *names, vectors.shape[1], n, n),
            )
            db.executemany(
                "INSERT INTO items(label, row, hash, idx, text) VALUES (?, ?, ?, ?, ?)",
                ((i, i, it.hash, it.index, it.text) for i, it in enumerate(items)),
            )
            db.execute("COMMIT")
        finally:
            db.close()
        fsync_dir(tmp)
        move_into_place(tmp, path)
    except BaseException:
        _rmtree_quiet(tmp)
        raise
    return len(items)


def _rmtree_quiet(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def peek(path: Path) -> dict | None:
    """Names, live count and dimension of a scope folder that is not open, or None if unreadable."""
    db_path = path / DB_NAME
    if not db_path.is_file():
        return None
    try:
        db = sqlite3.connect(str(db_path), isolation_level=None, timeout=60)
        try:
            row = db.execute("SELECT collection, source, profile_key, dim FROM info WHERE id = 0").fetchone()
            count = db.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return None
    if row is None:
        return None
    return {"collection": row[0], "source": row[1], "profile_key": row[2], "count": count, "dim": row[3]}


class Scope:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = RWLock()
        self.build_lock = threading.Lock()  # one index builder at a time (background or explicit)
        self._db_lock = threading.Lock()
        self.users = 0  # registry reference count (store.py)
        self.closed = False
        self.ann: AnnIndex | None = None
        self._suffix: tuple[int, int, int] | None = None  # (coverage, gen, first uncovered row)
        self._mm: np.memmap | None = None
        self._db: sqlite3.Connection | None = None
        db_path = path / DB_NAME
        if not db_path.is_file():
            raise BrokenScope(f"{path}: no {DB_NAME}")
        try:
            self._db = connect(db_path)
            info = self._db.execute(
                "SELECT format, collection, source, profile_key, dim, gen, rows, next_label, ann_file"
                " FROM info WHERE id = 0"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            self._close_db()
            if isinstance(exc, sqlite3.OperationalError) and "no such" not in str(exc):
                raise  # locked, unreadable: not the scope's fault
            raise BrokenScope(f"{path}: {exc}") from None
        if info is None:
            self._close_db()
            raise BrokenScope(f"{path}: no scope info")
        (
            fmt,
            self.collection,
            self.source,
            self.profile_key,
            self.dim,
            self.gen,
            self.rows,
            self.next_label,
            self._ann_file,
        ) = info
        if fmt > FORMAT:
            self._close_db()
            raise RuntimeError(f"{path} was written by a newer version (format {fmt})")
        if not (isinstance(self.dim, int) and self.dim >= 1 and isinstance(self.rows, int) and self.rows >= 0):
            self._close_db()
            raise BrokenScope(f"{path}: impossible scope info (dim {self.dim!r}, rows {self.rows!r})")
        self.rowbytes = self.dim * 4
        try:
            self._add_missing_columns()
            self._recover()
        except BaseException:
            self._close_db()
            raise

    # -- opening ----------------------------------------------------------------------------------

    def _add_missing_columns(self) -> None:
        """Scopes written before a column existed get it (with its default); nothing else changes."""
        assert self._db is not None
        have = {row[1] for row in self._db.execute("PRAGMA table_info(info)")}
        if "ann_calibration" not in have:
            with self._db:
                self._db.execute("ALTER TABLE info ADD COLUMN ann_calibration TEXT")

    def _recover(self) -> None:
        """Bring the folder back to exactly what SQLite committed."""
        vec = self.path / vector_file(self.gen)
        want = self.rows * self.rowbytes
        size = vec.stat().st_size if vec.exists() else -1
        if size < 0:
            vec.touch()
            size = 0
        if size > want:
            log.info("%s: dropping %d bytes of uncommitted rows", vec, size - want)
            truncate_file(vec, want)
        elif size < want:  # the file lost committed rows (disk trouble): keep what is readable
            have = size // self.rowbytes
            log.warning("%s: holds %d of %d committed rows; the rest are dropped", vec, have, self.rows)
            truncate_file(vec, have * self.rowbytes)
            with self._tx() as db:
                db.execute("DELETE FROM items WHERE row >= ?", (have,))
                db.execute("UPDATE info SET rows = ? WHERE id = 0", (have,))
            self.rows = have
        for entry in self.path.iterdir():  # files of interrupted writes or of past generations
            name = entry.name
            stale = (
                (_VEC_RE.match(name) and name != vector_file(self.gen))
                or (_ANN_RE.match(name) and name != self._ann_file)
                or name.endswith(".tmp")
            )
            if stale and entry.is_file():
                entry.unlink()
        assert self._db is not None  # __init__ recovers right after connecting
        with self._db_lock:
            live_rows = np.fromiter((r for (r,) in self._db.execute("SELECT row FROM items")), np.int64)
            top = self._db.execute("SELECT MAX(label) FROM items").fetchone()[0]
        if len(live_rows) and live_rows.max() >= self.rows:  # cannot happen through this code
            raise BrokenScope(f"{self.path}: items point past the committed rows")
        if top is not None and top >= self.next_label:
            raise BrokenScope(f"{self.path}: labels past next_label")
        self.mask = np.zeros(self.rows, dtype=bool)
        self.mask[live_rows] = True
        self.live = len(live_rows)
        self._map()

    def _map(self) -> None:
        self._mm = None
        if self.rows:
            self._mm = np.memmap(
                self.path / vector_file(self.gen), dtype=np.float32, mode="r", shape=(self.rows, self.dim)
            )

    def _unmap(self) -> None:
        self._mm = None  # the mapping closes with its last reference; nothing else holds one here

    def _close_db(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    def close(self) -> None:
        """Release the mapping, the index and the database (caller holds `lock` for writing)."""
        self.closed = True
        self._unmap()
        self.ann = None
        with self._db_lock:
            self._close_db()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._db_lock:
            db = self._db
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _query(self, sql: str, args: Sequence = ()) -> list[tuple]:
        with self._db_lock:
            assert self._db is not None
            return self._db.execute(sql, args).fetchall()

    # -- reads (caller holds `lock` for reading) --------------------------------------------------

    def info(self) -> dict:
        return {
            "collection": self.collection,
            "source": self.source,
            "profile_key": self.profile_key,
            "count": self.live,
            "dim": self.dim,
        }

    def hashes(self) -> list[int]:
        return [h for (h,) in self._query("SELECT hash FROM items ORDER BY label")]

    def check(self) -> list[str]:
        """Problems found by comparing the files with the metadata (empty when consistent)."""
        problems = []
        vec = self.path / vector_file(self.gen)
        size = vec.stat().st_size if vec.exists() else -1
        if size != self.rows * self.rowbytes:
            problems.append(f"{vec.name}: {size} bytes for {self.rows} committed rows of {self.dim} floats")
        (n, top_row, info_rows) = self._query(
            "SELECT COUNT(*), MAX(row), (SELECT rows FROM info WHERE id = 0) FROM items"
        )[0]
        if n != self.live or n != int(self.mask.sum()):
            problems.append(f"{n} items in the metadata, {self.live} live rows in memory")
        if info_rows != self.rows:
            problems.append(f"metadata says {info_rows} rows, memory {self.rows}")
        if top_row is not None and top_row >= self.rows:
            problems.append(f"an item points at row {top_row} of {self.rows}")
        return problems

    # -- writes (caller holds `lock` for writing) -------------------------------------------------

    def insert(self, items: list[StoredItem], vectors: np.ndarray) -> int:
        if vectors.shape[1] != self.dim:
            raise VectorConflict(
                f"this scope holds {self.dim}-dimensional vectors, not {vectors.shape[1]}-"
                "dimensional ones; purge the collection to change the model"
            )
        keep = dedupe(items)
        existing: set[tuple[int, int, str]] = set()
        wanted = sorted({items[i].hash for i in keep})
        for chunk in _chunks(wanted):
            existing.update(
                self._query(f"SELECT hash, idx, text FROM items WHERE hash IN ({_marks(len(chunk))})", chunk)
            )
        new = [i for i in keep if (items[i].hash, items[i].index, items[i].text) not in existing]
        if not new:
            return 0
        n0, label0, n = self.rows, self.next_label, len(new)
        vec = self.path / vector_file(self.gen)
        self._unmap()
        try:
            write_rows(vec, n0 * self.rowbytes, vectors[new])
            try:
                with self._tx() as db:
                    db.executemany(
                        "INSERT INTO items(label, row, hash, idx, text) VALUES (?, ?, ?, ?, ?)",
                        ((label0 + j, n0 + j, items[i].hash, items[i].index, items[i].text) for j, i in enumerate(new)),
                    )
                    db.execute("UPDATE info SET rows = ?, next_label = ? WHERE id = 0", (n0 + n, label0 + n))
            except BaseException:
                try:
                    truncate_file(vec, n0 * self.rowbytes)
                except OSError:
                    pass  # the next open truncates it
                raise
            self.rows, self.next_label = n0 + n, label0 + n
            self.mask = np.concatenate([self.mask, np.ones(n, dtype=bool)])
            self.live += n
        finally:
            self._map()
        return n

    def delete(self, hashes: list[int]) -> int:
        wanted = sorted(set(hashes))
        if not wanted or not self.live:
            return 0
        found: list[tuple[int, int]] = []
        for chunk in _chunks(wanted):
            found += self._query(f"SELECT label, row FROM items WHERE hash IN ({_marks(len(chunk))})", chunk)
        if not found:
            return 0
        with self._tx() as db:
            for chunk in _chunks(wanted):
                db.execute(f"DELETE FROM items WHERE hash IN ({_marks(len(chunk))})", chunk)
        rows = np.fromiter((r for _, r in found), np.int64, len(found))
        self.mask[rows] = False
        self.live -= len(found)
        ann = self.ann
        if ann is not None:
            with ann.lock.write():
                ann.mark_deleted([label for label, _ in found])
        return len(found)

    def wants_compaction(self) -> bool:
        dead = self.rows - self.live
        return dead >= COMPACT_MIN_DEAD and dead >= COMPACT_DEAD_SHARE * self.rows

    def compact(self) -> int:
        """Rewrite the vector file without its dead rows; returns the rows dropped."""
        dead = self.rows - self.live
        if not dead:
            return 0
        labels_rows = self._query("SELECT label, row FROM items ORDER BY row")
        old = self.path / vector_file(self.gen)
        gen = self.gen + 1
        new = self.path / vector_file(gen)
        mm = self._mm
        with open(new, "wb", opener=private_opener) as f:
            for chunk in _chunks(labels_rows, SCAN_CHUNK):
                assert mm is not None
                rows = np.fromiter((r for _, r in chunk), np.int64, len(chunk))
                f.write(np.ascontiguousarray(mm[rows]).data.cast("B"))
            f.flush()
            os.fsync(f.fileno())
        fsync_dir(self.path)
        try:
            with self._tx() as db:
                # new row = rank of the old row; in ascending order a target row is always free
                db.executemany(
                    "UPDATE items SET row = ? WHERE label = ?",
                    ((i, label) for i, (label, row) in enumerate(labels_rows) if row != i),
                )
                db.execute("UPDATE info SET gen = ?, rows = ? WHERE id = 0", (gen, len(labels_rows)))
        except BaseException:
            new.unlink(missing_ok=True)
            raise
        del mm
        self._unmap()
        self.gen, self.rows = gen, len(labels_rows)
        self.mask = np.ones(self.rows, dtype=bool)
        self._map()
        try:
            old.unlink()
        except OSError:
            pass  # still mapped somewhere (Windows): removed at the next open
        return dead

    # -- search (caller holds `lock` for reading) -------------------------------------------------

    def search(self, q: np.ndarray, top_k: int, use_ann: bool, ann_ef: int | None) -> list[Hit]:
        if q.shape[0] != self.dim:
            raise VectorConflict(f"this scope holds {self.dim}-dimensional vectors; the query has {q.shape[0]}")
        if not self.live:
            return []
        k = min(top_k, self.live)
        found = None
        meta: dict[int, tuple[int, int, str]] = {}
        ann = self.ann if use_ann else None
        if ann is not None and ann.covered > 0:
            found = self._search_ann(ann, q, k, ann_ef, meta)
        if found is None:
            found = self._exact(q, 0, k)
        return self._hits(self._best(q, found, k), meta)

    def _exact(self, q: np.ndarray, start: int, k: int) -> np.ndarray:
        """Rows (from `start` on) of the k best live rows by float32 dot product, plus boundary ties."""
        n = self.rows
        if start >= n or k <= 0:
            return np.zeros(0, np.int64)
        assert self._mm is not None
        scores = np.asarray(self._mm[start:n] @ q)
        alive = self.mask[start:n]
        if self.live < self.rows:
            scores[~alive] = -np.inf
            k = min(k, int(np.count_nonzero(alive)))
        else:
            k = min(k, n - start)
        if k <= 0:
            return np.zeros(0, np.int64)
        if k < len(scores):
            part = np.argpartition(-scores, k - 1)[:k]
            kth = scores[part].min()
            top = np.flatnonzero(scores >= kth)  # every tie at the boundary, so ordering decides
        else:
            top = np.flatnonzero(alive)
        return top.astype(np.int64) + start

    def _suffix_start(self, covered: int) -> int:
        """The row of the first item the graph does not cover: rows from there on are scanned
        exactly. Cached per (coverage, file generation): appends only add rows after it, and a
        deleted row at the start is masked, so neither invalidates it."""
        cached = self._suffix
        if cached is not None and cached[0] == covered and cached[1] == self.gen:
            return cached[2]
        first = self._query("SELECT row FROM items WHERE label >= ? ORDER BY label LIMIT 1", (covered,))
        start = first[0][0] if first else self.rows
        self._suffix = (covered, self.gen, start)
        return start

    def _search_ann(
        self, ann: AnnIndex, q: np.ndarray, k: int, ann_ef: int | None, meta: dict[int, tuple[int, int, str]]
    ) -> np.ndarray | None:
        """Rows from the graph (items below its coverage) and from an exact scan of the suffix it
        does not cover yet; None when the graph cannot answer (the caller scans exactly). Fills
        `meta` (row -> hash, index, text) for the graph's rows."""
        ef = max(ann_ef or ann.ef, 2 * k)
        lock = ann.lock.read() if ef == ann.ef else ann.lock.write()
        with lock:
            start = self._suffix_start(ann.covered)
            indexed = self.live - int(np.count_nonzero(self.mask[start:]))
            labels = np.zeros(0, np.int64)
            if indexed > 0:
                try:
                    labels = ann.search(q, min(k, indexed), ef)
                except RuntimeError:  # fewer reachable live elements than asked for
                    return None
        values = [int(x) for x in labels]
        for chunk in _chunks(values):
            for row, h, x, text in self._query(
                f"SELECT row, hash, idx, text FROM items WHERE label IN ({_marks(len(chunk))})", chunk
            ):
                meta[row] = (h, x, text)  # deleted labels have no item any more and drop out here
        return np.concatenate([np.fromiter(meta, np.int64, len(meta)), self._exact(q, start, k)])

    def _best(self, q: np.ndarray, rows: np.ndarray, k: int) -> list[tuple[float, int]]:
        """The k best candidate rows, scored again in float64 from the stored rows so that scores and
        order do not depend on which path or matrix shape found them; ties go to the earlier row."""
        rows = np.unique(rows)
        if not len(rows):
            return []
        assert self._mm is not None
        scores = np.asarray(self._mm[rows], dtype=np.float64) @ q.astype(np.float64)
        order = np.lexsort((rows, -scores))[:k]
        return [(float(min(1.0, max(-1.0, scores[i]))), int(rows[i])) for i in order]

    def _hits(self, scored: list[tuple[float, int]], meta: dict[int, tuple[int, int, str]]) -> list[Hit]:
        missing = [r for _, r in scored if r not in meta]
        for chunk in _chunks(missing):
            for row, h, x, text in self._query(
                f"SELECT row, hash, idx, text FROM items WHERE row IN ({_marks(len(chunk))})", chunk
            ):
                meta[row] = (h, x, text)
        return [Hit(score=s, item=StoredItem(*meta[r])) for s, r in scored if r in meta]

    # -- approximate index (caller holds `lock` for reading and `build_lock`) --------------------

    def holdout(self) -> int:
        """How many of the newest live rows the graph leaves out: they are scanned exactly (a few
        hundred rows cost microseconds) and serve as held-out queries when ef is calibrated."""
        return min(HOLDOUT_MAX, self.live // HOLDOUT_SHARE)

    def _uncovered(self, ann: AnnIndex) -> tuple[int, int]:
        """(first row the graph does not cover, live rows from there on)."""
        start = self._suffix_start(ann.covered)
        return start, int(np.count_nonzero(self.mask[start:]))

    def ann_calibration_due(self) -> bool:
        ann = self.ann
        return ann is not None and (ann.calibrated_at == 0 or ann.count >= 2 * ann.calibrated_at)

    def ann_needs_work(self) -> bool:
        ann = self.ann
        if ann is None:
            return True
        return self._uncovered(ann)[1] > self.holdout() or self.ann_calibration_due() or ann.wants_rebuild()

    def ann_reset(self, m: int, ef_construction: int) -> AnnIndex:
        """Start a new, empty graph (the old one has more deleted elements than live ones). Queries
        scan exactly what the new graph does not cover yet; the old file stays recorded until the
        new graph is saved."""
        ann = AnnIndex.new(self.dim, int(self.live * 1.1) + 1, m=m, ef_construction=ef_construction)
        old, self.ann = self.ann, ann
        if old is not None:
            ann.ef, ann.recall, ann.calibration = old.ef, old.recall, old.calibration  # until recalibrated
            assert ann.index is not None
            ann.index.set_ef(ann.ef)
        return ann

    def ann_prepare(self, m: int, ef_construction: int) -> AnnIndex:
        """The scope's graph: as loaded, loaded from its file, or new and empty."""
        if self.ann is not None:
            return self.ann
        ann = None
        row = self._query(
            "SELECT ann_file, ann_count, ann_labels, ann_ef, ann_calibrated_at, ann_recall,"
            " ann_calibration FROM info WHERE id = 0"
        )[0]
        name, count, covered, ef, cal_at, recall, how = row
        if name and (self.path / name).is_file() and covered <= self.next_label:
            ann = AnnIndex.load(
                self.path / name,
                self.dim,
                count=count,
                covered=covered,
                ef=ef,
                calibrated_at=cal_at,
                recall=recall if recall is not None else float("nan"),
            )
            if ann is not None:  # items deleted after the save are still unmarked in the file
                ann.calibration = how or ""
                live = np.fromiter(
                    (x for (x,) in self._query("SELECT label FROM items WHERE label < ?", (covered,))), np.int64
                )
                ann.mark_deleted(np.setdiff1d(np.arange(covered, dtype=np.int64), live, assume_unique=True))
        if ann is None:
            ann = AnnIndex.new(self.dim, int(self.live * 1.1) + 1, m=m, ef_construction=ef_construction)
        self.ann = ann
        return ann

    def ann_step(self, max_items: int, num_threads: int) -> bool:
        """Add up to `max_items` uncovered rows to the graph, oldest first, leaving out the newest
        `holdout()`; True while more remain to add."""
        ann = self.ann
        if ann is None or self._mm is None:
            return False
        _, uncovered = self._uncovered(ann)
        addable = uncovered - self.holdout()
        if addable <= 0:
            return False
        todo = self._query(
            "SELECT label, row FROM items WHERE label >= ? ORDER BY label LIMIT ?",
            (ann.covered, min(max_items, addable)),
        )
        if not todo:
            return False
        labels = np.fromiter((x for x, _ in todo), np.int64, len(todo))
        rows = np.fromiter((r for _, r in todo), np.int64, len(todo))
        vectors = np.ascontiguousarray(self._mm[rows])
        with ann.lock.write():
            assert ann.index is not None
            if ann.count + len(todo) > ann.index.max_elements:  # room for every row still to add, at once
                ann.reserve(ann.count + addable)
            ann.add(vectors, labels, int(labels[-1]) + 1, num_threads)
        return addable > len(todo)

    def _exact_top10(self, queries: np.ndarray, stop: int) -> np.ndarray:
        """Labels of the exact 10 best live rows below row `stop` for each query (calibration truth)."""
        assert self._mm is not None
        k, n = 10, len(queries)
        best_s = np.full((k, n), -np.inf, dtype=np.float32)
        best_r = np.zeros((k, n), dtype=np.int64)
        for start in range(0, stop, SCAN_CHUNK):
            end = min(stop, start + SCAN_CHUNK)
            s = np.asarray(self._mm[start:end] @ queries.T)
            s[~self.mask[start:end]] = -np.inf
            if len(s) > k:
                pick = np.argpartition(-s, k - 1, axis=0)[:k]
                chunk_s, chunk_r = np.take_along_axis(s, pick, 0), pick + start
            else:
                chunk_s, chunk_r = s, np.arange(start, end)[:, None].repeat(n, 1)
            cand_s = np.concatenate([best_s, chunk_s])
            cand_r = np.concatenate([best_r, chunk_r])
            pick = np.argpartition(-cand_s, k - 1, axis=0)[:k]
            best_s = np.take_along_axis(cand_s, pick, 0)
            best_r = np.take_along_axis(cand_r, pick, 0)
        row_label = dict(self._query("SELECT row, label FROM items WHERE row < ?", (stop,)))
        return np.vectorize(row_label.__getitem__, otypes=[np.int64])(best_r.T)

    def ann_calibrate(self) -> tuple[int, float]:
        """Measure the graph's recall@10 against an exact scan at growing ef and keep the smallest
        ef that reaches the target (store_ann.calibrate). The queries are the held-out rows the
        graph leaves out (new rows of this very scope: the best stand-in for its queries), or,
        with fewer than HOLDOUT_MIN_QUERIES of them, 70/30 mixes of two covered rows."""
        ann = self.ann
        assert ann is not None and self._mm is not None
        start, uncovered = self._uncovered(ann)
        covered_rows = np.flatnonzero(self.mask[:start])
        rng = np.random.default_rng(self.live)
        if len(covered_rows) <= 20:
            ann.calibrated_at = max(ann.count, 1)  # too small to measure; not due again until it doubles
            return ann.ef, float("nan")
        if uncovered >= HOLDOUT_MIN_QUERIES:
            held = np.flatnonzero(self.mask[start:]) + start
            picked = np.sort(rng.choice(held, size=min(CALIBRATION_QUERIES, len(held)), replace=False))
            queries = np.ascontiguousarray(self._mm[picked])
            how, target = "held-out rows", TARGET_RECALL_HELDOUT
        else:
            n = min(CALIBRATION_QUERIES, len(covered_rows))
            first = rng.choice(covered_rows, size=n, replace=False)
            second = covered_rows[
                (np.searchsorted(covered_rows, first) + rng.integers(1, len(covered_rows), n)) % len(covered_rows)
            ]
            mixed = (1 - MIX) * np.asarray(self._mm[first], np.float64) + MIX * np.asarray(self._mm[second], np.float64)
            queries = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
            how, target = "mixed rows", TARGET_RECALL_MIX
        truth = self._exact_top10(queries, start)
        with ann.lock.write():
            result = calibrate(ann, queries, truth, target)
            ann.calibration = how
            return result

    def ann_save(self) -> None:
        """Write the graph to a new file and name it in the metadata (then drop the previous one)."""
        ann = self.ann
        assert ann is not None
        seq = 1 + max([int(m.group(1)) for e in self.path.iterdir() if (m := _ANN_RE.match(e.name))], default=0)
        name = f"hnsw.{seq}.bin"
        path = self.path / name
        with ann.lock.read():
            ann.save(path)
            state = (
                name,
                ann.count,
                ann.covered,
                ann.ef if ann.calibrated_at else 0,
                ann.calibrated_at,
                None if ann.recall != ann.recall else ann.recall,
                ann.calibration,
            )
        try:
            fsync_file(path)
            fsync_dir(self.path)
            with self._tx() as db:
                db.execute(
                    "UPDATE info SET ann_file = ?, ann_count = ?, ann_labels = ?, ann_ef = ?,"
                    " ann_calibrated_at = ?, ann_recall = ?, ann_calibration = ? WHERE id = 0",
                    state,
                )
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        old, self._ann_file = self._ann_file, name
        if old and old != name:
            (self.path / old).unlink(missing_ok=True)
