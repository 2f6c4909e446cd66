"""Steering a chat from SillyTavern under /api/dle/v1: the vault's gating fields (with the values its
notes use) and folders, a gating field or the folder filter set by name and checked against the
vault (an unknown one is a 400 that names the known ones, and nothing changes), per-entry analytics,
the lore each reply was written with, a replay of the chat, and a request to show the app's window."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.errors import NotFound
from dle_desktop.server.chat_routing import ChatRoute
from dle_desktop.server.routes_chat import read_json
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_chat import checked_chat_id
from dle_desktop.server.schemas_steer import (
    AnalyticsQuery,
    ContextFieldRequest,
    FolderSelection,
    ShowRequest,
    SimulateRequest,
    SourceLink,
    SourceQuery,
)
from dle_desktop.server.services import engine

API = "/api/dle/v1"
CHATS = f"{API}/chats"


def _chat_id(request: Request) -> str:
    return checked_chat_id(request.path_params["chat_id"])


async def fields(request: Request) -> JSONResponse:
    return JSONResponse(await engine(request).steering.fields())


async def folders(request: Request) -> JSONResponse:
    return JSONResponse(engine(request).steering.folders())


async def set_context_field(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(ContextFieldRequest, await read_json(request))
    return JSONResponse(await engine(request).steering.set_field(chat_id, body.field, body.value))


async def set_folders(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(FolderSelection, await read_json(request))
    saved = await engine(request).steering.set_folders(chat_id, body.folders)
    return JSONResponse({"folder_filter": list(saved) if saved is not None else None})


async def analytics(request: Request) -> JSONResponse:
    query = parse_query(AnalyticsQuery, request.query_params)
    return JSONResponse(await engine(request).steering.analytics(query.chat_id))


async def link_source(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(SourceLink, await read_json(request))
    return JSONResponse(await engine(request).steering.link_source(chat_id, body.message, body.swipe, body.record))


async def get_source(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    query = parse_query(SourceQuery, request.query_params)
    return JSONResponse(await engine(request).steering.source(chat_id, query.message, query.swipe))


async def simulate(request: Request) -> JSONResponse:
    doc = parse_body(SimulateRequest, await read_json(request)).document
    return JSONResponse(await engine(request).steering.simulate(doc))


async def show(request: Request) -> JSONResponse:
    body = parse_body(ShowRequest, await read_json(request))
    lore = engine(request)
    if body.view == "librarian" and body.mode == "optimize-keys":
        # A schema-valid body without an entry names none: nothing to find (404, as a wrong title).
        title = (body.entry or "").strip()
        if not title:
            raise NotFound("optimize-keys needs the entry's title in `entry`; /dle-browse lists them")
        snapshot = lore.snapshot
        if snapshot is not None and not snapshot.by_title.get(title.lower()):
            raise NotFound(f"no entry is titled {title[:200]!r}; /dle-browse lists them")
    lore.window.show(
        body.view,
        entry=body.entry,
        gap=body.gap,
        mode=body.mode,
        suggestion=body.suggestion,
        vault=body.vault,
        path=body.path,
    )
    return JSONResponse({"view": body.view, "shown": True})


routes = [
    Route(f"{API}/fields", fields, methods=["GET"]),
    Route(f"{API}/folders", folders, methods=["GET"]),
    Route(f"{API}/analytics", analytics, methods=["GET"]),
    Route(f"{API}/simulate", simulate, methods=["POST"]),
    Route(f"{API}/app/show", show, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/context-field", set_context_field, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/folders", set_folders, methods=["PUT"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/sources", link_source, methods=["PUT"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/sources", get_source, methods=["GET"]),
]
