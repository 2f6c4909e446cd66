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
4. CORS, for listed origins only: their preflights are answered here (204, or 403 for a request
   header we do not take), on every path and without the token (browsers never send credentials
   on a preflight); every answer to them, refusals included, carries `Access-Control-Allow-Origin`
   so the page can read it (a 401 says "wrong token"). Never `Access-Control-Allow-Credentials`:
   the token is a header, not a cookie. Unlisted origins get their 403 without any CORS header.
5. The listed hosts and origins follow settings.json as other processes write it (`dle-desktop st
   install`): before a request is refused for its Host or Origin, the middleware asks whether the
   file changed (`recheck`) and judges it again under the rules the file now gives. Nothing else
   changes: the judgement still comes before any body is read, and only what the file lists is let in.

Starlette's TrustedHostMiddleware splits Host at the first ':' (so `[::1]` and malformed ports
slip through it) and its CORSMiddleware only decorates answers (a simple POST still reaches the
route), so neither does this job."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets as secrets_module
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dle_desktop.core.hosts import LOOPBACK_NAMES, is_loopback_address, parse_host, parse_origin
from dle_desktop.logging_setup import register_secret
from dle_desktop.state.secret_holder import SecretHolder, rotate
from dle_desktop.vectors.source_settings import HEADER_FALLBACKS

log = logging.getLogger(__name__)

TOKEN_SECRET_NAME = "server-token"
_WILDCARD_BINDS = ("0.0.0.0", "::", "")

#: What a listed page may do cross-origin (answered to its preflights).
CORS_METHODS = "GET, POST, PUT, DELETE"
#: Request headers a listed page may send: the token, JSON, the bridge's client name, and what
#: SillyTavern's own fetches to its Vector API carry (its CSRF token, 1.12's `X-*` source headers);
#: and the CORS-safelisted ones, should a browser name them anyway (an unusual value makes it).
CORS_REQUEST_HEADERS = frozenset(
    {
        "content-type",
        "authorization",
        "x-dle-token",
        "x-csrf-token",
        "x-requested-with",
        "x-dle-client",
        *(h.lower() for h in HEADER_FALLBACKS.values()),
        "accept",
        "accept-language",
        "content-language",
    }
)
#: Answer headers a page may read besides the CORS-safelisted ones.
CORS_EXPOSED_HEADERS = "Allow, Content-Length, Retry-After, WWW-Authenticate"
CORS_MAX_AGE = 600
#: Refusals that a newly listed host or origin could lift: worth a look at settings.json first.
_LISTING_CAUSES = frozenset({"forbidden_host", "forbidden_origin"})


def server_token(secrets) -> str:
    """The server's token, created (and kept in the secret store) the first time it is needed."""
    token = secrets.get(TOKEN_SECRET_NAME)
    if not token:
        token = secrets_module.token_urlsafe(32)
        secrets.set(TOKEN_SECRET_NAME, token)
    register_secret(token)
    return token


class TokenHolder(SecretHolder):
    """The server token as a running server's policy reads it: looked up in the secret store the
    first time a request needs it (so a loopback-only setup never creates one), then kept;
    `rotate_server_token` replaces it in every holder of that store at once."""

    def __init__(self, secrets) -> None:
        super().__init__(secrets, TOKEN_SECRET_NAME, server_token)


def rotate_server_token(secrets) -> str:
    """A new random server token, stored in place of the old one; every running server that
    reads its token from `secrets` takes it at once (the old one is refused from the next
    request on; no restart)."""
    return rotate(secrets, TOKEN_SECRET_NAME, secrets_module.token_urlsafe(32))


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
            return Refusal(
                403,
                "forbidden_host",
                f"Host {name!r} is not allowed; connect through 127.0.0.1 or "
                "localhost, or add it to server_allowed_hosts for LAN use",
            )
        origin = headers.get(b"origin")
        needs_token = not is_loopback_address((scope.get("client") or (None,))[0])
        if origin is not None:
            try:
                canonical = parse_origin(origin)
            except ValueError:
                canonical = None
            if canonical is None or canonical not in self.origins:
                return Refusal(
                    403,
                    "forbidden_origin",
                    f"requests from web pages of {origin[:100]!r} are not accepted; "
                    "a page must be listed in server_allowed_origins",
                )
            if scope.get("method") == "OPTIONS" and b"access-control-request-method" in headers:
                return None  # a CORS preflight never carries credentials; the real request will
            needs_token = True
        if needs_token:
            return self._check_token(headers)
        return None

    def cors_origin(self, scope) -> str | None:
        """The request's `Origin` as sent, when it is a listed one (its answers carry CORS
        headers); None for no Origin, an unlisted one, or one sent twice."""
        origin = _headers(scope).get(b"origin")
        if origin is None:
            return None
        try:
            canonical = parse_origin(origin)
        except ValueError:
            return None
        return origin if canonical in self.origins else None

    def _check_token(self, headers: dict[bytes, str]) -> Refusal | None:
        given = headers.get(b"x-dle-token")
        auth = headers.get(b"authorization", "")
        if given is None and auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        if not given:
            return Refusal(
                401,
                "token_required",
                "this request needs the server token (Authorization: Bearer <token> or X-DLE-Token)",
            )
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
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(extra_headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def is_preflight(scope) -> bool:
    return scope.get("method") == "OPTIONS" and any(
        name == b"access-control-request-method" for name, _ in scope.get("headers", ())
    )


def _cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", CORS_EXPOSED_HEADERS.encode()),
        (b"vary", b"Origin"),
    ]


def with_cors(headers, origin: str) -> list[tuple[bytes, bytes]]:
    """An answer's headers for a listed origin: ours replace any CORS headers a route set itself
    (`/api/modules` answers `*` to everyone), and `Origin` joins its `Vary`."""
    out, vary = [], []
    for name, value in headers:
        lower = name.lower()
        if lower.startswith(b"access-control-"):
            continue
        if lower == b"vary":
            vary += [v.strip() for v in value.split(b",") if v.strip() and v.strip().lower() != b"origin"]
            continue
        out.append((name, value))
    cors = _cors_headers(origin)
    cors[-1] = (b"vary", b", ".join([b"Origin", *vary]))
    return out + cors


def _preflight_answer(scope, origin: str) -> tuple[int, dict | None, list[tuple[bytes, bytes]]]:
    headers = _headers(scope)
    asked = [h.strip().lower() for h in headers.get(b"access-control-request-headers", "").split(",") if h.strip()]
    refused = [h for h in asked if h not in CORS_REQUEST_HEADERS]
    out = _cors_headers(origin)
    # A preflight has no body; if one is announced anyway it is never read, so the connection ends.
    if headers.get(b"content-length", "0").strip() not in ("", "0") or b"transfer-encoding" in headers:
        out.append((b"connection", b"close"))
    if refused:
        return (
            403,
            {
                "error": f"web pages may not send the header {refused[0][:100]!r} to DLE Desktop; the headers "
                f"allowed are {', '.join(sorted(CORS_REQUEST_HEADERS))}",
                "cause": "forbidden_header",
            },
            out,
        )
    out += [
        (b"access-control-allow-methods", CORS_METHODS.encode()),
        (b"access-control-max-age", str(CORS_MAX_AGE).encode()),
    ]
    if asked:
        out.append((b"access-control-allow-headers", ", ".join(dict.fromkeys(asked)).encode("latin-1")))
    if headers.get(b"access-control-request-private-network", "").strip().lower() == "true":
        out.append((b"access-control-allow-private-network", b"true"))  # Chromium's Private Network Access
    return 204, None, out


class AccessMiddleware:
    """Applies an AccessPolicy to every HTTP and WebSocket request, and speaks CORS to the listed
    origins. The answer to a refused request closes the connection: its body, if any, is never
    read; nor is a preflight's."""

    def __init__(self, app, policy: AccessPolicy, recheck: Callable[[], Awaitable[bool]] | None = None) -> None:
        self.app = app
        self.policy = policy  # replaced when the settings change (ServerRunner.set_engine, refresh_access)
        #: Looks whether settings.json changed and, if so, has `policy` replaced; True when it did.
        self.recheck = recheck

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        policy = self.policy
        refusal = policy.judge(scope)
        if refusal is not None and refusal.cause in _LISTING_CAUSES and await self._rules_changed():
            policy = self.policy
            refusal = policy.judge(scope)
        origin = policy.cors_origin(scope) if scope["type"] == "http" else None
        if refusal is None:
            if origin is None:
                return await self.app(scope, receive, send)
            if is_preflight(scope):
                status, payload, headers = _preflight_answer(scope, origin)
                if payload is not None:
                    return await send_json(send, status, payload, headers)
                await send(
                    {"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0"), *headers]}
                )
                return await send({"type": "http.response.body", "body": b""})

            async def send_with_cors(message):
                if message["type"] == "http.response.start":
                    message = {**message, "headers": with_cors(message.get("headers") or [], origin)}
                await send(message)

            return await self.app(scope, receive, send_with_cors)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        headers = [(b"connection", b"close")]
        if refusal.status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="DLE Desktop"'))
        if origin is not None:
            headers += _cors_headers(origin)
        await send_json(send, refusal.status, {"error": refusal.message, "cause": refusal.cause}, headers)

    async def _rules_changed(self) -> bool:
        if self.recheck is None:
            return False
        try:
            return await self.recheck()
        except Exception:  # the request is judged under the rules in force; a fault here must not 500 it
            log.exception("looking for new allowed hosts and origins in settings.json failed")
            return False


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
                    return await _refuse(
                        send, 413, f"request body of {declared} bytes is over the limit of {self.limit}"
                    )
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
            except TimeoutError:
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
