"""The lore API a tool-calling chat model uses mid-generation (search the vault, flag what is
missing) and the gap records those calls leave, under /api/dle/v1. The records are the engine's
one store, the same the Librarian view lists.

A body is checked whole before anything is recorded: a bad one is a 400 and leaves the store as
it was (a body over the server's limit is a 413 before it is read)."""

from __future__ import annotations

import asyncio
import re

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.errors import InputError
from dle_desktop.librarian.gaps import URGENCIES
from dle_desktop.librarian.lore_search import flag_lore, search_lore
from dle_desktop.engine.retrieval import NotReady
from dle_desktop.server.routes_chat import read_json

API = "/api/dle/v1"
MAX_QUERIES = 4
MAX_QUERY_CHARS = 500
MAX_TITLE_CHARS = 500
MAX_REASON_CHARS = 4000
MAX_EXCLUDED = 2000
FLAG_TYPES = ("gap", "update")
STATUSES = ("pending", "written")
SEARCH_FIELDS = {"queries", "reason", "exclude_titles"}
FLAG_FIELDS = {"title", "reason", "urgency", "flag_type", "entry_title"}
#: the same test the OpenAPI document states (`pattern`), so both agree on what "blank" is
_NOT_BLANK = re.compile(r"\S")


async def _body(request: Request, allowed: set[str], shape: str) -> dict:
    data = await read_json(request)
    if not isinstance(data, dict):
        raise InputError(f"send an object: {shape}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(u[:100] for u in unknown[:20])}")
    return data


def _text(data: dict, name: str, limit: int, *, required: bool = False, blank_ok: bool = True) -> str:
    if name not in data:
        if required:
            raise InputError(f"{name} is required")
        return ""
    value = data[name]
    if not isinstance(value, str):
        raise InputError(f"{name} must be text")
    if len(value) > limit:
        raise InputError(f"{name} is {len(value)} characters; the limit is {limit}")
    if not blank_ok and not _NOT_BLANK.search(value):
        raise InputError(f"{name} must not be blank")
    return value


def _texts(data: dict, name: str, limit: int, item_limit: int, *, min_items: int = 0) -> list[str]:
    value = data.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{name} must be a list of text")
    if not min_items <= len(value) <= limit:
        raise InputError(f"{name} has {len(value)} items; send {min_items} to {limit}")
    for v in value:
        if len(v) > item_limit:
            raise InputError(f"an item of {name} is {len(v)} characters; the limit is {item_limit}")
    return value


def _snapshot(request: Request):
    snap = request.app.state.engine.snapshot
    if snap is None:
        raise NotReady("the vault index is not ready yet; retry shortly")
    return snap


async def search(request: Request) -> JSONResponse:
    data = await _body(request, SEARCH_FIELDS, "{queries: [1-4 texts], reason?, exclude_titles?}")
    if "queries" not in data:
        raise InputError("queries is required: a list of 1 to 4 texts")
    queries = _texts(data, "queries", MAX_QUERIES, MAX_QUERY_CHARS, min_items=1)
    if not all(_NOT_BLANK.search(q) for q in queries):
        raise InputError("a query is blank; each must have something to look for")
    reason = _text(data, "reason", MAX_REASON_CHARS)
    exclude = _texts(data, "exclude_titles", MAX_EXCLUDED, MAX_TITLE_CHARS)
    engine = request.app.state.engine
    snap = _snapshot(request)
    min_score = float(getattr(engine.settings, "fuzzy_search_min_score", 0.5))
    # Off the loop: BM25 over a big vault and the store's fsync would hold up other requests.
    result = await asyncio.to_thread(search_lore, snap, engine.gaps, queries, reason=reason, exclude_titles=exclude,
                                     min_score=min_score)
    return JSONResponse(result.to_json())


async def flag(request: Request) -> JSONResponse:
    data = await _body(request, FLAG_FIELDS, "{title, reason, urgency?, flag_type?, entry_title?}")
    title = _text(data, "title", MAX_TITLE_CHARS, required=True, blank_ok=False)
    reason = _text(data, "reason", MAX_REASON_CHARS, required=True)
    urgency = data.get("urgency", "medium")
    if urgency not in URGENCIES:
        raise InputError(f"urgency must be one of {', '.join(URGENCIES)}")
    flag_type = data.get("flag_type", "gap")
    if flag_type not in FLAG_TYPES:
        raise InputError(f"flag_type must be one of {', '.join(FLAG_TYPES)}")
    entry_title = _text(data, "entry_title", MAX_TITLE_CHARS)
    gap = await asyncio.to_thread(flag_lore, request.app.state.engine.gaps, title, reason, urgency, flag_type,
                                  entry_title)
    return JSONResponse(gap.to_json())


async def list_gaps(request: Request) -> JSONResponse:
    status = request.query_params.get("status")
    if status is not None and status not in STATUSES:
        raise InputError(f"status must be one of {', '.join(STATUSES)}, not {status[:40]!r}")
    hidden = request.query_params.get("include_hidden", "0")
    if hidden not in ("0", "1"):
        raise InputError(f"include_hidden must be 0 or 1, not {hidden[:40]!r}")
    gaps = request.app.state.engine.gaps.list(status=status, include_hidden=hidden == "1")
    gaps.sort(key=lambda g: g.status != "pending")  # stable: the store's urgency order stays within each
    return JSONResponse({"gaps": [g.to_json() for g in gaps]})


routes = [
    Route(f"{API}/lore/search", search, methods=["POST"]),
    Route(f"{API}/lore/flag", flag, methods=["POST"]),
    Route(f"{API}/gaps", list_gaps, methods=["GET"]),
]
