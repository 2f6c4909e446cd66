"""Web pages cannot use the server through the user's browser: one origin policy for every route,
judged before any body is read (issue 9, item 1). A real engine and server on loopback."""

from __future__ import annotations

import json
import re
import socket

import pytest

from dle_desktop.server import openapi
from dle_desktop.server.app import build_app
from dle_desktop.state.settings import Settings
from tests.retrieval._support import API, LiveServer, messages, write_world

FOREIGN = "https://evil.example"
SAMPLE_PARAMS = {
    "chat_id": "victim",
    "vault": "lore",
    "path": "Places/Lantern Quay.md",
    "channel": "ai_search",
    "name": "insert",
    "suggestion_id": "0123abcd",
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    base = tmp_path_factory.mktemp("cross-site")
    server = LiveServer(write_world(base / "vault"), base / "data")
    yield server
    server.close()


def every_route(engine) -> list[tuple[str, str]]:
    """(method, concrete path) for every operation of the OpenAPI document and every route the
    app serves (the vector and embedding routes are not in the document)."""
    found: set[tuple[str, str]] = set()
    for path, item in openapi.build_document()["paths"].items():
        found |= {(method.upper(), path) for method in item}
    for route in build_app(engine).routes:
        found |= {(method, route.path) for method in route.methods or () if method != "HEAD"}
    fill = lambda m: SAMPLE_PARAMS[m[1]]  # noqa: E731 - a one-line request helper read where it is used
    return sorted((method, re.sub(r"\{(\w+)(?::\w+)?\}", fill, path)) for method, path in found)


def send_headers_only(port: int, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    """Send a request whose headers promise a body that never comes, and read the answer: the
    server can only answer if it judged the request without reading the body."""
    lines = [
        f"{method} {path.replace(' ', '%20')} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Length: 64",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _content_length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def _content_length(data: bytes) -> int:
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", data.split(b"\r\n\r\n", 1)[0])
    return int(m[1]) if m else 0


def observable(live: LiveServer) -> tuple:
    """What a forged request could change: the chat's state and records, AI usage and the files."""
    files = sorted(
        (p.relative_to(live.data).as_posix(), p.stat().st_size)
        for p in live.data.rglob("*")
        if p.is_file() and "logs" not in p.parts
    )
    return live.everything("victim"), live.client.get(f"{API}/ai").json(), files


def test_a_cross_site_text_plain_post_cannot_write_a_chat_notebook(live):
    """The reproduction from the issue: a page on another site POSTs text/plain (no preflight)."""
    body = {"chat_id": "victim", "messages": messages("the quay at night"), "notebook": "attacker's notes"}
    r = live.client.post(
        f"{API}/retrieve",
        content=json.dumps(body),
        headers={"Origin": FOREIGN, "Content-Type": "text/plain;charset=UTF-8"},
    )
    assert r.status_code == 403
    assert r.json()["cause"] == "forbidden_origin" and FOREIGN in r.json()["error"]
    assert live.client.get(f"{API}/chats/victim/notebook").json() == {"notebook": ""}


#: Pages that are not SillyTavern's default address: other ports and schemes of loopback, other hosts.
FOREIGN_ORIGINS = [
    FOREIGN,
    "null",
    "http://127.0.0.1:8001",
    "http://localhost:3000",
    "https://127.0.0.1:8000",
    "http://[::1]:8000",
    "http://192.168.1.5:8000",
    "file://",
    "chrome-extension://abc",
]


def test_only_sillytaverns_default_address_is_listed_by_default():
    assert Settings().server_allowed_origins == ("http://127.0.0.1:8000", "http://localhost:8000")


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_every_route_refuses_a_foreign_origin_before_reading_the_body(live, origin):
    before = observable(live)
    routes = every_route(live.engine)
    assert len(routes) > 30 and ("POST", "/api/vector/insert") in routes and ("POST", f"{API}/retrieve") in routes
    for method, path in routes:
        status, payload = send_headers_only(live.port, method, path, {"Origin": origin, "Content-Type": "text/plain"})
        assert (status, payload.get("cause")) == (403, "forbidden_origin"), (method, path, payload)
    assert observable(live) == before


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:8000"])
def test_every_route_wants_the_token_from_a_listed_origin_before_reading_the_body(live, origin):
    """SillyTavern's default address is listed by default, and still needs the token: a page
    there that does not know it changes nothing."""
    before = observable(live)
    for method, path in every_route(live.engine):
        status, payload = send_headers_only(live.port, method, path, {"Origin": origin, "Content-Type": "text/plain"})
        assert (status, payload.get("cause")) == (401, "token_required"), (method, path, payload)
    assert observable(live) == before


def test_a_preflight_from_a_foreign_page_is_refused(live):
    r = live.client.options(f"{API}/retrieve", headers={"Origin": FOREIGN, "Access-Control-Request-Method": "POST"})
    assert r.status_code == 403
    assert "access-control-allow-origin" not in r.headers


def test_requests_without_origin_still_work(live):
    """Native clients and SillyTavern's Node server send no Origin: nothing changes for them."""
    assert live.retrieve("native", messages("the quay"))["injected"]
    assert live.put("native", "notebook", "notebook", "mine") == {"notebook": "mine"}


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    base = tmp_path_factory.mktemp("listed")
    settings = Settings().replace(server_allowed_origins=["http://127.0.0.1:8000"])
    server = LiveServer(write_world(base / "vault"), base / "data", settings=settings)
    yield server
    server.close()


def test_a_listed_origin_needs_the_token(listed):
    origin = {"Origin": "http://127.0.0.1:8000"}
    r = listed.client.put(f"{API}/chats/c/notebook", json={"notebook": "x"}, headers=origin)
    assert r.status_code == 401 and r.json()["cause"] == "token_required"
    assert r.headers["www-authenticate"].startswith("Bearer")
    r = listed.client.put(
        f"{API}/chats/c/notebook", json={"notebook": "x"}, headers={**origin, "Authorization": "Bearer not-the-token"}
    )
    assert r.status_code == 401 and r.json()["cause"] == "bad_token"
    assert listed.client.get(f"{API}/chats/c/notebook").json() == {"notebook": ""}
    token = listed.secrets.get("server-token")
    assert token and len(token) >= 32
    r = listed.client.put(
        f"{API}/chats/c/notebook", json={"notebook": "x"}, headers={**origin, "Authorization": f"Bearer {token}"}
    )
    assert r.status_code == 200
    r = listed.client.get(f"{API}/chats/c/notebook", headers={**origin, "X-DLE-Token": token})
    assert r.json() == {"notebook": "x"}


def test_a_listed_origin_in_another_spelling_is_the_same_origin(listed):
    token = listed.secrets.get("server-token") or ""
    r = listed.client.get(f"{API}/status", headers={"Origin": "HTTP://127.0.0.1:8000", "X-DLE-Token": token})
    assert r.status_code == 200


def test_an_unlisted_port_of_a_listed_host_is_another_origin(listed):
    r = listed.client.get(f"{API}/status", headers={"Origin": "http://127.0.0.1:8001"})
    assert r.status_code == 403 and r.json()["cause"] == "forbidden_origin"


def test_a_preflight_from_a_listed_origin_passes_without_the_token(listed):
    """Browsers never send credentials on a preflight; the access layer answers it."""
    r = listed.client.options(
        "/api/modules", headers={"Origin": "http://127.0.0.1:8000", "Access-Control-Request-Method": "GET"}
    )
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "http://127.0.0.1:8000"


def test_an_origin_dropped_from_the_list_is_foreign(listed):
    """The fixture lists only 127.0.0.1:8000: the other default, localhost:8000, is refused."""
    r = listed.client.get(f"{API}/status", headers={"Origin": "http://localhost:8000"})
    assert r.status_code == 403 and r.json()["cause"] == "forbidden_origin"
    assert "access-control-allow-origin" not in r.headers
