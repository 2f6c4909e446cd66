"""CORS for the pages listed in server_allowed_origins (SillyTavern's default address by default):
the access layer answers their preflights on every path, and every answer to them (refusals
included) carries Access-Control-Allow-Origin, so the bridge extension in SillyTavern's page can
read it. Unlisted pages keep their 403 without CORS; requests without Origin are unchanged. Real
engine and server on loopback."""

from __future__ import annotations

import json
import socket

import pytest

from dle_desktop.engine.settings_apply import plan
from dle_desktop.server.security import CORS_REQUEST_HEADERS, rotate_server_token, server_token, with_cors
from dle_desktop.state.settings import Settings
from tests.retrieval._support import API, LiveServer, messages, write_world

ST = "http://127.0.0.1:8000"
PREFLIGHT = {"Origin": ST, "Access-Control-Request-Method": "POST"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    base = tmp_path_factory.mktemp("cors")
    server = LiveServer(write_world(base / "vault"), base / "data")  # default settings: ST's address listed
    yield server
    server.close()


@pytest.fixture(scope="module")
def token(live) -> str:
    return server_token(live.secrets)


def raw_exchange(port: int, head: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """Send a request head as is (a body it announces never comes) and read one answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n\r\n")
        data = b""
        while True:
            if b"\r\n\r\n" in data:
                top, _, body = data.partition(b"\r\n\r\n")
                lines = top.decode("latin-1").split("\r\n")
                headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
                length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
                if len(body) >= length:
                    return int(lines[0].split(" ")[1]), headers, body[:length]
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError(f"the server closed without a whole answer: {data!r}")
            data += chunk


def values(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in headers if k.lower() == name]


# ----------------------------------------------------------------------------- preflights


@pytest.mark.parametrize(
    "path",
    [
        f"{API}/retrieve",
        f"{API}/status",
        f"{API}/chats/group%2Fabc/pins",
        "/api/vector/insert",
        "/api/vector/no-such-thing",
        "/no/such/route",
    ],
)
def test_a_listed_origins_preflight_is_answered_on_every_path(live, path):
    r = live.client.options(
        path, headers={**PREFLIGHT, "Access-Control-Request-Headers": "content-type,authorization,x-dle-client"}
    )
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == ST
    assert r.headers["access-control-allow-methods"] == "GET, POST, PUT, DELETE"
    assert r.headers["access-control-allow-headers"] == "content-type, authorization, x-dle-client"
    assert r.headers["access-control-max-age"] == "600"
    assert r.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in r.headers
    assert "access-control-allow-private-network" not in r.headers


def test_the_preflight_takes_sillytaverns_own_headers(live):
    """ST's Vector API fetches carry its CSRF token and, on 1.12, X-* source headers."""
    asked = "Content-Type, X-CSRF-Token, X-LlamaCpp-URL, X-Ollama-Model, X-Ollama-Keep, X-Extras-Key, X-DLE-Token"
    r = live.client.options("/api/vector/query", headers={**PREFLIGHT, "Access-Control-Request-Headers": asked})
    assert r.status_code == 204
    assert r.headers["access-control-allow-headers"] == asked.lower()
    assert {"x-vllm-url", "x-cohere-model", "x-requested-with", "accept"} <= CORS_REQUEST_HEADERS


def test_a_preflight_asking_for_another_header_is_refused_by_name(live):
    r = live.client.options(
        f"{API}/retrieve", headers={**PREFLIGHT, "Access-Control-Request-Headers": "content-type, x-evil"}
    )
    assert r.status_code == 403
    assert r.json()["cause"] == "forbidden_header" and "'x-evil'" in r.json()["error"]
    assert "access-control-allow-methods" not in r.headers and "access-control-allow-headers" not in r.headers
    assert r.headers["access-control-allow-origin"] == ST  # the page may read why


def test_chromiums_private_network_preflight_is_answered(live):
    r = live.client.options(
        f"{API}/status",
        headers={
            "Origin": "http://localhost:8000",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true",
        },
    )
    assert r.status_code == 204
    assert r.headers["access-control-allow-private-network"] == "true"
    assert r.headers["access-control-allow-origin"] == "http://localhost:8000"
    assert "access-control-allow-headers" not in r.headers  # none were asked for


def test_a_preflight_never_reads_a_body(live):
    """A body it announces never comes, and the answer comes anyway (then the connection ends)."""
    status, headers, body = raw_exchange(
        live.port,
        f"OPTIONS {API}/retrieve HTTP/1.1\nHost: 127.0.0.1:{live.port}\n"
        f"Origin: {ST}\nAccess-Control-Request-Method: POST\n"
        "Content-Length: 64",
    )
    assert status == 204 and body == b""
    assert values(headers, "access-control-allow-origin") == [ST]
    assert values(headers, "connection") == ["close"]


def test_a_foreign_preflight_gets_no_cors(live):
    for origin in ("https://evil.example", "http://127.0.0.1:8001", "null"):
        r = live.client.options(f"{API}/retrieve", headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
        assert r.status_code == 403 and r.json()["cause"] == "forbidden_origin"
        assert not [h for h in r.headers if h.startswith("access-control-")] and "vary" not in r.headers


# ----------------------------------------------------------------------------- actual requests


def test_a_listed_page_with_the_token_reads_answers(live, token):
    r = live.client.get(f"{API}/status", headers={"Origin": ST, "Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json()["entries"] > 0
    assert r.headers["access-control-allow-origin"] == ST
    assert r.headers["vary"] == "Origin"
    assert "WWW-Authenticate" in r.headers["access-control-expose-headers"]
    assert "access-control-allow-credentials" not in r.headers
    r = live.client.post(
        f"{API}/retrieve",
        json={"chat_id": "cors", "messages": messages("the quay")},
        headers={"Origin": ST, "X-DLE-Token": token},
    )
    assert r.status_code == 200 and r.json()["injected"]
    assert r.headers["access-control-allow-origin"] == ST


@pytest.mark.parametrize(
    "auth, cause",
    [({}, "token_required"), ({"Authorization": "Bearer wrong"}, "bad_token"), ({"X-DLE-Token": "wrong"}, "bad_token")],
)
def test_a_refusal_for_want_of_the_token_is_readable(live, auth, cause):
    r = live.client.post(f"{API}/retrieve", json={"chat_id": "x", "messages": []}, headers={"Origin": ST, **auth})
    assert r.status_code == 401 and r.json()["cause"] == cause and r.json()["error"]
    assert r.headers["access-control-allow-origin"] == ST and r.headers["vary"] == "Origin"
    assert r.headers["www-authenticate"].startswith("Bearer")


def test_other_errors_are_readable_too(live, token):
    auth = {"Origin": ST, "X-DLE-Token": token}
    r = live.client.get(f"{API}/no-such-route", headers=auth)
    assert r.status_code == 404 and r.headers["access-control-allow-origin"] == ST
    r = live.client.post(f"{API}/status", headers=auth)
    assert r.status_code == 405 and r.headers["access-control-allow-origin"] == ST and r.headers["allow"]
    r = live.client.post(f"{API}/retrieve", content=b"{", headers=auth)
    assert r.status_code == 400 and r.headers["access-control-allow-origin"] == ST
    status, headers, body = raw_exchange(
        live.port,
        f"POST {API}/retrieve HTTP/1.1\nHost: 127.0.0.1:{live.port}\n"
        f"Origin: {ST}\nX-DLE-Token: {token}\nContent-Length: 999999999",
    )
    assert status == 413 and "limit" in json.loads(body)["error"]
    assert values(headers, "access-control-allow-origin") == [ST]


def test_a_routes_own_cors_is_replaced_not_doubled(live, token):
    """/api/modules answers `*` with `Vary: Origin` of its own; a listed page gets one of each."""
    status, headers, _ = raw_exchange(
        live.port,
        f"GET /api/modules HTTP/1.1\nHost: 127.0.0.1:{live.port}\nOrigin: {ST}\nAuthorization: Bearer {token}",
    )
    assert status == 200
    assert values(headers, "access-control-allow-origin") == [ST]
    assert values(headers, "vary") == ["Origin"]


def test_foreign_pages_get_no_cors_even_with_the_token(live, token):
    for origin in ("https://evil.example", "http://localhost:3000", "null", "http://[::1]:8000"):
        r = live.client.get(f"{API}/status", headers={"Origin": origin, "X-DLE-Token": token})
        assert r.status_code == 403 and r.json()["cause"] == "forbidden_origin"
        assert not [h for h in r.headers if h.startswith("access-control-")] and "vary" not in r.headers


def test_an_origin_sent_twice_is_refused_without_cors(live, token):
    status, headers, body = raw_exchange(
        live.port,
        f"GET {API}/status HTTP/1.1\nHost: 127.0.0.1:{live.port}\nOrigin: {ST}\nOrigin: {ST}\nX-DLE-Token: {token}",
    )
    assert status == 403 and json.loads(body)["cause"] == "forbidden_origin"
    assert not values(headers, "access-control-allow-origin")


def test_requests_without_origin_are_unchanged(live):
    r = live.client.get(f"{API}/status")
    assert r.status_code == 200
    assert not [h for h in r.headers if h.startswith("access-control-")] and "vary" not in r.headers
    r = live.client.options(f"{API}/status", headers={"Access-Control-Request-Method": "GET"})
    assert r.status_code == 405  # no page, no preflight: the router's answer


def test_with_cors_merges_vary_and_drops_a_routes_cors():
    out = with_cors(
        [
            (b"content-type", b"application/json"),
            (b"vary", b"Accept-Encoding, origin"),
            (b"access-control-allow-origin", b"*"),
            (b"access-control-allow-credentials", b"true"),
        ],
        ST,
    )
    assert dict(out) == {
        b"content-type": b"application/json",
        b"access-control-allow-origin": ST.encode(),
        b"access-control-expose-headers": b"Allow, Content-Length, Retry-After, WWW-Authenticate",
        b"vary": b"Origin, Accept-Encoding",
    }


# ----------------------------------------------------------------------------- token rotation


@pytest.fixture
def fresh(tmp_path):
    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data", sync=False)
    yield server
    server.close()


def test_a_rotated_token_is_in_use_at_once(fresh):
    old = server_token(fresh.secrets)
    ask = lambda t: fresh.client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": t})  # noqa: E731 - a one-line request helper read where it is used
    assert ask(old).status_code == 200
    new = rotate_server_token(fresh.secrets)
    assert new != old and len(new) >= 32 and fresh.secrets.get("server-token") == new
    r = ask(old)
    assert r.status_code == 401 and r.json()["cause"] == "bad_token"
    assert ask(new).status_code == 200
    assert server_token(fresh.secrets) == new


def test_rotation_holds_across_an_engine_replacement(fresh):
    """set_engine (settings applied) builds a new policy; it reads the same rotated token."""
    from dle_desktop.engine.engine import Engine
    from dle_desktop.vault.sources import FolderSource

    before = rotate_server_token(fresh.secrets)
    engine = Engine(fresh.paths, Settings(), fresh.secrets, vault_override=[FolderSource("lore", fresh.vault)])
    old_engine = fresh.engine

    async def swap():
        await old_engine.stop()
        fresh.runner.set_engine(engine)
        await engine.start(initial_sync=False, watch=False)

    fresh.thread.call(swap(), timeout=30)
    fresh.engine = engine
    assert fresh.client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": before}).status_code == 200
    after = rotate_server_token(fresh.secrets)
    assert fresh.client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": before}).status_code == 401
    assert fresh.client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": after}).status_code == 200


def test_the_runtime_rotates_on_the_engine_thread(tmp_path):
    import httpx

    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import SettingsStore
    from dle_desktop.vault.sources import FolderSource

    paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
    settings = Settings().replace(server_port=0)
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("lore", write_world(tmp_path / "v"))])
    runtime = Runtime(ctx, engine, port=0).start()
    try:
        assert runtime.server is not None and runtime.server.bridge_monitor is runtime.bridge_monitor
        with httpx.Client(base_url=runtime.server.url, timeout=30) as client:
            old = server_token(ctx.secrets)
            assert client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": old}).status_code == 200
            new = runtime.rotate_server_token()
            assert new != old
            assert client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": old}).status_code == 401
            assert client.get(f"{API}/bridge", headers={"Origin": ST, "X-DLE-Token": new}).status_code == 200
    finally:
        runtime.stop()


# ----------------------------------------------------------------------------- access rules applied in place


def test_a_newly_allowed_origin_is_accepted_without_a_restart_and_a_removed_one_refused(fresh):
    """Installing the bridge into a SillyTavern on another port adds its address: the running
    server takes it at once, keeping its engine, its index and its token."""
    other = "http://127.0.0.1:8123"
    token = server_token(fresh.secrets)
    ask = lambda origin: fresh.client.get(f"{API}/bridge", headers={"Origin": origin, "X-DLE-Token": token})  # noqa: E731 - a one-line request helper read where it is used
    assert ask(other).status_code == 403
    engine_before = fresh.engine
    settings = fresh.engine.settings.replace(server_allowed_origins=[other])
    assert plan(fresh.engine.settings, settings).refresh_access and not plan(fresh.engine.settings, settings).new_engine

    async def apply():
        await fresh.engine.apply_settings(settings)
        fresh.runner.refresh_access()

    fresh.thread.call(apply(), timeout=30)
    assert ask(other).status_code == 200 and ask(other).headers["access-control-allow-origin"] == other
    assert ask(ST).status_code == 403  # no longer listed
    assert fresh.engine is engine_before
