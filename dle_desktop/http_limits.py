"""Connection limits for our HTTP servers (the lore server and the Obsidian REST emulation): how
many sockets each holds and how long a client may take to send its headers.

uvicorn has `limit_concurrency` (a 503 once a request is read) and an idle keep-alive timeout
that starts only after a first response; neither stops a client from opening thousands of sockets
that never send a byte, which runs the process out of file descriptors. So the h11 protocol is
extended here: at most `max_connections` sockets; when full, the connection that has been idle
longest (no request in progress: nothing sent yet, headers still arriving, or keep-alive) makes
room, and if every connection is busy the newcomer gets a 503. Headers must arrive complete
within `header_timeout` of the connection opening (or of the first byte of a keep-alive
request): a client trickling them a byte at a time is cut off."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int = 100
    header_timeout: float = 15.0
    keep_alive_timeout: int = 30
    body_stall_timeout: float = 30.0
    max_body_bytes: int = 64 * 1024 * 1024
    #: h11's own default; larger headers get a 400 before any of our code runs.
    max_header_bytes: int = 16 * 1024


class ConnectionGuard:
    """The live connections of one server, oldest first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._live: dict[GuardedH11Protocol, None] = {}

    def __len__(self) -> int:
        return len(self._live)

    def admit(self, protocol: GuardedH11Protocol) -> bool:
        if len(self._live) >= self.limit:
            idle = next((p for p in self._live if p.idle), None)
            if idle is None:
                return False
            self.forget(idle)
            idle.close_idle()
        self._live[protocol] = None
        return True

    def forget(self, protocol: GuardedH11Protocol) -> None:
        self._live.pop(protocol, None)


_BUSY_BODY = json.dumps({"error": "the server is busy: too many open connections; try again shortly"}).encode()
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the guard and the header deadline; `protocol_class` binds
    both to one server."""

    guard: ConnectionGuard
    header_timeout: float

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # a stream server hands a Transport, not any BaseTransport
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        if not self.guard.admit(self):
            log.warning("refused a connection: all %d connections are busy", self.guard.limit)
            transport.write(_BUSY)
            transport.close()
            return
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        self._disarm_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.idle and self._header_timer is None:
            self._arm_header_timer()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if not self.idle:
            self._disarm_header_timer()

    @property
    def idle(self) -> bool:
        """No request in progress: nothing parsed yet, or the last response is complete."""
        return self.cycle is None or self.cycle.response_complete

    def close_idle(self) -> None:
        self._disarm_header_timer()
        if not self.transport.is_closing():
            try:
                self.conn.send(h11.ConnectionClosed())
            except h11.LocalProtocolError:
                pass  # headers were half received; there is nothing to answer
            self.transport.close()

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.idle:
            self.close_idle()


def server_config(
    app: Any, limits: ServerLimits, protocol: type[GuardedH11Protocol] | None = None, **extra: Any
) -> uvicorn.Config:
    """The one connection policy of both servers, as uvicorn's configuration. The socket cap is
    the protocol's (idle sockets make room); uvicorn's own `limit_concurrency`, which counts idle
    sockets too and answers 503 to everyone past it, sits one above that cap so it never decides.
    log_config=None: uvicorn logs through our (scrubbed, rate-limited) handlers. proxy_headers
    off: the peer address that decides whether a token is needed is the socket's, never a
    header. ws="none": no WebSocket routes, so no upgrade slips past the socket cap."""
    return uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        ws="none",
        http=protocol or protocol_class(limits),
        timeout_keep_alive=limits.keep_alive_timeout,
        limit_concurrency=limits.max_connections + 1,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        **extra,
    )


def protocol_class(limits: ServerLimits) -> type[GuardedH11Protocol]:
    """A protocol class for one server: its own guard, the limits' header timeout."""
    return type(
        "ServerH11Protocol",
        (GuardedH11Protocol,),
        {"guard": ConnectionGuard(limits.max_connections), "header_timeout": limits.header_timeout},
    )
