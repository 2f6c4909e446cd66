"""LAN use (issue 9, item 2): a strict Host parser, allowed host names as a setting, the server
token for every client on another machine (judged by the socket's peer address), and a warning
at start-up. Real servers on real sockets; the "other machine" is this machine's own non-loopback
address, which the server sees as a non-loopback peer."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

from dle_desktop.core.hosts import host_name, parse_host, parse_origin
from dle_desktop.engine.engine import Engine
from dle_desktop.engine.thread import EngineThread
from dle_desktop.errors import ConfigError
from dle_desktop.server.app import ServerRunner
from dle_desktop.server.security import TOKEN_SECRET_NAME, AccessPolicy, server_token
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from tests.retrieval._support import API, LiveServer, write_world


def lan_address() -> str | None:
    """This machine's address on its default route, if it has one besides loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))  # no packet is sent: this only picks the route
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


LAN = lan_address()
needs_lan = pytest.mark.skipif(LAN is None, reason="this machine has no non-loopback IPv4 address")


# ----------------------------------------------------------------------------- the Host parser


@pytest.mark.parametrize(
    "header",
    [
        "[::1]evil.example",
        "[::1]:80evil",
        "127.0.0.1:1@evil.example",
        "localhost@evil.example",
        "localhost:",
        "localhost:0",
        "localhost:65536",
        "localhost:+80",
        "localhost: 80",
        "localhost:8765:80",
        "[::1",
        "::1",
        "[::1%eth0]",
        "[fe80::1%25eth0]:80",
        "local host",
        "127.000.0.1",
        "127.0.0.1.",
        "\uff11\uff12\uff17.0.0.1",
        "localhost\x00.evil",
        "evil.example/",
        "-bad.example",
        "",
    ],
)
def test_malformed_host_headers_are_refused_by_the_parser(header):
    with pytest.raises(ValueError):
        parse_host(header)


@pytest.mark.parametrize(
    "header, parsed",
    [
        ("LOCALHOST:8765", ("localhost", 8765)),
        ("127.0.0.1", ("127.0.0.1", None)),
        ("[0:0:0:0:0:0:0:1]:80", ("[::1]", 80)),
        ("host.docker.internal:8765", ("host.docker.internal", 8765)),
        ("my_box", ("my_box", None)),
    ],
)
def test_host_headers_parse_to_one_canonical_form(header, parsed):
    assert parse_host(header) == parsed


@pytest.fixture
def served(tmp_path):
    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data")
    yield server
    server.close()


@pytest.mark.parametrize("host", ["[::1]evil.example", "127.0.0.1:1@evil.example", "localhost:99999", "localhost:x"])
def test_the_server_refuses_ambiguous_host_headers(served, host):
    r = served.client.get(f"{API}/status", headers={"Host": host})
    assert r.status_code == 400 and r.json()["cause"] == "bad_host"


def test_a_repeated_host_header_is_refused(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(b"GET /api/dle/v1/status HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n")
        status = s.recv(65536).split(b" ")[1]
    assert status in (b"400", b"403")


# ----------------------------------------------------------------------------- settings


def test_allowed_hosts_and_origins_are_checked_and_canonical():
    s = Settings().replace(
        server_allowed_hosts="192.168.1.20, Host.Docker.Internal [0::1]",
        server_allowed_origins=["HTTP://127.0.0.1:8000", "https://st.example:443"],
    )
    assert s.server_allowed_hosts == ("192.168.1.20", "host.docker.internal", "[::1]")
    assert s.server_allowed_origins == ("http://127.0.0.1:8000", "https://st.example")
    for bad in (["http://192.168.1.20"], ["box:8765"], ["evil.example/"], [""], [3]):
        with pytest.raises(ConfigError, match="server_allowed_hosts"):
            Settings().replace(server_allowed_hosts=bad)
    for bad in (
        ["null"],
        ["http://st.example/path"],
        ["ftp://st.example"],
        ["http://a@st.example"],
        ["127.0.0.1:8000"],
    ):
        with pytest.raises(ConfigError, match="server_allowed_origins"):
            Settings().replace(server_allowed_origins=bad)
    assert host_name("[::1]") == "[::1]" and parse_origin("http://[::1]:80") == "http://[::1]"


# ----------------------------------------------------------------------------- the token


def test_the_token_is_created_once_and_kept_in_the_secret_store():
    secrets = SecretStore(use_keyring=False)
    token = server_token(secrets)
    assert len(token) >= 40 and secrets.get(TOKEN_SECRET_NAME) == token
    assert server_token(secrets) == token


# ----------------------------------------------------------------------------- a server on the LAN


class LanServer:
    """An engine with its server bound to every address (`serve --host 0.0.0.0`)."""

    def __init__(self, tmp_path, settings: Settings | None = None) -> None:
        self.thread = EngineThread().start()
        self.secrets = SecretStore(use_keyring=False)
        self.engine = Engine(
            AppPaths(tmp_path / "data", tmp_path / "data").ensure(), settings or Settings(), self.secrets
        )
        self.thread.call(self.engine.start(initial_sync=False, watch=False), timeout=30)
        self.runner = ServerRunner(self.engine, "0.0.0.0", 0)
        self.thread.call(self.runner.start(), timeout=30)
        self.port = self.runner.port

    def get(self, address: str, headers: dict | None = None) -> httpx.Response:
        return httpx.get(f"http://{address}:{self.port}{API}/status", headers=headers or {}, timeout=10)

    def close(self) -> None:
        try:
            self.thread.call(self.runner.stop(), timeout=15)
            self.thread.call(self.engine.stop(), timeout=15)
        finally:
            self.thread.stop()


@pytest.fixture
def lan_server(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="dle_desktop.server.app")
    server = LanServer(tmp_path, Settings().replace(server_allowed_hosts=[LAN] if LAN else []))
    yield server
    server.close()


@needs_lan
def test_a_lan_client_claiming_to_be_localhost_needs_the_token(lan_server):
    r = lan_server.get(LAN, {"Host": f"localhost:{lan_server.port}"})
    assert r.status_code == 401 and r.json()["cause"] == "token_required"
    r = lan_server.get(LAN, {"Host": f"localhost:{lan_server.port}", "Authorization": "Bearer guess"})
    assert r.status_code == 401 and r.json()["cause"] == "bad_token"


@needs_lan
def test_a_lan_client_with_the_token_and_an_allowed_host_is_served(lan_server):
    token = lan_server.secrets.get(TOKEN_SECRET_NAME)
    assert token  # created at start-up in LAN mode
    assert lan_server.get(LAN, {"Authorization": f"Bearer {token}"}).status_code == 200
    assert lan_server.get(LAN, {"X-DLE-Token": token}).status_code == 200


@needs_lan
def test_a_lan_client_cannot_pose_as_loopback_with_forwarding_headers(tmp_path, monkeypatch):
    """uvicorn would trust X-Forwarded-For from the addresses in FORWARDED_ALLOW_IPS; the peer
    address that decides about the token must be the socket's."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    server = LanServer(tmp_path, Settings().replace(server_allowed_hosts=[LAN]))
    try:
        r = server.get(LAN, {"X-Forwarded-For": "127.0.0.1", "Forwarded": "for=127.0.0.1"})
        assert r.status_code == 401
    finally:
        server.close()


@needs_lan
def test_an_unlisted_host_name_is_refused_even_with_the_token(tmp_path):
    server = LanServer(tmp_path)
    try:
        token = server.secrets.get(TOKEN_SECRET_NAME)
        r = server.get(LAN, {"Authorization": f"Bearer {token}"})
        assert r.status_code == 403 and r.json()["cause"] == "forbidden_host"
        assert "server_allowed_hosts" in r.json()["error"]
    finally:
        server.close()


def test_loopback_clients_of_a_lan_server_need_no_token(lan_server):
    assert lan_server.get("127.0.0.1").status_code == 200


def test_lan_mode_is_announced_with_a_warning_that_never_shows_the_token(lan_server, caplog):
    warnings = [r.getMessage() for r in caplog.get_records("setup") if r.levelno == logging.WARNING]
    assert any("LAN mode" in w and "server token" in w and "dle-desktop server-token" in w for w in warnings), warnings
    token = lan_server.secrets.get(TOKEN_SECRET_NAME)
    assert not any(token in w for w in warnings)


def test_a_loopback_server_creates_no_token_and_says_nothing(served, caplog):
    assert served.client.get(f"{API}/status").status_code == 200
    assert served.secrets.get(TOKEN_SECRET_NAME) is None
    assert not [r for r in caplog.records if "LAN mode" in r.getMessage()]


# ----------------------------------------------------------------------------- the policy alone


def scope(client: str | None, *headers: tuple[str, str], method: str = "GET") -> dict:
    return {
        "type": "http",
        "method": method,
        "client": (client, 50000) if client else None,
        "headers": [(k.lower().encode(), v.encode()) for k, v in (("Host", "localhost"), *headers)],
    }


POLICY = AccessPolicy.build("0.0.0.0", ["192.168.1.20"], ["http://127.0.0.1:8000"], lambda: "the-token")


@pytest.mark.parametrize(
    "peer, needs_token",
    [
        ("127.0.0.1", False),
        ("127.8.9.10", False),
        ("::1", False),
        ("::ffff:127.0.0.1", False),
        ("192.168.1.7", True),
        ("::ffff:192.168.1.7", True),
        (None, True),
    ],
)
def test_the_peer_address_decides_whether_a_token_is_needed(peer, needs_token):
    refusal = POLICY.judge(scope(peer))
    assert (refusal is not None and refusal.cause == "token_required") == needs_token
    assert POLICY.judge(scope(peer, ("Authorization", "Bearer the-token"))) is None


def test_a_repeated_origin_is_refused_even_if_one_copy_is_listed():
    refusal = POLICY.judge(
        scope(
            "127.0.0.1",
            ("Origin", "http://127.0.0.1:8000"),
            ("Origin", "https://evil.example"),
            ("X-DLE-Token", "the-token"),
        )
    )
    assert refusal is not None and refusal.cause == "forbidden_origin"


def test_a_listed_origins_preflight_needs_no_token_but_its_requests_do():
    origin = ("Origin", "http://127.0.0.1:8000")
    assert POLICY.judge(scope("127.0.0.1", origin, ("Access-Control-Request-Method", "PUT"), method="OPTIONS")) is None
    assert POLICY.judge(scope("127.0.0.1", origin, method="OPTIONS")).cause == "token_required"
    assert POLICY.judge(scope("127.0.0.1", origin, ("X-DLE-Token", "the-token"))) is None


def test_an_unusable_bind_address_is_simply_not_a_host_name():
    assert AccessPolicy.build("fe80::1%eth0").hosts == AccessPolicy.build("127.0.0.1").hosts


def test_lan_mode_with_a_bridge_installed_says_once_that_sillytavern_hands_out_the_token(tmp_path, caplog, monkeypatch):
    """SillyTavern serves the bridge's dle-config.json, and so the token, to whoever opens its
    page: in LAN mode the server says so once, in words, with what to do."""
    from dle_desktop.st_bridge.install import inspect, install
    from tests.st_bridge.conftest import make_st

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # where SillyTavern is looked for besides st_folders
    st_root = make_st(tmp_path / "my-st")
    install(inspect(st_root), server_url="http://127.0.0.1:8765", token="t" * 32)
    caplog.set_level(logging.WARNING, logger="dle_desktop.server.app")
    server = LanServer(tmp_path, Settings().replace(st_folders=[str(st_root)]))
    try:
        said = [r.getMessage() for r in caplog.records if "dle-config.json" in r.getMessage()]
        assert len(said) == 1, said
        assert str(st_root.resolve()) in said[0] and "token" in said[0] and "server-token --rotate" not in said[0]
        assert "only from this machine" in said[0]
    finally:
        server.close()
    caplog.clear()
    quiet = LanServer(tmp_path / "other", Settings())  # no bridge anywhere it looks: nothing more to say
    try:
        assert not [r for r in caplog.records if "dle-config.json" in r.getMessage()]
    finally:
        quiet.close()
