"""Optimize Keys and Summarize (dle-behaviour §5.5) as proposed changes: the new note text, the
diff against the version read, and the version it is based on, so accepting it is one
conflict-checked write. Unlike DLE, only the changed field's text differs (the writer's
`edit_fields`): comments and formatting of the rest of the frontmatter stay."""

from __future__ import annotations

import difflib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from dle_desktop.ai.types import ChatRequest, ChatResponse
from dle_desktop.core.entry import Entry
from dle_desktop.errors import DleError
from dle_desktop.librarian.draft import SUMMARY_MAX
from dle_desktop.librarian.protocol import find_object
from dle_desktop.vault.frontmatter_edit import edit_fields
from dle_desktop.vault.writer import NoteVersion

Caller = Callable[[ChatRequest], Awaitable[ChatResponse]]
Reader = Callable[[str, str], Awaitable[NoteVersion]]


class ProposalFailed(DleError):
    pass


@dataclass(frozen=True)
class ProposedChange:
    feature: str  # optimize-keys | summarize
    title: str
    base: NoteVersion
    new_text: str
    note: str = ""  # the AI's reasoning, shown beside the diff

    @property
    def diff(self) -> str:
        return unified_diff(self.base.text or "", self.new_text, self.base.path)

    @property
    def changed(self) -> bool:
        return self.new_text != self.base.text

    def edited(self, text: str) -> ProposedChange:
        return ProposedChange(self.feature, self.title, self.base, text, self.note)


def unified_diff(old: str, new: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def _read_keys(text: str) -> tuple[list[str], str]:
    obj = find_object(text)
    keys = obj.get("suggested") if isinstance(obj, dict) else None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ProposalFailed('the AI did not answer with {"suggested": [keys…]}; nothing changed')
    keys = list(dict.fromkeys(k.strip() for k in keys if k.strip()))[:10]
    if not keys:
        raise ProposalFailed("the AI suggested no keys; nothing changed")
    reasoning = obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else ""
    return keys, reasoning


def keys_request(entry: Entry, prompt: str, mode: str, max_tokens: int) -> ChatRequest:
    hint = (
        "KEYWORD-ONLY: keys are the only way this entry is found; cover every way the chat names it"
        if mode == "keyword"
        else "TWO-STAGE: keys pre-select candidates, then AI search chooses; keep them precise"
    )
    user = (
        f"Mode: {hint}\nTitle: {entry.title}\nCurrent keys: {json.dumps(list(entry.keys), ensure_ascii=False)}\n\n"
        f"Content:\n{entry.content[:1500]}"
    )
    return ChatRequest(system=prompt, user_parts=(user,), max_tokens=max_tokens)


async def optimize_keys(
    call: Caller, read: Reader, entry: Entry, *, prompt: str, mode: str = "two-stage", max_tokens: int = 1024
) -> ProposedChange:
    base = await read(entry.vault, entry.path)
    if base.text is None:
        raise ProposalFailed(f"{entry.path} is no longer in the vault")
    answer = await call(keys_request(entry, prompt, mode, max_tokens))
    keys, reasoning = _read_keys(answer.text)
    return ProposedChange("optimize-keys", entry.title, base, edit_fields(base.text, {"keys": keys}), reasoning)


def _clean_summary(text: str) -> str:
    text = text.strip().strip('"').strip()
    if text.startswith("{"):
        obj = find_object(text)
        if isinstance(obj, dict) and isinstance(obj.get("summary"), str):
            text = obj["summary"].strip()
    return " ".join(text.split())[:SUMMARY_MAX]


async def summarize(call: Caller, read: Reader, entry: Entry, *, prompt: str, max_tokens: int = 1024) -> ProposedChange:
    base = await read(entry.vault, entry.path)
    if base.text is None:
        raise ProposalFailed(f"{entry.path} is no longer in the vault")
    answer = await call(
        ChatRequest(
            system=prompt, user_parts=(f"Title: {entry.title}\n\n{entry.content[:4000]}",), max_tokens=max_tokens
        )
    )
    summary = _clean_summary(answer.text)
    if not summary:
        raise ProposalFailed(f"the AI wrote no summary for '{entry.title}'")
    return ProposedChange("summarize", entry.title, base, edit_fields(base.text, {"summary": summary}))


async def summarize_many(
    call: Caller,
    read: Reader,
    entries: Sequence[Entry],
    *,
    prompt: str,
    on_progress: Callable[[int, int, str], None],
    on_result: Callable[[ProposedChange | None, Entry, str | None], None],
    max_tokens: int = 1024,
) -> int:
    """One summary per entry, in order; each proposal (or failure) is handed to `on_result` as it
    comes, so a cancel keeps what was done. Returns how many proposals were made."""
    made = 0
    total = len(entries)
    for i, entry in enumerate(entries):
        on_progress(i, total, entry.title)
        try:
            change = await summarize(call, read, entry, prompt=prompt, max_tokens=max_tokens)
        except DleError as exc:
            on_result(None, entry, str(exc))
            continue
        made += 1
        on_result(change, entry, None)
    on_progress(total, total, "")
    return made


def needs_summary(entries: Sequence[Entry]) -> list[Entry]:
    """DLE's /dle-summarize scope: entries without a summary (guides excluded)."""
    return [e for e in entries if not e.summary.strip() and not e.guide]
