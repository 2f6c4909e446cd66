"""Request bodies of the routes SillyTavern calls (routes_vector.py, routes_embeddings.py), declared
once: the routes validate with these models and openapi_vectors.py generates the document's request
schemas from them.

These routes keep ST's wire format, looser than our own API: numbers may come as strings (ST's
`Number()`), unknown fields are ignored, an empty body is `{}`. So each field is read by the
vectors package's ST-compatible parser (its messages and statuses are the answer: a
VectorApiError or EndpointError passes through validation untouched), and declares the schema of
what that parser takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

import httpx
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PrivateAttr,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from dle_desktop.server.schemas import NOT_BLANK, WHITESPACE, ref
from dle_desktop.vectors.service import (
    DEFAULT_TOP_K,
    MAX_COLLECTION_ID_CHARS,
    MAX_COLLECTIONS,
    MAX_HASHES,
    MAX_INSERT_ITEMS,
    MAX_TOP_K,
    SourceSettings,
    bad_request,
    parse_collection_id,
    parse_collection_ids,
    parse_hashes,
    parse_items,
    parse_search_text,
    parse_settings,
    parse_threshold,
    parse_top_k,
)
from dle_desktop.vectors.source_settings import KNOWN_SOURCES, MAX_SETTING_CHARS, PRECOMPUTED_SOURCES

MAX_INPUTS = MAX_INSERT_ITEMS
_QUERY_TYPES = {"query", "search_query", "retrieval.query"}

#: Text that JavaScript's `Number()` reads as a whole number from 0 to 1000, or as 0 (blank), as
#: ST sends topK; and as a number from -1 to 1, as it sends threshold.
_WS = f"[{WHITESPACE}]*"
_TOP_K_TEXT = rf"^{_WS}(\+?0*([0-9]{{1,3}}|1000)(\.0*)?)?{_WS}$"
_THRESHOLD_TEXT = rf"^{_WS}([+-]?(0*1(\.0*)?|0*\.[0-9]+|0+(\.[0-9]*)?))?{_WS}$"
#: Text with something other than whitespace in it, and no NUL (collection ids, search texts).
NON_BLANK_NO_NUL = rf"^[^\x00]*[^{WHITESPACE}\x00][^\x00]*$"


Body = TypeVar("Body", bound="StBody")


class StBody(BaseModel):
    """A JSON object as ST sends it: unknown fields are ignored. Required fields are filled in
    with null before validation when missing, so that their parsers say what is required."""

    model_config = ConfigDict(extra="ignore", validate_default=True, defer_build=True)  # as RequestModel

    @model_validator(mode="before")
    @classmethod
    def _missing_as_null(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {**{f.alias or n: None for n, f in cls.model_fields.items() if f.is_required()}, **data}


def parse_st_body(model: type[Body], data: Any, headers: Mapping[str, str] | None = None) -> Body:
    """`data` as `model`; a refusal is the parser's VectorApiError or EndpointError."""
    return model.model_validate(data, context={"headers": headers})


# -- the Vector API ---------------------------------------------------------------------------------

_INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
#: Schemas the requests share (components of the document).
SHARED_SCHEMAS: dict[str, dict[str, Any]] = {
    "CollectionId": {
        "description": "ST's `String(collectionId)`: a chat id, `world_<hash>`, `file_<hash>`, ... (a number is read "
        "as its text)",
        "anyOf": [
            {"type": "string", "minLength": 1, "maxLength": MAX_COLLECTION_ID_CHARS, "pattern": NON_BLANK_NO_NUL},
            {"type": "number"},
        ],
    },
    "VectorHash": _INT64 | {"description": "ST's getStringHash of the text (a signed 64-bit whole number)"},
    "VectorItem": {
        "type": "object",
        "required": ["hash", "text", "index"],
        "properties": {
            "hash": {"$ref": "#/components/schemas/VectorHash"},
            "text": {"type": "string"},
            "index": _INT64,
        },
    },
    "EmbeddingInput": {
        "description": "one text or a list of texts",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": MAX_INSERT_ITEMS}],
    },
}

_SETTING = {"type": ["string", "null"], "maxLength": MAX_SETTING_CHARS}
_Setting = Annotated[Any, WithJsonSchema(_SETTING)]
SOURCE_DESCRIPTION = (
    "The embedding source and its settings, in the body (ST 1.13+) or, for ST 1.12, in the X-LlamaCpp-URL, "
    "X-Vllm-URL, X-Vllm-Model, X-Ollama-URL, X-Ollama-Model, X-Ollama-Keep, X-Extras-Url, X-Extras-Key, "
    "X-OpenAI-Model, X-Togetherai-Model, X-Cohere-Model headers. `transformers` is DLE Desktop's local model; "
    "`koboldcpp` and `webllm` send their vectors in `embeddings`; the others call the server or cloud the settings "
    "name."
)


def _precomputed_need_a_model(schema: dict[str, Any]) -> None:
    # The precomputed sources name the model that made their vectors (their scope).
    schema["if"] = {"required": ["source"], "properties": {"source": {"enum": sorted(PRECOMPUTED_SOURCES)}}}
    schema["then"] = {"required": ["model"], "properties": {"model": {"type": "string", "pattern": NOT_BLANK}}}


class SourceBody(StBody):
    """A body with the embedding source's settings; `settings` is read from it and the ST 1.12
    headers once the route's own fields have passed (the order of the answers SillyTavern's
    server gives)."""

    model_config = ConfigDict(extra="ignore", validate_default=True, json_schema_extra=_precomputed_need_a_model)

    source: Annotated[
        Any,
        WithJsonSchema(
            {
                "enum": ["", None, *KNOWN_SOURCES],
                "description": "absent, null or empty means transformers. " + SOURCE_DESCRIPTION,
            }
        ),
    ] = None
    apiUrl: _Setting = None
    model: _Setting = None
    keep: Annotated[Any, WithJsonSchema({"type": ["boolean", "null"]})] = None
    extrasUrl: _Setting = None
    extrasKey: _Setting = None
    embeddings: Annotated[
        Any,
        WithJsonSchema(
            {
                "type": ["object", "null"],
                "description": "koboldcpp / webllm: text → its vector (an array of numbers). Read only by the routes that "
                "embed (insert, query) for these sources; a text they need without a vector of the "
                "collection's length is a 400",
            }
        ),
    ] = None

    _settings: SourceSettings | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _read_settings(cls, data: Any, handler: Any, info: Any) -> Any:
        model = handler(data)
        model._settings = parse_settings(data, (info.context or {}).get("headers"))
        return model

    @property
    def settings(self) -> SourceSettings:
        assert self._settings is not None
        return self._settings


_CollectionId = Annotated[Any, BeforeValidator(parse_collection_id), WithJsonSchema(ref("CollectionId"))]
_SearchText = Annotated[
    Any,
    BeforeValidator(parse_search_text),
    WithJsonSchema(
        {"type": "string", "pattern": NON_BLANK_NO_NUL, "description": "the text to search for (not blank)"}
    ),
]
_TopK = Annotated[
    Any,
    BeforeValidator(parse_top_k),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": MAX_TOP_K},
                {"type": "null"},
                {"type": "string", "pattern": _TOP_K_TEXT},
            ],
            "description": f"how many hits (1-{MAX_TOP_K}); 0 or none means {DEFAULT_TOP_K}. As in ST, a numeric string is "
            "read as its number",
        }
    ),
]
_Threshold = Annotated[
    Any,
    BeforeValidator(parse_threshold),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": -1, "maximum": 1},
                {"type": "null"},
                {"type": "string", "pattern": _THRESHOLD_TEXT},
            ],
            "description": "the least similarity a hit needs (-1 to 1; none means 0). As in ST, a numeric string is read "
            "as its number",
        }
    ),
]


class VectorList(SourceBody):
    collectionId: _CollectionId


class VectorInsert(SourceBody):
    collectionId: _CollectionId
    items: Annotated[
        Any,
        BeforeValidator(parse_items),
        WithJsonSchema({"type": "array", "items": ref("VectorItem"), "maxItems": MAX_INSERT_ITEMS}),
    ]


class VectorDelete(SourceBody):
    collectionId: _CollectionId
    hashes: Annotated[
        Any,
        BeforeValidator(parse_hashes),
        WithJsonSchema(
            {
                "type": "array",
                "items": ref("VectorHash"),
                "maxItems": MAX_HASHES,
                "description": "numeric strings are read as numbers",
            }
        ),
    ]


class VectorQuery(SourceBody):
    collectionId: _CollectionId
    searchText: _SearchText
    topK: _TopK = None
    threshold: _Threshold = None


class VectorQueryMulti(SourceBody):
    collectionIds: Annotated[
        Any,
        BeforeValidator(parse_collection_ids),
        WithJsonSchema({"type": "array", "items": ref("CollectionId"), "maxItems": MAX_COLLECTIONS}),
    ]
    searchText: _SearchText
    topK: _TopK = None
    threshold: _Threshold = None


class VectorPurge(StBody):
    """Delete a collection (every source and model; the source fields are ignored, as in SillyTavern)."""

    collectionId: _CollectionId


class VectorPurgeAll(StBody):
    pass


class KoboldEmbed(StBody):
    """ST's hop to KoboldCpp: the KoboldCpp at `server` (also `apiUrl`) embeds `items`."""

    server: Annotated[
        Any, WithJsonSchema({"type": "string", "format": "uri", "description": "the KoboldCpp URL (also `apiUrl`)"})
    ]
    items: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "string"}, "maxItems": MAX_INSERT_ITEMS})]

    @model_validator(mode="before")
    @classmethod
    def _present(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {**data, "server": data.get("server", data.get("apiUrl")), "items": data.get("items")}
        return data

    @field_validator("server", mode="before")
    @classmethod
    def _server(cls, server: Any) -> httpx.URL:
        if not isinstance(server, str) or not server.strip():
            raise bad_request("server is required: the KoboldCpp URL")
        try:
            url = httpx.URL(server.strip())
        except (httpx.InvalidURL, ValueError):
            raise bad_request(f"server {server[:100]!r} is not a valid URL") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise bad_request(f"server {server[:100]!r} is not a valid http(s) URL")
        return url

    @field_validator("items", mode="before")
    @classmethod
    def _items(cls, items: Any) -> list[str]:
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
            raise bad_request("items is required and must be an array of texts")
        if len(items) > MAX_INSERT_ITEMS:
            raise bad_request(f"items has {len(items)} texts; the limit is {MAX_INSERT_ITEMS}")
        return items


# -- embedding backends -----------------------------------------------------------------------------


class EndpointError(Exception):
    """A refused or failed embedding-endpoint request, answered in the caller's error shape."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def texts(value: Any, name: str, *, missing_ok: bool = False) -> tuple[list[str], bool]:
    """(texts, was_a_list) from a string or an array of strings."""
    if value is None:
        if missing_ok:
            return [], True
        raise EndpointError(400, f"{name} is required: a string or an array of strings")
    if isinstance(value, str):
        return [value], False
    if isinstance(value, list):
        if len(value) > MAX_INPUTS:
            raise EndpointError(400, f"{name} has {len(value)} texts; the limit is {MAX_INPUTS} per request")
        for i, t in enumerate(value):
            if not isinstance(t, str):
                what = (
                    "token ids are not supported; send text"
                    if isinstance(t, (int, list)) and not isinstance(t, bool)
                    else "must be a string"
                )
                raise EndpointError(400, f"{name}[{i}] {what}")
        return list(value), True
    raise EndpointError(400, f"{name} must be a string or an array of strings")


def _model_name(model: Any) -> str | None:
    if model is not None and not isinstance(model, str):
        raise EndpointError(400, "model must be a string")
    return model


_QUERY_FLAG_DOCS = {
    "input_type": "`query` (or search_query, retrieval.query) embeds with the query instruction; any other value "
    "does not",
    "isQuery": "true embeds with the query instruction; a value other than true or false is ignored",
    "is_query": "the same as isQuery",
}


class EmbedBody(StBody):
    """What every embedding endpoint reads besides its texts: whether they are queries."""

    input_type: Annotated[Any, WithJsonSchema({"description": _QUERY_FLAG_DOCS["input_type"]})] = None
    isQuery: Annotated[Any, WithJsonSchema({"description": _QUERY_FLAG_DOCS["isQuery"]})] = None
    is_query: Annotated[Any, WithJsonSchema({"description": _QUERY_FLAG_DOCS["is_query"]})] = None

    @property
    def query(self) -> bool:
        flag = self.isQuery if "isQuery" in self.model_fields_set else self.is_query
        if isinstance(flag, bool):
            return flag
        kind = self.input_type
        return isinstance(kind, str) and kind.strip().lower() in _QUERY_TYPES


_NullableText = Annotated[Any, BeforeValidator(_model_name), WithJsonSchema({"type": ["string", "null"]})]
_NO_INPUT = {"anyOf": [ref("EmbeddingInput"), {"type": "null"}], "description": "absent or null: no texts"}


class OpenAiEmbeddingsBody(EmbedBody):
    """`input` is required; `model` is not used to pick a model."""

    input: Annotated[Any, BeforeValidator(lambda v: texts(v, "input")), WithJsonSchema(ref("EmbeddingInput"))]
    model: Annotated[
        Any,
        BeforeValidator(_model_name),
        WithJsonSchema({"type": ["string", "null"], "description": "not used to pick a model"}),
    ] = None
    encoding_format: Annotated[
        Any, WithJsonSchema({"enum": ["float", "base64", None], "description": "null means float"})
    ] = None

    @field_validator("encoding_format", mode="before")
    @classmethod
    def _format(cls, value: Any) -> str:
        if value not in ("float", "base64", None):
            raise EndpointError(400, "encoding_format must be float or base64")
        return value or "float"


class OllamaEmbedBody(EmbedBody):
    model: _NullableText = None
    input: Annotated[Any, BeforeValidator(lambda v: texts(v, "input", missing_ok=True)), WithJsonSchema(_NO_INPUT)] = (
        None
    )


class OllamaEmbeddingsBody(EmbedBody):
    model: _NullableText = None
    prompt: Annotated[Any, WithJsonSchema({"type": ["string", "null"], "description": "null or empty: no vector"})] = (
        None
    )

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt(cls, value: Any) -> str:
        if value is None or value == "":
            return ""
        if not isinstance(value, str):
            raise EndpointError(400, "prompt must be a string")
        return value


class KoboldEmbeddingsBody(EmbedBody):
    input: Annotated[Any, BeforeValidator(lambda v: texts(v, "input", missing_ok=True)), WithJsonSchema(_NO_INPUT)] = (
        None
    )


class ExtrasComputeBody(EmbedBody):
    """`text` is required."""

    text: Annotated[Any, BeforeValidator(lambda v: texts(v, "text")), WithJsonSchema(ref("EmbeddingInput"))]
