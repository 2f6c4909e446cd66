"""The AI side of our API under /api/dle/v1/ai: channels with their breaker state and usage,
resetting the breaker, clearing the AI-search cache, and a connection test per channel."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.server.schemas import parse_query
from dle_desktop.server.schemas_chat import CacheClearQuery
from dle_desktop.server.services import AiControls, engine
from dle_desktop.state.settings import CHANNELS


def _ai(request: Request) -> AiControls:
    return engine(request).ai


async def ai_state(request: Request) -> JSONResponse:
    return JSONResponse(_ai(request).snapshot())


async def reset_breaker(request: Request) -> JSONResponse:
    ai = _ai(request)
    ai.reset_breaker()
    return JSONResponse({"breaker": ai.breaker.snapshot()})


async def clear_cache(request: Request) -> JSONResponse:
    chat_id = parse_query(CacheClearQuery, request.query_params).chat_id
    _ai(request).clear_cache(chat_id)
    return JSONResponse({"cleared": chat_id or "all"})


async def test_channel(request: Request) -> JSONResponse:
    channel = request.path_params["channel"]
    if channel not in CHANNELS:
        return JSONResponse({"error": f"unknown channel '{channel}'; channels: {', '.join(CHANNELS)}"}, status_code=404)
    ok, message, ms = await _ai(request).test_channel(channel)
    return JSONResponse({"ok": ok, "message": message, "latency_ms": ms})


routes = [
    Route("/api/dle/v1/ai", ai_state, methods=["GET"]),
    Route("/api/dle/v1/ai/breaker/reset", reset_breaker, methods=["POST"]),
    Route("/api/dle/v1/ai/cache/clear", clear_cache, methods=["POST"]),
    Route("/api/dle/v1/ai/channels/{channel}/test", test_channel, methods=["POST"]),
]
