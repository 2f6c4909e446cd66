"""The emulation holds a bounded number of sockets and gives a client a bounded time to send its
headers, as the lore server does (dle_desktop/http_limits.py): sockets that never finish a
request cannot run DLE Desktop out of file descriptors, and a real request still gets through."""

from __future__ import annotations

import socket
import time

import httpx

from dle_desktop.olra.runner import OlraLimits

BOUND = 30.0  # generous: what is tested is that it happens, not how fast


def closed_within(sock: socket.socket, seconds: float = BOUND) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_connection_that_never_sends_its_headers_is_closed(olra):
    served = olra({"a.md": "x"}, limits=OlraLimits(header_timeout=0.5))
    with socket.create_connection(("127.0.0.1", served.runner.port)) as s:
        s.sendall(b"GET /vault/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        assert closed_within(s)


def test_idle_sockets_past_the_cap_make_room_for_a_request(olra):
    served = olra({"a.md": "x"}, limits=OlraLimits(max_connections=10, header_timeout=600))
    socks = [socket.create_connection(("127.0.0.1", served.runner.port)) for _ in range(60)]
    try:
        deadline = time.monotonic() + BOUND
        answer = None
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(
                    f"{served.runner.url}/vault/a.md", headers={"Authorization": f"Bearer {served.key}"}, timeout=5
                )
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert answer is not None and answer.status_code == 200 and answer.text == "x"
        closed = 0
        for s in socks:
            s.settimeout(0.01)
            try:
                closed += s.recv(1) == b""
            except (TimeoutError, BlockingIOError):
                pass
            except ConnectionResetError:
                closed += 1
        assert closed >= 60 - 10  # the longest-idle ones were closed to keep to the cap
    finally:
        for s in socks:
            s.close()


def test_thousands_of_idle_and_slowloris_sockets_cannot_shut_the_emulation_off(olra):
    """The default limits: idle sockets far past the cap (and some trickling a header a byte at a
    time) make room for a real client, who gets answers, never 503 for good."""
    served = olra({"a.md": "x"})
    port = served.runner.port
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(5000)]
    trickling = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
    try:
        for s in trickling:
            s.sendall(b"GET /vault/a.md HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answers = []
        deadline = time.monotonic() + BOUND
        while answers[-5:] != [200] * 5 and time.monotonic() < deadline:
            try:
                r = httpx.get(
                    f"{served.runner.url}/vault/a.md", headers={"Authorization": f"Bearer {served.key}"}, timeout=5
                )
            except httpx.HTTPError:
                time.sleep(0.1)
                continue
            answers.append(r.status_code)
            if r.status_code != 200:
                time.sleep(0.1)
        assert answers[-5:] == [200] * 5, answers
    finally:
        for s in idle + trickling:
            s.close()
