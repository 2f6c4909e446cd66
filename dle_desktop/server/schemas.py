"""Request bodies and query strings of our API (/api/dle/v1), declared once: the routes validate
with these models (`parse_body`, `parse_query`) and openapi.py generates the document's request
schemas and query parameters from them, so the two cannot disagree.

Each field keeps the message the API has always given: a `mode="before"` validator says what is
wrong in the API's words, and the declared type and limits (which the document shows) then hold
by construction. Chat ids, pins and blocks, gating context, folder filters and whole retrieve
bodies are parsed by the core's parsers (shared with the CLI); their fields name those parsers
and carry the schema of what they accept."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import models_json_schema

from dle_desktop.core.chat_id import (
    CHAT_ID_PATTERN,
    MAX_CHAT_ID_CHARS,
    ChatIdError,
    check_chat_id,
)
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
from dle_desktop.librarian.gaps import URGENCIES
from dle_desktop.state.chat_store import KEEP_RECORDS

MAX_QUERIES = 4
MAX_QUERY_CHARS = 500
MAX_TITLE_CHARS = 500
MAX_REASON_CHARS = 4000
MAX_EXCLUDED = 2000
FLAG_TYPES = ("gap", "update")
STATUSES = ("pending", "written")
HELLO_FIELDS = ("extension_version", "st_version", "chat_id", "character", "last_error")
MAX_HELLO_CHARS = 1000
MAX_CHATS = 500
#: A prefetch names at most this many messages, each at most this long (a reply, the message
#: being typed; the semantic query keeps the last 1,200 characters of a message anyway).
MAX_PREFETCH_MESSAGES = 4
MAX_PREFETCH_CHARS = 50_000
MAX_NOTEBOOK_BYTES = 64 * 1024
RETRIEVE_FIELDS = {"chat_id", "messages", "character_name", "context", "swipe", "dry_run", "seed", "pins", "blocks",
                   "folder_filter", "notebook"}
#: Python's whitespace (`str.isspace`, what `strip` drops), spelled out: regex engines disagree on
#: `\s` (ECMAScript's has U+FEFF and lacks U+001C-U+001F), and the document's readers must agree with us.
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: the same test the document states (`pattern`), so both agree on what "blank" is
NOT_BLANK = rf"[^{WHITESPACE}]"
_NOT_BLANK = re.compile(NOT_BLANK)

Model = TypeVar("Model", bound="RequestModel")


def ref(name: str) -> dict[str, str]:
    """A reference to a component of the document; `$ref` only once `request_schema` has made it
    (pydantic would try to resolve it among its own definitions)."""
    return {_REF: name}


_REF = "x-component"


def request_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The document's schema of `model`: components referenced by name, no generated titles and
    no null defaults (fields left out mean "not given")."""
    return _finish(model.model_json_schema(ref_template="#/components/schemas/{model}"))


def components(models: list[type[BaseModel]]) -> dict[str, dict[str, Any]]:
    """The document's components for `models` and every model they use, by class name."""
    _, found = models_json_schema([(m, "validation") for m in models], ref_template="#/components/schemas/{model}")
    return {name: _finish(schema) for name, schema in found.get("$defs", {}).items()}


def _finish(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, list):
        return [_finish(v) for v in node]
    if not isinstance(node, dict):
        return node
    if in_properties:
        return {k: _finish(v) for k, v in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == _REF:
            out["$ref"] = f"#/components/schemas/{value}"
        elif key == "title" and isinstance(value, str) or key == "default" and value is None:
            continue
        else:
            out[key] = _finish(value, in_properties=key == "properties")
    return out


# -- the messages -----------------------------------------------------------------------------------


def text(value: Any, name: str, limit: int, *, blank_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text")
    if len(value) > limit:
        raise ValueError(f"{name} is {len(value)} characters; the limit is {limit}")
    if not blank_ok and not _NOT_BLANK.search(value):
        raise ValueError(f"{name} must not be blank")
    return value


def texts(value: Any, name: str, limit: int, item_limit: int, *, min_items: int = 0) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of text")
    if not min_items <= len(value) <= limit:
        raise ValueError(f"{name} has {len(value)} items; send {min_items} to {limit}")
    for v in value:
        if len(v) > item_limit:
            raise ValueError(f"an item of {name} is {len(v)} characters; the limit is {item_limit}")
    return value


def one_of(value: Any, name: str, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}")
    return value


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
    "type": "string", "minLength": 1, "maxLength": MAX_CHAT_ID_CHARS, "pattern": CHAT_ID_PATTERN,
    "description": "SillyTavern's chat id, exactly (never trimmed): 1-512 characters, `/` allowed (group chats), no "
                   "control characters (newlines, tabs, NUL, ...) and no whitespace at either end"}
ChatId = Annotated[str, BeforeValidator(_core(check_chat_id)), WithJsonSchema(ref("ChatId"))]

ENTRY_REF_SCHEMA: dict[str, Any] = {
    "description": "A pin or block: a bare title (any vault) or {title, vault}. Titles match case-insensitively.",
    "oneOf": [
        {"type": "string", "pattern": NOT_BLANK, "description": "a title (not blank; surrounding spaces are dropped)"},
        {"type": "object", "required": ["title"], "not": {"required": ["vault", "vaultSource"]},
         "properties": {"title": {"type": "string", "pattern": NOT_BLANK}, "vault": {"type": ["string", "null"]},
                        "vaultSource": {"type": ["string", "null"],
                                        "description": "DLE's name for `vault` (input only; not beside `vault`)"}}},
    ],
}
CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"},
                                       {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
                                       {"type": "null"}]},
    "description": "Gating context: field (or its contextKey) → value or list of values. Numbers and booleans are "
                   "stored as text, null values are dropped."}
FOLDER_FILTER_SCHEMA: dict[str, Any] = {
    "type": ["array", "string", "null"], "items": {"type": "string"},
    "description": "Folder paths (a single string is one folder); null or [] turns the filter off."}
CHAT_MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["mes"], "description": "A SillyTavern chat message; other fields are ignored.",
    "properties": {
        "name": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "mes": {"type": "string", "maxLength": MAX_MESSAGE_CHARS,
                "description": f"the message text (at most {MAX_MESSAGE_CHARS:,} characters)"},
        "is_user": {"type": ["boolean", "null"]}, "is_system": {"type": ["boolean", "null"]},
        "is_thoughts": {"type": ["boolean", "null"], "description": "a reasoning message: not scanned"},
        "swipe_id": {"type": ["integer", "null"], "minimum": 0},
        "extra": {"type": ["object", "null"], "description": "SillyTavern's extra: is_thoughts, tool_invocations, "
                                                             "type: narrator, isSmallSys mark messages that are not scanned"},
    }}
#: Schemas of the core parsers' inputs, shared by several requests (components of the document).
SHARED_SCHEMAS: dict[str, dict[str, Any]] = {
    "ChatId": CHAT_ID_SCHEMA, "EntryRef": ENTRY_REF_SCHEMA, "Context": CONTEXT_SCHEMA,
    "FolderFilter": FOLDER_FILTER_SCHEMA, "ChatMessage": CHAT_MESSAGE_SCHEMA,
}


def _nullable(schema: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
    return out | ({"description": description} if description else {})


# -- the models -------------------------------------------------------------------------------------


class RequestModel(BaseModel):
    """A JSON object; unknown fields are refused unless `unknown_ok`."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)
    #: the answer to a body that is not an object (and, without `unknown_message`, nothing else)
    shape: ClassVar[str] = "send an object"
    #: when set, the answer to unknown fields instead of naming them
    unknown_message: ClassVar[str | None] = None
    #: the answer to a missing required field, by field name
    missing: ClassVar[dict[str, str]] = {}
    unknown_ok: ClassVar[bool] = False


def _field_names(model: type[RequestModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def parse_body(model: type[Model], data: Any) -> Model:
    """`data` (parsed JSON) as `model`, or InputError in the API's words."""
    if not isinstance(data, dict):
        raise InputError(model.shape)
    if not model.unknown_ok:
        unknown = sorted(set(data) - _field_names(model))
        if unknown:
            raise InputError(model.unknown_message or f"unknown field(s): {', '.join(u[:100] for u in unknown[:20])}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(_message(model, exc)) from None


def parse_query(model: type[Model], params: Any) -> Model:
    """A query string as `model`: parameters the model does not name are ignored."""
    names = _field_names(model)
    return parse_body(model, {k: v for k, v in params.items() if k in names})


def _message(model: type[RequestModel], exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    name = ".".join(str(p) for p in first["loc"])
    error = (first.get("ctx") or {}).get("error")
    if isinstance(error, (ValueError, InputError)):
        return str(error)
    if first["type"] == "missing":
        return model.missing.get(name, f"{name} is required")
    return f"{name}: {first['msg']}" if name else first["msg"]


class LoreSearchRequest(RequestModel):
    shape: ClassVar[str] = "send an object: {queries: [1-4 texts], reason?, exclude_titles?}"
    missing: ClassVar[dict[str, str]] = {"queries": "queries is required: a list of 1 to 4 texts"}

    queries: list[Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NOT_BLANK)]] = Field(
        min_length=1, max_length=MAX_QUERIES, description="1-4 things to look for (BM25 each); none may be blank")
    reason: str = Field("", max_length=MAX_REASON_CHARS, description="why the model is looking (kept on a gap)")
    exclude_titles: list[Annotated[str, Field(max_length=MAX_TITLE_CHARS)]] = Field(
        default_factory=list, max_length=MAX_EXCLUDED,
        description="titles never to return (the lore already injected), case-insensitive")

    @field_validator("queries", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> list[str]:
        queries = texts(value, "queries", MAX_QUERIES, MAX_QUERY_CHARS, min_items=1)
        if not all(_NOT_BLANK.search(q) for q in queries):
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

    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS, pattern=NOT_BLANK,
                       description="the missing topic, or the entry that needs an update")
    reason: str = Field(max_length=MAX_REASON_CHARS, description="what is missing or out of date")
    urgency: Literal["low", "medium", "high"] = "medium"
    flag_type: Literal["gap", "update"] = "gap"
    entry_title: str = Field("", max_length=MAX_TITLE_CHARS,
                             description="the existing entry an update is about (default: title)")

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
        min_length=1, max_length=MAX_PREFETCH_MESSAGES,
        description="chat message texts (a reply that just arrived, the message being typed)")

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


class ForkRequest(RequestModel):
    shape: ClassVar[str] = 'send {"from": "<the chat id it was branched from>"}'
    unknown_message: ClassVar[str | None] = shape
    missing: ClassVar[dict[str, str]] = {"from": shape}

    source: ChatId = Field(alias="from", description="the chat it was branched from")


class _FieldUpdate(RequestModel):
    """PUT /chats/{id}/<part>: `{<field>: value}`; other fields are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)
    unknown_ok: ClassVar[bool] = True


_Refs = Annotated[Any, WithJsonSchema(_nullable({"type": "array", "items": ref("EntryRef")}))]


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
    context: Annotated[Any, BeforeValidator(_core(parse_context)), WithJsonSchema(_nullable(ref("Context")))]


class FolderFilterUpdate(_FieldUpdate):
    shape: ClassVar[str] = 'send {"folder_filter": ...}'
    missing: ClassVar[dict[str, str]] = {"folder_filter": shape}
    folder_filter: Annotated[Any, BeforeValidator(_core(parse_folder_filter)), WithJsonSchema(ref("FolderFilter"))]


class NotebookUpdate(_FieldUpdate):
    shape: ClassVar[str] = 'send {"notebook": ...}'
    missing: ClassVar[dict[str, str]] = {"notebook": shape}
    notebook: Annotated[Any, BeforeValidator(_core(check_notebook)),
                        WithJsonSchema({"type": "string", "description": "at most 64 KiB as UTF-8"})]


#: PUT /chats/{id}/<segment>: the model and the field it sets.
FIELD_UPDATES: dict[str, tuple[type[_FieldUpdate], str]] = {
    "pins": (PinsUpdate, "pins"), "blocks": (BlocksUpdate, "blocks"), "context": (ContextUpdate, "context"),
    "folder-filter": (FolderFilterUpdate, "folder_filter"), "notebook": (NotebookUpdate, "notebook"),
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
    messages: Annotated[Any, _described("the chat so far, oldest first (at most 20,000)",
                                  {"type": "array", "items": ref("ChatMessage"), "maxItems": MAX_MESSAGES})]
    character_name: Annotated[Any, _described("the active character (also `characterName`)",
                                        {"type": ["string", "null"]})] = None
    context: Annotated[Any, _described("replaces the chat's gating context; null clears it", _nullable(ref("Context")))] = None
    swipe: Annotated[Any, _described("true: this regenerates the last generation, so roll its state back first; false: "
                               "never roll back; absent or null: roll back when the same message slot is generated "
                               "again", {"type": ["boolean", "null"]})] = None
    dry_run: Annotated[Any, _described("compute without changing the chat's state (also `dryRun`)",
                                 {"type": "boolean", "default": False})] = None
    seed: Annotated[Any, _described("seed for the probability rolls (reproducible results)",
                              {"type": ["integer", "null"]})] = None
    pins: Annotated[Any, _described("replaces the chat's pins; null clears them",
                              {"type": ["array", "null"], "items": ref("EntryRef")})] = None
    blocks: Annotated[Any, _described("replaces the chat's blocks; null clears them",
                                {"type": ["array", "null"], "items": ref("EntryRef")})] = None
    folder_filter: Annotated[Any, _described("replaces the chat's folder filter (also `folderFilter`)",
                                       ref("FolderFilter"))] = None
    notebook: Annotated[Any, _described("replaces the chat's notebook (at most 64 KiB as UTF-8); null keeps it",
                                  {"type": ["string", "null"]})] = None
    chatId: Annotated[Any, WithJsonSchema(ref("ChatId"))] = None  # noqa: N815 - SillyTavern's spelling
    characterName: Annotated[Any, WithJsonSchema({"type": ["string", "null"]})] = None  # noqa: N815
    dryRun: Annotated[Any, WithJsonSchema({"type": "boolean"})] = None  # noqa: N815
    folderFilter: Annotated[Any, WithJsonSchema(ref("FolderFilter"))] = None  # noqa: N815

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


class QueryModel(RequestModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    unknown_ok: ClassVar[bool] = True


def _whole(raw: str, low: int, high: int) -> int:
    limit = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else 0
    if not low <= limit <= high:
        raise ValueError(f"limit must be a whole number from {low} to {high}, not {raw[:40]!r}")
    return limit


def _zero_one(raw: str, name: str) -> str:
    if raw not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, not {raw[:40]!r}")
    return raw


class EntriesQuery(QueryModel):
    q: str = Field("", description="case-insensitive filter on title and keys")
    vault: str | None = Field(None, description="only entries of this vault")


class SyncQuery(QueryModel):
    force: Literal["0", "1"] = Field(
        "0", description="1: re-read every note, ignoring the cache; 0 (the default): only changed notes")

    @field_validator("force", mode="before")
    @classmethod
    def _force(cls, value: str) -> str:
        return _zero_one(value, "force")


class ChatsQuery(QueryModel):
    limit: int = Field(MAX_CHATS, ge=1, le=MAX_CHATS, description=f"how many at most, 1-{MAX_CHATS}")

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: str) -> int:
        return _whole(value, 1, MAX_CHATS)


class RecordsQuery(QueryModel):
    limit: int = Field(10, ge=1, le=KEEP_RECORDS, description=f"how many, 1-{KEEP_RECORDS} ({KEEP_RECORDS} are kept)")

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: str) -> int:
        return _whole(value, 1, KEEP_RECORDS)


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
        return _zero_one(value, "include_hidden")


class CacheClearQuery(QueryModel):
    chat_id: Annotated[str | None, WithJsonSchema(ref("ChatId"))] = Field(
        None, description="only this chat's answers (absent: every chat's)")

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, value: Any) -> str:
        return _core(check_chat_id)(value)
