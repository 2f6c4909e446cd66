"""BodyLimitMiddleware and AccessMiddleware in a small Starlette app served by uvicorn on loopback."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop.core.hosts import LOOPBACK_NAMES
from dle_desktop.engine.thread import EngineThread
from dle_desktop.server.app import MAX_BODY_BYTES, wrap_security
from dle_desktop.server.security import AccessMiddleware, AccessPolicy, BodyLimitMiddleware

LIMIT = 1000


class Echo:
    """A route that reads the whole body; records whether it ever ran."""

    def __init__(self) -> None:
        self.calls = 0

    def route(self) -> Route:
        async def echo(request: Request) -> JSONResponse:  # a function: Starlette treats objects as ASGI apps
            self.calls += 1
            body = await request.body()
            return JSONResponse({"length": len(body)})

        return Route("/echo", echo, methods=["POST"])


class Uvicorn:
    def __init__(self, asgi_app) -> None:
        self.thread = EngineThread("test-server").start()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(asgi_app, log_level="warning", access_log=False, lifespan="off"))

        async def start():
            self.task = asyncio.get_running_loop().create_task(self.server.serve(sockets=[self.sock]))
            while not self.server.started:
                assert not self.task.done(), self.task
                await asyncio.sleep(0.01)

        self.thread.call(start(), timeout=15)

    def close(self) -> None:
        async def stop():
            self.server.should_exit = True
            await asyncio.wait_for(self.task, 10)

        try:
            self.thread.call(stop(), timeout=15)
        finally:
            self.sock.close()
            self.thread.stop()


@pytest.fixture
def limited():
    echo = Echo()
    app = Starlette(routes=[echo.route()])
    server = Uvicorn(BodyLimitMiddleware(app, LIMIT))
    server.echo = echo
    yield server
    server.close()


def raw_exchange(port: int, request: bytes, read_timeout: float = 5.0) -> bytes:
    """Send `request` as is and read what comes back until the server closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        s.sendall(request)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and data.split(b"\r\n\r\n", 1)[1]:
                    break
        except TimeoutError:
            pass
    return data


def status_of(response: bytes) -> int:
    return int(response.split(b"\r\n", 1)[0].split(b" ")[1])


def test_body_under_the_limit_passes(limited):
    r = httpx.post(f"http://127.0.0.1:{limited.port}/echo", content=b"x" * LIMIT, timeout=5)
    assert r.status_code == 200 and r.json() == {"length": LIMIT}


def test_declared_length_over_the_limit_is_refused_before_the_route_runs(limited):
    r = httpx.post(f"http://127.0.0.1:{limited.port}/echo", content=b"x" * (LIMIT + 1), timeout=5)
    assert r.status_code == 413
    assert "over the limit" in r.json()["error"]
    assert limited.echo.calls == 0


def test_huge_declared_body_is_answered_without_sending_it(limited):
    """Only the headers are sent: a 413 arrives though the promised 100 MB never do."""
    head = (
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Length: 100000000\r\n\r\n"
    )
    response = raw_exchange(limited.port, head + b"x" * 10)
    assert status_of(response) == 413
    assert b"100000000 bytes is over the limit" in response
    assert limited.echo.calls == 0


def test_chunked_body_over_the_limit_is_cut_off(limited):
    """No Content-Length: the limit is enforced while reading, and the rest is never read."""
    head = b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"x" * 600
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3))  # 1800 bytes, never terminated
    response = raw_exchange(limited.port, head + chunks)
    assert status_of(response) == 413
    assert b"over the limit" in response


def test_chunked_body_under_the_limit_passes(limited):
    def gen():
        for _ in range(4):
            yield b"y" * 200

    r = httpx.post(f"http://127.0.0.1:{limited.port}/echo", content=gen(), timeout=5)
    assert r.status_code == 200 and r.json() == {"length": 800}


def test_get_without_body_is_untouched(limited):
    r = httpx.get(f"http://127.0.0.1:{limited.port}/echo", timeout=5)
    assert r.status_code == 405  # the app's own answer: the middleware let it through


@pytest.fixture
def wrapped():
    echo = Echo()
    app = Starlette(routes=[echo.route()])
    server = Uvicorn(wrap_security(app, AccessPolicy.build("127.0.0.1")))
    yield server
    server.close()


def test_production_wrapping_checks_host_then_body(wrapped):
    base = f"http://127.0.0.1:{wrapped.port}"
    assert httpx.post(f"{base}/echo", content=b"a" * 10, timeout=5).json() == {"length": 10}
    r = httpx.post(f"{base}/echo", content=b"a" * 10, headers={"Host": "evil.com"}, timeout=5)
    assert r.status_code == 403
    head = b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1)
    assert status_of(raw_exchange(wrapped.port, head)) == 413


def test_bound_host_is_allowed_besides_loopback():
    inner = object()
    mw = wrap_security(inner, AccessPolicy.build("192.168.1.20"))
    assert isinstance(mw, AccessMiddleware)
    assert "192.168.1.20" in mw.policy.hosts and mw.policy.hosts >= LOOPBACK_NAMES
    assert isinstance(mw.app, BodyLimitMiddleware)
    assert wrap_security(inner, AccessPolicy.build("0.0.0.0")).policy.hosts == LOOPBACK_NAMES
    assert AccessPolicy.build("::1").hosts == LOOPBACK_NAMES
