"""Session Scribe (dle-behaviour §5.1): one run per chat at a time, the summary of the last
`scribe_scan_depth` messages on the `scribe` channel, a session note through the note writer,
and the chat's history of notes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from dle_desktop.core.pipeline.chat import ChatMessage
from dle_desktop.core.writers.prompts import SCRIBE_PROMPT, chosen
from dle_desktop.core.writers.scribe import SummaryRefused, clean_summary, scribe_message, session_note, transcript
from dle_desktop.errors import NoteExists
from dle_desktop.state.writer_state import WriterState
from dle_desktop.writers.common import (
    AnswerRefused,
    WriterBusy,
    WriterCancelled,
    WritersHost,
    ask,
    note_path,
    vault_for_new,
)

FEATURE = "session_scribe"
#: Names tried when a session note of that second already exists (another chat, same character).
SAME_SECOND_TRIES = 5


def character_of(messages: Sequence[ChatMessage], given: str | None) -> str:
    if given and given.strip():
        return given.strip()
    return next((m.name for m in reversed(messages) if not m.is_user and not m.is_system and m.name), "Unknown")


class SessionScribe:
    def __init__(self, host: WritersHost, store: Callable[[], WriterState], now: Callable[[], datetime]) -> None:
        self.host = host
        self._store = store
        self.now = now
        self._tasks: dict[str, asyncio.Task[dict[str, Any]]] = {}
        self._busy: set[str] = set()
        #: chats whose run was cancelled before its AI call began
        self._cancelled: set[str] = set()
        #: each chat's last summary, for AI search (read once from the store)
        self._summaries: dict[str, str] = {}

    def running(self, chat_id: str) -> bool:
        return chat_id in self._busy

    def last_summary(self, chat_id: str) -> str:
        if chat_id not in self._summaries:
            self._summaries[chat_id] = self._store().chat(chat_id).scribe_summary
        return self._summaries[chat_id]

    def forget(self, chat_id: str) -> None:
        self.cancel(chat_id)
        self._summaries.pop(chat_id, None)

    async def run(
        self,
        chat_id: str,
        messages: Sequence[ChatMessage],
        *,
        character: str | None = None,
        focus: str = "",
        chat_length: int | None = None,
        auto: bool = False,
    ) -> dict[str, Any]:
        """Summarise and write now; `auto`: only when it is on and `scribe_interval` messages came
        since the last note (what the bridge asks after each character message). WriterBusy while
        the chat's Scribe runs; WriterCancelled when it is cancelled (nothing written)."""
        if chat_id in self._busy:
            raise WriterBusy(
                "a Session Scribe is already writing this chat's note; wait for it, or cancel it, and try again"
            )
        # Claimed before the first await: a second request (another tab) finds the chat busy.
        self._busy.add(chat_id)
        try:
            return await self._run(chat_id, messages, character, focus, chat_length, auto)
        finally:
            self._busy.discard(chat_id)
            self._cancelled.discard(chat_id)
            self._tasks.pop(chat_id, None)

    async def _run(
        self,
        chat_id: str,
        messages: Sequence[ChatMessage],
        character: str | None,
        focus: str,
        chat_length: int | None,
        auto: bool,
    ) -> dict[str, Any]:
        s = self.host.settings
        length = chat_length if chat_length is not None else len(messages)
        if auto:
            if not s.scribe_enabled:
                return _not_run("Session Scribe is off (setting scribe_enabled)", length)
            since = length - (await asyncio.to_thread(self._store().chat, chat_id)).scribe_chat_length
            if since < s.scribe_interval:
                return _not_run(f"{since} of {s.scribe_interval} messages since the last session note", length)
        conversation = transcript(messages, s.scribe_scan_depth)
        if not conversation.strip():
            return _not_run("the chat has no messages for the Session Scribe to summarise", length)
        if chat_id in self._cancelled:
            raise WriterCancelled("the Session Scribe was cancelled; nothing written")
        task = asyncio.ensure_future(
            self._write(chat_id, conversation, character_of(messages, character), focus, length)
        )
        self._tasks[chat_id] = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.cancelled():
            raise WriterCancelled("the Session Scribe was cancelled; nothing written")
        return task.result()

    def cancel(self, chat_id: str) -> bool:
        task = self._tasks.get(chat_id)
        if task is None and chat_id in self._busy:
            self._cancelled.add(chat_id)  # still reading the chat's state: stop before the call
            return True
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def cancel_all(self) -> None:
        for chat_id in list(self._tasks):
            self.cancel(chat_id)

    async def _write(self, chat_id: str, conversation: str, character: str, focus: str, length: int) -> dict[str, Any]:
        s = self.host.settings
        store = self._store()
        vault = vault_for_new(self.host)
        note_path("check", s.scribe_folder, "scribe_folder")  # a bad folder is refused before the call
        previous = (await asyncio.to_thread(store.chat, chat_id)).scribe_summary
        answer = await ask(
            self.host, "scribe", chosen(s.scribe_prompt, SCRIBE_PROMPT), scribe_message(conversation, previous, focus)
        )
        try:
            summary = clean_summary(answer)
        except SummaryRefused as exc:
            raise AnswerRefused(f"Session Scribe: {exc}") from None
        note = session_note(character, summary, self.now())
        for attempt in range(SAME_SECOND_TRIES):
            title = note.title if attempt == 0 else f"{note.title} ({attempt + 1})"
            path = note_path(title, s.scribe_folder, "scribe_folder")
            try:
                await self.host.writer.create(vault, path, note.text, feature=FEATURE)
                break
            except NoteExists:
                if attempt == SAME_SECOND_TRIES - 1:
                    raise
        await asyncio.to_thread(store.record_scribe, chat_id, length, summary, vault, path, title)
        self._summaries[chat_id] = summary
        return {
            "ran": True,
            "reason": None,
            "note": {"vault": vault, "path": path, "title": title},
            "summary": summary,
            "chat_length": length,
        }

    async def history(self, chat_id: str) -> dict[str, Any]:
        store = self._store()
        chat = await asyncio.to_thread(store.chat, chat_id)
        notes = await asyncio.to_thread(store.scribe_notes, chat_id)
        return {
            "chat_id": chat_id,
            "running": self.running(chat_id),
            "last_chat_length": chat.scribe_chat_length,
            "last_summary": chat.scribe_summary,
            "notes": notes,
        }


def _not_run(reason: str, length: int) -> dict[str, Any]:
    return {"ran": False, "reason": reason, "note": None, "summary": None, "chat_length": length}
