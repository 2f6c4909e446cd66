"""`dle-desktop serve` as a subprocess, on the points of issue 9 that only the real process shows:
the LAN-mode warning on stderr, and clients that hang up or send garbage leaving neither
tracebacks on stderr (past the log scrubber) nor a flood in the log."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys

import httpx
import pytest

from tests.e2e.test_serve import REPO, Serve

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

LISTENING_ANYWHERE = re.compile(r"^listening on http://(127\.0\.0\.1|0\.0\.0\.0):(\d+)$")


@pytest.fixture
def serve(tmp_path):
    started: list[Serve] = []

    def start(*extra: str) -> Serve:
        s = Serve(tmp_path / "data", *extra)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def stop(s: Serve) -> str:
    s.proc.send_signal(signal.SIGTERM)
    assert s.finish() == 0, (s.stdout, s.stderr)
    return "".join(s.stderr)


def test_serve_on_every_address_warns_about_lan_mode(serve, tmp_path):
    s = serve("--host", "0.0.0.0", "--port", "0")
    port = int(s.wait_line(LISTENING_ANYWHERE).group(2))
    assert httpx.get(f"http://127.0.0.1:{port}/api/dle/v1/status", timeout=10).status_code == 200
    stderr = stop(s)
    assert "LAN mode" in stderr and "server token" in stderr and "server_allowed_hosts" in stderr
    log = (tmp_path / "data" / "logs" / "dle-desktop.log").read_text(encoding="utf-8")
    assert "LAN mode" in log


def test_serve_on_loopback_says_nothing_about_lan_mode(serve):
    s = serve("--port", "0")
    s.wait_line(LISTENING_ANYWHERE)
    assert "LAN mode" not in stop(s)


@pytest.mark.parametrize("command", ["server-token", "olra-key"])
def test_the_token_and_the_olra_key_are_printed(tmp_path, command):
    def run() -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "dle_desktop", "--data-dir", str(tmp_path / "data"), command],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={
                "PYTHONPATH": str(REPO),
                "PATH": "/usr/bin:/bin",
                "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            },
        )
        assert done.returncode == 0, done.stderr
        # the server token: 32 random bytes in URL-safe base64; the OLRA key: 64 hex digits, as Obsidian's plugin makes
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}\n" if command == "server-token" else r"[0-9a-f]{64}\n", done.stdout)
        return done

    first, second = run(), run()
    if "warning:" in first.stderr:  # no keyring and no other lasting store: said plainly
        assert "for this session only" in first.stderr or "memory" in first.stderr
    else:  # kept: the same token every time
        assert first.stdout == second.stdout


def test_hang_ups_mid_body_and_garbage_requests_leave_no_tracebacks_and_no_flood(serve, tmp_path):
    s = serve("--port", "0")
    port = int(s.wait_line(LISTENING_ANYWHERE).group(2))
    for path in ("/api/dle/v1/retrieve", "/api/dle/v1/chats/c/notebook", "/api/vector/insert", "/v1/embeddings"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            method = b"PUT" if path.endswith("notebook") else b"POST"
            c.sendall(
                method + b" " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b'Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"chat_id": "c", '
            )
    for _ in range(300):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
            try:
                c.recv(65536)
            except (ConnectionResetError, TimeoutError):
                pass
    assert httpx.get(f"http://127.0.0.1:{port}/api/dle/v1/status", timeout=10).status_code == 200
    stderr = stop(s)
    log = (tmp_path / "data" / "logs" / "dle-desktop.log").read_text(encoding="utf-8")
    assert "Traceback" not in stderr and "Traceback" not in log
    assert "unexpected error" not in log and "Exception in ASGI application" not in log
    assert 1 <= log.count("Invalid HTTP request received") <= 20
    assert stderr.count("Invalid HTTP request received") <= 20
