"""The Starlette application and its lifecycle on the engine's loop."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from dle_desktop.core.hosts import is_loopback_bind
from dle_desktop.errors import ConfigError, DleError
from dle_desktop.http_limits import ServerLimits, server_config
from dle_desktop.server import (
    routes_ai,
    routes_bridge,
    routes_chat,
    routes_embeddings,
    routes_gaps,
    routes_lore,
    routes_meta,
    routes_steer,
    routes_vector,
    routes_worldinfo,
    routes_writers,
)
from dle_desktop.server.security import AccessMiddleware, AccessPolicy, BodyLimitMiddleware, TokenHolder
from dle_desktop.server.services import BridgeEvents, LoreEngine, ServerServices, WriterSwitch, services_of
from dle_desktop.st_bridge.monitor import BridgeMonitor

log = logging.getLogger(__name__)

MAX_BODY_BYTES = ServerLimits.max_body_bytes


async def _dle_error(request: Request, exc: DleError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=exc.http_status)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal error; details are in the DLE Desktop log"}, status_code=500)


async def _client_gone(request: Request, exc: ClientDisconnect) -> Response:
    # Nobody is left to answer, and a client hanging up mid-body is not a fault of ours.
    log.info("%s %s: the client disconnected before its request body arrived", request.method, request.url.path)
    return Response(status_code=400)


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


def build_app(
    engine: LoreEngine, bridge_monitor: BridgeEvents | None = None, switch_writers: WriterSwitch | None = None
) -> Starlette:
    """`bridge_monitor`: what the SillyTavern bridge's calls are recorded in (the Runtime's, so
    that it outlives this app and its engine); a fresh one when not given. `switch_writers`: how
    PUT /writers saves the writers' switches (the Runtime's; without one that route is a 409)."""
    # routes_vector: SillyTavern's /api/vector/*; routes_embeddings: the embedding-backend endpoints
    # (llama.cpp, Ollama, KoboldCpp, Extras formats) a stock ST can point its sources at.
    # routes_bridge's middleware sees the bridge's generations (requests with X-DLE-Client: st-bridge).
    handlers: dict[Any, Any] = {
        DleError: _dle_error,
        ClientDisconnect: _client_gone,
        404: _not_found,
        405: _method_not_allowed,
        Exception: _unexpected,
    }
    app = Starlette(
        routes=[
            *routes_lore.routes,
            *routes_gaps.routes,
            *routes_bridge.routes,
            *routes_chat.routes,
            *routes_steer.routes,
            *routes_writers.routes,
            *routes_worldinfo.routes,
            *routes_ai.routes,
            *routes_meta.routes,
            *routes_vector.routes,
            *routes_embeddings.routes,
        ],
        middleware=[Middleware(routes_bridge.BridgeObserver)],
        exception_handlers=handlers,
    )
    app.state.services = ServerServices(
        engine, bridge_monitor if bridge_monitor is not None else BridgeMonitor(), switch_writers
    )
    return app


def wrap_security(
    app,
    policy: AccessPolicy,
    limits: ServerLimits = ServerLimits(),
    recheck: Callable[[], Awaitable[bool]] | None = None,
) -> AccessMiddleware:
    """Every request passes the access checks (Host, Origin, token) before the body limits, and
    both before any route. `recheck`: see `AccessMiddleware`."""
    body_limits = BodyLimitMiddleware(app, limits.max_body_bytes, limits.body_stall_timeout)
    return AccessMiddleware(body_limits, policy, recheck)


def access_policy(engine: LoreEngine, bound_host: str, token: TokenHolder | None = None) -> AccessPolicy:
    """The access rules from the engine's settings; the token is created only when first needed,
    and read through `token`, which `security.rotate_server_token` updates in place."""
    settings = engine.settings
    token = token if token is not None else TokenHolder(engine.secrets)
    return AccessPolicy.build(bound_host, settings.server_allowed_hosts, settings.server_allowed_origins, token)


class ServerRunner:
    """Binds the socket ourselves (so a busy port is a clear error, not uvicorn's sys.exit),
    then serves with uvicorn on the current loop."""

    def __init__(
        self,
        engine: LoreEngine,
        host: str = "127.0.0.1",
        port: int = 8765,
        limits: ServerLimits = ServerLimits(),
        bridge_monitor: BridgeEvents | None = None,
        access_recheck: Callable[[], Awaitable[bool]] | None = None,
        switch_writers: WriterSwitch | None = None,
    ) -> None:
        """`access_recheck`: asked before a request is refused for its Host or Origin whether
        settings.json now lists it (the runtime's `SettingsFileFollower.check`)."""
        self.engine = engine
        self.host = host
        self.port = port
        self.limits = limits
        self.bridge_monitor: BridgeEvents = bridge_monitor if bridge_monitor is not None else BridgeMonitor()
        self.access_recheck = access_recheck
        self.switch_writers = switch_writers
        self._token: TokenHolder | None = None
        self._access: AccessMiddleware | None = None
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None
        self._sock: socket.socket | None = None
        self._app: Starlette | None = None
        #: Said once at start in LAN mode when a SillyTavern with the bridge would hand out the token.
        self.lan_warning: str | None = None

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
            raise ConfigError(
                f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}; "
                "choose another port in Settings or with --port"
            ) from exc
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        return sock

    async def start(self) -> None:
        self._sock = self._bind()
        self._tell_port(self.engine)
        self._app = build_app(self.engine, self.bridge_monitor, self.switch_writers)
        policy = access_policy(self.engine, self.host, self._token_holder(self.engine))
        self._access = wrap_security(self._app, policy, self.limits, self.access_recheck)
        limits = self.limits
        config = server_config(self._access, limits)
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[self._sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise DleError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        log.info("listening on %s", self.url)
        if not is_loopback_bind(self.host):
            self._warn_lan(policy)

    def _warn_lan(self, policy: AccessPolicy) -> None:
        policy.token()  # created now, so that it can be looked up before the first client comes
        names = ", ".join(sorted(policy.hosts))
        log.warning(
            "LAN mode: %s is reachable from other machines. Clients there must send the server token "
            "(Authorization: Bearer <token>; `dle-desktop server-token` prints it) and reach the server "
            "by one of these host names: %s%s",
            self.url,
            names,
            ""
            if self.engine.settings.server_allowed_hosts or self.host not in ("0.0.0.0", "::")
            else " (list the name or address LAN clients use in server_allowed_hosts)",
        )
        bridged = bridged_sillytaverns(self.engine.settings.st_folders)
        if bridged:
            self.lan_warning = (
                f"LAN mode and the SillyTavern bridge: the bridge installed in {', '.join(str(p) for p in bridged)} "
                "keeps this server's token in its dle-config.json, and SillyTavern hands that file to anyone who "
                "can open its page. Keep SillyTavern reachable only from this machine (its default: listen off, "
                "whitelist on), or behind its own login (basicAuthMode, user accounts); if it was reachable by "
                "others, rotate the token (the app's SillyTavern view → Access) and install the bridge again."
            )
            log.warning("%s", self.lan_warning)

    def set_engine(self, engine: LoreEngine) -> None:
        """Serve another engine from now on (after the vault configuration changed)."""
        self.engine = engine
        self._tell_port(engine)
        if self._app is not None:
            services_of(self._app).engine = engine
        if self._access is not None:
            self._access.policy = access_policy(engine, self.host, self._token_holder(engine))

    def refresh_access(self) -> None:
        """Take the engine's current access settings (allowed hosts and origins) from the next
        request on; the token and every open connection stay."""
        if self._access is not None:
            self._access.policy = access_policy(self.engine, self.host, self._token_holder(self.engine))

    def _token_holder(self, engine: LoreEngine) -> TokenHolder:
        """One holder while the secret store stays the same, so a looked-up token is kept."""
        if self._token is None or self._token.secrets is not engine.secrets:
            self._token = TokenHolder(engine.secrets)
        return self._token

    def _tell_port(self, engine: LoreEngine) -> None:
        """The engine names a vector source pointed at this port as our own server."""
        if self._sock is not None and hasattr(engine, "server_port"):
            engine.server_port = self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 10)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
        if self._sock is not None:
            self._sock.close()


def bridged_sillytaverns(st_folders: Iterable[str]) -> list[Path]:
    """The SillyTavern installs (the usual places and `st_folders`) that hold a copy of the bridge."""
    from dle_desktop.st_bridge.install import find_installs, installed

    try:
        return [st.root for st in find_installs(st_folders) if installed(st)]
    except OSError:  # an unreadable folder must not stop the server
        return []
