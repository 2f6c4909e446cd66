"""SillyTavern's Vector API: `POST /api/vector/{list,insert,delete,query,query-multi,purge,purge-all}`.

Wire format as st-wire-contracts.md §1.2: `list`, `query` and `query-multi` answer JSON
(`application/json; charset=utf-8`; `/query` is `{"metadata": [...], "hashes": [...]}` in that key
order); `insert`, `delete`, `purge` and `purge-all` answer the text `OK` (`text/plain;
charset=utf-8`). Errors are TauriTavern's JSON `{"error": true, "message": ..., "cause": ...}` with
400 / 401 / 409 / 413 / 429 / 500; the input is checked whole before anything is embedded or
written, so a refused request writes nothing. We have no JSON index that can be corrupted, so
ST's 307 "regenerated" path never happens.

Source settings are read from the body (ST 1.13+) and from the `X-*` headers (ST 1.12).

Also here: `GET /api/vector/scopes-enabled` (ST 1.12.6 asks it; we always scope by model, so
`{"enabled": true}`); `POST /api/backends/kobold/embed` (ST's hop from the browser to KoboldCpp
for the `koboldcpp` source, for a client that speaks ST's API to our port); and a catch-all
answering other `/api/vector/*` paths with TauriTavern's 404 (405 for a wrong method on a known
route), which ST 1.18 treats as "endpoint unavailable".

No CORS: ST's browser code calls its own server, which calls us server to server (no `Origin`).
Requests from web pages (an `Origin` the user has not listed) are refused before they reach these
routes: `server/security.py` judges Host, Origin and token for every route.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import numpy as np
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dle_desktop.errors import InputError
from dle_desktop.fileio import parse_json_bytes_async
from dle_desktop.server.schemas_vectors import (
    KoboldEmbed,
    StBody,
    VectorDelete,
    VectorInsert,
    VectorList,
    VectorPurge,
    VectorPurgeAll,
    VectorQuery,
    VectorQueryMulti,
    parse_st_body,
)
from dle_desktop.server.services import engine
from dle_desktop.vectors.service import VectorApiError, VectorService, bad_request

log = logging.getLogger(__name__)

#: Route-specific body limit, under the server-wide 64 MiB: enough for a whole book sent as one
#: insert, or a few thousand precomputed 1024-dimension vectors; a 50 MB body is a 413.
VECTOR_MAX_BODY_BYTES = 32 * 1024 * 1024

ROUTE_NAMES = ("list", "insert", "delete", "query", "query-multi", "purge", "purge-all")


class STJSONResponse(JSONResponse):
    """Express's `res.json`: compact JSON, `application/json; charset=utf-8`."""

    media_type = "application/json; charset=utf-8"


# -- shared with routes_embeddings ---------------------------------------------------------------


class BodyTooLarge(Exception):
    def __init__(self, size: int | None, limit: int) -> None:
        super().__init__(
            f"request body{'' if size is None else f' of {size} bytes'} is over the limit "
            f"of {limit} bytes for this route"
        )


async def read_body_limited(request: Request, limit: int) -> bytes:
    """The whole body, or BodyTooLarge. An oversized body is still read to its end (and thrown
    away, bounded by the server-wide limit) so the client gets the 413 rather than a reset."""
    declared = request.headers.get("content-length")
    declared_size = int(declared) if declared and declared.isdigit() else None
    chunks: list[bytes] = []
    size = 0
    over = declared_size is not None and declared_size > limit
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            over = True
        if not over:
            chunks.append(chunk)
    if over:
        raise BodyTooLarge(declared_size if declared_size is not None else size, limit)
    return b"".join(chunks)


class BadJson(ValueError):
    pass


async def parse_json_bytes(body: bytes) -> Any:
    """JSON from bytes, whatever the Content-Type (KoboldCpp's caller sends none). Raises BadJson."""
    try:
        return await parse_json_bytes_async(body, "the request body")
    except InputError as exc:
        raise BadJson(str(exc)) from None


def connection_headers(request: Request) -> dict[str, str]:
    """`Connection: close` back when the request asked for it (node-fetch v2 does, and reuses a
    socket the server is about to close if it is not told: st-wire-contracts.md §3)."""
    tokens = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
    if "close" in tokens or (request.scope.get("http_version") == "1.0" and "keep-alive" not in tokens):
        return {"Connection": "close"}
    return {}


# -- responses ------------------------------------------------------------------------------------


def ok(request: Request) -> Response:
    """Express's `res.sendStatus(200)`: the text `OK`."""
    return Response("OK", media_type="text/plain; charset=utf-8", headers=connection_headers(request))


def error(request: Request, exc: VectorApiError) -> Response:
    headers = connection_headers(request)
    if exc.status == 413:
        headers = {"Connection": "close"}
    return STJSONResponse(exc.to_json(), status_code=exc.status, headers=headers or None)


def _service(request: Request):
    try:
        service = engine(request).vectors
    except VectorApiError:
        raise
    except Exception as exc:
        log.exception("the vector service could not be started")
        raise VectorApiError(
            500, f"the vector backend could not be started: {exc}", "vector_store_unavailable"
        ) from None
    if service is None:
        raise VectorApiError(500, "the vector backend is not available", "vector_store_unavailable")
    return service


Handler = Callable[[Any, Any, Request], Awaitable[Any]]


def _route(name: str, model: type[StBody], handler: Handler, path: str | None = None) -> Route:
    async def endpoint(request: Request) -> Response:
        try:
            try:
                raw = await read_body_limited(request, VECTOR_MAX_BODY_BYTES)
            except BodyTooLarge as exc:
                raise VectorApiError(413, str(exc)) from None
            if raw.strip() == b"":
                body: Any = {}  # express.json leaves req.body = {} for an empty body
            else:
                try:
                    body = await parse_json_bytes(raw)
                except BadJson as exc:
                    raise bad_request(str(exc)) from None
            if not isinstance(body, dict):
                raise bad_request("send a JSON object")
            service = _service(request)
            result = await handler(service, parse_st_body(model, body, request.headers), request)
        except VectorApiError as exc:
            if exc.status >= 500:
                log.warning("/api/vector/%s failed: %s", name, exc.message)
            return error(request, exc)
        except ClientDisconnect:
            return Response(status_code=400, headers={"Connection": "close"})
        if result is None:
            return ok(request)
        return STJSONResponse(result, headers=connection_headers(request) or None)

    endpoint.__name__ = f"vector_{name.replace('-', '_').replace('/', '_')}"
    return Route(path or f"/api/vector/{name}", endpoint, methods=["POST"])


# -- the seven routes -----------------------------------------------------------------------------


async def _list(service: VectorService, body: VectorList, request: Request) -> list[int]:
    return await service.list(body.collectionId, body.settings)


async def _insert(service: VectorService, body: VectorInsert, request: Request) -> None:
    await service.insert(body.collectionId, body.settings, body.items)


async def _delete(service: VectorService, body: VectorDelete, request: Request) -> None:
    await service.delete(body.collectionId, body.settings, body.hashes)


async def _query(service: VectorService, body: VectorQuery, request: Request) -> Any:
    return await service.query(body.collectionId, body.settings, body.searchText, body.topK, body.threshold)


async def _query_multi(service: VectorService, body: VectorQueryMulti, request: Request) -> Any:
    return await service.query_multi(body.collectionIds, body.settings, body.searchText, body.topK, body.threshold)


async def _purge(service: VectorService, body: VectorPurge, request: Request) -> None:
    await service.purge(body.collectionId)  # the source is ignored, as in ST


async def _purge_all(service: VectorService, body: VectorPurgeAll, request: Request) -> None:
    await service.purge_all()


async def _kobold_embed(service: VectorService, body: KoboldEmbed, request: Request) -> dict[str, Any]:
    """ST's `POST /api/backends/kobold/embed {server, items}` (the browser's first hop of the
    `koboldcpp` source): POST `{"input": items}` to `<server origin>/api/extra/embeddings`, answer
    `{"model": <reported model or "unknown">, "embeddings": [[...]]}`. Also with `items: []`, which
    the browser sends before list and delete to learn the model name."""
    items = body.items
    target = body.server.copy_with(path="/api/extra/embeddings", query=None, fragment=None)
    headers = {"Content-Type": "application/json"}
    key = _kobold_key(request)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0), follow_redirects=False) as client:
            r = await client.post(target, content=json.dumps({"input": items}), headers=headers)
    except httpx.HTTPError as exc:
        raise VectorApiError(500, f"KoboldCpp at {target} could not be reached: {type(exc).__name__}: {exc}") from None
    if r.status_code in (401, 403):
        raise VectorApiError(401, f"KoboldCpp refused the API key ({r.status_code})")
    if r.status_code == 429:
        raise VectorApiError(429, "KoboldCpp is rate limiting")
    try:
        data = r.json()
        rows = data["data"]
        if not isinstance(rows, list):
            raise TypeError
        rows = [x[0] if isinstance(x, list) and x else x for x in rows]
        rows.sort(key=lambda x: x["index"])
        embeddings = [x["embedding"] for x in rows]
    except (ValueError, TypeError, KeyError, IndexError):
        raise VectorApiError(
            500, f"KoboldCpp at {target} answered {r.status_code} without embeddings: {r.text[:200]!r}"
        ) from None
    if len(embeddings) != len(items):
        raise VectorApiError(500, f"KoboldCpp returned {len(embeddings)} embeddings for {len(items)} texts")
    if embeddings:
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                arr = np.asarray(embeddings, dtype=np.float64)
        except (TypeError, ValueError):
            raise VectorApiError(500, "KoboldCpp's embeddings are not arrays of numbers of one length") from None
        if arr.ndim != 2 or arr.shape[1] == 0 or not np.isfinite(arr).all():
            raise VectorApiError(500, "KoboldCpp's embeddings are not finite vectors of one length")
    model = data.get("model") if isinstance(data, dict) else None
    return {"model": model if isinstance(model, str) and model.strip() else "unknown", "embeddings": embeddings}


def _kobold_key(request: Request) -> str | None:
    """The KoboldCpp API key ST keeps as `api_key_koboldcpp`, from our secret store if it has one."""
    secrets = getattr(engine(request), "secrets", None)
    if secrets is None:
        return None
    try:
        return (secrets.get("api_key_koboldcpp") or "").strip() or None
    except Exception:  # noqa: BLE001 - no key is the answer when the keyring cannot be read
        return None


async def scopes_enabled(request: Request) -> Response:
    """ST 1.12.6's `GET /api/vector/scopes-enabled`: our scopes always include the model."""
    return STJSONResponse({"enabled": True}, headers=connection_headers(request) or None)


async def unsupported(request: Request) -> Response:
    name = request.path_params.get("name", "")
    allow = "POST" if name in ROUTE_NAMES else "GET, HEAD" if name == "scopes-enabled" else None
    if allow is not None:
        return STJSONResponse(
            {
                "error": True,
                "cause": "vector_endpoint_unavailable",
                "message": f"{request.method} is not allowed on /api/vector/{name}; use {allow}",
            },
            status_code=405,
            headers={"Allow": allow, **connection_headers(request)},
        )
    return STJSONResponse(
        {"error": True, "cause": "vector_endpoint_unavailable", "message": f"Unsupported vector endpoint: {name}"},
        status_code=404,
        headers=connection_headers(request) or None,
    )


routes = [
    _route("list", VectorList, _list),
    _route("insert", VectorInsert, _insert),
    _route("delete", VectorDelete, _delete),
    _route("query", VectorQuery, _query),
    _route("query-multi", VectorQueryMulti, _query_multi),
    _route("purge", VectorPurge, _purge),
    _route("purge-all", VectorPurgeAll, _purge_all),
    Route("/api/vector/scopes-enabled", scopes_enabled, methods=["GET"]),
    _route("kobold/embed", KoboldEmbed, _kobold_embed, path="/api/backends/kobold/embed"),
    Route("/api/vector/{name:path}", unsupported, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
]
