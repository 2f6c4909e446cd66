"""Connection limits and timeouts (issue 9, item 3), with real sockets against a real engine and
server on 127.0.0.1 whose limits are lowered so that a few hundred sockets and sub-second timeouts
show what 20,000 sockets and the default timeouts would. Every wait is bounded; no test asserts
on how long anything took."""

from __future__ import annotations

import logging
import selectors
import socket
import time

import httpx
import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.engine.thread import EngineThread
from dle_desktop.http_limits import ServerLimits
from dle_desktop.server.app import ServerRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from tests.retrieval._support import API

BOUND = 20.0  # seconds any single wait may take before the test gives up


class Limited:
    def __init__(self, tmp_path, limits: ServerLimits) -> None:
        self.thread = EngineThread().start()
        self.engine = Engine(
            AppPaths(tmp_path / "data", tmp_path / "data").ensure(), Settings(), SecretStore(use_keyring=False)
        )
        self.thread.call(self.engine.start(initial_sync=False, watch=False), timeout=30)
        self.runner = ServerRunner(self.engine, "127.0.0.1", 0, limits)
        self.thread.call(self.runner.start(), timeout=30)
        self.port = self.runner.port

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=BOUND)

    def status(self) -> int:
        return httpx.get(f"http://127.0.0.1:{self.port}{API}/status", timeout=BOUND).status_code

    def close(self) -> None:
        try:
            self.thread.call(self.runner.stop(), timeout=15)
            self.thread.call(self.engine.stop(), timeout=15)
        finally:
            self.thread.stop()


@pytest.fixture
def limited(tmp_path):
    server = Limited(
        tmp_path, ServerLimits(max_connections=20, header_timeout=0.5, keep_alive_timeout=1, body_stall_timeout=0.5)
    )
    yield server
    server.close()


def closed_by_server(sock: socket.socket, timeout: float = BOUND) -> bytes | None:
    """Everything the server sends until it closes the connection; None if it never does."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return data


def wait_for_closed(socks: list[socket.socket], count: int) -> int:
    """Wait (boundedly) until the server has closed `count` of `socks`; how many it closed."""
    closed = 0
    with selectors.DefaultSelector() as sel:
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + BOUND
        while closed < count and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.5):
                sel.unregister(key.fileobj)
                try:
                    if key.fileobj.recv(1) == b"":
                        closed += 1
                except ConnectionResetError:
                    closed += 1
    return closed


def test_hundreds_of_idle_sockets_cannot_starve_a_request(tmp_path):
    """Only the header timeout is long here: the cap alone makes room, by closing the connections
    that have been idle longest."""
    server = Limited(tmp_path, ServerLimits(max_connections=20, header_timeout=600))
    socks: list[socket.socket] = []
    try:
        for _ in range(300):
            socks.append(server.connect())
        assert wait_for_closed(socks, 300 - 20) >= 300 - 20
        assert server.status() == 200
    finally:
        for s in socks:
            s.close()
        server.close()


def test_a_connection_that_never_sends_a_request_is_closed(limited):
    with limited.connect() as s:
        assert closed_by_server(s) == b""


def test_headers_trickled_a_byte_at_a_time_are_cut_off(limited):
    """Bytes keep arriving, but the headers never complete: the deadline counts from the start."""
    with limited.connect() as s:
        s.sendall(b"GET /api/dle/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        deadline = time.monotonic() + BOUND
        cut_off = False
        while time.monotonic() < deadline and not cut_off:
            try:
                s.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                cut_off = True
                break
            s.settimeout(0.1)
            try:
                cut_off = s.recv(65536) == b""
            except TimeoutError:
                pass
            except ConnectionResetError:
                cut_off = True
        assert cut_off


def test_an_idle_keep_alive_connection_is_closed(limited):
    with limited.connect() as s:
        s.sendall(b"GET /api/dle/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = closed_by_server(s)
    assert answer is not None and answer.startswith(b"HTTP/1.1 200")


def test_a_stalled_body_is_answered_408(limited):
    with limited.connect() as s:
        s.sendall(
            b"POST /api/dle/v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"chat_id": '
        )
        answer = closed_by_server(s)
    assert answer is not None and answer.startswith(b"HTTP/1.1 408")
    assert b"stalled" in answer
    assert limited.status() == 200


def test_when_every_connection_is_busy_a_newcomer_gets_503(tmp_path):
    server = Limited(tmp_path, ServerLimits(max_connections=5, body_stall_timeout=600))
    busy: list[socket.socket] = []
    try:
        for _ in range(5):  # requests in flight: each route waits for a body that is still coming
            s = server.connect()
            busy.append(s)
            s.sendall(
                b"PUT /api/dle/v1/chats/c/notebook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                b"Expect: 100-continue\r\n\r\n"
            )
            # The interim answer comes when the route starts reading the body: it is in flight.
            assert s.recv(65536).startswith(b"HTTP/1.1 100")
        with server.connect() as late:
            answer = closed_by_server(late)
        assert answer is not None and answer.startswith(b"HTTP/1.1 503")
        assert b"too many open connections" in answer
        for s in busy:
            s.close()
        # The busy ones hung up: room again, once the server has read their hang-ups.
        deadline = time.monotonic() + BOUND
        while server.status() != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.status() == 200
    finally:
        for s in busy:
            s.close()
        server.close()


def test_a_client_that_hangs_up_mid_body_is_not_an_unexpected_error(limited, caplog):
    caplog.set_level(logging.INFO)
    with limited.connect() as s:
        s.sendall(
            b"POST /api/dle/v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"chat_id": '
        )
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline and not any("disconnected" in r.getMessage() for r in caplog.records):
        time.sleep(0.05)
    assert any("disconnected before its request body arrived" in r.getMessage() for r in caplog.records)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert limited.status() == 200
