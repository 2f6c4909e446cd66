"""The OpenAPI paths of the routes SillyTavern calls: its Vector API (`/api/vector/*`,
routes_vector.py) and the embedding-backend endpoints (routes_embeddings.py). openapi.py merges
them into the one document.

These routes speak SillyTavern's wire format, which is looser than our own API: numbers may come as
strings (`Number()` in ST), unknown fields are ignored, an empty body is `{}`. The request schemas
come from the models the routes validate with (schemas_vectors.py), the answers' from
answers_vectors.py; they say what ST sends and what we answer, the descriptions where the server
is more lenient."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from dle_desktop.server import answers_vectors
from dle_desktop.server.schemas import request_schema
from dle_desktop.server.schemas_vectors import (
    SHARED_SCHEMAS,
    ExtrasComputeBody,
    KoboldEmbed,
    KoboldEmbeddingsBody,
    OllamaEmbedBody,
    OllamaEmbeddingsBody,
    OpenAiEmbeddingsBody,
    StBody,
    VectorDelete,
    VectorInsert,
    VectorList,
    VectorPurge,
    VectorPurgeAll,
    VectorQuery,
    VectorQueryMulti,
)


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


#: The answers of these routes, as models (their components are generated from them).
ANSWERS: list[type[BaseModel]] = [
    answers_vectors.VectorError,
    answers_vectors.VectorQueryResult,
    answers_vectors.ScopesEnabled,
    answers_vectors.KoboldEmbedResult,
    answers_vectors.PlainError,
    answers_vectors.OpenAiError,
    answers_vectors.OpenAiEmbeddings,
    answers_vectors.ModelList,
    answers_vectors.OllamaEmbedResult,
    answers_vectors.OllamaEmbedding,
    answers_vectors.ExtrasEmbedding,
    answers_vectors.ExtrasModules,
]
#: What the requests refer to by name.
SCHEMAS: dict[str, dict] = SHARED_SCHEMAS


def _st(model: type[StBody]) -> dict[str, Any]:
    """The document's schema of a request body, from the model the route validates with."""
    return request_schema(model)


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_OK_TEXT = {"description": "done: the text `OK`", "content": {"text/plain": {"schema": {"const": "OK"}}}}
_VECTOR_ERRORS = {
    "400": _json(
        _ref("VectorError"),
        "the body is not JSON, a field is missing or has the wrong shape, an unknown "
        "source, or a source that cannot run with these settings",
    ),
    "401": _json(_ref("VectorError"), "the embedding source refused the credentials"),
    "403": _json(_ref("VectorError"), "sent by a web page of another site (an `Origin` that is not loopback)"),
    "413": _json(_ref("VectorError"), "the body is over 32 MiB"),
    "429": _json(_ref("VectorError"), "the embedding source is rate limiting"),
    "500": _json(
        _ref("VectorError"),
        "the embedding source or the vector store failed (SillyTavern's own status for these; the message says why)",
    ),
}


def _vector_op(
    name: str, summary: str, ok: dict, body: dict, *, body_required: bool = True, extra_errors: dict | None = None
) -> dict:
    op_id = "vector" + "".join(p.capitalize() for p in name.split("-"))
    return {
        "post": {
            "operationId": op_id,
            "summary": summary,
            "tags": ["vectors"],
            "requestBody": {"required": body_required, "content": {"application/json": {"schema": body}}},
            "responses": {"200": ok, **_VECTOR_ERRORS, **(extra_errors or {})},
        }
    }


_CONFLICT = {
    "409": _json(
        _ref("VectorError"),
        "the collection holds vectors of another length for this source and model; nothing was written",
    )
}

VECTOR_PATHS: dict[str, dict] = {
    "/api/vector/list": _vector_op(
        "list",
        "The hashes stored in a collection (for this source and model)",
        _json({"type": "array", "items": {"type": "integer"}}, "the hashes"),
        _st(VectorList),
    ),
    "/api/vector/insert": _vector_op(
        "insert",
        "Embed and store items (a batch is embedded and checked whole, then written at once)",
        _OK_TEXT,
        _st(VectorInsert),
        extra_errors=_CONFLICT,
    ),
    "/api/vector/delete": _vector_op("delete", "Delete items by hash", _OK_TEXT, _st(VectorDelete)),
    "/api/vector/query": _vector_op(
        "query", "The items closest to a text", _json(_ref("VectorQueryResult"), "hits, best first"), _st(VectorQuery)
    ),
    "/api/vector/query-multi": _vector_op(
        "query-multi",
        "The items closest to a text across collections (pooled, then cut to topK)",
        _json(
            {"type": "object", "additionalProperties": _ref("VectorQueryResult")},
            "hits per collection id (collections without hits are left out)",
        ),
        _st(VectorQueryMulti),
    ),
    "/api/vector/purge": _vector_op(
        "purge",
        "Delete a collection (every source and model; the source fields are ignored, as in SillyTavern)",
        _OK_TEXT,
        _st(VectorPurge),
    ),
    "/api/vector/purge-all": _vector_op(
        "purge-all", "Delete every collection", _OK_TEXT, _st(VectorPurgeAll), body_required=False
    ),
    "/api/vector/scopes-enabled": {
        "get": {
            "operationId": "vectorScopesEnabled",
            "summary": "SillyTavern 1.12.6 asks this; vectors are always kept per model",
            "tags": ["vectors"],
            "responses": {"200": _json(_ref("ScopesEnabled"), "always enabled")},
        }
    },
    "/api/backends/kobold/embed": {
        "post": {
            "operationId": "koboldEmbed",
            "tags": ["vectors"],
            "summary": "SillyTavern's hop to KoboldCpp for the koboldcpp source: embed `items` on the KoboldCpp at "
            "`server`",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _st(KoboldEmbed)}}},
            "responses": {
                "200": _json(_ref("KoboldEmbedResult"), "the vectors"),
                **{k: v for k, v in _VECTOR_ERRORS.items() if k != "500"},
                "500": _json(_ref("VectorError"), "KoboldCpp could not be reached or gave no usable vectors"),
            },
        }
    },
}
#: The catch-all route under /api/vector/: not an operation (it has no request to describe), so it
#: is said here, as an extension of the document, rather than as a path.
UNSUPPORTED = {
    "/api/vector/{name}": {
        "description": "Any other path under /api/vector/, and any other method on the routes above, answers "
        "TauriTavern's error (VectorError, cause `vector_endpoint_unavailable`): 404 for an unknown "
        'route (SillyTavern 1.18 reads it as "endpoint unavailable"), 405 with `Allow` for a '
        "known route and the wrong method.",
        "responses": {
            "404": _json(_ref("VectorError"), "unknown route"),
            "405": _json(_ref("VectorError"), "known route, wrong method"),
        },
    },
}


# -- embedding backends --------------------------------------------------------------------------

_UNAVAILABLE = "no local embedding model is configured (or it failed to load); the message says how to set one"


def _embed_op(op_id: str, summary: str, ok: dict, body: dict, error: str) -> dict:
    errors = {
        "400": "the body is not a JSON object, or a field has the wrong type",
        "403": "sent by a web page of another site",
        "413": "the body is over 32 MiB",
        "500": "the local embedder failed",
        "502": "the local embedder failed",
        "503": _UNAVAILABLE,
    }
    return {
        "post": {
            "operationId": op_id,
            "summary": summary,
            "tags": ["embeddings"],
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": {"200": ok, **{k: _json(_ref(error), v) for k, v in errors.items()}},
        }
    }


EMBEDDING_PATHS: dict[str, dict] = {
    "/v1/embeddings": _embed_op(
        "openaiEmbeddings",
        "llama.cpp / vLLM / OpenAI format",
        _json(_ref("OpenAiEmbeddings"), "the vectors"),
        _st(OpenAiEmbeddingsBody),
        "OpenAiError",
    ),
    "/v1/models": {
        "get": {
            "operationId": "listModels",
            "summary": "OpenAI's model list: the local embedding model (empty without one)",
            "tags": ["embeddings"],
            "responses": {"200": _json(_ref("ModelList"), "models")},
        }
    },
    "/api/embed": _embed_op(
        "ollamaEmbed",
        "Ollama, a batch",
        _json(_ref("OllamaEmbedResult"), "the vectors"),
        _st(OllamaEmbedBody),
        "PlainError",
    ),
    "/api/embeddings": _embed_op(
        "ollamaEmbeddings",
        "Ollama, one prompt (SillyTavern 1.12)",
        _json(_ref("OllamaEmbedding"), "the vector (empty for an empty prompt)"),
        _st(OllamaEmbeddingsBody),
        "PlainError",
    ),
    "/api/extra/embeddings": _embed_op(
        "koboldEmbeddings",
        "KoboldCpp format (any Content-Type)",
        _json(_ref("OpenAiEmbeddings"), "the vectors"),
        _st(KoboldEmbeddingsBody),
        "PlainError",
    ),
    "/api/embeddings/compute": _embed_op(
        "extrasCompute",
        "SillyTavern-Extras format",
        _json(_ref("ExtrasEmbedding"), "one vector for a text, a list of vectors for a list"),
        _st(ExtrasComputeBody),
        "PlainError",
    ),
    "/api/modules": {
        "get": {
            "operationId": "extrasModules",
            "summary": "SillyTavern-Extras' module list (CORS allowed: the browser asks it)",
            "tags": ["embeddings"],
            "responses": {"200": _json(_ref("ExtrasModules"), "modules")},
        },
        "options": {
            "operationId": "extrasModulesPreflight",
            "summary": "CORS preflight",
            "tags": ["embeddings"],
            "responses": {"204": {"description": "allowed"}},
        },
    },
}
