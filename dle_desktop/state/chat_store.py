"""Per-chat state in SQLite, keyed by chat id, plus each chat's recent decision records.

One connection guarded by a lock (SQLite serialises writers anyway); every save is one
transaction, so a crash leaves the previous state or the new one. A row that cannot be read
is moved aside to `broken_chats` and the chat starts fresh, with a warning, instead of failing
every request for that chat."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

from dle_desktop.core.chat_id import is_forbidden_char, is_valid_chat_id
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.fileio import make_private_file
from dle_desktop.state.message_sources import MessageSources

log = logging.getLogger(__name__)

#: Decision records kept per chat (the newest).
KEEP_RECORDS = 50

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chats (
    chat_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS generations (
    chat_id TEXT NOT NULL,
    gen INTEGER NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (chat_id, gen)
);
CREATE INDEX IF NOT EXISTS chats_by_update ON chats (updated_at);
CREATE TABLE IF NOT EXISTS broken_chats (
    chat_id TEXT NOT NULL,
    state TEXT NOT NULL,
    problem TEXT NOT NULL,
    moved_at REAL NOT NULL
);
"""
#: 2: chat ids follow core/chat_id.py's rule (older stores may hold ids with control characters).
SCHEMA_VERSION = 2


def _written_out(chat_id: str) -> str:
    """`chat_id` with its control characters (and whitespace at its ends) as `\\uXXXX` text."""
    last = len(chat_id) - 1
    return "".join(
        f"\\u{ord(ch):04x}" if is_forbidden_char(ch) or (ch.isspace() and i in (0, last)) else ch
        for i, ch in enumerate(chat_id)
    )


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_tracking(d: dict, where: str) -> None:
    if not _is_int(d.get("generation_count", 0)):
        raise ValueError(f"{where}generation_count is not a whole number")
    for name in ("cooldowns", "injection_history", "counts", "analytics", "swipe_keys"):
        if not isinstance(d.get(name) or {}, dict):
            raise ValueError(f"{where}{name} is not an object")
    for name in ("cooldowns", "injection_history", "counts"):
        if not all(_is_int(v) for v in (d.get(name) or {}).values()):
            raise ValueError(f"{where}{name} has a value that is not a whole number")
    for v in (d.get("analytics") or {}).values():
        if not isinstance(v, dict) or not all(_is_int(v.get(k, 0)) for k in ("matched", "injected", "last_triggered")):
            raise ValueError(f"{where}analytics has a malformed record")
    for v in (d.get("swipe_keys") or {}).values():
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError(f"{where}swipe_keys has a value that is not a list of keys")
    log_ = d.get("injection_log") or []
    if not isinstance(log_, list):
        raise ValueError(f"{where}injection_log is not a list")
    for rec in log_:
        if not isinstance(rec, dict) or not _is_int(rec.get("gen", 0)) or not isinstance(rec.get("entries", []), list):
            raise ValueError(f"{where}injection_log has a malformed record")
        for x in rec.get("entries", []):
            if not isinstance(x, dict) or not all(k in x for k in ("title", "pos", "depth", "role", "hash")):
                raise ValueError(f"{where}injection_log has a malformed entry")


def _generation_count(state: str):
    try:
        raw = json.loads(state)
    except (ValueError, RecursionError):
        return None
    return raw.get("generation_count") if isinstance(raw, dict) else None


def check_state_shape(raw) -> None:
    """Refuse stored state whose shape would pass `ChatState.from_json` but break the pipeline
    later (a 500 on every request for that chat) or silently change its meaning."""
    if not isinstance(raw, dict):
        raise ValueError(f"the state is {type(raw).__name__}, not an object")
    _check_tracking(raw, "")
    before = raw.get("before_last")
    if before is not None:
        if not isinstance(before, dict):
            raise ValueError("before_last is not an object")
        _check_tracking(before, "before_last.")
    ff = raw.get("folder_filter")
    if ff is not None and (not isinstance(ff, list) or not all(isinstance(x, str) for x in ff)):
        raise ValueError("folder_filter is not a list of folders")
    for name in ("pins", "blocks"):
        if not isinstance(raw.get(name) or [], list):
            raise ValueError(f"{name} is not a list")
    context = raw.get("context") or {}
    if not isinstance(context, dict) or not all(
        isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)) for v in context.values()
    ):
        raise ValueError("context is not an object of text values")
    for name in ("notebook", "last_swipe_key"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            raise ValueError(f"{name} is not text")


class ChatStore:
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            make_private_file(Path(self.path))  # SQLite gives its -wal and -shm files the same mode
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            self._make_chat_ids_reachable()
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.sources = MessageSources(self._db, self._lock)

    def _make_chat_ids_reachable(self) -> None:
        """Before the chat-id rule, /retrieve stored ids with newlines, NUL and other control
        characters, which no request can name any more. Each such chat gets its id with those
        characters written out (`a\\u000ab`); if that id is taken or too long, its state is kept
        in broken_chats instead. Either way the log says where it went."""
        rows = self._db.execute("SELECT chat_id FROM chats UNION SELECT chat_id FROM generations").fetchall()
        taken = {row[0] for row in rows}
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for old in sorted(chat_id for chat_id in taken if not is_valid_chat_id(chat_id)):
                new = _written_out(old)
                if is_valid_chat_id(new) and new not in taken:
                    self._db.execute("UPDATE chats SET chat_id = ? WHERE chat_id = ?", (new, old))
                    self._db.execute("UPDATE generations SET chat_id = ? WHERE chat_id = ?", (new, old))
                    taken.add(new)
                    log.warning("chat %r has an id that requests can no longer name; it is now chat %r", old, new)
                else:
                    problem = f"chat id {old[:100]!r} breaks the chat-id rule and {new[:100]!r} was taken or too long"
                    self._db.execute(
                        "INSERT INTO broken_chats SELECT chat_id, state, ?, ? FROM chats WHERE chat_id = ?",
                        (problem, time.time(), old),
                    )
                    self._db.execute("DELETE FROM chats WHERE chat_id = ?", (old,))
                    log.warning("%s; its state was moved to broken_chats", problem)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def load(self, chat_id: str) -> ChatState:
        with self._lock:
            row = self._db.execute("SELECT state FROM chats WHERE chat_id = ?", (chat_id,)).fetchone()
            if row is None:
                return ChatState()
            try:
                raw = json.loads(row[0])
                check_state_shape(raw)
                return ChatState.from_json(raw)
            except (ValueError, TypeError, AttributeError, RecursionError) as exc:
                log.warning(
                    "chat %r had unreadable state (%s); it was moved to broken_chats and the chat starts fresh",
                    chat_id,
                    exc,
                )
                self._db.execute("BEGIN")
                self._db.execute(
                    "INSERT INTO broken_chats VALUES (?, ?, ?, ?)", (chat_id, row[0], str(exc)[:500], time.time())
                )
                self._db.execute("DELETE FROM chats WHERE chat_id = ?", (chat_id,))
                self._db.execute("COMMIT")
                return ChatState()

    def save(self, chat_id: str, state: ChatState, record: dict | None = None) -> None:
        payload = json.dumps(state.to_json(), ensure_ascii=False, separators=(",", ":"))
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO chats (chat_id, state, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(chat_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                    (chat_id, payload, now),
                )
                if record is not None:
                    gen = state.generation_count
                    self._db.execute(
                        "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?)",
                        (chat_id, gen, now, json.dumps(record, ensure_ascii=False, separators=(",", ":"))),
                    )
                    self._db.execute(
                        "DELETE FROM generations WHERE chat_id = ? AND gen <= ?", (chat_id, gen - KEEP_RECORDS)
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def records(self, chat_id: str, limit: int = 10) -> list[dict]:
        with self._lock:
            rows = self._db.execute(
                "SELECT gen, created_at, record FROM generations WHERE chat_id = ? ORDER BY gen DESC LIMIT ?",
                (chat_id, limit),
            ).fetchall()
        return [{"gen": g, "created_at": t, **json.loads(r)} for g, t, r in rows]

    def chats(self) -> list[dict]:
        with self._lock:
            rows = self._db.execute("SELECT chat_id, updated_at FROM chats ORDER BY updated_at DESC").fetchall()
        return [{"chat_id": c, "updated_at": t} for c, t in rows]

    def list_chats(self, limit: int = 500) -> list[dict]:
        """The newest `limit` chats with stored state, newest first: `{chat_id, generation_count,
        updated_at (Unix time of the last save), records (decision records kept)}`. A state that
        is not readable JSON counts 0 generations here (reading that chat sets it aside)."""
        count = "(SELECT COUNT(*) FROM generations g WHERE g.chat_id = c.chat_id)"
        order = "FROM chats c ORDER BY c.updated_at DESC, c.chat_id LIMIT ?"
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT c.chat_id, c.updated_at, CASE WHEN json_valid(c.state) THEN "
                    f"json_extract(c.state, '$.generation_count') END, {count} {order}",
                    (max(0, int(limit)),),
                ).fetchall()
            except sqlite3.OperationalError:  # an SQLite built without its JSON functions
                rows = [
                    (c, t, _generation_count(s), n)
                    for c, t, s, n in self._db.execute(
                        f"SELECT c.chat_id, c.updated_at, c.state, {count} {order}", (max(0, int(limit)),)
                    ).fetchall()
                ]
        return [
            {"chat_id": c, "generation_count": g if _is_int(g) and g >= 0 else 0, "updated_at": t, "records": n}
            for c, t, g, n in rows
        ]

    def copy_state(self, source: str, target: str) -> str | None:
        """Give `target` a copy of `source`'s state (its decision records stay with `source`), in
        one transaction. Returns None when copied, else why not: the target has state of its
        own (never overwritten) or the source has none."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            reason: str | None
            try:
                if self._db.execute("SELECT 1 FROM chats WHERE chat_id = ?", (target,)).fetchone():
                    reason = "the chat already has state of its own"
                else:
                    row = self._db.execute("SELECT state FROM chats WHERE chat_id = ?", (source,)).fetchone()
                    reason = None if row else "the chat it came from has no state"
                    if row:
                        self._db.execute(
                            "INSERT INTO chats (chat_id, state, updated_at) VALUES (?, ?, ?)",
                            (target, row[0], time.time()),
                        )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return reason

    def delete(self, chat_id: str) -> bool:
        with self._lock:
            self._db.execute("BEGIN")
            cur = self._db.execute("DELETE FROM chats WHERE chat_id = ?", (chat_id,))
            self._db.execute("DELETE FROM generations WHERE chat_id = ?", (chat_id,))
            self.sources.forget(chat_id)
            self._db.execute("COMMIT")
            return cur.rowcount > 0
