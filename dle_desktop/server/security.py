"""Who may call the embedded server, decided in one place before any route runs or any body is read.

1. `Host` must parse strictly and be a loopback name, the address the server is bound to, or one
   the user listed (`server_allowed_hosts`): a web page whose DNS name is re-pointed at us
   (DNS rebinding) is refused.
2. A browser `Origin` is accepted only from the pages the user listed (`server_allowed_origins`),
   and those must send the server token. Any other page, `null` included, is refused: a cross-site
   `text/plain` POST needs no preflight, so this applies to every method and every route.
3. A client on another machine (judged by the socket's peer address, never by a header) must send
   the server token. Loopback tools without an `Origin` (SillyTavern's Node server, curl, the
   GUI) need none.

Starlette's TrustedHostMiddleware splits Host at the first ':' (so `[::1]` and malformed ports
slip through it) and its CORSMiddleware only decorates answers (a simple POST still reaches the
route), so neither does this job."""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets as secrets_module
from dataclasses import dataclass
from typing import Callable

from dle_desktop.core.hosts import LOOPBACK_NAMES, is_loopback_address, parse_host, parse_origin
from dle_desktop.logging_setup import register_secret

TOKEN_SECRET_NAME = "server-token"
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def server_token(secrets) -> str:
    """The server's token, created (and kept in the secret store) the first time it is needed."""
    token = secrets.get(TOKEN_SECRET_NAME)
    if not token:
        token = secrets_module.token_urlsafe(32)
        secrets.set(TOKEN_SECRET_NAME, token)
    register_secret(token)
    return token


def is_loopback_bind(host: str) -> bool:
    return host.lower() in ("localhost", "127.0.0.1", "::1", "[::1]") or is_loopback_address(host)


@dataclass(frozen=True)
class Refusal:
    status: int
    cause: str
    message: str


@dataclass(frozen=True)
class AccessPolicy:
    """The rules, from settings and the bound address; `token` is asked for only when a request
    needs it (a LAN client or a listed origin), so a loopback-only setup never creates one."""

    hosts: frozenset[str] = LOOPBACK_NAMES
    origins: frozenset[str] = frozenset()
    token: Callable[[], str | None] = lambda: None

    @classmethod
    def build(cls, bound_host: str, allowed_hosts=(), allowed_origins=(), token=lambda: None) -> AccessPolicy:
        hosts = set(LOOPBACK_NAMES) | {parse_host(h)[0] for h in allowed_hosts}
        if bound_host.strip("[]").lower() not in _WILDCARD_BINDS:
            try:
                hosts.add(parse_host(f"[{bound_host.strip('[]')}]" if ":" in bound_host else bound_host)[0])
            except ValueError:
                pass  # e.g. a link-local address with a zone: no Host header can name it anyway
        return cls(frozenset(hosts), frozenset(parse_origin(o) for o in allowed_origins), token)

    def judge(self, scope) -> Refusal | None:
        headers = _headers(scope)
        host = headers.get(b"host")
        if host is None:
            return Refusal(403, "forbidden_host", "a Host header is required")
        try:
            name, _ = parse_host(host)
        except ValueError as exc:
            return Refusal(400, "bad_host", f"the Host header is not valid: {exc}")
        if name not in self.hosts:
            return Refusal(403, "forbidden_host", f"Host {name!r} is not allowed; connect through 127.0.0.1 or "
                                                  "localhost, or add it to server_allowed_hosts for LAN use")
        origin = headers.get(b"origin")
        needs_token = not is_loopback_address((scope.get("client") or (None,))[0])
        if origin is not None:
            try:
                canonical = parse_origin(origin)
            except ValueError:
                canonical = None
            if canonical is None or canonical not in self.origins:
                return Refusal(403, "forbidden_origin", f"requests from web pages of {origin[:100]!r} are not accepted; "
                                                        "a page must be listed in server_allowed_origins")
            if scope.get("method") == "OPTIONS" and b"access-control-request-method" in headers:
                return None  # a CORS preflight never carries credentials; the real request will
            needs_token = True
        if needs_token:
            return self._check_token(headers)
        return None

    def _check_token(self, headers: dict[bytes, str]) -> Refusal | None:
        given = headers.get(b"x-dle-token")
        auth = headers.get(b"authorization", "")
        if given is None and auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        if not given:
            return Refusal(401, "token_required", "this request needs the server token "
                                                  "(Authorization: Bearer <token> or X-DLE-Token)")
        expected = self.token()
        if not expected or not hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
            return Refusal(401, "bad_token", "the server token is wrong")
        return None


def _headers(scope) -> dict[bytes, str]:
    """The request's headers by name. A repeated Host or Origin could be read two ways, so it is
    replaced by a value that no parser accepts and the request is refused."""
    out: dict[bytes, str] = {}
    for name, value in scope.get("headers", ()):
        repeated = name in out and name in (b"host", b"origin")
        out[name] = "(sent twice)" if repeated else value.decode("latin-1")
    return out


async def send_json(send, status: int, payload: dict, extra_headers: list | None = None) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra_headers or [])]})
    await send({"type": "http.response.body", "body": body})


class AccessMiddleware:
    """Applies an AccessPolicy to every HTTP and WebSocket request. The answer to a refused request
    closes the connection: its body, if any, is never read."""

    def __init__(self, app, policy: AccessPolicy) -> None:
        self.app = app
        self.policy = policy  # replaced when the settings change (ServerRunner.set_engine)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal = self.policy.judge(scope)
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        headers = [(b"connection", b"close")]
        if refusal.status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="DLE Desktop"'))
        await send_json(send, refusal.status, {"error": refusal.message, "cause": refusal.cause}, headers)


class BodyLimitMiddleware:
    """Refuse bodies over `limit` bytes before reading them into memory, and give up on a body
    that stalls for `stall_timeout` seconds (a client that opens a request and then trickles or
    stops holds a task and a socket otherwise). To the app either looks like a disconnect."""

    def __init__(self, app, limit: int, stall_timeout: float | None = None) -> None:
        self.app = app
        self.limit = limit
        self.stall_timeout = stall_timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return await _refuse(send, 400, "Content-Length is not a number")
                if declared > self.limit:
                    return await _refuse(send, 413, f"request body of {declared} bytes is over the limit of {self.limit}")
        received = 0
        refusal: tuple[int, str] | None = None
        started = False
        body_done = False

        async def guarded_receive():
            nonlocal received, refusal, body_done
            if refusal is not None:
                return {"type": "http.disconnect"}
            try:
                if body_done or self.stall_timeout is None:
                    message = await receive()
                else:
                    message = await asyncio.wait_for(receive(), self.stall_timeout)
            except asyncio.TimeoutError:
                refusal = (408, f"the request body stalled for {self.stall_timeout:g} s")
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.limit:
                    refusal = (413, f"request body is over the limit of {self.limit} bytes")
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            nonlocal started
            if refusal is not None:
                return  # the app's answer to the body it never got is replaced by ours below
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if refusal is None:
                raise
            # The app met the disconnect we reported (Starlette's ClientDisconnect): expected.
        if refusal is not None and not started:
            await _refuse(send, *refusal)


async def _refuse(send, status: int, message: str) -> None:
    await send_json(send, status, {"error": message}, [(b"connection", b"close")])
