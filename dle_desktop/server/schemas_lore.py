"""The requests of the lore API for tool-calling models, the gap records, the entries and sync
routes, and the SillyTavern bridge (routes_lore, routes_gaps, routes_bridge); see schemas.py."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from dle_desktop.librarian.gaps import URGENCIES
from dle_desktop.server.schemas import (
    NOT_BLANK,
    QueryModel,
    RequestModel,
    not_blank,
    one_of,
    text,
    texts,
    zero_or_one,
)

MAX_QUERIES = 4
MAX_QUERY_CHARS = 500
MAX_TITLE_CHARS = 500
MAX_REASON_CHARS = 4000
MAX_EXCLUDED = 2000
FLAG_TYPES = ("gap", "update")
STATUSES = ("pending", "written")
HELLO_FIELDS = ("extension_version", "st_version", "chat_id", "character", "last_error")
MAX_HELLO_CHARS = 1000
#: A prefetch names at most this many messages, each at most this long (a reply, the message
#: being typed; the semantic query keeps the last 1,200 characters of a message anyway).
MAX_PREFETCH_MESSAGES = 4
MAX_PREFETCH_CHARS = 50_000


class LoreSearchRequest(RequestModel):
    shape: ClassVar[str] = "send an object: {queries: [1-4 texts], reason?, exclude_titles?}"
    missing: ClassVar[dict[str, str]] = {"queries": "queries is required: a list of 1 to 4 texts"}

    queries: list[Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NOT_BLANK)]] = Field(
        min_length=1, max_length=MAX_QUERIES, description="1-4 things to look for (BM25 each); none may be blank"
    )
    reason: str = Field("", max_length=MAX_REASON_CHARS, description="why the model is looking (kept on a gap)")
    exclude_titles: list[Annotated[str, Field(max_length=MAX_TITLE_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_EXCLUDED,
        description="titles never to return (the lore already injected), case-insensitive",
    )

    @field_validator("queries", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> list[str]:
        queries = texts(value, "queries", MAX_QUERIES, MAX_QUERY_CHARS, min_items=1)
        if not all(not_blank(q) for q in queries):
            raise ValueError("a query is blank; each must have something to look for")
        return queries

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> str:
        return text(value, "reason", MAX_REASON_CHARS)

    @field_validator("exclude_titles", mode="before")
    @classmethod
    def _exclude(cls, value: Any) -> list[str]:
        return texts(value, "exclude_titles", MAX_EXCLUDED, MAX_TITLE_CHARS)


class LoreFlagRequest(RequestModel):
    shape: ClassVar[str] = "send an object: {title, reason, urgency?, flag_type?, entry_title?}"

    title: str = Field(
        min_length=1,
        max_length=MAX_TITLE_CHARS,
        pattern=NOT_BLANK,
        description="the missing topic, or the entry that needs an update",
    )
    reason: str = Field(max_length=MAX_REASON_CHARS, description="what is missing or out of date")
    urgency: Literal["low", "medium", "high"] = "medium"
    flag_type: Literal["gap", "update"] = "gap"
    entry_title: str = Field(
        "", max_length=MAX_TITLE_CHARS, description="the existing entry an update is about (default: title)"
    )

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, value: Any) -> str:
        return text(value, "title", MAX_TITLE_CHARS, blank_ok=False)

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> str:
        return text(value, "reason", MAX_REASON_CHARS)

    @field_validator("urgency", mode="before")
    @classmethod
    def _urgency(cls, value: Any) -> str:
        return one_of(value, "urgency", URGENCIES)

    @field_validator("flag_type", mode="before")
    @classmethod
    def _flag_type(cls, value: Any) -> str:
        return one_of(value, "flag_type", FLAG_TYPES)

    @field_validator("entry_title", mode="before")
    @classmethod
    def _entry_title(cls, value: Any) -> str:
        return text(value, "entry_title", MAX_TITLE_CHARS)


_HelloText = Annotated[str | None, Field(max_length=MAX_HELLO_CHARS)]


class BridgeHello(RequestModel):
    """Every field is optional; each replaces what the last hello said (null or absent: unknown). Unknown fields
    are refused."""

    shape: ClassVar[str] = f"send an object: {{{', '.join(f'{n}?' for n in HELLO_FIELDS)}}}"

    extension_version: _HelloText = Field(None, description="the bridge extension's version")
    st_version: _HelloText = Field(None, description="SillyTavern's version")
    chat_id: _HelloText = Field(None, description="the open chat's id")
    character: _HelloText = Field(None, description="the active character (or group)")
    last_error: _HelloText = Field(None, description="the extension's last error, null when none")

    @field_validator(*HELLO_FIELDS, mode="before")
    @classmethod
    def _texts(cls, value: Any, info: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{info.field_name} must be text (or null)")
        return text(value, info.field_name, MAX_HELLO_CHARS)


class PrefetchRequest(RequestModel):
    shape: ClassVar[str] = 'send an object: {"messages": ["message text", ...]}'
    unknown_message: ClassVar[str | None] = shape
    missing: ClassVar[dict[str, str]] = {"messages": f"messages must be a list of 1 to {MAX_PREFETCH_MESSAGES} texts"}

    messages: list[Annotated[str, Field(max_length=MAX_PREFETCH_CHARS)]] = Field(
        min_length=1,
        max_length=MAX_PREFETCH_MESSAGES,
        description="chat message texts (a reply that just arrived, the message being typed)",
    )

    @field_validator("messages", mode="before")
    @classmethod
    def _messages(cls, value: Any) -> list[str]:
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_PREFETCH_MESSAGES:
            raise ValueError(cls.missing["messages"])
        for i, m in enumerate(value):
            if not isinstance(m, str):
                raise ValueError(f"messages[{i}] must be text")
            if len(m) > MAX_PREFETCH_CHARS:
                raise ValueError(f"messages[{i}] is {len(m)} characters; the limit is {MAX_PREFETCH_CHARS}")
        return value


# -- query strings ----------------------------------------------------------------------------------


class EntriesQuery(QueryModel):
    q: str = Field("", description="case-insensitive filter on title and keys")
    vault: str | None = Field(None, description="only entries of this vault")


class SyncQuery(QueryModel):
    force: Literal["0", "1"] = Field(
        "0", description="1: re-read every note, ignoring the cache; 0 (the default): only changed notes"
    )

    @field_validator("force", mode="before")
    @classmethod
    def _force(cls, value: str) -> str:
        return zero_or_one(value, "force")


class GapsQuery(QueryModel):
    status: Literal["pending", "written"] | None = Field(None, description="only these")
    include_hidden: Literal["0", "1"] = Field("0", description="1: hidden and dismissed records too")

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: str) -> str:
        if value not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {value[:40]!r}")
        return value

    @field_validator("include_hidden", mode="before")
    @classmethod
    def _hidden(cls, value: str) -> str:
        return zero_or_one(value, "include_hidden")
