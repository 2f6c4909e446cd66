"""The embedded HTTP server on a real loopback port: ServerRunner on an EngineThread, httpx client."""

from __future__ import annotations

import socket
from urllib.parse import quote

import httpx
import pytest

from dle_desktop import __version__
from dle_desktop.engine.engine import Engine
from dle_desktop.engine.thread import EngineThread
from dle_desktop.errors import ConfigError
from dle_desktop.server.app import ServerRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource

API = "/api/dle/v1"


class Served:
    def __init__(self, root, data, settings: Settings | None = None, vault: str = "lore") -> None:
        self.root = root
        self.thread = EngineThread().start()
        self.engine = Engine(
            AppPaths(data, data).ensure(),
            settings or Settings(),
            SecretStore(use_keyring=False),
            vault_override=[FolderSource(vault, root)],
        )
        self.thread.call(self.engine.start(watch=False), timeout=30)
        self.thread.call(self.engine.wait_ready(), timeout=30)
        self.runner = ServerRunner(self.engine, "127.0.0.1", 0)
        self.thread.call(self.runner.start(), timeout=30)
        self.port = self.runner.port
        self.client = httpx.Client(base_url=self.runner.url, timeout=10)

    def close(self) -> None:
        self.client.close()
        try:
            self.thread.call(self.runner.stop(), timeout=15)
            self.thread.call(self.engine.stop(), timeout=15)
        finally:
            self.thread.stop()


@pytest.fixture
def served(make_vault, lore, tmp_path):
    root = make_vault(
        {
            "Places/Lantern Quay.md": lore(
                "Lantern Quay", ("quay", "lanterns"), body="The docks. See [[Tamsin Reed]]."
            ),
            "Characters/Tamsin Reed.md": lore("Tamsin Reed", ("Tamsin", "ferry"), extra="priority: 20"),
            "Characters/Old Hobb.md": lore("Old Hobb", ("hobb",), extra="requires: [Nobody Here]"),
            "Broken.md": "---\ntags: [lorebook\n---\n# Broken\n",
            "Plain.md": "no frontmatter",
        }
    )
    s = Served(root, tmp_path / "data")
    yield s
    s.close()


def test_status_shape(served):
    r = served.client.get(f"{API}/status")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["version"] == __version__
    assert body["entries"] == 3
    assert body["skipped"] == 2
    assert body["vaults"] == [
        {"name": "lore", "kind": "folder", "location": str(served.root), "enabled": True, "entries": 3, "error": None}
    ]
    assert body["syncing"] is False and body["sync_paused"] is False
    assert isinstance(body["index_version"], int)
    assert "server" not in {k.lower() for k in r.headers}  # no server banner


def test_entries_list_and_query_filter(served):
    r = served.client.get(f"{API}/entries")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True
    assert sorted(e["title"] for e in body["entries"]) == ["Lantern Quay", "Old Hobb", "Tamsin Reed"]
    assert all("content" not in e for e in body["entries"])  # the list leaves bodies out
    first = next(e for e in body["entries"] if e["title"] == "Tamsin Reed")
    assert first["path"] == "Characters/Tamsin Reed.md" and first["vault"] == "lore" and first["priority"] == 20

    by_title = served.client.get(f"{API}/entries", params={"q": "lantern"}).json()["entries"]
    assert [e["title"] for e in by_title] == ["Lantern Quay"]
    by_key = served.client.get(f"{API}/entries", params={"q": "FERRY"}).json()["entries"]
    assert [e["title"] for e in by_key] == ["Tamsin Reed"]
    assert served.client.get(f"{API}/entries", params={"q": "zzz-nothing"}).json()["entries"] == []
    assert len(served.client.get(f"{API}/entries", params={"vault": "lore"}).json()["entries"]) == 3
    assert served.client.get(f"{API}/entries", params={"vault": "other"}).json()["entries"] == []


def test_single_entry_by_vault_and_path(served):
    r = served.client.get(f"{API}/entries/lore/{quote('Places/Lantern Quay.md')}")
    assert r.status_code == 200
    e = r.json()
    assert e["title"] == "Lantern Quay"
    assert e["keys"] == ["quay", "lanterns"]
    assert "The docks." in e["content"]
    assert e["resolved_links"] == ["Tamsin Reed"]


@pytest.mark.parametrize(
    "path",
    [
        "lore/Places/Nowhere.md",
        "other/Places/Lantern Quay.md",
        "lore/Broken.md",
        "lore/Places",
    ],
)
def test_unknown_entry_is_a_404_json(served, path):
    r = served.client.get(f"{API}/entries/{quote(path)}")
    assert r.status_code == 404
    assert "error" in r.json()


def test_health(served):
    r = served.client.get(f"{API}/health")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"errors", "warnings", "info"}
    for items in body.values():
        for f in items:
            assert {"entry", "code", "message"} <= set(f)
    assert ("requires_missing", "Old Hobb") in {(f["code"], f["entry"]) for f in body["errors"]}


def test_skipped(served):
    body = served.client.get(f"{API}/skipped").json()
    assert sorted(s["path"] for s in body["skipped"]) == ["Broken.md", "Plain.md"]
    broken = next(s for s in body["skipped"] if s["path"] == "Broken.md")
    assert broken["line"] and broken["reason"] and broken["code"] == "SKIP_BAD_FRONTMATTER"


def test_post_sync_picks_up_changes(served, lore):
    (served.root / "New.md").write_text(lore("Newcomer", ("new",)), encoding="utf-8")
    r = served.client.post(f"{API}/sync")
    assert r.status_code == 200
    body = r.json()
    assert body["changes"]["added"] == ["lore:New.md"]
    assert body["changes"]["has_changes"] is True
    assert body["entries"] == 4
    assert served.client.get(f"{API}/status").json()["entries"] == 4
    again = served.client.post(f"{API}/sync").json()
    assert again["changes"]["has_changes"] is False
    forced = served.client.post(f"{API}/sync", params={"force": "1"})
    assert forced.status_code == 200


def test_sync_is_post_only(served):
    r = served.client.get(f"{API}/sync")
    assert r.status_code == 405


def test_sync_when_the_vault_is_gone_still_answers(served, tmp_path):
    served.root.rename(tmp_path / "gone")
    r = served.client.post(f"{API}/sync")
    assert r.status_code == 200
    status = served.client.get(f"{API}/status").json()
    assert status["entries"] == 3  # the last good index is kept
    assert "does not exist" in status["vaults"][0]["error"]


def test_unknown_route_is_a_404_json(served):
    r = served.client.get("/no/such/route")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == {"error": "no route GET /no/such/route"}
    r = served.client.delete(f"{API}/nothing-here")
    assert r.status_code == 404 and "error" in r.json()


# ----------------------------------------------------------------------------- Host header


@pytest.mark.parametrize(
    "host",
    [
        "evil.com",
        "evil.com:{port}",
        "localhost.evil.com",
        "127.0.0.1.nip.io:{port}",
        "10.0.0.5:{port}",
        "localhost:{port}:80",
        "",
    ],
)
def test_foreign_host_headers_are_refused(served, host):
    r = served.client.get(f"{API}/status", headers={"Host": host.format(port=served.port)})
    assert r.status_code in (403, 400)  # an empty Host is refused by the HTTP layer or by us
    if r.status_code == 403:
        assert "not allowed" in r.json()["error"]


@pytest.mark.parametrize(
    "host", ["localhost:{port}", "127.0.0.1:{port}", "LOCALHOST:{port}", "localhost", "127.0.0.1", "[::1]:{port}"]
)
def test_loopback_host_headers_are_accepted(served, host):
    r = served.client.get(f"{API}/status", headers={"Host": host.format(port=served.port)})
    assert r.status_code == 200, r.text


def test_http10_request_without_host_is_refused(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(b"GET /api/dle/v1/status HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.split(b"\r\n", 1)[0].split(b" ")[1] == b"403"


def test_host_check_covers_every_route(served):
    for method, path in (("GET", f"{API}/entries"), ("POST", f"{API}/sync"), ("GET", "/nope")):
        r = served.client.request(method, path, headers={"Host": "attacker.example"})
        assert r.status_code == 403


# ----------------------------------------------------------------------------- lifecycle


def test_busy_port_is_a_clear_config_error(served):
    runner = ServerRunner(served.engine, "127.0.0.1", served.port)
    with pytest.raises(ConfigError) as err:
        served.thread.call(runner.start(), timeout=15)
    message = str(err.value)
    assert f"127.0.0.1:{served.port}" in message
    assert "--port" in message
    # The running server is unaffected.
    assert served.client.get(f"{API}/status").status_code == 200


def test_port_held_by_another_program_is_a_config_error(served):
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    try:
        port = blocker.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
            served.thread.call(ServerRunner(served.engine, "127.0.0.1", port).start(), timeout=15)
    finally:
        blocker.close()


def test_stop_releases_the_port(served):
    port = served.port
    assert served.client.get(f"{API}/status").status_code == 200  # leaves a keep-alive connection open
    served.thread.call(served.runner.stop(), timeout=15)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}{API}/status", timeout=2)
    # The same port can be bound again at once (a restart with unchanged settings).
    again = ServerRunner(served.engine, "127.0.0.1", port)
    served.thread.call(again.start(), timeout=15)
    try:
        assert again.port == port
        assert httpx.get(f"{again.url}{API}/status", timeout=5).json()["entries"] == 3
    finally:
        served.thread.call(again.stop(), timeout=15)
    served.runner = again  # close() stops it again: stopping twice must be harmless


def test_url_property():
    assert ServerRunner(None, "127.0.0.1", 8765).url == "http://127.0.0.1:8765"
    assert ServerRunner(None, "::1", 8765).url == "http://[::1]:8765"


def test_vault_names_and_paths_with_spaces_and_non_ascii(make_vault, lore, tmp_path):
    root = make_vault(
        {
            "Characters/Aurélie Duvêne.md": lore("Aurélie Duvêne", ("Aurélie",)),
            "Places/龍 Gate #1?.md": lore("Dragon Gate", ("gate",)),
        }
    )
    s = Served(root, tmp_path / "data", vault="My Lore Vault")
    try:
        r = s.client.get(f"{API}/entries/{quote('My Lore Vault')}/{quote('Characters/Aurélie Duvêne.md')}")
        assert r.status_code == 200 and r.json()["title"] == "Aurélie Duvêne"
        r = s.client.get(f"{API}/entries/{quote('My Lore Vault')}/{quote('Places/龍 Gate #1?.md')}")
        assert r.status_code == 200 and r.json()["title"] == "Dragon Gate"
        assert s.client.get(f"{API}/entries", params={"q": "aurélie"}).json()["entries"][0]["vault"] == "My Lore Vault"
        assert s.client.get(f"{API}/entries", params={"vault": "My Lore Vault"}).json()["entries"]
    finally:
        s.close()


def test_a_note_linked_from_outside_the_vault_is_not_indexed_nor_served(make_vault, lore, tmp_path):
    """One rule with the Obsidian REST emulation: a note whose real path leaves the vault (a
    symbolic link, to a file or through a folder) is not indexed; the health check says why."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(lore("Secret", ("secret",)), encoding="utf-8")
    (outside / "folder").mkdir()
    (outside / "folder" / "Hidden.md").write_text(lore("Hidden", ("hidden",)), encoding="utf-8")
    root = make_vault({"Places/Lantern Quay.md": lore("Lantern Quay", ("quay",))})
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked folder").symlink_to(outside / "folder", target_is_directory=True)
    (root / "Places" / "inside.md").symlink_to(root / "Places" / "Lantern Quay.md")  # a link within is fine
    s = Served(root, tmp_path / "data")
    try:
        assert s.client.get(f"{API}/entries/lore/link.md").status_code == 404
        assert s.client.get(f"{API}/entries/lore/{quote('linked folder/Hidden.md')}").status_code == 404
        assert s.client.get(f"{API}/entries/lore/{quote('Places/inside.md')}").status_code == 200
        titles = {e["title"] for e in s.client.get(f"{API}/entries").json()["entries"]}
        assert "Secret" not in titles and "Hidden" not in titles
        skipped = {k["path"]: k for k in s.engine.snapshot.to_json()["skipped"]}
        for path in ("link.md", "linked folder/Hidden.md"):
            assert skipped[path]["code"] == "SKIP_OUTSIDE_VAULT"
            assert "outside the vault folder" in skipped[path]["reason"]
        health = s.client.get(f"{API}/health").json()
        assert any(f["code"] == "skip_outside_vault" and "link.md" in f["message"] for f in health["warnings"])
    finally:
        s.close()
