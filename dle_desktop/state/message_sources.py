"""Which lore shaped each reply: the decision record of the generation that wrote a message's
swipe, kept per (chat, message, swipe) in the chat store's database.

The generations table keeps a chat's newest records by generation number, and a swipe rolls the
number back, so a regenerated swipe overwrites its sibling's record there. Here each swipe keeps
its own copy, so swiping back shows the lore that swipe was written with, after a page reload too.
Each copy also says what changed against the reply before it (entries added and dropped)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any

#: Message sources kept per chat (the newest); older replies lose their popup first.
KEEP_SOURCES = 1000

SCHEMA = """
CREATE TABLE IF NOT EXISTS message_sources (
    chat_id TEXT NOT NULL,
    message INTEGER NOT NULL,
    swipe INTEGER NOT NULL,
    gen INTEGER NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (chat_id, message, swipe)
);
"""


def _titles(record: dict[str, Any]) -> list[str]:
    return [str(t) for t in record.get("injected") or []]


class MessageSources:
    """Shares the chat store's connection and lock (one writer, one transaction per change)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock
        self._db.executescript(SCHEMA)

    def link(self, chat_id: str, message: int, swipe: int, gen: int) -> dict[str, Any] | None:
        """Copy generation `gen`'s record to the message's swipe; None when that record is gone."""
        with self._lock:
            row = self._db.execute(
                "SELECT created_at, record FROM generations WHERE chat_id = ? AND gen = ?", (chat_id, gen)
            ).fetchone()
            if row is None:
                return None
            created_at, raw = row
            record = json.loads(raw)
            record.setdefault("sources", [])  # records saved before sources were kept
            before = self._db.execute(
                "SELECT record FROM message_sources WHERE chat_id = ? AND message < ? "
                "ORDER BY message DESC, created_at DESC LIMIT 1",
                (chat_id, message),
            ).fetchone()
            previous = _titles(json.loads(before[0])) if before else None
            now_titles = _titles(record)
            record["changes"] = (
                None
                if previous is None
                else {
                    "added": [t for t in now_titles if t not in previous],
                    "dropped": [t for t in previous if t not in now_titles],
                }
            )
            record.update(gen=gen, generated_at=created_at, message=message, swipe=swipe)
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO message_sources VALUES (?, ?, ?, ?, ?, ?)",
                    (chat_id, message, swipe, gen, time.time(), json.dumps(record, ensure_ascii=False)),
                )
                self._db.execute(
                    "DELETE FROM message_sources WHERE chat_id = ? AND rowid NOT IN (SELECT rowid FROM "
                    "message_sources WHERE chat_id = ? ORDER BY created_at DESC LIMIT ?)",
                    (chat_id, chat_id, KEEP_SOURCES),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return record

    def get(self, chat_id: str, message: int, swipe: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT record FROM message_sources WHERE chat_id = ? AND message = ? AND swipe = ?",
                (chat_id, message, swipe),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def forget(self, chat_id: str) -> None:
        """Called inside the chat store's delete transaction (the lock is held)."""
        self._db.execute("DELETE FROM message_sources WHERE chat_id = ?", (chat_id,))
