"""Librarian sessions: several kept, each resumable, in the private data folder
(`<data>/librarian/sessions/<id>.json`). A session is the visible conversation, the tool activity,
the draft and what it was opened from (a gap record, a chat to review)."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dle_desktop.librarian.draft import Draft
from dle_desktop.librarian.store_io import read_json, write_json

KINDS = {"new": "New entry", "gap": "From a gap", "review": "Review a chat", "audit": "Audit"}
_ID = re.compile(r"^[a-z0-9-]{1,64}$")
#: the conversation turns sent back to the model each time (DLE keeps the last 10)
HISTORY_SENT = 10


@dataclass
class Message:
    role: str  # user | assistant | activity | error
    text: str
    at: float = field(default_factory=time.time)
    #: the assistant's raw answer (what it is shown again as, in the history sent back)
    raw: str = ""

    def to_json(self) -> dict:
        return {"role": self.role, "text": self.text, "at": self.at, "raw": self.raw}

    @classmethod
    def from_json(cls, raw: Any) -> Message | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str) or not isinstance(raw.get("text"), str):
            return None
        at = raw.get("at")
        answer = raw.get("raw")
        return cls(
            raw["role"],
            raw["text"],
            at if isinstance(at, (int, float)) else time.time(),
            answer if isinstance(answer, str) else "",
        )


@dataclass
class Session:
    id: str
    kind: str = "new"
    title: str = "New entry"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    messages: list[Message] = field(default_factory=list)
    draft: Draft = field(default_factory=Draft)
    gap_id: str = ""
    chat_text: str = ""  # the chat under review / for the key preview, as plain lines
    queue: list[dict] = field(default_factory=list)

    @classmethod
    def new(cls, kind: str = "new", title: str = "", **kw: Any) -> Session:
        if kind not in KINDS:
            raise ValueError(f"unknown session kind {kind!r}")
        return cls(id=f"{time.strftime('%Y%m%d')}-{uuid.uuid4().hex[:10]}", kind=kind, title=title or KINDS[kind], **kw)

    def history(self) -> list[Message]:
        """The user/assistant turns sent back to the model: the last HISTORY_SENT of them."""
        return [m for m in self.messages if m.role in ("user", "assistant")][-HISTORY_SENT:]

    def to_json(self) -> dict:
        return {
            "version": 1,
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "messages": [m.to_json() for m in self.messages],
            "draft": self.draft.to_json(),
            "gap_id": self.gap_id,
            "chat_text": self.chat_text,
            "queue": self.queue,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Session | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not _ID.match(raw["id"]):
            return None
        messages = [m for m in (Message.from_json(r) for r in raw.get("messages") or []) if m is not None]
        kind: str = raw["kind"] if raw.get("kind") in KINDS else "new"

        def text(key: str) -> str:
            value = raw.get(key)
            return value if isinstance(value, str) else ""

        def num(key: str) -> float:
            v = raw.get(key)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else time.time()

        queued = raw.get("queue")
        queue = queued if isinstance(queued, list) else []
        return cls(
            id=raw["id"],
            kind=kind,
            title=text("title") or KINDS[kind],
            created=num("created"),
            updated=num("updated"),
            messages=messages,
            draft=Draft.from_json(raw.get("draft")),
            gap_id=text("gap_id"),
            chat_text=text("chat_text"),
            queue=[q for q in queue if isinstance(q, dict)],
        )


class SessionStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, session_id: str) -> Path:
        if not _ID.match(session_id):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.folder / f"{session_id}.json"

    def save(self, session: Session) -> None:
        session.updated = time.time()
        write_json(self._path(session.id), session.to_json())

    def load(self, session_id: str) -> Session | None:
        return Session.from_json(read_json(self._path(session_id), None))

    def delete(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)

    def list(self) -> list[Session]:
        """Every saved session, the most recently used first."""
        if not self.folder.is_dir():
            return []
        out = [s for s in (Session.from_json(read_json(p, None)) for p in self.folder.glob("*.json")) if s is not None]
        return sorted(out, key=lambda s: -s.updated)
