"""ObsidianRestSource against a real (fake) OLRA server on loopback: no mocks of httpx."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from dle_desktop.errors import ConfigError, VaultAuthError, VaultError, VaultPathError, VaultUnreachable
from dle_desktop.vault.obsidian_rest import (
    ObsidianRestSource,
    breaker_backoff_ms,
    breaker_for,
    check_host_allowed,
    encode_vault_path,
    parse_vault_spec,
    reset_circuit_breakers,
)
from dle_desktop.vault.sources import FolderSource
from tests.fakes.canned_server import CannedServer
from tests.fakes.obsidian_server import FakeObsidian

T = TypeVar("T")
KEY = "sEcReT-KEY-9f8e7d6c"


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]  # every awaitable the tests pass is a coroutine


async def using(source: ObsidianRestSource, body: Callable[[ObsidianRestSource], Awaitable[T]]) -> T:
    """Run `body` and always close the source's client, as the app does on shutdown."""
    try:
        return await body(source)
    finally:
        await source.close()


def make_vault(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def closed_port() -> int:
    """A loopback port that nothing listens on (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def _fresh_breakers() -> Iterator[None]:
    reset_circuit_breakers()
    yield
    reset_circuit_breakers()


@pytest.fixture
def clock() -> FakeClock:
    fake = FakeClock()
    reset_circuit_breakers(fake)
    return fake


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_vault(
        tmp_path / "vault",
        {
            "Welcome.md": "# Welcome\n",
            "notes.txt": "not a note",
            "Characters/Gorduin.md": "---\ntags: [lorebook]\n---\nGorduin\n",
            "Characters/portrait.png": "png",
            "Characters/Villains/Angel Crown.md": "Angel\n",
            "World/Rules/Duskfrost.md": "Duskfrost\n",
            "DeepLore/field-definitions.yaml": "fields: []\n",
            ".obsidian/app.json": "{}",
            ".hidden.md": "hidden",
            "Characters/.draft.md": "draft",
            ".trash/old.md": "old",
        },
    )


@pytest.fixture
def server(vault: Path) -> Iterator[FakeObsidian]:
    with FakeObsidian(vault, api_key=KEY) as srv:
        yield srv


# --------------------------------------------------------------------------- spec parsing


@pytest.mark.parametrize(
    ("spec", "host", "port", "https", "key", "name"),
    [
        ("http://k@127.0.0.1:27123", "127.0.0.1", 27123, False, "k", "127.0.0.1:27123"),
        ("https://k@localhost", "localhost", 27124, True, "k", "localhost:27124"),
        ("http://127.0.0.1", "127.0.0.1", 27123, False, None, "127.0.0.1:27123"),
        ("http://k@192.168.1.20:28000/", "192.168.1.20", 28000, False, "k", "192.168.1.20:28000"),
        ("HTTP://k@LOCALHOST:1234", "localhost", 1234, False, "k", "localhost:1234"),
        ("http://k@[::1]:27123", "::1", 27123, False, "k", "[::1]:27123"),
        ("https://k@[fd00::5]", "fd00::5", 27124, True, "k", "[fd00::5]:27124"),
        ("http://a%40b%3Ac@10.0.0.2:27123", "10.0.0.2", 27123, False, "a@b:c", "10.0.0.2:27123"),
        ("  http://@127.0.0.1:27123  ", "127.0.0.1", 27123, False, None, "127.0.0.1:27123"),
    ],
)
def test_parse_good_specs(spec: str, host: str, port: int, https: bool, key: str | None, name: str) -> None:
    src = parse_vault_spec(spec)
    assert (src.host, src.port, src.https, src.reveal_api_key(), src.name) == (host, port, https, key, name)
    assert src.kind == "obsidian-rest" and src.max_concurrency == 50 and src.enabled


def test_parse_spec_uses_given_name() -> None:
    assert parse_vault_spec("http://k@127.0.0.1", name="Lore").name == "Lore"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("", "empty"),
        ("127.0.0.1:27123", "http:// or https://"),
        ("ftp://k@127.0.0.1", "http:// or https://"),
        ("http://k@", "host is missing"),
        ("http://k@:27123", "host is missing"),
        ("http://k@127.0.0.1:0", "port"),
        ("http://k@127.0.0.1:99999", "port"),
        ("http://k@127.0.0.1:abc", "port"),
        ("http://k@127.0.0.1:", "port"),
        ("http://k@127.0.0.1:27123/vault", "no path"),
        ("http://k@127.0.0.1?x=1", "no path"),
        ("http://k@::1:27123", "brackets"),
        ("http://k@[::1:27123", "unclosed"),
        ("http://k@[::1]x", "after ']'"),
        ("http://k@example.com:27123", "not allowed"),
        ("http://k@8.8.8.8", "not allowed"),
    ],
)
def test_parse_bad_specs(spec: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("?", r"\?").replace("[", r"\[")):
        parse_vault_spec(spec)


def test_bad_spec_message_hides_the_key() -> None:
    specs = (f"ftp://{KEY}@127.0.0.1", f"http://{KEY}@8.8.8.8", f"http://{KEY}@127.0.0.1:70000", f"{KEY}@127.0.0.1")
    for spec in specs:
        with pytest.raises(ConfigError) as info:
            parse_vault_spec(spec)
        assert KEY not in str(info.value)


# --------------------------------------------------------------------------- host allowlist


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST",
        "localhost.localdomain",
        "127.0.0.1",
        "127.255.255.254",
        "10.0.0.5",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.0.10",
        "169.254.10.10",
        "::1",
        "[::1]",
        "fd12:3456::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:7f00:2",
    ],
)
def test_allowed_hosts(host: str) -> None:
    assert check_host_allowed(host) == host.lower().strip("[]")


@pytest.mark.parametrize(
    "host",
    [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "172.15.255.255",
        "100.64.0.1",
        "100.127.255.255",
        "0.0.0.0",
        "255.255.255.255",
        "2130706433",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "0x7f000001",
        "127.1",
        "127.0.0.1.",
        "017700000001",
        "127.000.000.001",
        "256.0.0.1",
        "example.com",
        "obsidian.local",
        "localhost.evil.com",
        "169.254.169.254",
        "metadata.google.internal",
        "::",
        "2001:4860:4860::8888",
        "fc00::1",
        "::ffff:10.0.0.1",
        "::ffff:8.8.8.8",
        "fe80::1%eth0",
        "",
        "   ",
    ],
)
def test_refused_hosts(host: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_host_allowed(host)
    if host.strip():
        assert "never leaves the local network" in str(info.value)


def test_constructor_checks_host_and_port() -> None:
    with pytest.raises(ConfigError):
        ObsidianRestSource("v", "203.0.113.7", 27123, KEY)
    with pytest.raises(ConfigError):
        ObsidianRestSource("v", "127.0.0.1", 0, KEY)


def test_encode_vault_path_matches_encodeURIComponent() -> None:
    # Expected values are what JS `p.split('/').map(encodeURIComponent).join('/')` gives.
    assert encode_vault_path("My Folder #1/Ü 100%.md") == "My%20Folder%20%231/%C3%9C%20100%25.md"
    assert encode_vault_path("a+b&c=d?.md") == "a%2Bb%26c%3Dd%3F.md"
    assert encode_vault_path("it's (draft)!~*.md") == "it's%20(draft)!~*.md"
    assert encode_vault_path("Sub/Deep", folder=True) == "Sub/Deep/"
    assert encode_vault_path("", folder=True) == ""


# --------------------------------------------------------------------------- listing


def test_recursive_listing_keeps_only_visible_notes(server: FakeObsidian) -> None:
    listing = run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    assert listing.stamps == {
        "Welcome.md": None,
        "Characters/Gorduin.md": None,
        "Characters/Villains/Angel Crown.md": None,
        "World/Rules/Duskfrost.md": None,
    }
    assert not listing.partial and listing.problems == ()


def test_listing_requests_look_like_dle(server: FakeObsidian) -> None:
    run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    paths = sorted(r.raw_path for r in server.requests)
    assert paths == sorted(
        [
            "/vault/",
            "/vault/Characters/",
            "/vault/Characters/Villains/",
            "/vault/DeepLore/",
            "/vault/World/",
            "/vault/World/Rules/",
        ]
    )
    for req in server.requests:
        assert req.method == "GET"
        assert req.headers["Authorization"] == f"Bearer {KEY}"
        assert req.headers["Accept"] == "application/json"
        assert "Content-Type" not in req.headers


def test_listing_matches_folder_source(vault: Path, server: FakeObsidian) -> None:
    rest = run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    assert set(rest.stamps) == set(FolderSource("v", vault).list_sync().stamps)


def test_empty_vault_is_empty_not_an_error(tmp_path: Path) -> None:
    # Only things Obsidian cannot see: OLRA answers 404 on the root listing.
    folder = make_vault(tmp_path / "empty", {".obsidian/app.json": "{}"})
    (folder / "Empty Folder").mkdir()
    with FakeObsidian(folder, api_key=KEY) as srv:
        listing = run(using(parse_vault_spec(srv.spec), lambda s: s.list_notes()))
        assert srv.hits["/vault/"] == 1
    assert listing.stamps == {} and not listing.partial


def test_vault_without_notes_lists_nothing(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v", {"readme.txt": "x", "img/a.png": "x"})
    with FakeObsidian(folder, api_key=KEY) as srv:
        listing = run(using(parse_vault_spec(srv.spec), lambda s: s.list_notes()))
    assert listing.stamps == {} and not listing.partial


SPECIAL = {
    "My Folder #1/Ünïcödé 100%.md": "unicode and percent\n",
    "My Folder #1/a+b&c=d?.md": "query characters\n",
    "hash#tag.md": "hash\n",
    "it's (draft)!.md": "quotes\n",
    "日本語/メモ.md": "japanese\n",
    "50% off/%41.md": "literal %41 must not decode to A\n",
}


def test_special_names_round_trip(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v", SPECIAL)

    async def body(src: ObsidianRestSource) -> tuple[set[str], dict[str, str]]:
        listing = await src.list_notes()
        texts = {p: await src.read_text(p) for p in listing.stamps}
        return set(listing.stamps), texts

    with FakeObsidian(folder, api_key=KEY) as srv:
        names, texts = run(using(parse_vault_spec(srv.spec), body))
        raw = {r.raw_path for r in srv.requests}
    assert names == set(SPECIAL)
    assert texts == SPECIAL
    assert "/vault/My%20Folder%20%231/" in raw
    assert "/vault/My%20Folder%20%231/%C3%9Cn%C3%AFc%C3%B6d%C3%A9%20100%25.md" in raw
    assert "/vault/50%25%20off/%2541.md" in raw


def test_write_with_special_names_lands_on_the_exact_file(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v", {"a.md": "a"})
    with FakeObsidian(folder, api_key=KEY) as srv:
        run(using(parse_vault_spec(srv.spec), lambda s: s.write_text("New #2/Ü 50%/x?.md", "hi ✓\n")))
    assert (folder / "New #2" / "Ü 50%" / "x?.md").read_text(encoding="utf-8") == "hi ✓\n"


def test_failed_subfolder_makes_listing_partial(server: FakeObsidian) -> None:
    server.fail_paths["/vault/Characters/"] = 500
    listing = run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    assert listing.partial
    assert set(listing.stamps) == {"Welcome.md", "World/Rules/Duskfrost.md"}
    assert len(listing.problems) == 1
    assert listing.problems[0].startswith("Characters: ") and "HTTP 500" in listing.problems[0]


def test_failed_deep_subfolder_keeps_its_siblings(server: FakeObsidian) -> None:
    server.fail_paths["/vault/Characters/Villains/"] = 503
    listing = run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    assert listing.partial and "Characters/Gorduin.md" in listing.stamps
    assert "Characters/Villains/Angel Crown.md" not in listing.stamps


def test_failed_root_listing_raises(server: FakeObsidian) -> None:
    server.fail_paths["/vault/"] = 500
    with pytest.raises(VaultError) as info:
        run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    assert type(info.value) is VaultError
    assert "HTTP 500" in str(info.value) and "injected failure" in str(info.value)


def test_root_listing_with_wrong_key_is_auth_error(server: FakeObsidian) -> None:
    src = parse_vault_spec(f"http://wrong-{KEY}@127.0.0.1:{server.port}")
    with pytest.raises(VaultAuthError, match="the API key was refused") as info:
        run(using(src, lambda s: s.list_notes()))
    assert KEY not in str(info.value) and "401" in str(info.value)


def test_missing_key_says_so(server: FakeObsidian) -> None:
    with pytest.raises(VaultAuthError, match="none is set"):
        run(using(parse_vault_spec(server.url), lambda s: s.list_notes()))
    assert "Authorization" not in server.requests[-1].headers


def test_odd_names_from_the_server_are_skipped(server: FakeObsidian) -> None:
    server.listing_overrides[""] = ["a.md", "../evil.md", ".secret.md", "x.txt", "B.MD", 42, "Gone/", ".cfg/"]
    listing = run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
    # "Gone/" 404s: a folder that vanished between listings has no notes, it is not a failure.
    assert set(listing.stamps) == {"a.md", "B.MD"}
    assert not listing.partial
    assert "/vault/.cfg/" not in server.hits


def test_depth_is_capped_like_folder_source(tmp_path: Path) -> None:
    deep = "/".join(f"L{i}" for i in range(22))
    folder = make_vault(tmp_path / "v", {f"{deep}/bottom.md": "x", "L0/L1/L2/mid.md": "x", "top.md": "x"})
    with FakeObsidian(folder, api_key=KEY) as srv:
        rest = run(using(parse_vault_spec(srv.spec), lambda s: s.list_notes()))
    local = FolderSource("v", folder).list_sync()
    assert {"top.md", "L0/L1/L2/mid.md"} <= set(rest.stamps)
    assert f"{deep}/bottom.md" not in rest.stamps
    assert set(rest.stamps) == set(local.stamps)
    assert rest.partial and any("deeper than 20 folders" in p for p in rest.problems)


def test_listing_never_has_more_than_ten_folders_in_flight(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v", {f"F{i:02}/n.md": "x" for i in range(35)})
    with FakeObsidian(folder, api_key=KEY) as srv:
        srv.slow_paths["/vault/F"] = 0.1
        listing = run(using(parse_vault_spec(srv.spec), lambda s: s.list_notes()))
        peak = srv.max_in_flight
    assert len(listing.stamps) == 35
    assert 2 <= peak <= 10


def test_reads_never_have_more_than_fifty_in_flight(tmp_path: Path) -> None:
    folder = make_vault(tmp_path / "v", {f"n{i:03}.md": f"note {i}" for i in range(130)})

    async def body(src: ObsidianRestSource) -> list[str]:
        paths = sorted((await src.list_notes()).stamps)
        srv.reset_stats()
        srv.latency = 0.1
        return await asyncio.gather(*(src.read_text(p) for p in paths))

    with FakeObsidian(folder, api_key=KEY) as srv:
        texts = run(using(parse_vault_spec(srv.spec), body))
        peak = srv.max_in_flight
    assert texts == [f"note {i}" for i in range(130)]
    assert 10 <= peak <= 50


# --------------------------------------------------------------------------- read and write


def test_read_note_and_yaml(server: FakeObsidian) -> None:
    async def body(src: ObsidianRestSource) -> tuple[str, str]:
        return await src.read_text("Characters/Gorduin.md"), await src.read_text("DeepLore/field-definitions.yaml")

    note, yaml = run(using(parse_vault_spec(server.spec), body))
    assert note.startswith("---\ntags: [lorebook]") and yaml == "fields: []\n"
    note_req, yaml_req = server.requests
    assert note_req.headers["Accept"] == "text/markdown" and yaml_req.headers["Accept"] == "text/plain"
    assert "Content-Type" not in note_req.headers


def test_read_missing_file(server: FakeObsidian) -> None:
    async def body(src: ObsidianRestSource) -> str | None:
        with pytest.raises(FileNotFoundError):
            await src.read_text("Nope.md")
        with pytest.raises(FileNotFoundError):
            await src.read_text(".hidden.md")  # Obsidian cannot see dot-files
        return await src.read_optional("DeepLore/field-definitions-missing.yaml")

    assert run(using(parse_vault_spec(server.spec), body)) is None
    assert breaker_for("127.0.0.1", server.port).failures == 0  # 404 is not a failure


def test_read_refuses_escaping_paths_without_a_request(server: FakeObsidian) -> None:
    async def body(src: ObsidianRestSource) -> None:
        for bad in ("../secret.md", "/etc/passwd", "a/../../b.md", ""):
            with pytest.raises(VaultPathError):
                await src.read_text(bad)
            with pytest.raises(VaultPathError):
                await src.write_text(bad, "x")

    run(using(parse_vault_spec(server.spec), body))
    assert server.requests == []


def test_read_server_error(server: FakeObsidian) -> None:
    server.fail_paths["/vault/Welcome.md"] = 502
    with pytest.raises(VaultError, match=r"HTTP 502: .*injected failure"):
        run(using(parse_vault_spec(server.spec), lambda s: s.read_text("Welcome.md")))


def test_write_creates_folders(vault: Path, server: FakeObsidian) -> None:
    async def body(src: ObsidianRestSource) -> str:
        await src.write_text("Sessions/2024/Day 1.md", "# Day 1\n")
        await src.write_text("DeepLore/field-definitions.yaml", "fields: [mood]\n")
        return await src.read_text("Sessions/2024/Day 1.md")

    assert run(using(parse_vault_spec(server.spec), body)) == "# Day 1\n"
    assert (vault / "DeepLore" / "field-definitions.yaml").read_text() == "fields: [mood]\n"
    note_put, yaml_put = [r for r in server.requests if r.method == "PUT"]
    assert note_put.raw_path == "/vault/Sessions/2024/Day%201.md"
    assert note_put.headers["Content-Type"] == "text/markdown" and note_put.headers["Accept"] == "text/markdown"
    assert yaml_put.headers["Content-Type"] == "text/plain"
    assert note_put.body == b"# Day 1\n"


def test_write_failure_reports_status_and_body(server: FakeObsidian) -> None:
    server.fail_paths["/vault/ro.md"] = 500
    with pytest.raises(VaultError, match=r'^HTTP 500: \{"message": "injected failure"'):
        run(using(parse_vault_spec(server.spec), lambda s: s.write_text("ro.md", "x")))


def test_write_with_wrong_key(server: FakeObsidian) -> None:
    src = parse_vault_spec(f"http://nope@127.0.0.1:{server.port}")
    with pytest.raises(VaultAuthError, match=r"^HTTP 401: "):
        run(using(src, lambda s: s.write_text("x.md", "x")))


# --------------------------------------------------------------------------- connection test


def test_connection_ok(server: FakeObsidian) -> None:
    result = run(using(parse_vault_spec(server.spec), lambda s: s.test_connection()))
    assert result["ok"] is True and result["authenticated"] is True and result["version"] == "3.2.0"
    assert [r.raw_path for r in server.requests] == ["/", "/vault/"]


def test_connection_with_bad_key(server: FakeObsidian) -> None:
    result = run(using(parse_vault_spec(f"http://bad@127.0.0.1:{server.port}"), lambda s: s.test_connection()))
    assert result["ok"] is False and result["authenticated"] is False and result["version"] == "3.2.0"
    assert "the API key was refused" in str(result["message"])
    assert [r.raw_path for r in server.requests] == ["/"]  # OLRA's `authenticated: false` said it already


def test_connection_to_empty_vault(tmp_path: Path) -> None:
    with FakeObsidian(make_vault(tmp_path / "v", {}), api_key=KEY) as srv:
        result = run(using(parse_vault_spec(srv.spec), lambda s: s.test_connection()))
    assert result["ok"] is True and "empty" in str(result["message"])


def test_connection_to_a_server_that_answers_404_to_everything() -> None:
    # A 404 for /vault/ is OLRA's "empty vault", so this used to pass as a working connection.
    with CannedServer(404, b"Not Found", server_name="TinyHTTP/1.0") as other:
        src = parse_vault_spec(f"http://{KEY}@127.0.0.1:{other.port}")
        result = run(using(src, lambda s: s.test_connection()))
    assert result["ok"] is False and result["authenticated"] is False
    message = str(result["message"])
    assert "is not the Obsidian Local REST API (HTTP 404, answer: Not Found, server: TinyHTTP/1.0)" in message
    assert "27123" in message and KEY not in message


def test_connection_refused_on_the_root_says_the_key_was_refused() -> None:
    with CannedServer(401, b'{"message": "Authorization required."}', content_type="application/json") as other:
        result = run(using(parse_vault_spec(f"http://{KEY}@127.0.0.1:{other.port}"), lambda s: s.test_connection()))
    assert result["ok"] is False and "the API key was refused (HTTP 401)" in str(result["message"])
    assert other.paths == ["/"]


def test_connection_to_a_web_page_names_it() -> None:
    page = b"<!DOCTYPE html><html><head><title>\n  SillyTavern\n</title></head><body>hi</body></html>"
    with CannedServer(200, page, content_type="text/html; charset=utf-8") as other:
        result = run(using(parse_vault_spec(f"http://{KEY}@127.0.0.1:{other.port}"), lambda s: s.test_connection()))
    assert result["ok"] is False
    assert '(HTTP 200, an HTML page titled "SillyTavern", server: Canned/1.0)' in str(result["message"])


def test_connection_to_our_own_server_is_not_mistaken_for_obsidian(tmp_path: Path) -> None:
    from tests.retrieval._support import LiveServer, write_world

    ours = LiveServer(write_world(tmp_path / "world"), tmp_path / "data")
    try:
        result = run(using(parse_vault_spec(f"http://{KEY}@127.0.0.1:{ours.port}"), lambda s: s.test_connection()))
    finally:
        ours.close()
    assert result["ok"] is False and result["version"] is None
    assert "not the Obsidian Local REST API (HTTP 404" in str(result["message"])


def test_connection_to_nothing() -> None:
    result = run(using(parse_vault_spec(f"http://{KEY}@127.0.0.1:{closed_port()}"), lambda s: s.test_connection()))
    assert result == {"ok": False, "authenticated": False, "message": result["message"], "version": None}
    assert "cannot reach" in str(result["message"]) and KEY not in str(result["message"])


# --------------------------------------------------------------------------- network trouble


def test_closed_port_is_unreachable() -> None:
    src = parse_vault_spec(f"http://{KEY}@127.0.0.1:{closed_port()}")
    with pytest.raises(VaultUnreachable, match="cannot reach the server") as info:
        run(using(src, lambda s: s.list_notes()))
    assert KEY not in str(info.value)


def test_timeout_is_unreachable(server: FakeObsidian) -> None:
    server.slow_paths["/vault/Welcome.md"] = 3.0
    src = ObsidianRestSource("v", "127.0.0.1", server.port, KEY, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(VaultUnreachable, match=r"no answer within 0.3 s"):
        run(using(src, lambda s: s.read_text("Welcome.md")))
    assert time.monotonic() - start >= 0.3  # the timeout ended it, not the 3 s answer
    assert src.breaker.failures == 1


def test_dropped_connection_is_unreachable(server: FakeObsidian) -> None:
    server.drop_paths.add("/vault/Welcome.md")
    src = parse_vault_spec(server.spec)
    with pytest.raises(VaultUnreachable):
        run(using(src, lambda s: s.read_text("Welcome.md")))
    assert src.breaker.failures == 1


# --------------------------------------------------------------------------- circuit breaker


def test_backoff_numbers() -> None:
    assert [breaker_backoff_ms(f) for f in range(3, 9)] == [2000, 4000, 8000, 15000, 15000, 15000]


def test_breaker_open_half_open_close(server: FakeObsidian, clock: FakeClock) -> None:
    src = parse_vault_spec(server.spec)
    server.fail_paths["/vault/Welcome.md"] = 500

    async def refused(path: str) -> None:
        before = len(server.requests)
        with pytest.raises(VaultUnreachable, match="paused"):
            await src.read_text(path)
        assert len(server.requests) == before  # refused without touching the network

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(3):
            with pytest.raises(VaultError) as info:
                await src.read_text("Welcome.md")
            assert not isinstance(info.value, VaultUnreachable)
        assert src.breaker.is_open
        await refused("World/Rules/Duskfrost.md")  # every path on this address is paused
        clock.advance(1.999)
        await refused("Welcome.md")
        clock.advance(0.001)  # 2 s after the 3rd failure: one probe goes through, and fails
        with pytest.raises(VaultError, match="HTTP 500"):
            await src.read_text("Welcome.md")
        assert src.breaker.failures == 4
        clock.advance(3.999)  # 4th failure: 4 s
        await refused("Welcome.md")
        clock.advance(0.001)
        del server.fail_paths["/vault/Welcome.md"]
        assert await src.read_text("Welcome.md") == "# Welcome\n"  # the probe succeeds: closed
        assert not src.breaker.is_open and src.breaker.failures == 0
        assert await src.read_text("World/Rules/Duskfrost.md") == "Duskfrost\n"

    run(using(src, body))


def test_half_open_allows_a_single_probe(server: FakeObsidian, clock: FakeClock) -> None:
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        server.fail_paths["/vault/"] = 500
        for _ in range(3):
            with pytest.raises(VaultError):
                await src.read_text("Welcome.md")
        server.fail_paths.clear()
        gate = threading.Event()  # the probe is answered only when the test says so (no timing race)
        server.hold_paths["/vault/Welcome.md"] = gate
        clock.advance(2.0)
        probe = asyncio.create_task(src.read_text("Welcome.md"))
        while server.in_flight == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(VaultUnreachable, match="probe"):
            await src.read_text("World/Rules/Duskfrost.md")
        assert server.hits["/vault/World/Rules/Duskfrost.md"] == 0
        gate.set()
        assert await probe == "# Welcome\n"
        assert await src.read_text("World/Rules/Duskfrost.md") == "Duskfrost\n"

    run(using(src, body))


def test_cancelled_probe_frees_the_slot(server: FakeObsidian, clock: FakeClock) -> None:
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        server.fail_paths["/vault/"] = 429
        for _ in range(3):
            with pytest.raises(VaultError):
                await src.read_text("Welcome.md")
        server.fail_paths.clear()
        server.slow_paths["/vault/Welcome.md"] = 2.0
        clock.advance(2.0)
        probe = asyncio.create_task(src.read_text("Welcome.md"))
        while server.in_flight == 0:
            await asyncio.sleep(0.01)
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await probe
        assert src.breaker.failures == 3  # a cancellation is not a failure...
        assert await src.read_text("World/Rules/Duskfrost.md") == "Duskfrost\n"  # ...and frees the probe

    run(using(src, body))


def test_cancellation_does_not_count(server: FakeObsidian) -> None:
    server.slow_paths["/vault/Welcome.md"] = 2.0
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(4):
            task = asyncio.create_task(src.read_text("Welcome.md"))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert src.breaker.failures == 0 and not src.breaker.is_open

    run(using(src, body))


@pytest.mark.parametrize("status", [401, 403, 404])
def test_client_errors_do_not_count(server: FakeObsidian, status: int) -> None:
    server.fail_paths["/vault/Welcome.md"] = status
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(5):
            with pytest.raises((VaultError, FileNotFoundError)):
                await src.read_text("Welcome.md")
        assert not src.breaker.is_open and src.breaker.failures == 0
        assert server.hits["/vault/Welcome.md"] == 5

    run(using(src, body))


@pytest.mark.parametrize("status", [429, 500, 503])
def test_server_errors_count(server: FakeObsidian, status: int, clock: FakeClock) -> None:
    server.fail_paths["/vault/Welcome.md"] = status
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(3):
            with pytest.raises(VaultError):
                await src.read_text("Welcome.md")
        assert src.breaker.is_open
        with pytest.raises(VaultUnreachable, match="paused after 3 failed requests"):
            await src.list_notes()

    run(using(src, body))


def test_network_errors_count(clock: FakeClock) -> None:
    src = parse_vault_spec(f"http://{KEY}@127.0.0.1:{closed_port()}")

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(3):
            with pytest.raises(VaultUnreachable, match="cannot reach"):
                await src.read_text("a.md")
        with pytest.raises(VaultUnreachable, match="paused"):
            await src.read_text("a.md")

    run(using(src, body))


def test_failures_must_be_consecutive(server: FakeObsidian, clock: FakeClock) -> None:
    server.fail_paths["/vault/Welcome.md"] = 500
    src = parse_vault_spec(server.spec)

    async def body(_: ObsidianRestSource) -> None:
        for path in ("Welcome.md", "Welcome.md", "Characters/Gorduin.md", "Welcome.md", "Welcome.md"):
            try:
                await src.read_text(path)
            except VaultError:
                pass
        assert src.breaker.failures == 2 and not src.breaker.is_open

    run(using(src, body))


def test_breaker_is_shared_per_address(server: FakeObsidian, clock: FakeClock) -> None:
    first = parse_vault_spec(server.spec, name="one")
    second = ObsidianRestSource("two", "127.0.0.1", server.port, "other-key")
    elsewhere = ObsidianRestSource("three", "localhost", server.port, KEY)  # same server, other host:port key
    server.fail_paths["/vault/Welcome.md"] = 500

    async def body(_: ObsidianRestSource) -> None:
        for _ in range(3):
            with pytest.raises(VaultError):
                await first.read_text("Welcome.md")
        with pytest.raises(VaultUnreachable):
            await second.read_text("Characters/Gorduin.md")
        assert await elsewhere.read_text("Characters/Gorduin.md")
        await second.close()
        await elsewhere.close()

    run(using(first, body))
    assert first.breaker is second.breaker is breaker_for("127.0.0.1", server.port)


# --------------------------------------------------------------------------- secrecy and lifecycle


def test_key_never_shows(server: FakeObsidian, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    src = parse_vault_spec(server.spec, name="Lore")
    assert src.describe() == f"http://127.0.0.1:{server.port} (Obsidian REST)"
    seen = [src.describe(), repr(src), str(src), str(vars(src))]

    async def body(_: ObsidianRestSource) -> None:
        seen.append(str(await src.test_connection()))
        server.fail_paths["/vault/Characters/"] = 500
        seen.extend((await src.list_notes()).problems)
        for path in ("Welcome.md", "Nope.md"):
            server.fail_paths["/vault/Welcome.md"] = 500
            try:
                await src.read_text(path)
            except (VaultError, FileNotFoundError) as exc:
                seen.append(str(exc))
                seen.append(repr(exc))

    run(using(src, body))
    wrong = parse_vault_spec(f"http://{KEY}x@127.0.0.1:{server.port}")
    try:
        run(using(wrong, lambda s: s.list_notes()))
    except VaultAuthError as exc:
        seen.append(str(exc))
    seen.append(caplog.text)
    assert all(KEY not in s for s in seen)
    assert len(seen) >= 10


def test_one_client_per_source_and_close(server: FakeObsidian) -> None:
    src = parse_vault_spec(server.spec)

    async def body() -> None:
        await src.read_text("Welcome.md")
        state = src._state
        await src.read_text("Welcome.md")
        assert src._state is state
        await src.close()
        assert src._state is None and state is not None and state.client.is_closed
        await src.close()  # closing twice is harmless
        assert await src.read_text("Welcome.md") == "# Welcome\n"  # and a closed source reopens
        await src.close()

    run(body())


def test_source_survives_a_new_event_loop(server: FakeObsidian) -> None:
    src = parse_vault_spec(server.spec)
    run(src.list_notes())  # left open on purpose: that loop is gone afterwards
    assert run(using(src, lambda s: s.read_text("Welcome.md"))) == "# Welcome\n"


def test_preflight_needs_no_key(server: FakeObsidian) -> None:
    # The fake must answer CORS like OLRA, before auth, for the browser-facing parts of the app.
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request(
        "OPTIONS",
        "/vault/",
        headers={
            "Origin": "http://127.0.0.1:8000",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 204
    assert resp.getheader("Access-Control-Allow-Origin") == "*"
    assert resp.getheader("Access-Control-Allow-Methods") == "GET,HEAD,PUT,PATCH,POST,DELETE"
    assert resp.getheader("Access-Control-Allow-Headers") == "authorization,content-type"


def test_fake_answers_401_like_olra(server: FakeObsidian) -> None:
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/vault/", headers={"Authorization": f"bearer {KEY}"})  # case matters
    resp = conn.getresponse()
    payload = json.loads(resp.read())
    conn.close()
    assert resp.status == 401 and payload["errorCode"] == 40101
    assert resp.getheader("Access-Control-Allow-Origin") == "*"


def test_malformed_root_listing_is_an_error(server: FakeObsidian) -> None:
    server.listing_overrides[""] = "not a list"  # type: ignore[assignment]  # the malformed answer under test
    with pytest.raises(VaultError, match="did not answer"):
        run(using(parse_vault_spec(server.spec), lambda s: s.list_notes()))
