"""What the SillyTavern bridge extension (resources/st_extension/dle-desktop-bridge) calls besides
the retrieval and chat routes: its hello, the monitor's view of it, and the list of chats with
stored state. `BridgeObserver` records the bridge's generations in the monitor.

The monitor (`st_bridge.monitor.BridgeMonitor`) is the app's `services(request).bridge`, handed in by
the Runtime, so it outlives engine replacements and server restarts."""

from __future__ import annotations

import json
import logging
import time

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop import __version__
from dle_desktop.engine.retrieval import observe_generations
from dle_desktop.server.routes_chat import read_json
from dle_desktop.server.schemas import parse_body, parse_query
from dle_desktop.server.schemas_chat import ChatsQuery
from dle_desktop.server.schemas_lore import BridgeHello, PrefetchRequest
from dle_desktop.server.services import LoreEngine, engine, services, services_of
from dle_desktop.state.paths import resources_dir

log = logging.getLogger(__name__)

API = "/api/dle/v1"
#: Requests carrying this header come from the bridge extension (`X-DLE-Client: st-bridge`).
CLIENT_HEADER = b"x-dle-client"
CLIENT_NAME = "st-bridge"


def bundled_extension_version() -> str | None:
    """The version in the bundled extension's manifest.json, or None without one."""
    path = resources_dir() / "st_extension" / "dle-desktop-bridge" / "manifest.json"
    try:
        version = json.loads(path.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def bridge_info(engine: LoreEngine) -> dict:
    """What the extension needs to know about us (the hello's answer)."""
    settings = engine.settings
    snap = engine.snapshot
    return {
        "server_version": __version__,
        "bundled_extension_version": bundled_extension_version(),
        "entries": len(snap) if snap is not None else 0,
        "index_ready": snap is not None,
        "index_version": snap.version if snap is not None else None,
        "vector_routing": settings.st_vector_routing,
        "forget_deleted_chats": settings.st_forget_deleted_chats,
        "ai_search": {
            "enabled": settings.ai_search_enabled,
            "mode": settings.ai_search_mode,
            "timeout_ms": settings.ai_search_timeout,
        },
        "semantic_enabled": bool(engine.semantic_enabled),
        "budget_tokens": None if settings.unlimited_budget else settings.max_tokens_budget,
    }


async def hello(request: Request) -> JSONResponse:
    fields = parse_body(BridgeHello, await read_json(request)).model_dump()
    served = services(request)
    served.bridge.hello(origin=request.headers.get("origin"), **fields)
    return JSONResponse(bridge_info(served.engine))


async def bridge_state(request: Request) -> JSONResponse:
    return JSONResponse(services(request).bridge.snapshot())


async def list_chats(request: Request) -> JSONResponse:
    limit = parse_query(ChatsQuery, request.query_params).limit
    return JSONResponse({"chats": await engine(request).retrieval.list_chats(limit)})


async def semantic_prefetch(request: Request) -> JSONResponse:
    """Embed chat messages for the semantic query before the generation that needs them: the
    bridge sends the character's reply when it arrives and the user's message while it is typed,
    so on a CPU the query embedding is done by the time the user presses Enter."""
    messages = parse_body(PrefetchRequest, await read_json(request)).messages
    lore = engine(request)
    if not lore.semantic_enabled:
        return JSONResponse({"queued": 0, "reason": "semantic search is off"})
    task = lore.semantic.prefetch(messages)
    if task is None:
        return JSONResponse({"queued": 0, "reason": "nothing to embed, or no embedding model is available"})
    return JSONResponse({"queued": len(messages)})


def _client(scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == CLIENT_HEADER:
            return value.decode("latin-1").strip().lower()
    return None


class BridgeObserver:
    """For requests with `X-DLE-Client: st-bridge`: a retrieve that produced a generation (not a
    dry run) is recorded as one (`BridgeMonitor.generation`: chat, character, injected titles,
    tokens, the request's wall time); any other answered request is a sign of life (`touch`).
    The generation comes from `retrieval.observe_generations`, so neither the request nor the
    answer is read twice, and the retrieve route stays routes_chat's own. Failed requests
    (4xx/5xx) count for nothing: the extension reports its errors in its hello."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or _client(scope) != CLIENT_NAME:
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        seen: list = []
        status: int | None = None

        async def watch(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        with observe_generations(lambda doc, result: seen.append((doc, result))):
            await self.app(scope, receive, watch)
        if status is None or status >= 400:
            return
        origin = next((v.decode("latin-1") for n, v in scope.get("headers", ()) if n == b"origin"), None)
        try:
            monitor = services_of(scope["app"]).bridge
            real = [(doc, result) for doc, result in seen if not doc.dry_run]
            if real:
                doc, result = real[-1]
                monitor.generation(
                    origin=origin,
                    chat_id=doc.chat_id,
                    character=doc.character_name,
                    injected=[i.entry.title for i in result.injected],
                    total_tokens=result.total_tokens,
                    ms=(time.perf_counter() - started) * 1000,
                )
            else:
                monitor.touch(origin=origin)
        except Exception:
            log.exception("could not record the SillyTavern bridge's request")


routes = [
    Route(f"{API}/bridge/hello", hello, methods=["POST"]),
    Route(f"{API}/bridge", bridge_state, methods=["GET"]),
    Route(f"{API}/chats", list_chats, methods=["GET"]),
    Route(f"{API}/semantic/prefetch", semantic_prefetch, methods=["POST"]),
]
