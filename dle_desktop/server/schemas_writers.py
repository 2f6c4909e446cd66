"""Requests of the writers' routes (routes_writers.py): a Session Scribe run, an Auto Lorebook run,
a suggestion accepted with the user's edits, a reply handed to the AI Notepad, and a reply's notes
rolled back. See schemas.py for how the models become both the checks and the document."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema, field_validator

from dle_desktop.core.pipeline.chat_input import MAX_MESSAGE_CHARS, MAX_MESSAGES, parse_messages
from dle_desktop.core.writers.suggest import MAX_CONTENT, MAX_KEY, MAX_KEYS, MAX_SUMMARY, MAX_TITLE, TYPES
from dle_desktop.server.schemas import QueryModel, RequestModel, ref, text, texts
from dle_desktop.server.schemas_chat import checked_chat_id
from dle_desktop.server.schemas_steer import MAX_MESSAGE, MAX_SWIPE

#: The path segments after a chat id these routes add (routes_chat keeps them apart from chat ids).
WRITER_SUB_RESOURCES = ("scribe", "suggestions", "notepad", "notes")

MAX_FOCUS = 2_000
MAX_CHARACTER = 1_000
SUGGESTION_ID = re.compile(r"^[0-9a-f]{1,64}$")

_MESSAGES_SCHEMA = {"type": "array", "items": ref("ChatMessage"), "minItems": 1, "maxItems": MAX_MESSAGES}


def _text_schema(limit: int, description: str = "", null: bool = True) -> WithJsonSchema:
    schema: dict[str, Any] = {"type": ["string", "null"] if null else "string", "maxLength": limit}
    return WithJsonSchema(schema | ({"description": description} if description else {}))


def _messages(value: Any) -> Any:
    parsed = parse_messages(value)
    if not parsed:
        raise ValueError("messages is empty; send the chat (oldest first)")
    return parsed


def _count(value: Any, name: str, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 3.0 is the whole number 3
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise ValueError(f"{name} must be a whole number from 0 to {high}")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false")
    return value


Messages = Annotated[
    Any, BeforeValidator(_messages), WithJsonSchema(_MESSAGES_SCHEMA | {"description": "the chat, oldest first"})
]
Auto = Annotated[
    bool,
    BeforeValidator(lambda v: _flag(v, "auto")),
    WithJsonSchema(
        {
            "type": "boolean",
            "default": False,
            "description": "true: run only when the feature is on and its interval has passed (the bridge's "
            "automatic call); false: run now (a slash command)",
        }
    ),
]


class ScribeRequest(RequestModel):
    """POST /chats/{id}/scribe: summarise the chat into a session note."""

    shape: ClassVar[str] = 'send {"messages": [...], "character": "<name>", "focus": "<what to stress>"}'
    missing: ClassVar[dict[str, str]] = {"messages": shape}

    messages: Messages
    character: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else text(v, "character", MAX_CHARACTER)),
        _text_schema(MAX_CHARACTER, "the character the note is named after (default: the last one who spoke)"),
    ] = None
    focus: Annotated[
        str,
        BeforeValidator(lambda v: text(v, "focus", MAX_FOCUS)),
        _text_schema(MAX_FOCUS, "what the summary should stress (/dle-scribe's argument)", null=False),
    ] = ""
    chat_length: Annotated[
        int | None, BeforeValidator(lambda v: None if v is None else _count(v, "chat_length", 10_000_000))
    ] = Field(None, ge=0, le=10_000_000, description="messages in the whole chat (default: those sent)")
    auto: Auto = False


class SuggestRequest(RequestModel):
    """POST /chats/{id}/suggestions: propose the entries the chat is missing."""

    shape: ClassVar[str] = 'send {"messages": [...]}'
    missing: ClassVar[dict[str, str]] = {"messages": shape}

    messages: Messages
    ai_messages: Annotated[
        int | None, BeforeValidator(lambda v: None if v is None else _count(v, "ai_messages", 10_000_000))
    ] = Field(None, ge=0, le=10_000_000, description="AI messages in the whole chat (default: those sent)")
    auto: Auto = False


def _type(value: Any) -> Any:
    if value not in TYPES:
        raise ValueError(f"type must be one of {', '.join(TYPES)}")
    return value


class SuggestionEdits(RequestModel):
    """POST /suggestions/{id}/accept: the user's edits (each optional; `{}` writes it as it is)."""

    shape: ClassVar[str] = 'send {} or the fields you changed: {"title", "type", "keys", "summary", "content"}'

    title: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else text(v, "title", MAX_TITLE)),
        _text_schema(MAX_TITLE, "no slash, no '..'"),
    ] = None
    type: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else _type(v)),
        WithJsonSchema({"enum": [*TYPES, None]}),
    ] = None
    keys: Annotated[
        list[str] | None,
        BeforeValidator(lambda v: None if v is None else texts(v, "keys", MAX_KEYS, MAX_KEY, min_items=1)),
        WithJsonSchema(
            {
                "type": ["array", "null"],
                "items": {"type": "string", "maxLength": MAX_KEY},
                "minItems": 1,
                "maxItems": MAX_KEYS,
                "description": "the entry's keys (its title is added when fewer than 2 are left)",
            }
        ),
    ] = None
    summary: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else text(v, "summary", MAX_SUMMARY)),
        _text_schema(MAX_SUMMARY),
    ] = None
    content: Annotated[
        str | None,
        BeforeValidator(lambda v: None if v is None else text(v, "content", MAX_CONTENT)),
        _text_schema(MAX_CONTENT),
    ] = None

    def edits(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ReplyRequest(RequestModel):
    """POST /chats/{id}/notes: a reply as the model wrote it, for the AI Notepad."""

    shape: ClassVar[str] = 'send {"message": <index>, "swipe": <swipe id>, "text": "<the reply>"}'
    missing: ClassVar[dict[str, str]] = {"message": shape, "text": shape}

    message: Annotated[int, BeforeValidator(lambda v: _count(v, "message", MAX_MESSAGE))] = Field(
        ge=0, le=MAX_MESSAGE, description="the reply's index in the chat"
    )
    swipe: Annotated[int, BeforeValidator(lambda v: _count(v, "swipe", MAX_SWIPE))] = Field(
        0, ge=0, le=MAX_SWIPE, description="the reply's swipe id (0 without swipes)"
    )
    text: Annotated[
        str,
        BeforeValidator(lambda v: text(v, "text", MAX_MESSAGE_CHARS)),
        _text_schema(MAX_MESSAGE_CHARS, "the reply as the model wrote it", null=False),
    ]
    wait: Annotated[
        bool,
        BeforeValidator(lambda v: _flag(v, "wait")),
        WithJsonSchema(
            {
                "type": "boolean",
                "default": True,
                "description": "extract mode: false answers the text at once and takes the notes in the "
                "background (`pending`)",
            }
        ),
    ] = True


class ReviewRequest(RequestModel):
    """POST /api/dle/v1/review: the whole vault as one prompt for /dle-review."""

    shape: ClassVar[str] = 'send {"question": "<what to ask about the vault>"} (or {})'

    question: Annotated[
        str,
        BeforeValidator(lambda v: text(v, "question", MAX_FOCUS)),
        _text_schema(MAX_FOCUS, "the question (empty: a general review)", null=False),
    ] = ""
    context_tokens: Annotated[
        int | None, BeforeValidator(lambda v: None if v is None else _count(v, "context_tokens", 100_000_000))
    ] = Field(
        None,
        ge=0,
        le=100_000_000,
        description="the chat model's context size: a vault that does not fit is answered without the prompt",
    )


def _optional_flag(value: Any, info: ValidationInfo) -> bool | None:
    return None if value is None else _flag(value, str(info.field_name))


Switch = Annotated[bool | None, BeforeValidator(_optional_flag), WithJsonSchema({"type": ["boolean", "null"]})]


class WriterSwitches(RequestModel):
    """PUT /api/dle/v1/writers: turn writers on or off (the bridge panel's boxes); absent: unchanged."""

    shape: ClassVar[str] = (
        'send {"scribe_enabled": true, "auto_suggest_enabled": false, "ai_notepad_enabled": true, "ai_notepad_mode": "tag"}'
    )

    scribe_enabled: Switch = None
    auto_suggest_enabled: Switch = None
    ai_notepad_enabled: Switch = None
    ai_notepad_mode: Literal["tag", "extract"] | None = Field(None, description="tag or extract")

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


def _query_count(raw: str, name: str, high: int) -> int:
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 9) or int(raw) > high:
        raise ValueError(f"{name} must be a whole number from 0 to {high}, not {raw[:40]!r}")
    return int(raw)


class NotesQuery(QueryModel):
    """DELETE /chats/{id}/notes?message=N[&swipe=S][&later=true]: the reply whose notes come out."""

    message: int = Field(ge=0, le=MAX_MESSAGE, description="the reply's index in the chat")
    swipe: int | None = Field(None, ge=0, le=MAX_SWIPE, description="one swipe's notes (default: every swipe's)")
    later: bool = Field(
        False, description="true: every later message's notes too (SillyTavern deleted the chat from `message` on)"
    )

    @field_validator("later", mode="before")
    @classmethod
    def _later(cls, value: str) -> bool:
        if value not in ("true", "false"):
            raise ValueError(f"later must be true or false, not {value[:40]!r}")
        return value == "true"

    @field_validator("message", mode="before")
    @classmethod
    def _message(cls, value: str) -> int:
        return _query_count(value, "message", MAX_MESSAGE)

    @field_validator("swipe", mode="before")
    @classmethod
    def _swipe(cls, value: str) -> int:
        return _query_count(value, "swipe", MAX_SWIPE)


class SuggestionsQuery(QueryModel):
    chat_id: Annotated[str | None, WithJsonSchema(ref("ChatId"))] = Field(None, description="only this chat's")

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat(cls, value: str) -> str:
        return checked_chat_id(value)


__all__ = [
    "WRITER_SUB_RESOURCES",
    "NotesQuery",
    "ReplyRequest",
    "ReviewRequest",
    "ScribeRequest",
    "SuggestRequest",
    "SuggestionEdits",
    "SuggestionsQuery",
    "WriterSwitches",
]
