"""The Starlette application and its lifecycle on the engine's loop."""

from __future__ import annotations

import asyncio
import logging
import socket

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Match

from dle_desktop.errors import ConfigError, DleError
from dle_desktop.server import openapi, routes_ai, routes_chat, routes_embeddings, routes_lore, routes_vector
from dle_desktop.server.security import LOOPBACK_NAMES, BodyLimitMiddleware, HostCheckMiddleware

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024


async def _dle_error(request: Request, exc: DleError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=exc.http_status)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal error; details are in the DLE Desktop log"}, status_code=500)


async def _not_found(request: Request, exc) -> JSONResponse:
    return JSONResponse({"error": f"no route {request.method} {request.url.path}"}, status_code=404)


async def _method_not_allowed(request: Request, exc) -> JSONResponse:
    # Starlette's Allow lists only the first route on the path; name every method it has.
    methods: set[str] = set()
    for route in request.app.router.routes:
        if route.matches(request.scope)[0] is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    allow = ", ".join(sorted(methods)) or (getattr(exc, "headers", None) or {}).get("Allow", "")
    message = f"{request.method} is not allowed on {request.url.path}" + (f"; use {allow}" if allow else "")
    return JSONResponse({"error": message}, status_code=405, headers={"Allow": allow} if allow else None)


def build_app(engine) -> Starlette:
    # routes_vector: SillyTavern's /api/vector/*; routes_embeddings: the embedding-backend endpoints
    # (llama.cpp, Ollama, KoboldCpp, Extras formats) a stock ST can point its sources at.
    app = Starlette(routes=[*routes_lore.routes, *routes_chat.routes, *routes_ai.routes, *openapi.routes,
                            *routes_vector.routes, *routes_embeddings.routes],
                    exception_handlers={DleError: _dle_error, 404: _not_found, 405: _method_not_allowed,
                                        Exception: _unexpected})
    app.state.engine = engine
    return app


def wrap_security(app, bound_host: str) -> object:
    allowed = set(LOOPBACK_NAMES)
    if bound_host not in ("0.0.0.0", "::", ""):
        allowed.add(bound_host.lower())
    return HostCheckMiddleware(BodyLimitMiddleware(app, MAX_BODY_BYTES), frozenset(allowed))


class ServerRunner:
    """Binds the socket ourselves (so a busy port is a clear error, not uvicorn's sys.exit),
    then serves with uvicorn on the current loop."""

    def __init__(self, engine, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.engine = engine
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None
        self._sock: socket.socket | None = None
        self._app: Starlette | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto says
        # TCP, and without it every keep-alive answer (headers and body are two writes) waits ~40 ms
        # for the client's delayed ACK (Nagle).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ConfigError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}; "
                              "choose another port in Settings or with --port") from exc
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        return sock

    async def start(self) -> None:
        self._sock = self._bind()
        self._tell_port(self.engine)
        self._app = build_app(self.engine)
        app = wrap_security(self._app, self.host)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=30, server_header=False)
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[self._sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise DleError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        log.info("listening on %s", self.url)

    def set_engine(self, engine) -> None:
        """Serve another engine from now on (after the vault configuration changed)."""
        self.engine = engine
        self._tell_port(engine)
        if self._app is not None:
            self._app.state.engine = engine

    def _tell_port(self, engine) -> None:
        """The engine names a vector source pointed at this port as our own server."""
        if self._sock is not None and hasattr(engine, "server_port"):
            engine.server_port = self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 10)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        if self._sock is not None:
            self._sock.close()
