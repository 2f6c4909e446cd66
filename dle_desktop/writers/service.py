"""The three writers over one engine, sharing the per-chat store (opened on first use)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime

from dle_desktop.state.writer_state import WriterState
from dle_desktop.writers.common import WritersHost
from dle_desktop.writers.notepad import AiNotepad
from dle_desktop.writers.scribe import SessionScribe
from dle_desktop.writers.suggest import AutoLorebook


class Writers:
    def __init__(self, host: WritersHost, now: Callable[[], datetime] = datetime.now) -> None:
        self.host = host
        self._state: WriterState | None = None
        self._opening = threading.Lock()
        self.scribe = SessionScribe(host, self.store, now)
        self.suggest = AutoLorebook(host, self.store)
        self.notepad = AiNotepad(host, self.store)

    def store(self) -> WriterState:
        """The data folder's writer tables (state.sqlite), opened on first use from any thread."""
        with self._opening:
            if self._state is None:
                self._state = WriterState(self.host.paths.state_db)
            return self._state

    def last_summary(self, chat_id: str | None) -> str | None:
        """The chat's last Session Scribe summary, for AI search (scribe-informed retrieval)."""
        if not chat_id or not self.host.settings.scribe_informed_retrieval:
            return None
        return self.scribe.last_summary(chat_id) or None

    async def forget(self, chat_id: str) -> None:
        """The chat was reset: its Scribe stops, and its writer state goes (its notes stay)."""
        self.scribe.forget(chat_id)
        self.notepad.forget(chat_id)
        await asyncio.to_thread(self.store().forget, chat_id)

    async def fork(self, source: str, target: str) -> None:
        """A branch starts with its parent's notepad, reply notes and last summary, as DLE's chat
        metadata is copied with a branch (never over a chat that has writer state)."""
        await asyncio.to_thread(self.store().copy_chat, source, target)

    def close(self) -> None:
        self.scribe.cancel_all()
        self.notepad.cancel_all()
        with self._opening:
            if self._state is not None:
                self._state.close()
                self._state = None
