"""The requests of retrieval and per-chat state (routes_chat), the chat list (routes_bridge) and the
AI-search cache (routes_ai); see schemas.py. Chat ids, pins and blocks, gating context, folder
filters and whole retrieve bodies are parsed by the core's parsers (shared with the CLI); their
fields name those parsers and carry the schema of what they accept."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, Field, PrivateAttr, WithJsonSchema, field_validator, model_validator

from dle_desktop.core.chat_id import CHAT_ID_PATTERN, MAX_CHAT_ID_CHARS, ChatIdError, check_chat_id
from dle_desktop.core.pipeline.chat_input import (
    ALIASES,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    MAX_NAME_CHARS,
    ChatDocument,
    ChatInputError,
    parse_chat_document,
    parse_context,
    parse_folder_filter,
    parse_refs,
)
from dle_desktop.errors import InputError
from dle_desktop.server.schemas import NOT_BLANK, QueryModel, RequestModel, nullable, ref, whole_number
from dle_desktop.state.chat_store import KEEP_RECORDS

MAX_CHATS = 500
MAX_NOTEBOOK_BYTES = 64 * 1024
RETRIEVE_FIELDS = {
    "chat_id",
    "messages",
    "character_name",
    "context",
    "swipe",
    "dry_run",
    "seed",
    "pins",
    "blocks",
    "folder_filter",
    "notebook",
}


def checked_chat_id(value: Any) -> str:
    try:
        return check_chat_id(value)
    except ChatIdError as exc:
        raise InputError(str(exc)) from None


def check_notebook(value: Any) -> str:
    if not isinstance(value, str):
        raise ChatInputError("notebook must be text")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_NOTEBOOK_BYTES:
        raise ChatInputError(f"notebook is {size} bytes; the limit is 64 KiB ({MAX_NOTEBOOK_BYTES} bytes)")
    return value


def _core(parse: Any) -> Any:
    """A core parser as a field validator: its ChatInputError / ChatIdError is the field's message."""

    def run(value: Any) -> Any:
        try:
            return parse(value)
        except (ChatInputError, ChatIdError) as exc:
            raise ValueError(str(exc)) from None

    return run


# -- shared pieces ----------------------------------------------------------------------------------

CHAT_ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_CHAT_ID_CHARS,
    "pattern": CHAT_ID_PATTERN,
    "description": "SillyTavern's chat id, exactly (never trimmed): 1-512 characters, `/` allowed (group chats), no "
    "control characters (newlines, tabs, NUL, ...) and no whitespace at either end",
}
ChatId = Annotated[str, BeforeValidator(_core(check_chat_id)), WithJsonSchema(ref("ChatId"))]

ENTRY_REF_SCHEMA: dict[str, Any] = {
    "description": "A pin or block: a bare title (any vault) or {title, vault}. Titles match case-insensitively.",
    "oneOf": [
        {"type": "string", "pattern": NOT_BLANK, "description": "a title (not blank; surrounding spaces are dropped)"},
        {
            "type": "object",
            "required": ["title"],
            "not": {"required": ["vault", "vaultSource"]},
            "properties": {
                "title": {"type": "string", "pattern": NOT_BLANK},
                "vault": {"type": ["string", "null"]},
                "vaultSource": {
                    "type": ["string", "null"],
                    "description": "DLE's name for `vault` (input only; not beside `vault`)",
                },
            },
        },
    ],
}
CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            {"type": "null"},
        ]
    },
    "description": "Gating context: field (or its contextKey) → value or list of values. Numbers and booleans are "
    "stored as text, null values are dropped.",
}
FOLDER_FILTER_SCHEMA: dict[str, Any] = {
    "type": ["array", "string", "null"],
    "items": {"type": "string"},
    "description": "Folder paths (a single string is one folder); null or [] turns the filter off.",
}
CHAT_MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["mes"],
    "description": "A SillyTavern chat message; other fields are ignored.",
    "properties": {
        "name": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "mes": {
            "type": "string",
            "maxLength": MAX_MESSAGE_CHARS,
            "description": f"the message text (at most {MAX_MESSAGE_CHARS:,} characters)",
        },
        "is_user": {"type": ["boolean", "null"]},
        "is_system": {"type": ["boolean", "null"]},
        "is_thoughts": {"type": ["boolean", "null"], "description": "a reasoning message: not scanned"},
        "swipe_id": {"type": ["integer", "null"], "minimum": 0},
        "extra": {
            "type": ["object", "null"],
            "description": "SillyTavern's extra: is_thoughts, tool_invocations, "
            "type: narrator, isSmallSys mark messages that are not scanned",
        },
    },
}
#: Schemas of the core parsers' inputs, shared by several requests (components of the document).
SHARED_SCHEMAS: dict[str, dict[str, Any]] = {
    "ChatId": CHAT_ID_SCHEMA,
    "EntryRef": ENTRY_REF_SCHEMA,
    "Context": CONTEXT_SCHEMA,
    "FolderFilter": FOLDER_FILTER_SCHEMA,
    "ChatMessage": CHAT_MESSAGE_SCHEMA,
}


class ForkRequest(RequestModel):
    shape: ClassVar[str] = 'send {"from": "<the chat id it was branched from>"}'
    unknown_message: ClassVar[str | None] = shape
    missing: ClassVar[dict[str, str]] = {"from": shape}

    source: ChatId = Field(alias="from", description="the chat it was branched from")


class _FieldUpdate(RequestModel):
    """PUT /chats/{id}/<part>: `{<field>: value}`; other fields are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)
    unknown_ok: ClassVar[bool] = True


_Refs = Annotated[Any, WithJsonSchema(nullable({"type": "array", "items": ref("EntryRef")}))]


class PinsUpdate(_FieldUpdate):
    """null clears"""

    shape: ClassVar[str] = 'send {"pins": ...}'
    missing: ClassVar[dict[str, str]] = {"pins": shape}
    pins: Annotated[_Refs, BeforeValidator(_core(lambda v: parse_refs(v, "pins")))]


class BlocksUpdate(_FieldUpdate):
    """null clears"""

    shape: ClassVar[str] = 'send {"blocks": ...}'
    missing: ClassVar[dict[str, str]] = {"blocks": shape}
    blocks: Annotated[_Refs, BeforeValidator(_core(lambda v: parse_refs(v, "blocks")))]


class ContextUpdate(_FieldUpdate):
    """replaces the whole context; null clears"""

    shape: ClassVar[str] = 'send {"context": ...}'
    missing: ClassVar[dict[str, str]] = {"context": shape}
    context: Annotated[Any, BeforeValidator(_core(parse_context)), WithJsonSchema(nullable(ref("Context")))]


class FolderFilterUpdate(_FieldUpdate):
    shape: ClassVar[str] = 'send {"folder_filter": ...}'
    missing: ClassVar[dict[str, str]] = {"folder_filter": shape}
    folder_filter: Annotated[Any, BeforeValidator(_core(parse_folder_filter)), WithJsonSchema(ref("FolderFilter"))]


class NotebookUpdate(_FieldUpdate):
    shape: ClassVar[str] = 'send {"notebook": ...}'
    missing: ClassVar[dict[str, str]] = {"notebook": shape}
    notebook: Annotated[
        Any,
        BeforeValidator(_core(check_notebook)),
        WithJsonSchema({"type": "string", "description": "at most 64 KiB as UTF-8"}),
    ]


#: PUT /chats/{id}/<segment>: the model and the field it sets.
FIELD_UPDATES: dict[str, tuple[type[_FieldUpdate], str]] = {
    "pins": (PinsUpdate, "pins"),
    "blocks": (BlocksUpdate, "blocks"),
    "context": (ContextUpdate, "context"),
    "folder-filter": (FolderFilterUpdate, "folder_filter"),
    "notebook": (NotebookUpdate, "notebook"),
}


def _retrieve_schema(schema: dict[str, Any]) -> None:
    # chat_id is required in one spelling, and no field may come in both.
    schema["anyOf"] = [{"required": ["chat_id"]}, {"required": ["chatId"]}]
    schema["allOf"] = [{"not": {"required": [snake, camel]}} for camel, snake in ALIASES.items()]


def _described(description: str, schema: dict[str, Any]) -> Any:
    return WithJsonSchema(schema | {"description": description})


class RetrieveRequest(RequestModel):
    """Unknown fields are refused, and so is a field given in both spellings (`chat_id` and `chatId`, ...).
    Fields given here (pins, blocks, context, folder_filter, notebook) replace the chat's and are saved with it,
    unless `dry_run`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_retrieve_schema)
    shape: ClassVar[str] = "send an object: {chat_id, messages, ...}"
    unknown_ok: ClassVar[bool] = True  # the core's parser names them, in its own words

    chat_id: Annotated[Any, _described("whose state to use and update (also `chatId`)", ref("ChatId"))] = None
    messages: Annotated[
        Any,
        _described(
            "the chat so far, oldest first (at most 20,000)",
            {"type": "array", "items": ref("ChatMessage"), "maxItems": MAX_MESSAGES},
        ),
    ]
    character_name: Annotated[
        Any, _described("the active character (also `characterName`)", {"type": ["string", "null"]})
    ] = None
    context: Annotated[
        Any, _described("replaces the chat's gating context; null clears it", nullable(ref("Context")))
    ] = None
    swipe: Annotated[
        Any,
        _described(
            "true: this regenerates the last generation, so roll its state back first; false: "
            "never roll back; absent or null: roll back when the same message slot is generated "
            "again",
            {"type": ["boolean", "null"]},
        ),
    ] = None
    dry_run: Annotated[
        Any,
        _described("compute without changing the chat's state (also `dryRun`)", {"type": "boolean", "default": False}),
    ] = None
    seed: Annotated[
        Any, _described("seed for the probability rolls (reproducible results)", {"type": ["integer", "null"]})
    ] = None
    pins: Annotated[
        Any,
        _described("replaces the chat's pins; null clears them", {"type": ["array", "null"], "items": ref("EntryRef")}),
    ] = None
    blocks: Annotated[
        Any,
        _described(
            "replaces the chat's blocks; null clears them", {"type": ["array", "null"], "items": ref("EntryRef")}
        ),
    ] = None
    folder_filter: Annotated[
        Any, _described("replaces the chat's folder filter (also `folderFilter`)", ref("FolderFilter"))
    ] = None
    notebook: Annotated[
        Any,
        _described(
            "replaces the chat's notebook (at most 64 KiB as UTF-8); null keeps it", {"type": ["string", "null"]}
        ),
    ] = None
    chatId: Annotated[Any, WithJsonSchema(ref("ChatId"))] = None
    characterName: Annotated[Any, WithJsonSchema({"type": ["string", "null"]})] = None
    dryRun: Annotated[Any, WithJsonSchema({"type": "boolean"})] = None
    folderFilter: Annotated[Any, WithJsonSchema(ref("FolderFilter"))] = None

    #: the parsed document (the core's parser, which the CLI shares, reads the whole body)
    _parsed: ChatDocument | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _parse(cls, data: Any, handler: Any) -> RetrieveRequest:
        try:
            doc = parse_chat_document(data, allowed=RETRIEVE_FIELDS)
            if doc.notebook is not None:
                check_notebook(doc.notebook)  # the same limit as PUT .../notebook
        except ChatInputError as exc:
            raise ValueError(str(exc)) from None
        model = handler(data)
        model._parsed = doc
        return model

    @property
    def document(self) -> ChatDocument:
        assert self._parsed is not None
        return self._parsed


# -- query strings ----------------------------------------------------------------------------------


class ChatsQuery(QueryModel):
    limit: int = Field(MAX_CHATS, ge=1, le=MAX_CHATS, description=f"how many at most, 1-{MAX_CHATS}")

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: str) -> int:
        return whole_number(value, 1, MAX_CHATS, zero_padding_ok=False)


class RecordsQuery(QueryModel):
    limit: int = Field(10, ge=1, le=KEEP_RECORDS, description=f"how many, 1-{KEEP_RECORDS} ({KEEP_RECORDS} are kept)")

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: str) -> int:
        return whole_number(value, 1, KEEP_RECORDS)


class CacheClearQuery(QueryModel):
    chat_id: Annotated[str | None, WithJsonSchema(ref("ChatId"))] = Field(
        None, description="only this chat's answers (absent: every chat's)"
    )

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, value: Any) -> str:
        return _core(check_chat_id)(value)
