"""`dle-desktop serve` as a subprocess: it announces its address, answers over HTTP the way
SillyTavern would talk to it, and stops cleanly on SIGINT and SIGTERM."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from dle_desktop import __version__

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"^listening on (http://127\.0\.0\.1:(\d+))$")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class Serve:
    def __init__(self, data_dir: Path, *extra: str) -> None:
        env = dict(os.environ)
        env.pop("DLE_DESKTOP_DATA_DIR", None)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dle_desktop", "serve", "--data-dir", str(data_dir), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=data_dir.parent,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr, False), daemon=True).start()

    def _pump(self, stream, sink: list[str], announce: bool) -> None:
        for line in stream:
            sink.append(line)
            if announce:
                self.lines.put(line.rstrip("\n"))
        if announce:
            self.lines.put(None)

    def wait_line(self, pattern: re.Pattern, timeout: float = 60) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(
                    f"no line matching {pattern.pattern!r} within {timeout} s; stdout={self.stdout} "
                    f"stderr={''.join(self.stderr)}"
                )
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait(10)
                pytest.fail(
                    f"serve exited ({self.proc.returncode}) before {pattern.pattern!r}; "
                    f"stdout={self.stdout} stderr={''.join(self.stderr)}"
                )
            m = pattern.match(line)
            if m:
                return m

    def finish(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            time.sleep(0.05)  # let the pump threads drain what is left

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_and_stops_cleanly_on_signal(serve, sig):
    s = serve("--port", "0")
    m = s.wait_line(LISTENING)
    url, port = m.group(1), int(m.group(2))
    assert port > 0
    status = httpx.get(f"{url}/api/dle/v1/status", timeout=10)
    assert status.status_code == 200
    body = status.json()
    assert body["version"] == __version__
    assert body["sample_vault"] is True
    # The first sync may still be running when the server comes up: wait for the index, boundedly.
    deadline = time.monotonic() + 30
    while body["entries"] != 61 and time.monotonic() < deadline:
        time.sleep(0.1)
        body = httpx.get(f"{url}/api/dle/v1/status", timeout=10).json()
    assert body["entries"] == 61
    assert body["vaults"][0]["name"] == "Sample vault" and body["vaults"][0]["entries"] == 61
    assert httpx.get(f"{url}/api/dle/v1/status", headers={"Host": "evil.com"}, timeout=10).status_code == 403

    s.proc.send_signal(sig)
    code = s.finish()
    assert code == 0, (s.stdout, s.stderr)
    assert "stopped" in [line.strip() for line in s.stdout]
    assert "Traceback" not in "".join(s.stderr)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/api/dle/v1/status", timeout=2)


def test_serve_on_a_tmp_vault_reflects_file_changes(serve, make_vault, lore):
    root = make_vault({"A.md": lore("Alpha", ("alpha",))})
    s = serve("--port", "0", "--vault", str(root))
    url = s.wait_line(LISTENING).group(1)
    client = httpx.Client(base_url=url, timeout=10)
    try:
        deadline = time.monotonic() + 30
        while client.get("/api/dle/v1/status").json()["entries"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        (root / "B.md").write_text(lore("Beta", ("beta",)), encoding="utf-8")
        deadline = time.monotonic() + 10
        titles: list[str] = []
        while time.monotonic() < deadline:
            titles = sorted(e["title"] for e in client.get("/api/dle/v1/entries").json()["entries"])
            if titles == ["Alpha", "Beta"]:
                break
            time.sleep(0.05)
        assert titles == ["Alpha", "Beta"]  # the watcher is running in headless mode too
        entry = client.get("/api/dle/v1/entries/vault/B.md")
        assert entry.status_code == 200 and entry.json()["keys"] == ["beta"]
    finally:
        client.close()
    s.proc.send_signal(signal.SIGTERM)
    assert s.finish() == 0


def test_serve_on_a_busy_port_exits_2_with_a_message(serve):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    try:
        port = blocker.getsockname()[1]
        s = serve("--port", str(port))
        code = s.finish(60)
    finally:
        blocker.close()
    output = "".join(s.stdout) + "".join(s.stderr)
    assert code == 2, output
    assert f"error: cannot listen on 127.0.0.1:{port}" in "".join(s.stderr)  # errors go to stderr
    assert "Traceback" not in output
    assert not any(LISTENING.match(line.strip()) for line in s.stdout)


def test_serve_uses_the_settings_port_and_serves_even_if_the_gui_server_is_off(serve, tmp_path):
    """`serve` exists to serve: server_enabled=false (a GUI switch) must not make it fail."""
    data = tmp_path / "data"
    data.mkdir()
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    (data / "settings.json").write_text(f'{{"server_enabled": false, "server_port": {port}}}', encoding="utf-8")
    s = serve()
    m = s.wait_line(LISTENING)
    assert int(m.group(2)) == port
    assert httpx.get(f"{m.group(1)}/api/dle/v1/status", timeout=10).status_code == 200
    s.proc.send_signal(signal.SIGINT)
    assert s.finish() == 0
    assert "error: None" not in "".join(s.stdout) + "".join(s.stderr)


def test_serve_with_a_broken_settings_file_starts_on_defaults(serve, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text("{ broken", encoding="utf-8")
    s = serve("--port", "0")
    s.wait_line(LISTENING)
    s.proc.send_signal(signal.SIGTERM)
    assert s.finish() == 0
    kept = list(data.glob("settings.json.broken-*"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{ broken"
    assert "settings file could not be read" in "".join(s.stderr)


def test_serve_twice_on_the_same_data_dir_and_port_after_a_clean_stop(serve, tmp_path):
    first = serve("--port", "0")
    port = int(first.wait_line(LISTENING).group(2))
    first.proc.send_signal(signal.SIGINT)
    assert first.finish() == 0
    second = serve("--port", str(port))
    assert int(second.wait_line(LISTENING).group(2)) == port  # the port was released
    second.proc.send_signal(signal.SIGINT)
    assert second.finish() == 0


def test_headless_serve_takes_an_ai_key_from_a_keys_file(serve, tmp_path):
    """With no keyring, headless `serve` had no way to get a profile's API key (only plaintext
    extra_headers): a 0600 keys file (or the environment) supplies it for the run."""
    import json

    from tests.fakes.ai_provider import FakeAiProvider

    key = "sk-headless-Key-4711"
    with FakeAiProvider() as fake:
        data = tmp_path / "data"
        data.mkdir()
        (data / "settings.json").write_text(
            json.dumps(
                {
                    "connection_profiles": [
                        {
                            "id": "main-box",
                            "name": "Main",
                            "provider": "openai",
                            "flavor": "custom",
                            "base_url": fake.url + "/v1",
                            "model": "fake-model",
                        }
                    ],
                    "ai_search_profile_id": "main-box",
                }
            ),
            encoding="utf-8",
        )
        keys = tmp_path / "keys.env"
        keys.write_text(f"# for the headless box\nDLE_AI_KEY_MAIN_BOX={key}\n", encoding="utf-8")
        keys.chmod(0o600)
        s = serve("--port", "0", "--keys-file", str(keys))
        url = s.wait_line(LISTENING).group(1)
        answer = httpx.post(f"{url}/api/dle/v1/ai/channels/ai_search/test", timeout=30)
        assert answer.status_code == 200, answer.text
        assert fake.requests and fake.requests[-1].headers["authorization"] == f"Bearer {key}"
        s.proc.send_signal(signal.SIGTERM)
        assert s.finish() == 0
    assert key not in "".join(s.stdout + s.stderr)
    assert key not in (data / "logs" / "dle-desktop.log").read_text(encoding="utf-8")
