"""A real HTTP server that behaves like the Obsidian "Local REST API" plugin (OLRA) for the
routes DLE uses (st-wire-contracts.md §4), serving a real folder, with knobs to make it fail.

    with FakeObsidian(folder, api_key="k") as srv:
        source = parse_vault_spec(srv.spec)
        srv.fail_paths["/vault/Broken/"] = 500      # decoded-path prefix -> forced status
        srv.slow_paths["/vault/Slow.md"] = 2.0      # decoded-path prefix -> extra seconds
        srv.drop_paths.add("/vault/Gone.md")        # close the connection without an answer
        srv.hits["/vault/"], srv.requests[-1].headers, srv.max_in_flight

Everything runs in a background thread (stdlib ThreadingHTTPServer, one thread per connection),
so a client under test sees real sockets, real keep-alive and real concurrency.
"""

from __future__ import annotations

import hmac
import json
import mimetypes
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

OLRA_VERSION = "3.2.0"
OBSIDIAN_VERSION = "1.8.10"
CORS_METHODS = "GET,HEAD,PUT,PATCH,POST,DELETE"


@dataclass(frozen=True)
class SeenRequest:
    """One request as the server received it."""

    method: str
    raw_path: str  # exactly as sent on the request line, percent-encoding intact
    path: str  # decoded the way OLRA decodes it (decodeURIComponent)
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class _Knobs:
    fail_paths: dict[str, int] = field(default_factory=dict)
    slow_paths: dict[str, float] = field(default_factory=dict)
    #: decoded-path prefix -> an Event the request waits for (up to 30 s) before it is answered
    hold_paths: dict[str, threading.Event] = field(default_factory=dict)
    drop_paths: set[str] = field(default_factory=set)
    listing_overrides: dict[str, list[Any]] = field(default_factory=dict)
    latency: float = 0.0


def _matches(path: str, prefixes: Any) -> Any:
    """The first prefix of `prefixes` that `path` starts with, or None."""
    for prefix in prefixes:
        if path.startswith(prefix):
            return prefix
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like OLRA's express server
    # Headers and body go out in two writes; with Nagle on, each answer would wait ~40 ms for the
    # client's delayed ACK (Node sets TCP_NODELAY too).
    disable_nagle_algorithm = True
    server: _Server

    # ---- plumbing

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read srv.requests instead of stderr noise

    def _send(
        self, status: int, body: bytes = b"", content_type: str | None = None, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Access-Control-Allow-Origin", "*")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if content_type and body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"message": message, "errorCode": status * 100 + 1})

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---- dispatch

    def _handle(self) -> None:
        srv = self.server.owner
        raw = self.path.split("?", 1)[0]
        try:
            decoded = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            decoded = None
        body = self._read_body() if self.command in ("PUT", "POST", "PATCH") else b""
        srv._record(SeenRequest(self.command, raw, decoded or raw, dict(self.headers.items()), body))
        srv._enter()
        try:
            self._dispatch(srv, decoded, body)
        finally:
            srv._leave()

    def _dispatch(self, srv: FakeObsidian, path: str | None, body: bytes) -> None:
        knobs = srv.knobs
        # CORS runs before anything else in OLRA, so preflights never need the key.
        if self.command == "OPTIONS":
            return self._preflight()
        wait = knobs.latency + (knobs.slow_paths.get(_matches(path or "", list(knobs.slow_paths)), 0.0))
        if wait:
            time.sleep(wait)
        held = _matches(path or "", list(knobs.hold_paths))
        if held is not None:
            knobs.hold_paths[held].wait(30)
        if _matches(path or "", list(knobs.drop_paths)) is not None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        forced = _matches(path or "", list(knobs.fail_paths))
        if forced is not None:
            return self._error(knobs.fail_paths[forced], "injected failure")
        if path is None:
            return self._error(400, "malformed percent-encoding in the URL")
        if path in ("/", "/obsidian-local-rest-api.crt", "/openapi.yaml"):
            return self._status_json() if path == "/" else self._error(404, "not served by the fake")
        if not srv._authorized(self.headers.get("Authorization")):
            return self._json(
                401,
                {
                    "message": "Authorization required.  Find your API Key in the 'Local REST API' "
                    "section of your Obsidian settings.",
                    "errorCode": 40101,
                },
            )
        if not path.startswith("/vault/"):
            return self._error(404, "Not Found")
        return self._vault(srv, path[len("/vault/") :], body)

    def _preflight(self) -> None:
        extra = {"Access-Control-Allow-Methods": CORS_METHODS, "Vary": "Access-Control-Request-Headers"}
        wanted = self.headers.get("Access-Control-Request-Headers")
        if wanted:
            extra["Access-Control-Allow-Headers"] = wanted
        if self.headers.get("Access-Control-Request-Private-Network") == "true":
            extra["Access-Control-Allow-Private-Network"] = "true"
        self._send(204, extra=extra)

    def _status_json(self) -> None:
        srv = self.server.owner
        self._json(
            200,
            {
                "status": "OK",
                "manifest": {"id": "obsidian-local-rest-api", "name": "Local REST API", "version": OLRA_VERSION},
                "versions": {"obsidian": OBSIDIAN_VERSION, "self": OLRA_VERSION},
                "service": "Obsidian Local REST API",
                "authenticated": srv._authorized(self.headers.get("Authorization")),
            },
        )

    def _vault(self, srv: FakeObsidian, rel: str, body: bytes) -> None:
        parts = [p for p in rel.split("/") if p]
        if any(p in (".", "..") for p in parts):
            return self._error(400, "path escapes the vault")
        is_dir = rel == "" or rel.endswith("/")
        if self.command == "GET" and is_dir:
            return self._listing(srv, "/".join(parts))
        if self.command == "GET":
            return self._file(srv, parts)
        if self.command == "PUT" and not is_dir:
            target = srv.folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            return self._send(204)
        return self._error(405, f"{self.command} is not supported here")

    def _listing(self, srv: FakeObsidian, rel: str) -> None:
        if rel in srv.knobs.listing_overrides:
            return self._json(200, {"files": srv.knobs.listing_overrides[rel]})
        names = srv._visible_names(rel)
        if not names:  # OLRA: an empty vault and a missing folder are both 404
            return self._error(404, "Not Found")
        return self._json(200, {"files": names})

    def _file(self, srv: FakeObsidian, parts: list[str]) -> None:
        target = srv.folder.joinpath(*parts)
        if not parts or any(p.startswith(".") for p in parts) or not target.is_file():
            return self._error(404, "Not Found")
        name = parts[-1]
        ctype = (
            "text/markdown; charset=utf-8"
            if name.lower().endswith(".md")
            else (mimetypes.guess_type(name)[0] or "application/octet-stream")
        )
        self._send(200, target.read_bytes(), ctype, {"Content-Disposition": f'attachment; filename="{quote(name)}"'})

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # DLE opens 50 connections at once; the default backlog of 5 drops SYNs
    owner: FakeObsidian

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are expected here


class FakeObsidian:
    """The fake OLRA server. Use as a context manager; `url`/`port`/`spec` are valid inside."""

    def __init__(self, folder: Path | str, api_key: str | None = "test-key", host: str = "127.0.0.1") -> None:
        self.folder = Path(folder)
        self.api_key = api_key
        self.host = host
        self.knobs = _Knobs()
        self.requests: list[SeenRequest] = []
        self.hits: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # Knob shortcuts, so tests read naturally.
    @property
    def fail_paths(self) -> dict[str, int]:
        return self.knobs.fail_paths

    @property
    def slow_paths(self) -> dict[str, float]:
        return self.knobs.slow_paths

    @property
    def hold_paths(self) -> dict[str, threading.Event]:
        return self.knobs.hold_paths

    @property
    def drop_paths(self) -> set[str]:
        return self.knobs.drop_paths

    @property
    def listing_overrides(self) -> dict[str, list[Any]]:
        return self.knobs.listing_overrides

    @property
    def latency(self) -> float:
        return self.knobs.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self.knobs.latency = seconds

    # ---- lifecycle

    def start(self) -> FakeObsidian:
        self._httpd = _Server((self.host, 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-obsidian-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeObsidian:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def spec(self) -> str:
        """A `parse_vault_spec` address carrying this server's key."""
        key = f"{quote(self.api_key, safe='')}@" if self.api_key else ""
        return f"http://{key}{self.host}:{self.port}"

    # ---- stats

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.hits.clear()
            self.max_in_flight = self.in_flight

    def _record(self, req: SeenRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self.hits[req.path] += 1

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    # ---- OLRA semantics

    def _authorized(self, header: str | None) -> bool:
        if self.api_key is None:
            return True
        return hmac.compare_digest((header or "").encode(), f"Bearer {self.api_key}".encode())

    def _visible_names(self, rel: str) -> list[str]:
        """What OLRA lists in `rel`: files Obsidian knows, and folders that (deep down) hold one."""
        base = self.folder.joinpath(*[p for p in rel.split("/") if p])
        if any(p.startswith(".") for p in rel.split("/") if p) or not base.is_dir():
            return []
        names = set()
        for child in base.iterdir():
            if child.name.startswith("."):
                continue  # Obsidian never indexes dot-files or dot-folders
            if child.is_file():
                names.add(child.name)
            elif child.is_dir() and _holds_visible_file(child):
                names.add(child.name + "/")
        return sorted(names)


def _holds_visible_file(folder: Path) -> bool:
    # OLRA builds listings from app.vault.getFiles(), so a folder with no files in it is invisible.
    for child in folder.iterdir():
        if child.name.startswith("."):
            continue
        if child.is_file() or (child.is_dir() and _holds_visible_file(child)):
            return True
    return False
