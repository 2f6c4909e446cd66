"""A real loopback HTTP server that gives every request the same canned answer: a stand-in for
"some other program on that port" (a plain 404 server, a web app's HTML page)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def version_string(self) -> str:  # the Server header
        return self.server.owner.server_name  # type: ignore[attr-defined]  # set by CannedServer below

    def _answer(self) -> None:
        owner: CannedServer = self.server.owner  # type: ignore[attr-defined]  # set by CannedServer below
        owner.paths.append(self.path)
        length = int(self.headers.get("Content-Length", "0") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(owner.status)
        self.send_header("Content-Type", owner.content_type)
        self.send_header("Content-Length", str(len(owner.body)))
        for key, value in owner.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(owner.body)

    do_GET = do_POST = do_PUT = _answer


class CannedServer:
    """`with CannedServer(404, b"Not Found") as srv:` serves on 127.0.0.1:srv.port."""

    def __init__(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "text/plain",
        headers: dict[str, str] | None = None,
        server_name: str = "Canned/1.0",
    ) -> None:
        self.status, self.body, self.content_type, self.server_name = status, body, content_type, server_name
        self.headers = headers or {}
        self.paths: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]  # how the handler finds its canned answer
        self.port = self._httpd.server_address[1]

    def __enter__(self) -> CannedServer:
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
