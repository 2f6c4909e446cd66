"""What the server answers, declared as models (the lore API, status, AI, gaps and the bridge here;
answers_chat.py for retrieval and chat state, answers_vectors.py for SillyTavern's routes):
openapi.py and openapi_vectors.py generate the document's answer schemas from them (the routes build their answers from the engine's own
`to_json`s; tests/retrieval/test_openapi.py and the fuzz test hold real answers to these).

A field without a default is always present; one with `None` as its default may be left out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from dle_desktop.server.schemas import ref

#: A pin or block as the chat state stores it (the request's schema: the same shapes).
EntryRef = Annotated[Any, WithJsonSchema(ref("EntryRef"))]
StoredContext = Annotated[
    dict[str, str | list[str]], Field(description="Gating context as stored: text or lists of text.")
]

#: Where a number tells a place in the prompt, and whose voice.
POSITIONS = "0 after the prompt (IN_PROMPT), 1 in chat at `depth`, 2 before the prompt, -1 an outlet"
ROLES = "0 system, 1 user, 2 assistant"


def may_be_left_out(description: str | None = None) -> Any:
    """A field the answer may leave out (never null when present)."""
    return Field(None, description=description)


class Answer(BaseModel):
    """An object the server answers with; the document lists its fields."""

    # Only the OpenAPI document and the tests read these models: compile them when they do.
    model_config = ConfigDict(defer_build=True)


class Error(Answer):
    error: str = Field(description="what went wrong, fit for a user")


class VaultStatus(Answer):
    name: str
    kind: Literal["folder", "obsidian-rest"]
    location: str
    enabled: bool
    entries: int
    error: str | None


class SemanticStatus(Answer):
    enabled: bool = Field(description="the semantic stage is on (setting semantic_enabled)")
    state: Literal["off", "waiting", "embedding", "paused", "ready", "error"]
    done: int = Field(description="entries embedded in the current pass")
    total: int = Field(description="entries the current pass embeds (new or changed ones)")
    embedded: int = Field(description="entries with a vector for the current model")
    entries: int = Field(description="entries that should have one")
    error: str | None
    model: str | None
    paused: bool
    prefetched: int = Field(
        description="messages embedded ahead of their generation (POST /semantic/prefetch) since the engine started"
    )
    query_cache_hits: int = Field(description="query texts a lookup found embedded already")
    query_cache_misses: int = Field(description="query texts a lookup had to embed itself")


class Breaker(Answer):
    """DLE's AI circuit breaker: 2 failures in a row open it for 30 s, then one probe"""

    state: Literal["closed", "open", "half-open"]
    failures: int = Field(description="breaker-tripping failures in a row")
    opened_at: float | None
    retry_in_seconds: float
    probe_in_flight: bool


class ChannelUsage(Answer):
    """counts since usage_since (kept in the data folder across restarts)"""

    calls: int
    failures: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_hits: int = Field(description="AI-search answers replayed from the cache")
    last_error: str | None
    last_latency_ms: int | None
    last_call_at: float | None


class Channel(Answer):
    label: str
    mode: Literal["profile", "proxy"]
    inherited: bool = Field(description="uses AI search's connection")
    profile: str | None
    model: str
    max_tokens: int
    timeout_s: float
    problem: str | None = Field(description="why the channel cannot call (what to set)")
    note: str | None
    usage: ChannelUsage


class AiStateChannels(Answer):
    ai_search: Channel
    scribe: Channel
    auto_suggest: Channel
    ai_notepad: Channel
    librarian: Channel
    optimize_keys: Channel


class AiState(Answer):
    offline: bool
    breaker: Breaker
    usage_since: float = Field(description="when the usage counts started (Unix time); they survive restarts")
    channels: AiStateChannels


class ConnectionTest(Answer):
    ok: bool
    message: str
    latency_ms: int


class StatusAi(Answer):
    enabled: bool
    mode: Literal["two-stage", "ai-only"]
    breaker: Literal["closed", "open", "half-open"]
    offline: bool


class Status(Answer):
    version: str
    vaults: list[VaultStatus]
    entries: int
    skipped: int
    index_version: int | None
    index_built_at: float | None
    syncing: bool
    sync_paused: bool
    sample_vault: bool
    last_error: str | None
    semantic: SemanticStatus
    ai: StatusAi


class ParseWarning(Answer):
    code: str
    message: str


class EntrySummary(Answer):
    """An entry without its content (the entries list)."""

    path: str = Field(description="vault-relative, '/'-separated")
    vault: str
    title: str
    keys: list[str]
    refine_keys: list[str]
    priority: float = Field(description="lower runs first; default 100")
    constant: bool
    seed: bool
    bootstrap: bool
    guide: bool
    requires: list[str]
    excludes: list[str]
    cascade_links: list[str]
    scan_depth: int | None
    exclude_recursion: bool
    warmup: int | None
    cooldown: int | None
    probability: float | None
    position: str | None = Field(description="before | after | in_chat")
    depth: int | None
    role: str | None = Field(description="system | user | assistant")
    outlet: str | None
    graph: bool
    tags: list[str]
    summary: str
    links: list[str]
    resolved_links: list[str]
    folder: str | None
    custom_fields: dict[str, Any] = Field(description="custom gating fields from the note's frontmatter")
    token_estimate: int
    content_hash: str
    original_requires: list[str]
    original_excludes: list[str]
    original_cascade_links: list[str]
    warnings: list[ParseWarning]


class Entry(EntrySummary):
    """An entry in full, with the text that is injected."""

    content: str


class EntryList(Answer):
    """`ready` is false (and `entries` empty, no `index_version`) before the first index."""

    entries: list[EntrySummary]
    ready: bool
    index_version: int = may_be_left_out()


class Finding(Answer):
    entry: str | None
    code: str
    message: str
    vault: str | None
    path: str | None


class HealthReport(Answer):
    errors: list[Finding]
    warnings: list[Finding]
    info: list[Finding]


class SkippedNote(Answer):
    path: str
    vault: str
    code: str
    reason: str
    line: int | None


class Skipped(Answer):
    skipped: list[SkippedNote]
    warnings: list[str]


class Changes(Answer):
    """Changed entries as `vault:path`."""

    added: list[str]
    removed: list[str]
    modified: list[str]
    keys_changed: list[str]
    has_changes: bool


class SyncResult(Answer):
    changes: Changes
    seconds: float
    entries: int


class PrefetchResult(Answer):
    queued: int = Field(description="messages handed to the embedder")
    reason: str = may_be_left_out(description="why nothing was queued")


class LoreSearchResultBest(Answer):
    """the single best hit across all queries"""

    title: str
    vault: str
    path: str
    content: str = Field(description="`### Title` then the full content")


class LoreSearchResultLinked(Answer):
    title: str
    vault: str
    summary: str
    manifest: str = Field(description="the entry as AI search's manifest shows it")


class LoreSearchResult(Answer):
    best: LoreSearchResultBest | None = Field(description="the single best hit across all queries")
    linked: list[LoreSearchResultLinked] = Field(description="up to 3 entries the best hit links to")
    misses: list[str] = Field(description="the queries that found nothing; each became or merged into a gap record")
    gap_ids: list[str] = Field(description="the gap records the misses went to, in order")


class GapRecord(Answer):
    """What the story asked for and the vault lacked; the Librarian view's Gaps panel"""

    id: str
    type: Literal["search", "flag"]
    query: str = Field(description="the search query or flagged title")
    reason: str = Field(description="every distinct reason given, joined with `; `")
    subtype: Literal["gap", "update"]
    entry_title: str
    urgency: Literal["low", "medium", "high"]
    frequency: int = Field(description="how often it was asked for (similar records merge)")
    status: Literal["pending", "written"]
    hidden: bool = Field(description="hidden by the user; flagged again, it comes back")
    dismissed: bool = Field(description="dismissed by the user; it stays buried")
    had_results: bool
    created: float
    updated: float


class GapList(Answer):
    gaps: list[GapRecord] = Field(description="pending first, then by urgency, frequency and recency")


class BridgeInfoAiSearch(Answer):
    enabled: bool
    mode: Literal["two-stage", "ai-only"]
    timeout_ms: int = Field(description="AI search's timeout (a retrieve may take this long and more)")


class BridgeInfo(Answer):
    server_version: str
    bundled_extension_version: str | None = Field(description="the version of the extension this DLE Desktop ships")
    entries: int
    index_ready: bool
    index_version: int | None
    vector_routing: bool = Field(description="setting st_vector_routing: route SillyTavern's Vector Storage here")
    forget_deleted_chats: bool = Field(description="setting st_forget_deleted_chats")
    ai_search: BridgeInfoAiSearch
    semantic_enabled: bool
    budget_tokens: int | None = Field(
        description="the lore budget in tokens (setting max_tokens_budget); null: unlimited"
    )


class BridgeState(Answer):
    """What the bridge extension last told the server (its hellos, and requests sent with X-DLE-Client: st-bridge)."""

    connected: bool = Field(description="the extension was heard from in the last 90 s")
    last_contact: float | None = Field(description="Unix time")
    last_contact_age_s: float | None
    origin: str | None
    extension_version: str | None
    st_version: str | None
    chat_id: str | None
    character: str | None
    generations: int = Field(description="retrieves the extension ran since DLE Desktop started")
    last_injected: list[str] = Field(description="titles the last one injected")
    last_total_tokens: int | None
    last_ms: float | None
    last_error: str | None


class BreakerReset(Answer):
    breaker: Breaker


class CacheCleared(Answer):
    cleared: str = Field(description="the chat whose answers were forgotten, or `all`")
