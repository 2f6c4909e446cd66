"""Embedding-backend endpoints in the formats stock SillyTavern's sources call (st-wire-contracts.md
§3), all served by our local llama.cpp embedder, so an ST pointed at our port vectorises with it:

  * `POST /v1/embeddings`            llama.cpp server / vLLM / OpenAI format (`llamacpp`, `vllm`)
  * `POST /api/embed`                Ollama, batch (`ollama`, ST 1.13+)
  * `POST /api/embeddings`           Ollama, one prompt (`ollama`, ST 1.12)
  * `POST /api/extra/embeddings`     KoboldCpp (`koboldcpp`, ST 1.13+); JSON read whatever the
                                     Content-Type (ST sends none), a non-empty `model` always
  * `POST /api/embeddings/compute`   SillyTavern-Extras (`extras`)
  * `GET  /api/modules`              SillyTavern-Extras, fetched by the browser: CORS allowed
  * `GET  /v1/models`                the OpenAI model list, for clients that check it first

Texts are embedded as documents, without the query instruction: ST never says whether a text is
a query (it embeds chat messages and search text alike), and the same prompt on both sides keeps
its similarities symmetric. A caller that does know may send `"input_type": "query"` (or
`"search_query"`, or `"isQuery": true`) to get the query instruction.

The `model` a caller names is not used to pick a model (there is one: the configured local GGUF);
Ollama's answer echoes it, the others report our model id. With no local model configured every
endpoint answers 503 with a message saying how to configure one.

`Connection: close` is answered with `Connection: close` (node-fetch v2 needs it); other requests
keep the connection alive. ST calls these from its Node server, which sends no `Origin`; requests
from web pages the user has not listed are refused by `server/security.py` before they get here.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dle_desktop.server.routes_vector import (
    VECTOR_MAX_BODY_BYTES,
    BadJson,
    BodyTooLarge,
    connection_headers,
    parse_json_bytes,
    read_body_limited,
)
from dle_desktop.server.schemas_vectors import (
    EmbedBody,
    EndpointError,
    ExtrasComputeBody,
    KoboldEmbeddingsBody,
    OllamaEmbedBody,
    OllamaEmbeddingsBody,
    OpenAiEmbeddingsBody,
    parse_st_body,
)
from dle_desktop.server.services import engine
from dle_desktop.vectors.contracts import EmbeddingError

log = logging.getLogger(__name__)

EMBED_MAX_BODY_BYTES = VECTOR_MAX_BODY_BYTES


def _openai_error(exc: EndpointError) -> dict:
    kind = (
        "invalid_request_error" if exc.status < 500 else ("unavailable_error" if exc.status == 503 else "server_error")
    )
    return {"error": {"message": exc.message, "type": kind, "code": exc.status}}


def _plain_error(exc: EndpointError) -> dict:
    return {"error": exc.message}


async def _read_object(request: Request) -> dict:
    try:
        raw = await read_body_limited(request, EMBED_MAX_BODY_BYTES)
    except BodyTooLarge as exc:
        raise EndpointError(413, str(exc)) from None
    if not raw.strip():
        raise EndpointError(400, "the request body is empty; send a JSON object")
    try:
        body = await parse_json_bytes(raw)
    except BadJson as exc:
        raise EndpointError(400, str(exc)) from None
    if not isinstance(body, dict):
        raise EndpointError(400, "send a JSON object")
    return body


def _vector_service(request: Request):
    try:
        service = engine(request).vectors
    except Exception as exc:
        log.exception("the vector service could not be started")
        raise EndpointError(503, f"the local embedder could not be started: {exc}") from None
    if service is None:
        raise EndpointError(503, "the local embedder is not available")
    return service


async def _embed(request: Request, texts: list[str], query: bool) -> tuple[np.ndarray, str, int]:
    """(vectors, model id, token estimate) for non-empty `texts`; every text is embedded as it is
    (an empty string too: the model's special tokens still make a vector)."""
    service = _vector_service(request)
    try:
        vectors, profile = await service.embed_local(texts, query=query)
    except EmbeddingError as exc:
        status = getattr(exc, "status", 502)
        if not 400 <= status <= 599:
            status = 502
        raise EndpointError(status, str(exc)) from None
    except EndpointError:
        raise
    except Exception as exc:
        log.exception("local embedding failed")
        raise EndpointError(500, f"the local embedder failed: {exc}") from None
    return vectors, profile.model_id, _token_estimate(texts)


def _token_estimate(texts: list[str]) -> int:
    """`usage` is never read by ST; a rough count (about 4 characters a token) is enough."""
    return sum(max(1, (len(t) + 3) // 4) for t in texts if t)


def _row(vec) -> list[float]:
    return np.asarray(vec, dtype=np.float32).tolist()


def _json(request: Request, payload: Any, status: int = 200, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(payload, status_code=status, headers={**connection_headers(request), **(headers or {})} or None)


def _endpoint(
    handler: Callable[[Request, Any], Awaitable[Response]],
    model: type[EmbedBody],
    error_shape: Callable[[EndpointError], dict],
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            body = parse_st_body(model, await _read_object(request))
            return await handler(request, body)
        except EndpointError as exc:
            headers = {"Connection": "close"} if exc.status == 413 else None
            if exc.status >= 500:
                log.warning("%s failed: %s", request.url.path, exc.message)
            return _json(request, error_shape(exc), exc.status, headers)
        except ClientDisconnect:
            return Response(status_code=400, headers={"Connection": "close"})

    endpoint.__name__ = handler.__name__.lstrip("_")
    return endpoint


# -- llama.cpp / vLLM / OpenAI ---------------------------------------------------------------------


async def _openai_embeddings(request: Request, body: OpenAiEmbeddingsBody) -> Response:
    texts, _ = body.input
    fmt = body.encoding_format
    vectors, model_id, tokens = await _embed(request, texts, body.query)
    data = []
    for i, vec in enumerate(vectors):
        if fmt == "base64":
            emb: Any = base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii")
        else:
            emb = _row(vec)
        data.append({"object": "embedding", "index": i, "embedding": emb})
    return _json(
        request,
        {"object": "list", "data": data, "model": model_id, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
    )


async def models(request: Request) -> Response:
    try:
        model_id = _vector_service(request).local_embedder().profile.model_id
        data = [{"id": model_id, "object": "model", "created": 0, "owned_by": "dle-desktop"}]
    except (EndpointError, EmbeddingError):
        data = []
    return _json(request, {"object": "list", "data": data})


# -- Ollama --------------------------------------------------------------------------------------


async def _ollama_embed(request: Request, body: OllamaEmbedBody) -> Response:
    model = body.model
    texts, was_list = body.input
    if texts == [""] and not was_list:
        # Ollama: `"input": ""` is no input, but every element of an array is embedded, an empty
        # one too; answering `[""]` with no embedding fails a caller's whole batch.
        texts = []
    started = time.perf_counter_ns()
    if not texts:
        return _json(request, {"model": model or "", "embeddings": []})
    vectors, model_id, tokens = await _embed(request, texts, body.query)
    return _json(
        request,
        {
            "model": model or model_id,
            "embeddings": [_row(v) for v in vectors],
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": 0,
            "prompt_eval_count": tokens,
        },
    )


async def _ollama_embeddings(request: Request, body: OllamaEmbeddingsBody) -> Response:
    prompt = body.prompt
    if prompt == "":
        return _json(request, {"embedding": []})
    vectors, _, _ = await _embed(request, [prompt], body.query)
    return _json(request, {"embedding": _row(vectors[0])})


# -- KoboldCpp -----------------------------------------------------------------------------------


async def _kobold_embeddings(request: Request, body: KoboldEmbeddingsBody) -> Response:
    texts, _ = body.input
    if not texts:
        service = _vector_service(request)
        try:
            model_id = service.local_embedder().profile.model_id
        except EmbeddingError as exc:
            raise EndpointError(503, str(exc)) from None
        return _json(
            request,
            {
                "object": "list",
                "data": [],
                "model": model_id or "dle-desktop",
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            },
        )
    vectors, model_id, tokens = await _embed(request, texts, body.query)
    data = [{"object": "embedding", "index": i, "embedding": _row(v)} for i, v in enumerate(vectors)]
    return _json(
        request,
        {
            "object": "list",
            "data": data,
            "model": model_id or "dle-desktop",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )


# -- SillyTavern-Extras --------------------------------------------------------------------------


async def _extras_compute(request: Request, body: ExtrasComputeBody) -> Response:
    texts, as_list = body.text
    if not texts:
        return _json(request, {"embedding": []})
    vectors, _, _ = await _embed(request, texts, body.query)
    rows = [_row(v) for v in vectors]
    return _json(request, {"embedding": rows if as_list else rows[0]})


def _cors_headers(request: Request) -> dict[str, str]:
    headers = {"Access-Control-Allow-Origin": "*", "Vary": "Origin"}
    if request.method == "OPTIONS":
        headers["Access-Control-Allow-Methods"] = "GET, OPTIONS"
        asked = request.headers.get("access-control-request-headers")
        headers["Access-Control-Allow-Headers"] = asked or "Authorization, Content-Type"
        headers["Access-Control-Max-Age"] = "600"
        if request.headers.get("access-control-request-private-network", "").lower() == "true":
            headers["Access-Control-Allow-Private-Network"] = "true"
    return headers


async def extras_modules(request: Request) -> Response:
    """Fetched by ST's browser code (cross-origin), with `Authorization: Bearer <key>` when a key
    is set, so the preflight is answered too. The key is not checked: the server is local."""
    if request.method == "OPTIONS":
        return Response(status_code=204, headers={**_cors_headers(request), **connection_headers(request)})
    return _json(request, {"modules": ["embeddings"]}, headers=_cors_headers(request))


routes = [
    Route("/v1/embeddings", _endpoint(_openai_embeddings, OpenAiEmbeddingsBody, _openai_error), methods=["POST"]),
    Route("/v1/models", models, methods=["GET"]),
    Route("/api/embed", _endpoint(_ollama_embed, OllamaEmbedBody, _plain_error), methods=["POST"]),
    Route("/api/embeddings", _endpoint(_ollama_embeddings, OllamaEmbeddingsBody, _plain_error), methods=["POST"]),
    Route("/api/extra/embeddings", _endpoint(_kobold_embeddings, KoboldEmbeddingsBody, _plain_error), methods=["POST"]),
    Route("/api/embeddings/compute", _endpoint(_extras_compute, ExtrasComputeBody, _plain_error), methods=["POST"]),
    Route("/api/modules", extras_modules, methods=["GET", "OPTIONS"]),
]
