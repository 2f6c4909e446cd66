"""Auto Lorebook (dle-behaviour §5.2): suggestions for the entries the chat is missing, asked on
the `autoSuggest` channel, kept for review in the data folder, and written through the note
writer when accepted (or at once with `auto_suggest_skip_review`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dle_desktop.core.pipeline.chat import ChatMessage
from dle_desktop.core.writers.prompts import SUGGEST_PROMPT, chosen
from dle_desktop.core.writers.scribe import transcript
from dle_desktop.core.writers.suggest import (
    Suggestion,
    SuggestionsRefused,
    check_suggestion,
    parse_suggestions,
    suggest_message,
    suggestion_note,
)
from dle_desktop.errors import InputError, NoteExists, NotFound
from dle_desktop.state.writer_state import WriterState
from dle_desktop.writers.common import AnswerRefused, WritersHost, ask, note_path, vault_for_new

FEATURE = "auto_lorebook"


def ai_message_count(messages: Sequence[ChatMessage]) -> int:
    return sum(1 for m in messages if not m.is_user and not m.is_system)


class AutoLorebook:
    def __init__(self, host: WritersHost, store: Callable[[], WriterState]) -> None:
        self.host = host
        self._store = store

    def _titles(self) -> list[str]:
        snap = self.host.snapshot
        return sorted({e.title for e in snap.entries}, key=str.lower) if snap is not None else []

    async def run(
        self, chat_id: str, messages: Sequence[ChatMessage], *, ai_messages: int | None = None, auto: bool = False
    ) -> dict[str, Any]:
        """Ask for suggestions now (`auto`: only when it is on and `auto_suggest_interval` AI
        messages came since the last run). They wait for review, unless the settings skip it."""
        s = self.host.settings
        store = self._store()
        count = ai_messages if ai_messages is not None else ai_message_count(messages)
        if auto:
            if not s.auto_suggest_enabled:
                return _not_run("Auto Lorebook is off (setting auto_suggest_enabled)")
            since = count - (await asyncio.to_thread(store.chat, chat_id)).suggest_count
            if since < s.auto_suggest_interval:
                return _not_run(f"{since} of {s.auto_suggest_interval} AI messages since the last suggestions")
        conversation = transcript(messages, s.ai_search_scan_depth)
        if not conversation.strip():
            return _not_run("the chat has no messages for Auto Lorebook to read")
        # Counted before the call: a failed run is not retried at every following message.
        await asyncio.to_thread(store.add_suggestions, chat_id, count, [])
        answer = await ask(
            self.host,
            "auto_suggest",
            chosen(s.auto_suggest_prompt, SUGGEST_PROMPT),
            suggest_message(self._titles(), conversation),
        )
        try:
            found, dropped = parse_suggestions(answer, self._titles())
        except SuggestionsRefused as exc:
            raise AnswerRefused(f"Auto Lorebook: {exc}; nothing written") from None
        out: dict[str, Any] = {
            "ran": True,
            "reason": None,
            "suggestions": [],
            "dropped": [d.to_json() for d in dropped],
            "written": [],
        }
        if s.auto_suggest_skip_review:
            for suggestion in found:
                try:
                    out["written"].append(await self._write(suggestion))
                except NoteExists as exc:
                    out["dropped"].append({"title": suggestion.title, "reason": str(exc)})
            return out
        out["suggestions"] = await asyncio.to_thread(store.add_suggestions, chat_id, None, [x.to_json() for x in found])
        return out

    async def pending(self, chat_id: str | None = None) -> dict[str, Any]:
        return {"suggestions": await asyncio.to_thread(self._store().suggestions, chat_id)}

    async def _take(self, suggestion_id: str) -> dict[str, Any]:
        found = await asyncio.to_thread(self._store().suggestion, suggestion_id)
        if found is None:
            raise NotFound(f"no suggestion {suggestion_id!r} is waiting (accepted, rejected, or never made)")
        return found

    async def accept(self, suggestion_id: str, edits: Mapping[str, Any]) -> dict[str, Any]:
        """Write the suggestion (with the user's edits). A bad edit or a title the vault has is
        refused in words and the suggestion keeps waiting."""
        found = await self._take(suggestion_id)
        try:
            suggestion = check_suggestion({**found["suggestion"], **edits})
        except ValueError as exc:
            raise InputError(f"the suggestion cannot be written: {exc}") from None
        written = await self._write(suggestion)
        await asyncio.to_thread(self._store().remove_suggestion, suggestion_id)
        return {"id": suggestion_id, "written": written, "suggestion": suggestion.to_json()}

    async def reject(self, suggestion_id: str) -> dict[str, Any]:
        await self._take(suggestion_id)
        await asyncio.to_thread(self._store().remove_suggestion, suggestion_id)
        return {"id": suggestion_id, "rejected": True}

    async def _write(self, suggestion: Suggestion) -> dict[str, str]:
        snap = self.host.snapshot
        existing = snap.find(suggestion.title) if snap is not None else None
        vault = vault_for_new(self.host)
        if existing is not None:
            raise NoteExists(
                f"an entry titled '{existing.title}' already exists ({existing.path} in {existing.vault}); "
                "nothing written (edit the title to write it under another)",
                existing.vault,
                existing.path,
                None,
            )
        path = note_path(suggestion.title, self.host.settings.auto_suggest_folder, "auto_suggest_folder")
        text = suggestion_note(suggestion, self.host.tag_config.lorebook)
        await self.host.writer.create(vault, path, text, feature=FEATURE)
        return {"vault": vault, "path": path, "title": suggestion.title}


def _not_run(reason: str) -> dict[str, Any]:
    return {"ran": False, "reason": reason, "suggestions": [], "dropped": [], "written": []}
