"""Retrieval and per-chat state under /api/dle/v1: what SillyTavern (or a script) calls each
generation, and the endpoints to read and set pins, blocks, gating context, folder filter and
the Author's Notebook."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.errors import InputError
from dle_desktop.fileio import parse_json_bytes_async
from dle_desktop.server.chat_routing import ChatRoute
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_chat import FIELD_UPDATES, ForkRequest, RecordsQuery, RetrieveRequest, checked_chat_id
from dle_desktop.server.schemas_steer import STEER_SUB_RESOURCES
from dle_desktop.server.schemas_writers import WRITER_SUB_RESOURCES
from dle_desktop.server.services import ChatRetrieval, engine


async def read_json(request: Request) -> Any:
    body = await request.body()
    if not body:
        raise InputError("the request body is empty; send JSON")
    return await parse_json_bytes_async(body, "the request body")


def _service(request: Request) -> ChatRetrieval:
    return engine(request).retrieval


def _chat_id(request: Request) -> str:
    return checked_chat_id(request.path_params["chat_id"])


def state_json(chat_id: str, state: Any) -> dict:
    return {
        "chat_id": chat_id,
        "generation_count": state.generation_count,
        "pins": [p.to_json() for p in state.pins],
        "blocks": [b.to_json() for b in state.blocks],
        "context": dict(state.context),
        "folder_filter": list(state.folder_filter) if state.folder_filter is not None else None,
        "notebook": state.notebook,
        "cooldowns": dict(state.cooldowns),
        "counts": dict(state.counts),
        "analytics": dict(state.analytics),
    }


async def retrieve(request: Request) -> JSONResponse:
    doc = parse_body(RetrieveRequest, await read_json(request)).document
    result = await _service(request).retrieve(doc)
    return JSONResponse(result.to_json())


async def get_chat(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    return JSONResponse(state_json(chat_id, await _service(request).state(chat_id)))


async def delete_chat(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    existed = await _service(request).reset(chat_id)
    return JSONResponse({"chat_id": chat_id, "deleted": existed})


async def fork_chat(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    source = parse_body(ForkRequest, await read_json(request)).source
    reason = await _service(request).fork(source, chat_id)
    return JSONResponse({"chat_id": chat_id, "from": source, "copied": reason is None, "reason": reason})


async def chat_records(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    limit = parse_query(RecordsQuery, request.query_params).limit
    return JSONResponse({"chat_id": chat_id, "records": await _service(request).records(chat_id, limit)})


CHATS = "/api/dle/v1/chats"
#: Path segments after a chat id that name a part of the chat, not more of its id.
SUB_RESOURCES = ("records", "fork", *FIELD_UPDATES, *STEER_SUB_RESOURCES, *WRITER_SUB_RESOURCES)


def _make_field_routes(name: str) -> list[ChatRoute]:
    model, attr = FIELD_UPDATES[name]

    async def get(request: Request) -> JSONResponse:
        chat_id = _chat_id(request)
        return JSONResponse({attr: state_json(chat_id, await _service(request).state(chat_id))[attr]})

    async def put(request: Request) -> JSONResponse:
        chat_id = _chat_id(request)
        parsed = getattr(parse_body(model, await read_json(request)), attr)
        state = await _service(request).update(chat_id, **{attr: parsed})
        return JSONResponse({attr: state_json(chat_id, state)[attr]})

    return [
        ChatRoute(f"{CHATS}/{{chat_id:path}}/{name}", get, methods=["GET"]),
        ChatRoute(f"{CHATS}/{{chat_id:path}}/{name}", put, methods=["PUT"]),
    ]


routes = [
    Route("/api/dle/v1/retrieve", retrieve, methods=["POST"]),
    # The sub-resource routes first: `/chats/a/b/records` is chat "a/b"'s records.
    ChatRoute(f"{CHATS}/{{chat_id:path}}/records", chat_records, methods=["GET"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/fork", fork_chat, methods=["POST"]),
    *[r for name in FIELD_UPDATES for r in _make_field_routes(name)],
    ChatRoute(f"{CHATS}/{{chat_id:path}}", get_chat, methods=["GET"], sub_resources=SUB_RESOURCES),
    ChatRoute(f"{CHATS}/{{chat_id:path}}", delete_chat, methods=["DELETE"], sub_resources=SUB_RESOURCES),
]
