"""Retrieval and per-chat state under /api/dle/v1: what SillyTavern (or a script) calls each
generation, and the endpoints to read and set pins, blocks, gating context, folder filter and
the Author's Notebook."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.core.chat_id import ChatIdError, check_chat_id
from dle_desktop.core.pipeline.chat_input import (
    ChatInputError,
    parse_chat_document,
    parse_context,
    parse_folder_filter,
    parse_refs,
)
from dle_desktop.errors import InputError
from dle_desktop.fileio import parse_json_bytes_async
from dle_desktop.server.chat_routing import ChatRoute
from dle_desktop.state.chat_store import KEEP_RECORDS

RETRIEVE_FIELDS = {"chat_id", "messages", "character_name", "context", "swipe", "dry_run", "seed", "pins", "blocks",
                   "folder_filter", "notebook"}


async def read_json(request: Request):
    body = await request.body()
    if not body:
        raise InputError("the request body is empty; send JSON")
    return await parse_json_bytes_async(body, "the request body")


MAX_NOTEBOOK_BYTES = 64 * 1024


def check_notebook(value) -> str:
    if not isinstance(value, str):
        raise ChatInputError("notebook must be text")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_NOTEBOOK_BYTES:
        raise ChatInputError(f"notebook is {size} bytes; the limit is 64 KiB ({MAX_NOTEBOOK_BYTES} bytes)")
    return value


def _service(request: Request):
    return request.app.state.engine.retrieval


def _chat_id(request: Request) -> str:
    return checked_chat_id(request.path_params["chat_id"])


def checked_chat_id(value) -> str:
    try:
        return check_chat_id(value)
    except ChatIdError as exc:
        raise InputError(str(exc)) from None


def state_json(chat_id: str, state) -> dict:
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
    raw = await read_json(request)
    try:
        doc = parse_chat_document(raw, allowed=RETRIEVE_FIELDS) if isinstance(raw, dict) else None
        if doc is not None and doc.notebook is not None:
            check_notebook(doc.notebook)  # the same limit as PUT .../notebook
    except ChatInputError as exc:
        raise InputError(str(exc)) from None
    if doc is None:
        raise InputError("send an object: {chat_id, messages, ...}")
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
    raw = await read_json(request)
    if not isinstance(raw, dict) or set(raw) != {"from"}:
        raise InputError('send {"from": "<the chat id it was branched from>"}')
    source = checked_chat_id(raw["from"])
    reason = await _service(request).fork(source, chat_id)
    return JSONResponse({"chat_id": chat_id, "from": source, "copied": reason is None, "reason": reason})


async def chat_records(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    raw = request.query_params.get("limit", "10")
    limit = int(raw) if raw.isascii() and raw.isdigit() else 0
    if not 1 <= limit <= KEEP_RECORDS:
        raise InputError(f"limit must be a whole number from 1 to {KEEP_RECORDS}, not {raw[:40]!r}")
    return JSONResponse({"chat_id": chat_id, "records": await _service(request).records(chat_id, limit)})


_PARSERS = {
    "pins": lambda v: parse_refs(v, "pins"),
    "blocks": lambda v: parse_refs(v, "blocks"),
    "context": parse_context,
    "folder-filter": parse_folder_filter,
    "notebook": None,
}
_FIELD = {"pins": "pins", "blocks": "blocks", "context": "context", "folder-filter": "folder_filter", "notebook": "notebook"}

CHATS = "/api/dle/v1/chats"
#: Path segments after a chat id that name a part of the chat, not more of its id.
SUB_RESOURCES = ("records", "fork", *_FIELD)


def _make_field_routes(name: str):
    attr = _FIELD[name]

    async def get(request: Request) -> JSONResponse:
        chat_id = _chat_id(request)
        return JSONResponse({attr: state_json(chat_id, await _service(request).state(chat_id))[attr]})

    async def put(request: Request) -> JSONResponse:
        chat_id = _chat_id(request)
        raw = await read_json(request)
        if not isinstance(raw, dict) or attr not in raw:
            raise InputError(f'send {{"{attr}": ...}}')
        value = raw[attr]
        try:
            if name == "notebook":
                parsed = check_notebook(value)
            else:
                parsed = _PARSERS[name](value)
        except ChatInputError as exc:
            raise InputError(str(exc)) from None
        state = await _service(request).update(chat_id, **{attr: parsed})
        return JSONResponse({attr: state_json(chat_id, state)[attr]})

    return [ChatRoute(f"{CHATS}/{{chat_id:path}}/{name}", get, methods=["GET"]),
            ChatRoute(f"{CHATS}/{{chat_id:path}}/{name}", put, methods=["PUT"])]


routes = [
    Route("/api/dle/v1/retrieve", retrieve, methods=["POST"]),
    # The sub-resource routes first: `/chats/a/b/records` is chat "a/b"'s records.
    ChatRoute(f"{CHATS}/{{chat_id:path}}/records", chat_records, methods=["GET"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/fork", fork_chat, methods=["POST"]),
    *[r for name in _FIELD for r in _make_field_routes(name)],
    ChatRoute(f"{CHATS}/{{chat_id:path}}", get_chat, methods=["GET"], sub_resources=SUB_RESOURCES),
    ChatRoute(f"{CHATS}/{{chat_id:path}}", delete_chat, methods=["DELETE"], sub_resources=SUB_RESOURCES),
]
