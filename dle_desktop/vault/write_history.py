"""Every note the app writes, remembered in the private data folder: before and after text, when,
which vault and path, which feature, so that a write can be looked at and undone.

SQLite (stdlib sqlite3), not JSONL: the entry detail asks for one note's history, which an index
answers without reading every write ever made; a record is committed whole or not at all (a
JSONL line cut by a crash or a full disk would poison the file); and the engine thread and the
GUI thread may both use it, which SQLite's locking already handles.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dle_desktop.fileio import make_private_file, tighten

FILE_NAME = "write-history.sqlite"
#: Older writes of one note beyond this many are forgotten (a note edited every minute for a
#: year must not fill the disk with copies of itself).
KEEP_PER_NOTE = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS writes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    vault TEXT NOT NULL,
    path TEXT NOT NULL,
    feature TEXT NOT NULL,
    action TEXT NOT NULL,
    before_text TEXT,
    after_text TEXT,
    before_hash TEXT,
    after_hash TEXT,
    undoes INTEGER,
    undone_by INTEGER,
    batch TEXT
);
CREATE INDEX IF NOT EXISTS writes_by_note ON writes (vault, path, id);
"""
#: Made after the migration below: a history file from before batches has no `batch` column yet.
_BATCH_INDEX = "CREATE INDEX IF NOT EXISTS writes_by_batch ON writes (batch, id) WHERE batch IS NOT NULL"


@dataclass(frozen=True)
class WriteRecord:
    """One recorded write. `before_text` None: the note did not exist (a create); `after_text`
    None: the write deleted it (the undo of a create)."""

    id: int
    at: float
    vault: str
    path: str
    feature: str
    action: str  # create | edit-body | edit-fields | replace | delete | undo
    before_text: str | None
    after_text: str | None
    before_hash: str | None
    after_hash: str | None
    undoes: int | None = None
    undone_by: int | None = None
    #: The writes made as one action (an import) share a batch id, so one Undo takes them all back.
    batch: str | None = None

    @property
    def undone(self) -> bool:
        return self.undone_by is not None


@dataclass(frozen=True)
class BatchSummary:
    """One batch of writes (an import) as a whole: when it started, where, how many notes, and how
    many of its writes were undone since."""

    batch: str
    started: float
    vault: str
    writes: int
    undone: int
    first_path: str

    @property
    def fully_undone(self) -> bool:
        return self.undone >= self.writes


_COLUMNS = (
    "id, at, vault, path, feature, action, before_text, after_text, before_hash, after_hash, undoes, undone_by, batch"
)


def _migrate(db: sqlite3.Connection) -> None:
    """Bring a history file made by an older version up to this schema, in place (it lives on
    users' machines and holds their undo trail: it is never recreated)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(writes)")}
    if "batch" not in columns:
        try:
            db.execute("ALTER TABLE writes ADD COLUMN batch TEXT")
        except sqlite3.OperationalError as exc:
            # Another process (the app while `dle-desktop wi import` runs) added it first.
            if "duplicate column" not in str(exc):
                raise
    db.execute(_BATCH_INDEX)


class WriteHistory:
    """The history database. Thread-safe; one connection, serialised by a lock."""

    def __init__(self, path: Path, keep_per_note: int = KEEP_PER_NOTE) -> None:
        self.path = Path(path)
        self.keep_per_note = keep_per_note
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> WriteHistory:
        return cls(Path(data_dir) / FILE_NAME)

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            make_private_file(self.path)  # before SQLite makes it with the umask: note texts are private
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            # A record is not fsynced on its own: WAL with NORMAL keeps the file sound through any
            # crash, and a commit survives the app's; only a power cut may lose the last few
            # records (the notes themselves are fsynced). Records are taken one at a time under the
            # lock, so an fsync each made them the slowest step of an import (2.8 of 2.9 s for
            # 1,000 notes, measured with the disk shared).
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            db.executescript(_SCHEMA)
            _migrate(db)
            for suffix in ("-wal", "-shm"):
                tighten(Path(f"{self.path}{suffix}"))
            self._db = db
        return self._db

    def record(
        self,
        *,
        vault: str,
        path: str,
        feature: str,
        action: str,
        before_text: str | None,
        after_text: str | None,
        before_hash: str | None,
        after_hash: str | None,
        undoes: int | None = None,
        at: float | None = None,
        batch: str | None = None,
    ) -> WriteRecord:
        with self._lock:
            db = self._conn()
            db.execute("BEGIN IMMEDIATE")
            try:
                cur = db.execute(
                    "INSERT INTO writes (at, vault, path, feature, action, before_text, after_text, before_hash, "
                    "after_hash, undoes, batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        time.time() if at is None else at,
                        vault,
                        path,
                        feature,
                        action,
                        before_text,
                        after_text,
                        before_hash,
                        after_hash,
                        undoes,
                        batch,
                    ),
                )
                record_id = cur.lastrowid
                assert record_id is not None  # sqlite3 sets it after an INSERT
                if undoes is not None:
                    db.execute("UPDATE writes SET undone_by = ? WHERE id = ?", (record_id, undoes))
                db.execute(
                    "DELETE FROM writes WHERE vault = ? AND path = ? AND id NOT IN "
                    "(SELECT id FROM writes WHERE vault = ? AND path = ? ORDER BY id DESC LIMIT ?)",
                    (vault, path, vault, path, self.keep_per_note),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            row = db.execute(f"SELECT {_COLUMNS} FROM writes WHERE id = ?", (record_id,)).fetchone()
        return WriteRecord(*row)

    def get(self, record_id: int) -> WriteRecord | None:
        with self._lock:
            row = self._conn().execute(f"SELECT {_COLUMNS} FROM writes WHERE id = ?", (record_id,)).fetchone()
        return WriteRecord(*row) if row else None

    def for_note(self, vault: str, path: str, limit: int = 100) -> list[WriteRecord]:
        """The note's writes, newest first."""
        with self._lock:
            rows = (
                self._conn()
                .execute(
                    f"SELECT {_COLUMNS} FROM writes WHERE vault = ? AND path = ? ORDER BY id DESC LIMIT ?",
                    (vault, path, limit),
                )
                .fetchall()
            )
        return [WriteRecord(*row) for row in rows]

    def for_batch(self, batch: str) -> list[WriteRecord]:
        """The writes made under batch id `batch`, newest first (an undo is never part of one)."""
        with self._lock:
            rows = (
                self._conn()
                .execute(f"SELECT {_COLUMNS} FROM writes WHERE batch = ? ORDER BY id DESC", (batch,))
                .fetchall()
            )
        return [WriteRecord(*row) for row in rows]

    def batches(self, prefix: str = "", limit: int = 20) -> list[BatchSummary]:
        """The batches whose id starts with `prefix`, newest first."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock:
            rows = (
                self._conn()
                .execute(
                    "SELECT batch, MIN(at), MIN(vault), COUNT(*), SUM(undone_by IS NOT NULL), MIN(path) "
                    "FROM writes WHERE batch IS NOT NULL AND batch LIKE ? ESCAPE '\\' "
                    "GROUP BY batch ORDER BY MIN(id) DESC LIMIT ?",
                    (pattern, limit),
                )
                .fetchall()
            )
        return [BatchSummary(b, at, vault, n, int(undone or 0), path) for b, at, vault, n, undone, path in rows]

    def recent(self, limit: int = 100) -> list[WriteRecord]:
        """Every note's writes, newest first."""
        with self._lock:
            rows = self._conn().execute(f"SELECT {_COLUMNS} FROM writes ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [WriteRecord(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
