"""The lore API a tool-calling chat model uses mid-generation (search the vault, flag what is
missing) and the gap records those calls leave, under /api/dle/v1. The records are the engine's
one store, the same the Librarian view lists.

A body is checked whole before anything is recorded: a bad one is a 400 and leaves the store as
it was (a body over the server's limit is a 413 before it is read)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.engine.retrieval import NotReady
from dle_desktop.librarian.lore_search import flag_lore, search_lore
from dle_desktop.server.routes_chat import read_json
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_lore import GapsQuery, LoreFlagRequest, LoreSearchRequest
from dle_desktop.server.services import engine

API = "/api/dle/v1"


def _snapshot(request: Request) -> IndexSnapshot:
    snap = engine(request).snapshot
    if snap is None:
        raise NotReady("the vault index is not ready yet; retry shortly")
    return snap


async def search(request: Request) -> JSONResponse:
    body = parse_body(LoreSearchRequest, await read_json(request))
    lore = engine(request)
    snap = _snapshot(request)
    min_score = float(getattr(lore.settings, "fuzzy_search_min_score", 0.5))
    # Off the loop: BM25 over a big vault and the store's fsync would hold up other requests.
    result = await asyncio.to_thread(
        search_lore,
        snap,
        lore.gaps,
        body.queries,
        reason=body.reason,
        exclude_titles=body.exclude_titles,
        min_score=min_score,
    )
    return JSONResponse(result.to_json())


async def flag(request: Request) -> JSONResponse:
    body = parse_body(LoreFlagRequest, await read_json(request))
    gap = await asyncio.to_thread(
        flag_lore, engine(request).gaps, body.title, body.reason, body.urgency, body.flag_type, body.entry_title
    )
    return JSONResponse(gap.to_json())


async def list_gaps(request: Request) -> JSONResponse:
    query = parse_query(GapsQuery, request.query_params)
    gaps = engine(request).gaps.list(status=query.status, include_hidden=query.include_hidden == "1")
    gaps.sort(key=lambda g: g.status != "pending")  # stable: the store's urgency order stays within each
    return JSONResponse({"gaps": [g.to_json() for g in gaps]})


routes = [
    Route(f"{API}/lore/search", search, methods=["POST"]),
    Route(f"{API}/lore/flag", flag, methods=["POST"]),
    Route(f"{API}/gaps", list_gaps, methods=["GET"]),
]
