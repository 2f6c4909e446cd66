"""Requests of the steering routes (routes_steer.py): a chat's gating field and folder filter set by
name and checked against the vault, a reply's lore sources, analytics, and a window request.
See schemas.py for how the models become both the checks and the document."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator

from dle_desktop.server.schemas import NOT_BLANK, QueryModel, RequestModel, nullable, ref, text, texts
from dle_desktop.server.schemas_chat import RetrieveRequest, checked_chat_id

#: The path segments after a chat id these routes add (routes_chat keeps them apart from chat ids).
STEER_SUB_RESOURCES = ("context-field", "folders", "sources")

MAX_FIELD_NAME = 100
MAX_VALUES = 64
MAX_VALUE = 1000
MAX_FOLDERS = 200
MAX_FOLDER = 1000
#: The most messages a chat may have and still be addressed (SillyTavern's chats stay far below).
MAX_MESSAGE = 10_000_000
MAX_SWIPE = 100_000


def _field_value(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return None if value is None else text(value, "value", MAX_VALUE)
    return texts(value, "value", MAX_VALUES, MAX_VALUE)


_VALUE_SCHEMA = nullable(
    {
        "anyOf": [
            {"type": "string", "maxLength": MAX_VALUE},
            {"type": "array", "items": {"type": "string", "maxLength": MAX_VALUE}, "maxItems": MAX_VALUES},
        ]
    },
    "the value (a multi-valued field takes a comma list or a list); null clears the field",
)


class ContextFieldRequest(RequestModel):
    """POST /chats/{id}/context-field: set or clear one gating field, checked against the vault."""

    shape: ClassVar[str] = 'send {"field": "<field name or context key>", "value": "<value>" | [..] | null}'
    missing: ClassVar[dict[str, str]] = {"field": shape}

    field: Annotated[
        str,
        BeforeValidator(lambda v: text(v, "field", MAX_FIELD_NAME, blank_ok=False)),
        WithJsonSchema({"type": "string", "pattern": NOT_BLANK, "maxLength": MAX_FIELD_NAME}),
    ] = Field(description="a field of field-definitions.yaml (or the defaults), by name or context key")
    value: Annotated[Any, BeforeValidator(_field_value), WithJsonSchema(_VALUE_SCHEMA)] = None


class FolderSelection(RequestModel):
    """PUT /api/dle/v1/chats/{id}/folders: the folder filter, each folder one the vault has."""

    shape: ClassVar[str] = 'send {"folders": ["<folder>", ...]} (an empty list or null turns the filter off)'
    missing: ClassVar[dict[str, str]] = {"folders": shape}

    folders: Annotated[
        Any,
        BeforeValidator(lambda v: None if v is None else texts(v, "folders", MAX_FOLDERS, MAX_FOLDER)),
        WithJsonSchema(
            nullable({"type": "array", "items": {"type": "string", "maxLength": MAX_FOLDER}, "maxItems": MAX_FOLDERS})
        ),
    ] = Field(description="vault-relative folders; a note in a subfolder counts as in its folder")


def _count(value: Any, name: str, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 3.0 is the whole number 3
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise ValueError(f"{name} must be a whole number from 0 to {high}")
    return value


class SourceLink(RequestModel):
    """PUT /chats/{id}/sources: the reply at `message`/`swipe` was written with decision record `record`."""

    shape: ClassVar[str] = (
        'send {"message": <index>, "swipe": <swipe id>, "record": <the record number /retrieve gave>}'
    )
    missing: ClassVar[dict[str, str]] = {"message": shape, "swipe": shape, "record": shape}

    message: Annotated[int, BeforeValidator(lambda v: _count(v, "message", MAX_MESSAGE))] = Field(
        ge=0, le=MAX_MESSAGE, description="the reply's index in the chat"
    )
    swipe: Annotated[int, BeforeValidator(lambda v: _count(v, "swipe", MAX_SWIPE))] = Field(
        ge=0, le=MAX_SWIPE, description="the reply's swipe id (0 without swipes)"
    )
    record: Annotated[int, BeforeValidator(lambda v: _count(v, "record", 2**31 - 1))] = Field(
        ge=0, le=2**31 - 1, description="`record` of the /retrieve answer that wrote it"
    )


def _query_count(raw: str, name: str, high: int) -> int:
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9) or int(raw) > high:
        raise ValueError(f"{name} must be a whole number from 0 to {high}, not {raw[:40]!r}")
    return int(raw)


class SourceQuery(QueryModel):
    message: int = Field(ge=0, le=MAX_MESSAGE, description="the reply's index in the chat")
    swipe: int = Field(0, ge=0, le=MAX_SWIPE, description="its swipe id (default 0)")

    @field_validator("message", mode="before")
    @classmethod
    def _message(cls, value: str) -> int:
        return _query_count(value, "message", MAX_MESSAGE)

    @field_validator("swipe", mode="before")
    @classmethod
    def _swipe(cls, value: str) -> int:
        return _query_count(value, "swipe", MAX_SWIPE)


class AnalyticsQuery(QueryModel):
    chat_id: Annotated[str | None, WithJsonSchema(ref("ChatId"))] = Field(
        None, description="also this chat's own counts (column `chat`)"
    )

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat(cls, value: str) -> str:
        return checked_chat_id(value)


class SimulateRequest(RetrieveRequest):
    """POST /api/dle/v1/simulate: a chat as /retrieve takes it; the chat id is optional (with it, the
    chat's stored pins, blocks, context and folder filter apply)."""

    chat_id: Annotated[
        Any, WithJsonSchema(nullable(ref("ChatId"), "whose stored pins, context and folder filter to use"))
    ] = None
    chatId: Annotated[Any, WithJsonSchema(nullable(ref("ChatId")))] = None


VIEWS = ("vault", "channels", "graph", "librarian")


class ShowRequest(RequestModel):
    """POST /api/dle/v1/app/show: bring a view of the app's window to the front."""

    shape: ClassVar[str] = 'send {"view": "vault" | "channels" | "graph" | "librarian", ...}'
    missing: ClassVar[dict[str, str]] = {"view": shape}

    view: Literal["vault", "channels", "graph", "librarian"] = Field(description="which view")
    entry: Annotated[str | None, BeforeValidator(lambda v: None if v is None else text(v, "entry", 1000))] = Field(
        None, description="vault view: select this entry (its title)"
    )
    gap: Annotated[str | None, BeforeValidator(lambda v: None if v is None else text(v, "gap", 200))] = Field(
        None, description="librarian: open this gap (its id)"
    )
    mode: Literal["review", "audit", "summarize", "optimize-keys"] | None = Field(
        None,
        description="librarian: the mode to open in; summarize: propose summaries for the entries without one; "
        "optimize-keys: propose keys for `entry` (each proposal waits in the app for review)",
    )
    vault: Annotated[str | None, BeforeValidator(lambda v: None if v is None else text(v, "vault", 200))] = Field(
        None, description="vault view, with `path`: the note's vault"
    )
    path: Annotated[str | None, BeforeValidator(lambda v: None if v is None else text(v, "path", 1000))] = Field(
        None,
        description="vault view: show this note (an entry is selected; any other note, such as a session "
        "note, opens in a viewer)",
    )
    suggestion: Annotated[str | None, BeforeValidator(lambda v: None if v is None else text(v, "suggestion", 64))] = (
        Field(None, description="librarian: open an Auto Lorebook suggestion (its id) in a Librarian session")
    )

    @field_validator("view", mode="before")
    @classmethod
    def _view(cls, value: Any) -> Any:
        if value not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}")
        return value


__all__ = [
    "AnalyticsQuery",
    "ContextFieldRequest",
    "FolderSelection",
    "ShowRequest",
    "SimulateRequest",
    "SourceLink",
    "SourceQuery",
]
