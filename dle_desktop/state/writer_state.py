"""What the writers (Session Scribe, Auto Lorebook, AI Notepad) keep per chat, in the data
folder's state.sqlite beside the chat store's tables: the Scribe's last run and its notes, the
count Auto Lorebook runs by, the suggestions waiting for review, the chat's notepad and the notes
each reply (message and swipe) added to it. DLE keeps these in the chat's metadata; here they
survive a page reload, a restart and a second SillyTavern tab alike.

Its own connection to the same file (WAL: readers and the chat store's writer do not block each
other; a writer waits up to `BUSY_TIMEOUT_S`), one lock, one transaction per change."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dle_desktop.core.writers.notepad import NOTEPAD_CAP_BYTES, append_notes, remove_notes
from dle_desktop.fileio import make_private_file

BUSY_TIMEOUT_S = 30.0
#: Scribe notes remembered per chat (the newest); the notes themselves stay in the vault.
KEEP_SCRIBE_NOTES = 500
#: Suggestions waiting per chat; the oldest go first.
KEEP_PENDING = 200

SCHEMA = """
CREATE TABLE IF NOT EXISTS writer_chats (
    chat_id TEXT PRIMARY KEY,
    scribe_chat_length INTEGER NOT NULL DEFAULT 0,
    scribe_summary TEXT NOT NULL DEFAULT '',
    suggest_count INTEGER NOT NULL DEFAULT 0,
    notepad TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS writer_scribe_notes (
    chat_id TEXT NOT NULL,
    vault TEXT NOT NULL,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS writer_scribe_notes_chat ON writer_scribe_notes (chat_id, created_at);
CREATE TABLE IF NOT EXISTS writer_reply_notes (
    chat_id TEXT NOT NULL,
    message INTEGER NOT NULL,
    swipe INTEGER NOT NULL,
    notes TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (chat_id, message, swipe)
);
CREATE TABLE IF NOT EXISTS writer_suggestions (
    id TEXT PRIMARY KEY,
    chat_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    suggestion TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class WriterChat:
    chat_id: str
    scribe_chat_length: int = 0
    scribe_summary: str = ""
    suggest_count: int = 0
    notepad: str = ""


class WriterState:
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            make_private_file(Path(self.path))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- one transaction --------------------------------------------------------------------------
    def _change(self, work: Any) -> Any:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = work()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return result

    def _chat(self, chat_id: str) -> WriterChat:
        row = self._db.execute(
            "SELECT scribe_chat_length, scribe_summary, suggest_count, notepad FROM writer_chats WHERE chat_id = ?",
            (chat_id,),
        ).fetchone()
        return WriterChat(chat_id, *row) if row else WriterChat(chat_id)

    def _put(self, chat: WriterChat) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO writer_chats VALUES (?, ?, ?, ?, ?, ?)",
            (chat.chat_id, chat.scribe_chat_length, chat.scribe_summary, chat.suggest_count, chat.notepad, time.time()),
        )

    # -- reading ---------------------------------------------------------------------------------
    def chat(self, chat_id: str) -> WriterChat:
        with self._lock:
            return self._chat(chat_id)

    def scribe_notes(self, chat_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The chat's session notes, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT vault, path, title, created_at FROM writer_scribe_notes WHERE chat_id = ? "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (chat_id, limit),
            ).fetchall()
        return [{"vault": v, "path": p, "title": t, "created_at": at} for v, p, t, at in rows]

    def reply_notes(self, chat_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT message, swipe, notes FROM writer_reply_notes WHERE chat_id = ? ORDER BY message, swipe",
                (chat_id,),
            ).fetchall()
        return [{"message": m, "swipe": s, "notes": n} for m, s, n in rows]

    def notes_of(self, chat_id: str, message: int, swipe: int) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT notes FROM writer_reply_notes WHERE chat_id = ? AND message = ? AND swipe = ?",
                (chat_id, message, swipe),
            ).fetchone()
        return row[0] if row else None

    def suggestions(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """Waiting suggestions, oldest first: {id, chat_id, created_at, suggestion}."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, chat_id, created_at, suggestion FROM writer_suggestions "
                + ("WHERE chat_id = ? " if chat_id is not None else "")
                + "ORDER BY created_at, rowid",
                (chat_id,) if chat_id is not None else (),
            ).fetchall()
        return [{"id": i, "chat_id": c, "created_at": at, "suggestion": json.loads(s)} for i, c, at, s in rows]

    def suggestion(self, suggestion_id: str) -> dict[str, Any] | None:
        return next((s for s in self.suggestions() if s["id"] == suggestion_id), None)

    # -- Session Scribe ----------------------------------------------------------------------------
    def record_scribe(self, chat_id: str, chat_length: int, summary: str, vault: str, path: str, title: str) -> None:
        def work() -> None:
            chat = self._chat(chat_id)
            self._put(WriterChat(chat_id, chat_length, summary, chat.suggest_count, chat.notepad))
            self._db.execute(
                "INSERT INTO writer_scribe_notes VALUES (?, ?, ?, ?, ?)", (chat_id, vault, path, title, time.time())
            )
            self._db.execute(
                "DELETE FROM writer_scribe_notes WHERE chat_id = ? AND rowid NOT IN (SELECT rowid FROM "
                "writer_scribe_notes WHERE chat_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                (chat_id, chat_id, KEEP_SCRIBE_NOTES),
            )

        self._change(work)

    # -- Auto Lorebook -----------------------------------------------------------------------------
    def add_suggestions(
        self, chat_id: str, count: int | None, suggestions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Store suggestions for review (and, when `count` is given, the count the next automatic
        run is measured from); answers them with their ids."""
        now = time.time()
        stored = [
            {"id": uuid.uuid4().hex[:16], "chat_id": chat_id, "created_at": now, "suggestion": s} for s in suggestions
        ]

        def work() -> None:
            if count is not None:
                chat = self._chat(chat_id)
                self._put(WriterChat(chat_id, chat.scribe_chat_length, chat.scribe_summary, count, chat.notepad))
            for s in stored:
                self._db.execute(
                    "INSERT INTO writer_suggestions VALUES (?, ?, ?, ?)",
                    (s["id"], chat_id, now, json.dumps(s["suggestion"], ensure_ascii=False)),
                )
            self._db.execute(
                "DELETE FROM writer_suggestions WHERE chat_id = ? AND rowid NOT IN (SELECT rowid FROM "
                "writer_suggestions WHERE chat_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                (chat_id, chat_id, KEEP_PENDING),
            )

        self._change(work)
        return stored

    def remove_suggestion(self, suggestion_id: str) -> bool:
        return bool(
            self._change(
                lambda: self._db.execute("DELETE FROM writer_suggestions WHERE id = ?", (suggestion_id,)).rowcount
            )
        )

    # -- AI Notepad --------------------------------------------------------------------------------
    def add_reply_notes(self, chat_id: str, message: int, swipe: int, notes: str, cap: int = NOTEPAD_CAP_BYTES) -> str:
        """Keep a reply's notes and add them to the notepad (replacing what the same reply added
        before); answers the notepad."""

        def work() -> str:
            chat = self._chat(chat_id)
            old = self._db.execute(
                "SELECT notes FROM writer_reply_notes WHERE chat_id = ? AND message = ? AND swipe = ?",
                (chat_id, message, swipe),
            ).fetchone()
            notepad = remove_notes(chat.notepad, old[0]) if old else chat.notepad
            notepad = append_notes(notepad, notes, cap)
            self._db.execute(
                "INSERT OR REPLACE INTO writer_reply_notes VALUES (?, ?, ?, ?, ?)",
                (chat_id, message, swipe, notes, time.time()),
            )
            self._put(WriterChat(chat_id, chat.scribe_chat_length, chat.scribe_summary, chat.suggest_count, notepad))
            return notepad

        result: str = self._change(work)
        return result

    def rollback(
        self, chat_id: str, message: int, swipe: int | None = None, *, later: bool = False
    ) -> tuple[list[dict[str, Any]], str]:
        """Take a reply's notes (one swipe, or every swipe of the message; with `later`, every
        later message's too: a delete cuts the chat there) back out of the notepad; answers what
        was removed and the notepad."""

        def work() -> tuple[list[dict[str, Any]], str]:
            chat = self._chat(chat_id)
            where = f"chat_id = ? AND message {'>=' if later else '='} ?" + (
                " AND swipe = ?" if swipe is not None else ""
            )
            args: tuple[Any, ...] = (chat_id, message) if swipe is None else (chat_id, message, swipe)
            rows = self._db.execute(
                f"SELECT message, swipe, notes FROM writer_reply_notes WHERE {where} ORDER BY created_at DESC", args
            ).fetchall()
            notepad = chat.notepad
            for _message, _swipe, notes in rows:
                notepad = remove_notes(notepad, notes)
            self._db.execute(f"DELETE FROM writer_reply_notes WHERE {where}", args)
            if rows:
                self._put(
                    WriterChat(chat_id, chat.scribe_chat_length, chat.scribe_summary, chat.suggest_count, notepad)
                )
            return [{"message": m, "swipe": s, "notes": n} for m, s, n in rows], notepad

        result: tuple[list[dict[str, Any]], str] = self._change(work)
        return result

    def clear_notepad(self, chat_id: str) -> None:
        def work() -> None:
            chat = self._chat(chat_id)
            self._db.execute("DELETE FROM writer_reply_notes WHERE chat_id = ?", (chat_id,))
            self._put(WriterChat(chat_id, chat.scribe_chat_length, chat.scribe_summary, chat.suggest_count, ""))

        self._change(work)

    def copy_chat(self, source: str, target: str) -> bool:
        """`target` starts with `source`'s run counts, summary, notepad and reply notes (the
        session notes and pending suggestions stay with `source`); False when `target` already
        has writer state or `source` has none."""

        def work() -> bool:
            taken = self._db.execute("SELECT 1 FROM writer_chats WHERE chat_id = ?", (target,)).fetchone()
            has = self._db.execute("SELECT 1 FROM writer_chats WHERE chat_id = ?", (source,)).fetchone()
            if taken or not has:
                return False
            chat = self._chat(source)
            self._put(
                WriterChat(target, chat.scribe_chat_length, chat.scribe_summary, chat.suggest_count, chat.notepad)
            )
            self._db.execute(
                "INSERT INTO writer_reply_notes SELECT ?, message, swipe, notes, created_at FROM writer_reply_notes "
                "WHERE chat_id = ?",
                (target, source),
            )
            return True

        copied: bool = self._change(work)
        return copied

    def forget(self, chat_id: str) -> None:
        """Everything of a chat (its reset); the notes it wrote stay in the vault."""

        def work() -> None:
            for table in ("writer_chats", "writer_scribe_notes", "writer_reply_notes", "writer_suggestions"):
                self._db.execute(f"DELETE FROM {table} WHERE chat_id = ?", (chat_id,))

        self._change(work)
