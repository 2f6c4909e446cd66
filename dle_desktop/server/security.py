"""ASGI middleware for the embedded server: Host checking (DNS-rebinding defence) and body limits."""

from __future__ import annotations

import json

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def _host_name(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8765
        end = header.find("]")
        return header[: end + 1] if end != -1 else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


async def _send_json(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class HostCheckMiddleware:
    """Refuse requests whose Host header is not one of ours: a web page on another domain that
    re-points its DNS name at 127.0.0.1 must not reach the local API."""

    def __init__(self, app, allowed_hosts: frozenset[str] = LOOPBACK_NAMES) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed_hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = ""
        for name, value in scope.get("headers", ()):
            if name == b"host":
                host = value.decode("latin-1")
                break
        if _host_name(host) not in self.allowed:
            return await _send_json(send, 403, f"Host {host!r} is not allowed; connect through 127.0.0.1 or localhost")
        return await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Refuse bodies over `limit` bytes before reading them into memory."""

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return await _send_json(send, 400, "Content-Length is not a number")
                if declared > self.limit:
                    return await _send_json(send, 413, f"request body of {declared} bytes is over the limit of {self.limit}")
        received = 0
        too_big = False
        started = False

        async def limited_receive():
            nonlocal received, too_big
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    too_big = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message):
            nonlocal started
            if too_big:
                # The app's own answer to the refused body (Starlette turns the escaping
                # exception into a 500 before re-raising it) is replaced by our 413 below.
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except _BodyTooLarge:
            pass
        if too_big and not started:
            await _send_json(send, 413, f"request body is over the limit of {self.limit} bytes")


class _BodyTooLarge(Exception):
    pass
