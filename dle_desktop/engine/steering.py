"""Steering a chat from SillyTavern (or the app): the vault's gating fields and folders, a checked
change of a chat's gating context or folder filter, per-entry analytics, and which lore shaped
each reply. Thin over the pure `core.steering` and the chat store; no Qt, no HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.chat_input import ChatDocument
from dle_desktop.core.steering import (
    SteeringError,
    checked_folders,
    context_value,
    field_usage,
    resolve_field,
    vault_folders,
)
from dle_desktop.engine.retrieval import NotReady, RetrievalService
from dle_desktop.errors import InputError, NotFound
from dle_desktop.state.injection_stats import EntryUsage, entry_usage


def _usage_row(entry: Entry, use: EntryUsage) -> dict[str, Any]:
    """One entry's line of the analytics: who it is and its use over all chats."""
    return {"title": entry.title, "vault": entry.vault, "path": entry.path, **use.to_json()}


#: A replay runs the newest this many messages (each one a generation).
MAX_SIMULATED = 300


class UnknownSteering(InputError):
    """A field or folder the vault does not have, or a value its field cannot take; nothing was changed."""


class NotInVault(NotFound):
    """A field or folder the request names that the vault does not have; nothing was changed."""


@dataclass
class SteeringService:
    retrieval: RetrievalService
    snapshot_getter: Callable[[], IndexSnapshot | None]
    state_db: Path

    def _snapshot(self) -> IndexSnapshot:
        snap = self.snapshot_getter()
        if snap is None:
            raise NotReady("the vault index is not ready yet; try again in a moment")
        return snap

    # -- what the vault offers -----------------------------------------------------------------

    async def fields(self) -> dict[str, Any]:
        snap = self._snapshot()
        uses = await asyncio.to_thread(field_usage, list(snap.entries), snap.field_definitions)
        return {
            "source": snap.field_definitions.source,
            "problems": list(snap.field_definitions.problems),
            "entries": len(snap.entries),
            "fields": [u.to_json() for u in uses],
        }

    def folders(self) -> dict[str, Any]:
        known = vault_folders(self._snapshot().entries)
        return {"folders": [{"path": path, "entries": n} for path, n in known.items()]}

    # -- checked changes -------------------------------------------------------------------------

    async def set_field(self, chat_id: str, field_name: str, value: str | Sequence[str] | None) -> dict[str, Any]:
        """Set (or, with None, clear) one gating field of the chat's context; the field is
        named by its name or context key, and a multi-valued one takes a comma list."""
        snap = self._snapshot()
        try:
            field = resolve_field(field_name, snap.field_definitions)
        except SteeringError as exc:
            raise NotInVault(str(exc)) from None
        try:
            parsed = None if value is None else context_value(field, value)
        except SteeringError as exc:
            raise UnknownSteering(str(exc)) from None
        key = field.context_key or field.name
        state = await self.retrieval.state(chat_id)
        context = dict(state.context)
        if parsed is None:
            context.pop(key, None)
        else:
            context[key] = parsed
        new = await self.retrieval.update(chat_id, context=context)
        return {"field": field.name, "context_key": key, "value": parsed, "context": dict(new.context)}

    async def set_folders(self, chat_id: str, folders: Sequence[str] | None) -> tuple[str, ...] | None:
        """Replace the chat's folder filter with folders the vault has (None or empty: off)."""
        if folders:
            try:
                checked: tuple[str, ...] | None = checked_folders(folders, vault_folders(self._snapshot().entries))
            except SteeringError as exc:
                raise NotInVault(str(exc)) from None
        else:
            checked = None
        new = await self.retrieval.update(chat_id, folder_filter=checked or None)
        return new.folder_filter

    # -- analytics ---------------------------------------------------------------------------------

    async def used_entries(self) -> list[dict[str, Any]]:
        """The entries used at least once over all chats, as `analytics` lists them (the Vault
        view's use columns, read after every sync): a row for each of 10,000 entries held the
        interpreter lock 50-100 ms on the engine's loop, beside the window's work."""
        snap = self._snapshot()
        overall, _chats = await asyncio.to_thread(entry_usage, self.state_db)
        if not overall:
            return []
        return [
            _usage_row(entry, use)
            for entry in snap.entries
            if (use := overall.get(entry.tracker_key)) is not None and (use.matched or use.injected)
        ]

    async def analytics(self, chat_id: str | None = None) -> dict[str, Any]:
        """Every entry of the vault (so the never-injected ones are listed too) with its use over
        all chats and, when a chat is named, in that chat."""
        snap = self._snapshot()
        overall, chats = await asyncio.to_thread(entry_usage, self.state_db)
        mine: dict[str, Any] = {}
        if chat_id is not None:
            mine = dict((await self.retrieval.state(chat_id)).analytics)
        rows = []
        for entry in snap.entries:
            use = overall.get(entry.tracker_key, EntryUsage())
            row = _usage_row(entry, use)
            if chat_id is not None:
                row["chat"] = EntryUsage().add(mine.get(entry.tracker_key) or {}).to_json()
            rows.append(row)
        rows.sort(key=lambda r: (-r["injected"], -r["matched"], r["title"].lower()))
        return {
            "chat_id": chat_id,
            "chats": chats,
            "never_injected": sum(1 for r in rows if r["injected"] == 0),
            "entries": rows,
        }

    # -- a replay of the chat ---------------------------------------------------------------------

    async def simulate(self, doc: ChatDocument) -> dict[str, Any]:
        """The chat replayed message by message with keywords only (AI search and semantic
        search off, a fixed seed), the state carried along as real generations would carry it:
        what each message's generation would inject, and what came and went. The chat's stored
        pins, blocks, context and folder filter apply unless the request sends its own."""
        snap = self._snapshot()
        if doc.chat_id and not doc.present & {"pins", "blocks", "context", "folder_filter"}:
            stored = await self.retrieval.state(doc.chat_id)
            doc = dataclasses.replace(
                doc,
                pins=stored.pins,
                blocks=stored.blocks,
                context=dict(stored.context),
                folder_filter=stored.folder_filter,
            )
        cfg = dataclasses.replace(self.retrieval.config, ai_search_enabled=False, semantic_enabled=False)
        first = max(1, len(doc.messages) - MAX_SIMULATED + 1)
        cuts = list(range(first, len(doc.messages) + 1))
        steps = await self.retrieval.dry_run(snap, doc, cfg, seed=0, cuts=cuts) if cuts else []
        out = []
        before: list[str] = []
        for step in steps:
            titles = [i["title"] for i in step["injected"]]
            message = doc.messages[step["messages"] - 1]
            out.append(
                {
                    "message": step["messages"] - 1,
                    "speaker": message.name or ("user" if message.is_user else "character"),
                    "is_user": message.is_user,
                    "injected": titles,
                    "added": [t for t in titles if t not in before],
                    "dropped": [t for t in before if t not in titles],
                    "total_tokens": step["total_tokens"],
                }
            )
            before = titles
        return {"messages": len(doc.messages), "simulated": len(out), "steps": out}

    # -- which lore shaped a reply --------------------------------------------------------------

    async def link_source(self, chat_id: str, message: int, swipe: int, record: int) -> dict[str, Any]:
        linked = await self.retrieval.link_source(chat_id, message, swipe, record)
        if linked is None:
            raise NotFound(f"decision record {record} of this chat is no longer kept (the newest 50 are)")
        return linked

    async def source(self, chat_id: str, message: int, swipe: int) -> dict[str, Any]:
        found = await self.retrieval.source(chat_id, message, swipe)
        if found is None:
            raise NotFound(
                f"no lore is on record for message {message}, swipe {swipe}: it was written before the bridge "
                "recorded sources, without DLE Desktop, or it is a user message"
            )
        return found
