"""The routes the SillyTavern bridge extension calls besides retrieval: its hello, the monitor's
view of it (GET /bridge), the chat list, and the generations recorded for requests sent with
`X-DLE-Client: st-bridge`. A real engine and server on loopback."""

from __future__ import annotations

import json
import time

import pytest

from dle_desktop import __version__
from dle_desktop.server import routes_bridge
from dle_desktop.server.security import server_token
from dle_desktop.state.settings import Settings
from tests.retrieval._support import API, LiveServer, messages, titles, write_world

ST = "http://127.0.0.1:8000"
BRIDGE = {"X-DLE-Client": "st-bridge"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    base = tmp_path_factory.mktemp("bridge")
    settings = Settings().replace(
        st_vector_routing=True, st_forget_deleted_chats=False, ai_search_timeout=5000, ai_search_mode="ai-only"
    )
    server = LiveServer(write_world(base / "vault"), base / "data", settings=settings)
    yield server
    server.close()


@pytest.fixture(scope="module")
def page(live) -> dict:
    """The headers of a request from SillyTavern's page."""
    return {"Origin": ST, "Authorization": f"Bearer {server_token(live.secrets)}", **BRIDGE}


def monitor(live) -> dict:
    r = live.client.get(f"{API}/bridge")
    assert r.status_code == 200
    return r.json()


def test_hello_records_the_contact_and_answers_what_the_extension_needs(live, page):
    r = live.client.post(
        f"{API}/bridge/hello",
        headers=page,
        json={
            "extension_version": "0.3.0",
            "st_version": "1.13.5",
            "chat_id": "Tamsin - 2026-12-01",
            "character": "Tamsin",
            "last_error": None,
        },
    )
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ST
    info = r.json()
    assert info == {
        "server_version": __version__,
        "bundled_extension_version": info["bundled_extension_version"],
        "entries": 6,
        "index_ready": True,
        "index_version": live.engine.snapshot.version,
        "vector_routing": True,
        "forget_deleted_chats": False,
        "ai_search": {"enabled": False, "mode": "ai-only", "timeout_ms": 5000},
        "semantic_enabled": False,
        "budget_tokens": 3072,
    }
    snap = monitor(live)
    assert snap["connected"] and snap["origin"] == ST
    assert (snap["extension_version"], snap["st_version"], snap["chat_id"], snap["character"], snap["last_error"]) == (
        "0.3.0",
        "1.13.5",
        "Tamsin - 2026-12-01",
        "Tamsin",
        None,
    )
    assert time.time() - snap["last_contact"] < 30


def test_hello_fields_are_optional_and_native_clients_may_say_it(live):
    r = live.client.post(f"{API}/bridge/hello", json={"last_error": "retrieve timed out"})
    assert r.status_code == 200
    snap = monitor(live)
    assert snap["origin"] is None and snap["extension_version"] is None and snap["last_error"] == "retrieve timed out"


@pytest.mark.parametrize(
    "body, problem",
    [
        (b'{"extension_version": "1", "bogus": 2}', "unknown field(s): bogus"),
        (b'{"chat_id": 5}', "chat_id must be text"),
        (json.dumps({"character": "x" * 1001}).encode(), "limit is 1000"),
        (b"[]", "send an object"),
        (b"", "empty"),
        (b"{", "not valid JSON"),
    ],
)
def test_a_bad_hello_is_refused_and_recorded_nowhere(live, body, problem):
    live.client.post(f"{API}/bridge/hello", json={"extension_version": "before"})
    r = live.client.post(f"{API}/bridge/hello", content=body)
    assert r.status_code == 400 and problem in r.json()["error"]
    assert monitor(live)["extension_version"] == "before"


def test_the_bundled_extensions_version_comes_from_its_manifest(live, tmp_path, monkeypatch):
    monkeypatch.setattr(routes_bridge, "resources_dir", lambda: tmp_path)
    assert live.client.post(f"{API}/bridge/hello", json={}).json()["bundled_extension_version"] is None
    manifest = tmp_path / "st_extension" / "dle-desktop-bridge" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"display_name": "DLE Desktop bridge", "version": "0.4.1"}), encoding="utf-8")
    assert live.client.post(f"{API}/bridge/hello", json={}).json()["bundled_extension_version"] == "0.4.1"
    manifest.write_text("{not json", encoding="utf-8")
    assert live.client.post(f"{API}/bridge/hello", json={}).json()["bundled_extension_version"] is None


def test_a_retrieve_from_the_bridge_is_recorded_as_a_generation(live, page):
    before = monitor(live)["generations"]
    body = {"chat_id": "gen-1", "messages": messages("tamsin at the quay"), "character_name": "Narrator"}
    r = live.client.post(f"{API}/retrieve", json=body, headers=page)
    assert r.status_code == 200
    snap = monitor(live)
    assert snap["generations"] == before + 1
    assert snap["last_injected"] == titles(r.json()) and set(snap["last_injected"]) == {"Tamsin Reed", "Lantern Quay"}
    assert snap["last_total_tokens"] == r.json()["total_tokens"] > 0
    assert snap["chat_id"] == "gen-1" and snap["character"] == "Narrator" and snap["origin"] == ST
    assert 0 < snap["last_ms"] < 30_000


def test_only_the_bridges_real_generations_count(live, page):
    before = monitor(live)["generations"]
    ok = {"chat_id": "gen-2", "messages": messages("the bell")}
    assert live.client.post(f"{API}/retrieve", json=ok).status_code == 200  # no X-DLE-Client: not the bridge
    assert live.client.post(f"{API}/retrieve", json={**ok, "dry_run": True}, headers=page).status_code == 200
    assert live.client.post(f"{API}/retrieve", json={"messages": []}, headers=page).status_code == 400
    assert monitor(live)["generations"] == before
    r = live.client.post(f"{API}/retrieve", json=ok, headers={**page, "X-DLE-Client": "ST-Bridge"})
    assert r.status_code == 200 and monitor(live)["generations"] == before + 1
    assert monitor(live)["last_injected"] == ["Drowned Bell"]


def test_any_other_bridge_request_is_a_sign_of_life(live, page):
    first = monitor(live)["last_contact"]
    time.sleep(0.05)
    assert live.client.get(f"{API}/status", headers=page).status_code == 200
    assert monitor(live)["last_contact"] > first
    later = monitor(live)["last_contact"]
    assert live.client.get(f"{API}/no-such-route", headers=page).status_code == 404  # failures count for nothing
    assert live.client.get(f"{API}/status").status_code == 200  # nor do other clients
    assert monitor(live)["last_contact"] == later


def test_the_chat_list_is_newest_first(live, page):
    for chat in ("list-a", "list-b", "list/group c"):
        assert (
            live.client.post(f"{API}/retrieve", json={"chat_id": chat, "messages": messages("omen")}).status_code == 200
        )
        time.sleep(0.05)
    live.put("list-a", "notebook", "notebook", "touched last")  # saves the chat: newest now
    r = live.client.get(f"{API}/chats", headers=page)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ST
    chats = r.json()["chats"]
    assert [c["chat_id"] for c in chats[:3]] == ["list-a", "list/group c", "list-b"]
    assert chats[0] == {"chat_id": "list-a", "generation_count": 1, "updated_at": chats[0]["updated_at"], "records": 1}
    assert isinstance(chats[0]["updated_at"], float) and time.time() - chats[0]["updated_at"] < 60
    assert [c["updated_at"] for c in chats] == sorted((c["updated_at"] for c in chats), reverse=True)
    assert "gen-1" in {c["chat_id"] for c in chats}
    assert [c["chat_id"] for c in live.client.get(f"{API}/chats?limit=2").json()["chats"]] == ["list-a", "list/group c"]
    live.client.delete(f"{API}/chats/list-a")
    assert "list-a" not in {c["chat_id"] for c in live.client.get(f"{API}/chats").json()["chats"]}


@pytest.mark.parametrize("limit", ["0", "501", "x", "-1", "1.5", "99999999999999"])
def test_a_bad_chat_list_limit_is_refused(live, limit):
    r = live.client.get(f"{API}/chats?limit={limit}")
    assert r.status_code == 400 and "limit" in r.json()["error"]


def test_the_chat_list_does_not_clash_with_the_chat_routes(live):
    live.put("chats", "notebook", "notebook", "a chat called chats")
    assert live.client.get(f"{API}/chats/chats/notebook").json() == {"notebook": "a chat called chats"}
    assert live.client.get(f"{API}/chats/").status_code == 400  # an empty chat id
    r = live.client.delete(f"{API}/chats")
    assert r.status_code == 405 and "GET" in r.headers["allow"]


def test_the_monitor_survives_an_engine_replacement(tmp_path):
    from dle_desktop.engine.engine import Engine
    from dle_desktop.vault.sources import FolderSource

    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data", sync=False)
    try:
        assert (
            server.client.post(f"{API}/bridge/hello", json={"extension_version": "9"}, headers=BRIDGE).status_code
            == 200
        )
        kept = server.runner.bridge_monitor
        engine = Engine(
            server.paths,
            Settings().replace(st_vector_routing=True),
            server.secrets,
            vault_override=[FolderSource("lore", server.vault)],
        )
        old = server.engine

        async def swap():
            await old.stop()
            server.runner.set_engine(engine)
            await engine.start(initial_sync=True, watch=False)
            await engine.wait_ready()

        server.thread.call(swap(), timeout=30)
        server.engine = engine
        assert server.runner.bridge_monitor is kept
        assert monitor(server)["extension_version"] == "9"
        info = server.client.post(f"{API}/bridge/hello", json={"extension_version": "10"}).json()
        assert info["vector_routing"] is True and info["index_ready"] is True and info["entries"] == 6
        assert kept.snapshot()["extension_version"] == "10"
    finally:
        server.close()


def test_before_the_first_index_the_hello_says_so(tmp_path):
    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data", sync=False)
    try:
        if server.engine.snapshot is None:  # the cache may not have been loaded yet; then it is not ready
            info = server.client.post(f"{API}/bridge/hello", json={}).json()
            assert (info["index_ready"], info["entries"], info["index_version"]) == (False, 0, None)
    finally:
        server.close()
