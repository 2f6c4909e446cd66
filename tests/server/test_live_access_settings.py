"""Issue 21.6: a running DLE Desktop takes the allowed origins and hosts that another process
(`dle-desktop st install`, an editor) writes into settings.json, at once and without a restart;
nothing else of the file is taken, and a broken file keeps the last good rules.

Real processes (`dle-desktop serve`, `dle-desktop st install`) and the in-process `Runtime` that
both `serve` and the app run, on loopback; real files."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from dle_desktop.app.context import AppContext
from dle_desktop.app.runtime import Runtime
from dle_desktop.engine.engine import Engine
from dle_desktop.server.security import server_token
from dle_desktop.state.paths import resolve_paths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.vault.sources import FolderSource
from tests.retrieval._support import API, write_world
from tests.st_bridge.conftest import make_st

REPO = Path(__file__).resolve().parents[2]
ST_PORT = 8124
ST_PAGE = f"http://127.0.0.1:{ST_PORT}"
DEFAULT_PAGE = "http://127.0.0.1:8000"
#: The follower looks at the file about once a second; a change shows within this.
FOLLOW_TIMEOUT = 5.0


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLE_")}
    env.update(HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", QT_QPA_PLATFORM="offscreen")
    return env


def dle(env: dict[str, str], data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def wait_until(condition: Callable[[], bool], what: str, timeout: float = FOLLOW_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ----------------------------------------------------------------------------- `serve` and `st install`


def test_st_install_is_taken_by_a_running_serve_without_a_restart(tmp_path: Path):
    env = cli_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    data = tmp_path / "data"
    vault = write_world(tmp_path / "vault")
    st = make_st(tmp_path / "SillyTavern", port=ST_PORT)
    token = dle(env, data, "server-token").stdout.strip()
    assert token

    serve = subprocess.Popen(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data), "serve", "--port", "0", "--vault", str(vault)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.startswith("listening on "), line
        url = line.split()[-1]
        with httpx.Client(base_url=url, timeout=30) as client:
            page = {"Origin": ST_PAGE, "X-DLE-Token": token}
            preflight = {"Origin": ST_PAGE, "Access-Control-Request-Method": "POST"}
            refused = client.get(f"{API}/bridge", headers=page)
            assert refused.status_code == 403 and refused.json()["cause"] == "forbidden_origin"
            assert client.options(f"{API}/retrieve", headers=preflight).status_code == 403

            installed = dle(env, data, "st", "install", "--st-dir", str(st), "--server-url", url)
            assert installed.returncode == 0, installed.stderr
            assert ST_PAGE in installed.stdout

            # The very next request is accepted: the same process, no restart.
            answer = client.get(f"{API}/bridge", headers=page)
            assert answer.status_code == 200, answer.text
            assert answer.headers["access-control-allow-origin"] == ST_PAGE
            assert client.options(f"{API}/retrieve", headers=preflight).status_code == 204
            # A listed page still needs the token.
            assert client.get(f"{API}/bridge", headers={"Origin": ST_PAGE}).status_code == 401
        assert serve.poll() is None
    finally:
        serve.terminate()
        serve.wait(30)


# ----------------------------------------------------------------------------- the runtime, in process


@contextlib.contextmanager
def running(tmp_path: Path, settings: Settings | None = None) -> Iterator[tuple[Runtime, httpx.Client, str]]:
    """A Runtime as `serve` and the app make it, on a port of its own, with its settings saved."""
    paths = resolve_paths(tmp_path / "data").ensure()
    settings = (settings or Settings()).replace(server_port=0)
    store = SettingsStore(paths.settings_file)
    store.save(settings)
    ctx = AppContext(paths, store, settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("lore", write_world(tmp_path / "v"))])
    runtime = Runtime(ctx, engine, port=0).start()
    try:
        assert runtime.server is not None
        with httpx.Client(base_url=runtime.server.url, timeout=30) as client:
            yield runtime, client, server_token(ctx.secrets)
    finally:
        runtime.stop()


def write_settings(runtime: Runtime, **changes) -> None:
    """Save settings.json as another process would (the installer's way: load, replace, save)."""
    store = SettingsStore(runtime.ctx.paths.settings_file)
    store.save(store.load().replace(**changes))


def status(client: httpx.Client, origin: str, token: str, host: str | None = None) -> int:
    headers = {"Origin": origin, "X-DLE-Token": token}
    if host is not None:
        headers["Host"] = host
    return client.get(f"{API}/bridge", headers=headers).status_code


def test_only_the_access_fields_of_the_file_are_taken(tmp_path: Path):
    with running(tmp_path) as (runtime, client, token):
        ctx, engine = runtime.ctx, runtime.engine
        before = ctx.settings
        assert status(client, ST_PAGE, token) == 403
        write_settings(
            runtime,
            server_allowed_origins=[*before.server_allowed_origins, ST_PAGE],
            scan_depth=before.scan_depth + 3,  # unrelated: the running instance keeps its own
            server_port=9,
            close_to_tray=not before.close_to_tray,
        )
        assert status(client, ST_PAGE, token) == 200  # at once, on the refused request itself
        assert runtime.engine is engine  # the engine and its index stay
        wanted = (*before.server_allowed_origins, ST_PAGE)
        wait_until(lambda: ctx.settings.server_allowed_origins == wanted, "the app's settings to list the page")
        assert ctx.settings == before.replace(server_allowed_origins=wanted)
        assert engine.settings.scan_depth == before.scan_depth and engine.settings.server_port == 0
        assert runtime.server is not None and runtime.server.port != 9


def test_a_removed_origin_is_refused_soon_without_a_request_asking(tmp_path: Path):
    with running(tmp_path) as (runtime, client, token):
        assert status(client, DEFAULT_PAGE, token) == 200
        write_settings(runtime, server_allowed_origins=[ST_PAGE])
        wait_until(lambda: status(client, DEFAULT_PAGE, token) == 403, "the removed page to be refused")
        assert status(client, ST_PAGE, token) == 200
        assert runtime.ctx.settings.server_allowed_origins == (ST_PAGE,)


def test_an_allowed_host_written_to_the_file_is_accepted_at_once(tmp_path: Path):
    with running(tmp_path) as (runtime, client, _token):
        assert client.get(f"{API}/health", headers={"Host": "dle.example"}).status_code == 403
        write_settings(runtime, server_allowed_hosts=["DLE.example"])
        assert client.get(f"{API}/health", headers={"Host": "dle.example:1234"}).status_code == 200
        wait_until(lambda: runtime.ctx.settings.server_allowed_hosts == ("dle.example",), "the app's settings")


@pytest.mark.parametrize(
    "broken",
    [
        "{ not json",
        json.dumps({"server_allowed_origins": ["ftp://127.0.0.1:8124"]}),
        json.dumps({"server_allowed_origins": [ST_PAGE], "no_such_setting": 1}),
        json.dumps({"schema_version": 999, "server_allowed_origins": [ST_PAGE]}),
        "[" * 100_000,
    ],
    ids=["not-json", "bad-origin", "unknown-name", "newer-version", "nested-too-deep"],
)
def test_a_broken_file_keeps_the_last_good_rules_and_warns_once(tmp_path: Path, caplog, broken: str):
    with running(tmp_path) as (runtime, client, token):
        settings_file = runtime.ctx.paths.settings_file
        before = runtime.ctx.settings
        caplog.set_level(logging.WARNING)
        settings_file.write_text(broken, encoding="utf-8")
        for _ in range(4):  # refused requests ask for a look, and the follower looks on its own
            assert status(client, ST_PAGE, token) == 403
            assert status(client, DEFAULT_PAGE, token) == 200
            time.sleep(0.6)
        warnings = [r.getMessage() for r in caplog.records if "settings.json" in r.getMessage()]
        assert len(warnings) == 1, warnings
        assert "last good" in warnings[0] and str(settings_file) in warnings[0]
        # The running instance leaves the file where it is (it is the user's to fix).
        assert settings_file.read_text(encoding="utf-8") == broken
        assert not list(settings_file.parent.glob("settings.json.broken-*"))
        assert runtime.ctx.settings == before

        # Fixed: taken at once.
        SettingsStore(settings_file).save(before.replace(server_allowed_origins=[ST_PAGE]))
        assert status(client, ST_PAGE, token) == 200
        wait_until(lambda: status(client, DEFAULT_PAGE, token) == 403, "the fixed file's rules")
