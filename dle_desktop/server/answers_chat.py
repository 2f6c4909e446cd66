"""The answers of retrieval and per-chat state (routes_chat), and the chat list; see answers.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dle_desktop.server.answers import POSITIONS, ROLES, Answer, EntryRef, StoredContext, may_be_left_out


class Injected(Answer):
    title: str
    vault: str
    tokens: int = Field(description="estimated tokens as injected (after truncation)")
    truncated: bool
    original_tokens: int | None = Field(description="before truncation; null if not truncated")
    matched_by: str = Field(
        description="the key, or (constant), (pinned), (bootstrap), (cascade from: X), (fuzzy, score: n), ..."
    )
    position: int = Field(description=POSITIONS)
    depth: int
    role: int = Field(description=ROLES)
    priority: float


class Group(Answer):
    key: str = Field(description="e.g. deeplore_p1_d4_r0, deeplore_notebook")
    position: int = Field(description=POSITIONS)
    position_name: str
    depth: int
    role: int = Field(description=ROLES)
    role_name: str
    outlet: str | None
    text: str = Field(description="the text to inject")
    entries: list[str] = Field(description="titles in this group")
    scan: bool = Field(description="SillyTavern's allowWIScan for this prompt (setting allow_wi_scan)")


class Verdict(Answer):
    title: str
    vault: str
    stage: str = Field(
        description=(
            "constants, bootstrap, keywords, character, cascade, recursion N, fuzzy, contextual gating, folder "
            "filter, pins, blocks, reinjection cooldown, requires/excludes, strip duplicates, budget, ..."
        )
    )
    outcome: Literal["matched", "skipped", "removed", "injected", "truncated", "cut", "info"]
    reason: str


class Generation(Answer):
    injected: list[Injected]
    groups: list[Group]
    total_tokens: int
    verdicts: list[Verdict] = Field(description="the decision record: every stage's verdict on every entry it touched")
    timings_ms: dict[str, float] = Field(description="milliseconds per stage, and `total`")
    skipped_reason: str | None = Field(
        description="set when DLE would not run at all (the last message is a system "
        "message or a tool call); nothing is saved then"
    )
    notes: list[str]
    swipe_rollback: bool = Field(description="the previous generation's state was rolled back first")
    semantic_query: str | None = Field(
        description="what the semantic stage searched with (the newest message and the "
        "window before it); null when semantic search is off"
    )
    record: int | None = Field(
        None,
        description="the number of the decision record this generation saved (null for a dry run or when "
        "nothing was saved); PUT it to /chats/{chat_id}/sources to tie it to the reply it wrote",
    )


class Analytics(Answer):
    matched: int
    injected: int
    last_triggered: int = Field(description="the generation number it last matched at")
    last_injected_at: float | None = Field(None, description="Unix time it last reached a prompt in this chat")


class ChatState(Answer):
    """A chat's state; an unknown chat reads as a fresh one."""

    chat_id: str
    generation_count: int
    pins: list[EntryRef]
    blocks: list[EntryRef]
    context: StoredContext
    folder_filter: list[str] | None
    notebook: str
    cooldowns: dict[str, int] = Field(description="vault:title → generations of cooldown left")
    counts: dict[str, int] = Field(description="vault:title → times injected in this chat")
    analytics: dict[str, Analytics] = Field(description="vault:title → match and injection counts")


class ChatDeleted(Answer):
    chat_id: str
    deleted: bool = Field(description="false if there was no state")


class DecisionRecord(Answer):
    gen: int = Field(description="generation count after this generation")
    created_at: float = Field(description="Unix time")
    injected: list[str]
    sources: list[Injected] = may_be_left_out(
        description="what was injected, how it matched and where it went (records saved since sources were kept)"
    )
    verdicts: list[Verdict]
    total_tokens: int
    semantic_query: str = may_be_left_out(description="what the semantic stage searched with (only when it was on)")


class Records(Answer):
    chat_id: str
    records: list[DecisionRecord] = Field(description="newest first")


class Pins(Answer):
    pins: list[EntryRef]


class Blocks(Answer):
    blocks: list[EntryRef]


class ChatContext(Answer):
    context: StoredContext


class ChatFolderFilter(Answer):
    folder_filter: list[str] | None


class Notebook(Answer):
    notebook: str


class ChatSummary(Answer):
    chat_id: str
    generation_count: int
    updated_at: float = Field(description="when the chat's state was last saved (Unix time, seconds)")
    records: int = Field(description="decision records kept for the chat (at most 50)")


class ForkResult(Answer):
    chat_id: str
    from_: str = Field(alias="from")
    copied: bool = Field(description="false when the chat had state already, the source had none, or both are one chat")
    reason: str | None = Field(description="why nothing was copied")


class ChatList(Answer):
    chats: list[ChatSummary] = Field(description="chats with stored state, most recently saved first")
