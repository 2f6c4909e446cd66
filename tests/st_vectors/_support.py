"""Helpers for the SillyTavern Vector API contract tests: a live engine + HTTP server with the real
local embedder on a tiny generated Qwen3 GGUF, ST-shaped request builders, raw-socket exchanges."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import httpx

from dle_desktop.state.settings import Settings
from dle_desktop.vectors.st_hash import get_string_hash
from tests.retrieval._support import LiveServer

VECTOR = "/api/vector"

#: The texts and ids of st-wire-contracts.md §1.2.
CHAT_ID = "Seraphina - 2025-06-01@14h03m22s517ms"
DRAGON = "The dragon sleeps in the northern mountains"
BREAD = "Bread and cheese for breakfast at the inn"
RED_DRAGON = "A red dragon attacked the mountain village"
EXAMPLE_ITEMS = [
    {"hash": 4522783205579122, "text": DRAGON, "index": 0},
    {"hash": 2025268282665900, "text": BREAD, "index": 1},
    {"hash": 3363174424249661, "text": RED_DRAGON, "index": 2},
]
WORLD_ID = "world_59964539520806"  # world_${getStringHash("Eldoria")}
FILE_ID = "file_4473160753641173"  # file_${getStringHash("/user/files/1719330000000_1234567.txt")}
CAPITAL = "The capital of Eldoria is Skyhold."
KINGDOM = "Eldoria is a kingdom of floating islands."

#: What ST 1.12.6's node-fetch v2 sends to an embedding backend (verified live, §3).
NODE_FETCH_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "*/*",
    "User-Agent": "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
    "Accept-Encoding": "gzip,deflate",
    "Connection": "close",
}


def item(text: str, index: int) -> dict:
    """An ST item: `{hash: getStringHash(text), text, index}`."""
    return {"hash": get_string_hash(text), "text": text, "index": index}


def items_of(*texts: str) -> list[dict]:
    return [item(t, i) for i, t in enumerate(texts)]


class StServer(LiveServer):
    """Engine + HTTP server on a free loopback port, as the app runs it (no initial sync: the Vector
    API needs no index). `restart()` keeps the data."""

    def __init__(self, data: Path, vault: Path, model: Path | None) -> None:
        self.model = model
        super().__init__(
            vault, data, Settings(embedding_model_path=str(model) if model else ""), sync=False, client_timeout=120
        )

    # -- the Vector API, as ST's frontend calls it ----------------------------------------
    def post(self, route: str, body, headers: dict | None = None, timeout: float | None = None) -> httpx.Response:
        """POST /api/vector/<route> with ST's getRequestHeaders() shape."""
        h = {"Content-Type": "application/json", "X-CSRF-Token": "test-token"}
        h.update(headers or {})
        content = body if isinstance(body, (bytes, str)) else json.dumps(body)
        extra = {} if timeout is None else {"timeout": timeout}
        return self.client.post(f"{VECTOR}/{route}", content=content, headers=h, **extra)

    def ok(self, route: str, body, headers: dict | None = None, timeout: float | None = None) -> None:
        r = self.post(route, body, headers, timeout)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "text/plain; charset=utf-8"
        assert r.text == "OK"

    def json(self, route: str, body, headers: dict | None = None):
        r = self.post(route, body, headers)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/json; charset=utf-8"
        return r.json()

    def error(self, route: str, body, status: int, headers: dict | None = None) -> dict:
        r = self.post(route, body, headers)
        assert r.status_code == status, (r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/json"), r.headers["content-type"]
        payload = r.json()
        assert payload["error"] is True and isinstance(payload["message"], str) and payload["message"]
        assert isinstance(payload["cause"], str) and payload["cause"]
        return payload

    def list(self, collection: str, **source) -> list[int]:
        return self.json("list", {"collectionId": collection, **source})

    # -- ST's koboldcpp flow: the browser gets vectors through ST's server from KoboldCpp ----
    def kobold(self, texts: list[str]) -> tuple[dict[str, list[float]], str]:
        """What ST's `/api/backends/kobold/embed` gets from our `/api/extra/embeddings` (no Content-Type)."""
        raw = raw_request(
            self.port,
            "POST",
            "/api/extra/embeddings",
            json.dumps({"input": texts}).encode(),
            headers={"Host": f"127.0.0.1:{self.port}", "Connection": "close"},
        )
        assert raw.status == 200, raw.body
        data = json.loads(raw.body)
        rows = [x[0] if isinstance(x, list) else x for x in data["data"]]
        rows.sort(key=lambda x: x["index"])
        assert data["model"]
        return {t: r["embedding"] for t, r in zip(texts, rows)}, data["model"]

    def kobold_body(self, texts: list[str]) -> dict:
        embeddings, model = self.kobold(texts)
        return {"source": "koboldcpp", "embeddings": embeddings, "model": model}

    def disk_state(self) -> dict[str, tuple[int, int]]:
        """Every data file under the vectors folder: size and mtime (to prove a refused request wrote
        nothing). SQLite's -shm / -wal companions are left out: opening a scope to read it creates
        them; what a write changes shows in the listings the tests compare as well."""
        root = self.paths.vectors_dir
        out = {}
        if root.exists():
            for dirpath, _, files in os.walk(root):
                for f in files:
                    if f.endswith(("-shm", "-wal")) or f == ".lock":
                        continue
                    p = Path(dirpath, f)
                    st = p.stat()
                    out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
        return out


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, closed: bool) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.closed = closed  # the server closed the connection after answering


def _read_response(sock: socket.socket, buf: bytes = b"") -> tuple[RawResponse, bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed before a response: {buf!r}")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return RawResponse(status, headers, rest[:length], False), rest[length:]


def _request_bytes(method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1"]
    for k, v in headers.items():
        lines.append(f"{k}: {v}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def raw_request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
    close_wait: float = 2.0,
) -> RawResponse:
    """One request on a fresh socket, exactly the bytes given (no Content-Type unless in `headers`).
    `closed` tells whether the server closed the connection within `close_wait` s of its answer."""
    headers = dict(headers or {})
    headers.setdefault("Host", f"127.0.0.1:{port}")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(_request_bytes(method, path, body, headers))
        response, _ = _read_response(s)
        s.settimeout(close_wait)
        try:
            response.closed = s.recv(1) == b""
        except TimeoutError:
            response.closed = False
        except ConnectionResetError:
            response.closed = True
    return response


def keep_alive_exchange(port: int, requests: list[tuple[str, str, bytes | None, dict[str, str]]]) -> list[RawResponse]:
    """Several requests, one after the other, on ONE socket."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        buf = b""
        for method, path, body, headers in requests:
            headers = {"Host": f"127.0.0.1:{port}", **headers}
            s.sendall(_request_bytes(method, path, body, headers))
            response, buf = _read_response(s, buf)
            out.append(response)
    return out
