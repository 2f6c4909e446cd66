"""Session Scribe, Auto Lorebook and AI Notepad under /api/dle/v1, shaped for the SillyTavern
bridge's events: after each character message it asks for an automatic Scribe and Auto Lorebook
run (`auto`: the server keeps the intervals, so two tabs on one chat write one note), hands each
finished reply to the AI Notepad and shows the text it answers, rolls a reply's notes back on a
swipe, delete or edit, and cancels the Scribe on a chat switch. The slash commands call the same
routes without `auto`."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.core.writers.review import review_prompt
from dle_desktop.engine.retrieval import NotReady
from dle_desktop.errors import NotAvailableHere, NotFound
from dle_desktop.server.chat_routing import ChatRoute
from dle_desktop.server.routes_chat import read_json
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_chat import checked_chat_id
from dle_desktop.server.schemas_writers import (
    SUGGESTION_ID,
    NotesQuery,
    ReplyRequest,
    ReviewRequest,
    ScribeRequest,
    SuggestionEdits,
    SuggestionsQuery,
    SuggestRequest,
    WriterSwitches,
)
from dle_desktop.server.services import WritersPort, engine, services

API = "/api/dle/v1"
CHATS = f"{API}/chats"


def _chat_id(request: Request) -> str:
    return checked_chat_id(request.path_params["chat_id"])


def _writers(request: Request) -> WritersPort:
    return engine(request).writers


def _suggestion_id(request: Request) -> str:
    raw = request.path_params["suggestion_id"]
    if not SUGGESTION_ID.match(raw):
        raise NotFound(f"no suggestion {raw[:80]!r} is waiting (an id is up to 64 hexadecimal digits)")
    return str(raw)


async def _optional_json(request: Request) -> Any:
    return await read_json(request) if await request.body() else {}


async def switch_writers(request: Request) -> JSONResponse:
    changes = parse_body(WriterSwitches, await read_json(request)).changes()
    switch = services(request).switch_writers
    if switch is None:
        raise NotAvailableHere("this server cannot change its settings; turn the writers on in DLE Desktop's Settings")
    if changes:
        await switch(changes)
    return await writer_settings(request)


async def writer_settings(request: Request) -> JSONResponse:
    s = engine(request).settings
    return JSONResponse(
        {
            "scribe": {
                "enabled": s.scribe_enabled,
                "interval": s.scribe_interval,
                "folder": s.scribe_folder,
                "scan_depth": s.scribe_scan_depth,
                "informed_retrieval": s.scribe_informed_retrieval,
            },
            "auto_suggest": {
                "enabled": s.auto_suggest_enabled,
                "interval": s.auto_suggest_interval,
                "folder": s.auto_suggest_folder,
                "skip_review": s.auto_suggest_skip_review,
            },
            "ai_notepad": {
                "enabled": s.ai_notepad_enabled,
                "mode": s.ai_notepad_mode,
                "position": s.ai_notepad_position,
                "depth": s.ai_notepad_depth,
                "role": s.ai_notepad_role,
            },
        }
    )


async def run_scribe(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(ScribeRequest, await read_json(request))
    return JSONResponse(
        await _writers(request).scribe.run(
            chat_id,
            body.messages,
            character=body.character,
            focus=body.focus,
            chat_length=body.chat_length,
            auto=body.auto,
        )
    )


async def scribe_history(request: Request) -> JSONResponse:
    return JSONResponse(await _writers(request).scribe.history(_chat_id(request)))


async def cancel_scribe(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    return JSONResponse({"chat_id": chat_id, "cancelled": _writers(request).scribe.cancel(chat_id)})


async def run_suggest(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(SuggestRequest, await read_json(request))
    return JSONResponse(
        await _writers(request).suggest.run(chat_id, body.messages, ai_messages=body.ai_messages, auto=body.auto)
    )


async def chat_suggestions(request: Request) -> JSONResponse:
    return JSONResponse(await _writers(request).suggest.pending(_chat_id(request)))


async def suggestions(request: Request) -> JSONResponse:
    query = parse_query(SuggestionsQuery, request.query_params)
    return JSONResponse(await _writers(request).suggest.pending(query.chat_id))


async def accept(request: Request) -> JSONResponse:
    suggestion_id = _suggestion_id(request)
    edits = parse_body(SuggestionEdits, await _optional_json(request)).edits()
    return JSONResponse(await _writers(request).suggest.accept(suggestion_id, edits))


async def reject(request: Request) -> JSONResponse:
    return JSONResponse(await _writers(request).suggest.reject(_suggestion_id(request)))


async def process_reply(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    body = parse_body(ReplyRequest, await read_json(request))
    return JSONResponse(
        await _writers(request).notepad.process(chat_id, body.message, body.swipe, body.text, wait=body.wait)
    )


async def rollback(request: Request) -> JSONResponse:
    chat_id = _chat_id(request)
    query = parse_query(NotesQuery, request.query_params)
    return JSONResponse(
        await _writers(request).notepad.rollback(chat_id, query.message, query.swipe, later=query.later)
    )


async def read_notepad(request: Request) -> JSONResponse:
    return JSONResponse(await _writers(request).notepad.read(_chat_id(request)))


async def clear_notepad(request: Request) -> JSONResponse:
    return JSONResponse(await _writers(request).notepad.clear(_chat_id(request)))


async def review(request: Request) -> JSONResponse:
    body = parse_body(ReviewRequest, await read_json(request))
    lore = engine(request)
    snapshot = lore.snapshot
    if snapshot is None:
        raise NotReady("the vault index is not ready yet; try again in a moment")
    response_tokens = lore.settings.review_response_tokens
    built = await asyncio.to_thread(review_prompt, snapshot.entries, body.question, response_tokens)
    fits = body.context_tokens is None or built.tokens + response_tokens <= body.context_tokens
    return JSONResponse(
        {
            "prompt": built.text if fits else "",
            "entries": built.entries,
            "tokens": built.tokens,
            "question": built.question,
            "response_tokens": response_tokens,
            "fits": fits,
        }
    )


routes = [
    Route(f"{API}/review", review, methods=["POST"]),
    Route(f"{API}/writers", writer_settings, methods=["GET"]),
    Route(f"{API}/writers", switch_writers, methods=["PUT"]),
    Route(f"{API}/suggestions", suggestions, methods=["GET"]),
    Route(f"{API}/suggestions/{{suggestion_id}}/accept", accept, methods=["POST"]),
    Route(f"{API}/suggestions/{{suggestion_id}}/reject", reject, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/scribe", run_scribe, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/scribe", scribe_history, methods=["GET"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/scribe", cancel_scribe, methods=["DELETE"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/suggestions", run_suggest, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/suggestions", chat_suggestions, methods=["GET"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/notes", process_reply, methods=["POST"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/notes", rollback, methods=["DELETE"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/notepad", read_notepad, methods=["GET"]),
    ChatRoute(f"{CHATS}/{{chat_id:path}}/notepad", clear_notepad, methods=["DELETE"]),
]
