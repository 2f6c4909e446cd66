"""AI Notepad (dle-behaviour §5.3): each reply's notes taken out of it (tag mode) or picked out of
it on the `aiNotepad` channel (extract mode), kept per message and swipe, added to the chat's
notepad (64 KiB, the newest), rolled back on a swipe, delete or edit, and injected into the next
generation as one more prompt group."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from dle_desktop.core.pipeline.formatting import Group
from dle_desktop.core.writers.notepad import (
    NOTEPAD_CAP_BYTES,
    extract_message,
    injection_text,
    read_extracted,
    strip_asides,
    take_notes,
)
from dle_desktop.core.writers.prompts import NOTEPAD_EXTRACT_PROMPT, NOTEPAD_TAG_PROMPT, chosen
from dle_desktop.errors import DleError
from dle_desktop.state.writer_state import WriterState
from dle_desktop.writers.common import WritersHost, ask

log = logging.getLogger(__name__)

#: The prompt group's key (SillyTavern's extension prompt name), beside the Author's Notebook's.
GROUP_KEY = "deeplore_ai_notepad"


class AiNotepad:
    def __init__(self, host: WritersHost, store: Callable[[], WriterState]) -> None:
        self.host = host
        self._store = store
        #: bumped by every rollback or clear: an extraction that began before one is dropped
        self._epochs: dict[str, int] = {}
        #: extractions running after their reply was answered (`wait` False)
        self._background: set[asyncio.Task[None]] = set()

    def _bump(self, chat_id: str) -> None:
        self._epochs[chat_id] = self._epochs.get(chat_id, 0) + 1

    async def process(self, chat_id: str, message: int, swipe: int, text: str, *, wait: bool = True) -> dict[str, Any]:
        """A reply as written: the text to show, and its notes kept. Processing the same reply
        again (SillyTavern's fallback event) keeps the notes it had. Extract mode with `wait`
        False answers the text at once and takes the notes in the background, as DLE does (a
        failure is then only in the channel's usage and the log)."""
        s = self.host.settings
        store = self._store()
        out: dict[str, Any] = {"enabled": s.ai_notepad_enabled, "mode": s.ai_notepad_mode, "text": text}
        out |= {"notes": "", "stored": False, "pending": False, "error": None}
        if not s.ai_notepad_enabled:
            return out
        had = await asyncio.to_thread(store.notes_of, chat_id, message, swipe)
        if s.ai_notepad_mode == "tag":
            out["text"], notes = take_notes(text)
        else:
            out["text"], _asides = strip_asides(text)
            notes = ""
            if had is None and not wait:
                self._in_background(chat_id, message, swipe, text)
                return out | {"pending": True}
            if had is None:
                notes, out["error"] = await self._extract(chat_id, text)
        if notes:
            await asyncio.to_thread(store.add_reply_notes, chat_id, message, swipe, notes)
            out |= {"notes": notes, "stored": True}
        elif had:
            out["notes"] = had
        return out

    def _in_background(self, chat_id: str, message: int, swipe: int, reply: str) -> None:
        async def extract_and_keep() -> None:
            notes, error = await self._extract(chat_id, reply)
            if notes:
                await asyncio.to_thread(self._store().add_reply_notes, chat_id, message, swipe, notes)
            elif error:
                log.info("AI Notepad, chat %s message %d: %s", chat_id, message, error)

        task = asyncio.ensure_future(extract_and_keep())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def cancel_all(self) -> None:
        for task in list(self._background):
            task.cancel()

    async def _extract(self, chat_id: str, reply: str) -> tuple[str, str | None]:
        """(notes, None), or ("", why none) when the call failed or a rollback overtook it. The
        chat goes on either way: the reply is shown without its asides."""
        epoch = self._epochs.get(chat_id, 0)
        s = self.host.settings
        previous = (await asyncio.to_thread(self._store().chat, chat_id)).notepad
        try:
            answer = await ask(
                self.host,
                "ai_notepad",
                chosen(s.ai_notepad_extract_prompt, NOTEPAD_EXTRACT_PROMPT),
                extract_message(previous, reply),
            )
        except DleError as exc:
            return "", f"AI Notepad could not take notes: {exc}"
        if self._epochs.get(chat_id, 0) != epoch:
            return "", "the notes came after the reply was swiped, deleted or edited; dropped"
        return read_extracted(answer), None

    async def rollback(self, chat_id: str, message: int, swipe: int | None, *, later: bool = False) -> dict[str, Any]:
        self._bump(chat_id)
        store = self._store()
        removed, _notepad = await asyncio.to_thread(lambda: store.rollback(chat_id, message, swipe, later=later))
        return {"removed": removed, **(await self.read(chat_id))}

    async def read(self, chat_id: str) -> dict[str, Any]:
        s = self.host.settings
        store = self._store()
        notepad = (await asyncio.to_thread(store.chat, chat_id)).notepad
        return {
            "chat_id": chat_id,
            "enabled": s.ai_notepad_enabled,
            "mode": s.ai_notepad_mode,
            "text": notepad,
            "bytes": len(notepad.encode("utf-8")),
            "cap_bytes": NOTEPAD_CAP_BYTES,
            "replies": await asyncio.to_thread(store.reply_notes, chat_id),
        }

    async def clear(self, chat_id: str) -> dict[str, Any]:
        self._bump(chat_id)
        await asyncio.to_thread(self._store().clear_notepad, chat_id)
        return await self.read(chat_id)

    def forget(self, chat_id: str) -> None:
        self._bump(chat_id)

    async def groups(self, chat_id: str) -> list[Group]:
        """The prompt group for the chat's next generation (none while the notepad is off, or in
        extract mode while it is empty)."""
        s = self.host.settings
        if not s.ai_notepad_enabled:
            return []
        notepad = (await asyncio.to_thread(self._store().chat, chat_id)).notepad
        text = injection_text(notepad, s.ai_notepad_mode, chosen(s.ai_notepad_prompt, NOTEPAD_TAG_PROMPT))
        if not text:
            return []
        return [Group(GROUP_KEY, s.ai_notepad_position, s.ai_notepad_depth, s.ai_notepad_role, text)]
