"""The model manager against a real loopback HTTP server (stdlib http.server in a thread) that
serves a generated model file with Range support, Hugging Face-style redirects and checksum
headers, and can drop the connection part-way. Never the real internet."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path

import pytest

from dle_desktop.vectors.model_manager import (
    DEFAULT_MODEL,
    DownloadProgress,
    ModelChecksumError,
    ModelDownloadCancelled,
    ModelError,
    ModelManager,
    ModelSpec,
)

PAYLOAD = b"GGUF" + bytes(range(256)) * 1200  # ~300 KB, starts like a GGUF
SHA = hashlib.sha256(PAYLOAD).hexdigest()


@dataclass
class Behaviour:
    payload: bytes = PAYLOAD
    redirect: bool = True  # /resolve/... answers 302 to /cdn/... like huggingface.co
    linked_etag: str | None = None  # X-Linked-Etag on the redirect (HF sends the file's sha256)
    etag: str | None = '"v1"'  # ETag on the file itself
    ranges: bool = True  # honour Range
    drop_after: list[int] = field(default_factory=list)  # per request: close after this many body bytes
    status: int | None = None  # answer this status instead
    slow: float = 0.0  # seconds to sleep before answering
    chunk_delay: float = 0.0  # seconds between 16 KB chunks
    requests: list[dict] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviour: Behaviour

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        b = self.server.behaviour  # type: ignore[attr-defined]  # hung on the stdlib server by the fixture
        b.requests.append(
            {"path": self.path, "range": self.headers.get("Range"), "if_range": self.headers.get("If-Range")}
        )
        if b.slow:
            time.sleep(b.slow)
        if b.status is not None:
            body = b"error page"
            self.send_response(b.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/resolve/") and b.redirect:
            self.send_response(302)
            self.send_header("Location", "/cdn/" + self.path.split("/resolve/", 1)[1])
            if b.linked_etag:
                self.send_header("X-Linked-Etag", b.linked_etag)
            self.send_header("X-Linked-Size", str(len(b.payload)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = b.payload
        start = 0
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        use_range = rng and b.ranges and (if_range is None or if_range == b.etag)
        if use_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        if b.etag:
            self.send_header("ETag", b.etag)
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        limit = b.drop_after.pop(0) if b.drop_after else None
        sent = 0
        for i in range(0, len(body), 16384):
            piece = body[i : i + 16384]
            if limit is not None and sent + len(piece) > limit:
                self.wfile.write(piece[: limit - sent])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(piece)
            sent += len(piece)
            if b.chunk_delay:
                self.wfile.flush()
                time.sleep(b.chunk_delay)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client that hung up is expected here
        pass


@pytest.fixture
def server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.behaviour = Behaviour()  # type: ignore[attr-defined]  # the stdlib server carries the fixture's state to its handler
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def spec_for(httpd, name: str = "model.gguf", sha256: str | None = None) -> ModelSpec:
    host, port = httpd.server_address[:2]
    return ModelSpec(filename=name, url=f"http://{host}:{port}/resolve/{name}", sha256=sha256)


def manager(tmp_path: Path, **kw) -> ModelManager:
    kw.setdefault("chunk_size", 32768)
    kw.setdefault("retry_delay", 0.01)
    kw.setdefault("timeout", 5.0)
    return ModelManager(tmp_path / "models", **kw)


def run(coro):
    return asyncio.run(coro)


def test_default_model_is_qwen3_embedding_q8_from_hugging_face(tmp_path: Path) -> None:
    assert DEFAULT_MODEL.url == (
        "https://huggingface.co/Qwen/Qwen3-Embedding-0.6B-GGUF/resolve/main/Qwen3-Embedding-0.6B-Q8_0.gguf"
    )
    assert DEFAULT_MODEL.filename == "Qwen3-Embedding-0.6B-Q8_0.gguf"
    m = ModelManager(tmp_path)
    assert m.path_for() == tmp_path / "Qwen3-Embedding-0.6B-Q8_0.gguf"
    assert not m.is_available()


def test_download_with_progress_and_server_checksum(server, tmp_path: Path) -> None:
    server.behaviour.linked_etag = f'"{SHA}"'
    m = manager(tmp_path)
    seen: list[DownloadProgress] = []
    path = run(m.download(spec_for(server), progress=seen.append))
    assert path.read_bytes() == PAYLOAD
    assert m.is_available(spec_for(server))
    assert not m.part_path(spec_for(server)).exists()
    assert not list(m.models_dir.glob("*.part*"))
    assert seen[0].downloaded == 0 and seen[-1].downloaded == len(PAYLOAD) and seen[-1].total == len(PAYLOAD)
    assert seen[-1].fraction == 1.0
    assert all(a.downloaded <= b.downloaded for a, b in pairwise(seen))
    assert m.recorded_sha256(spec_for(server)) == SHA
    assert "(server)" in path.with_name(path.name + ".sha256").read_text()
    assert m.verify(spec_for(server))
    # already there: no second request
    count = len(server.behaviour.requests)
    assert run(m.ensure(spec_for(server))) == path
    assert len(server.behaviour.requests) == count


def test_wrong_server_checksum_keeps_nothing(server, tmp_path: Path) -> None:
    server.behaviour.linked_etag = '"' + "0" * 64 + '"'
    m = manager(tmp_path)
    with pytest.raises(ModelChecksumError, match="corrupt"):
        run(m.download(spec_for(server)))
    assert not m.path_for(spec_for(server)).exists()
    assert not m.part_path(spec_for(server)).exists()


def test_pinned_checksum_wins_over_headers(server, tmp_path: Path) -> None:
    server.behaviour.linked_etag = '"' + "1" * 64 + '"'  # would be wrong, but the pin is checked
    m = manager(tmp_path)
    path = run(m.download(spec_for(server, sha256=SHA)))
    assert "(pinned)" in path.with_name(path.name + ".sha256").read_text()
    with pytest.raises(ModelChecksumError):
        run(m.download(spec_for(server, name="other.gguf", sha256="2" * 64)))


def test_without_any_checksum_the_computed_one_is_recorded(server, tmp_path: Path) -> None:
    server.behaviour.redirect = False
    server.behaviour.etag = None
    m = manager(tmp_path)
    path = run(m.download(spec_for(server)))
    assert m.recorded_sha256(spec_for(server)) == SHA
    assert "(computed)" in path.with_name(path.name + ".sha256").read_text()
    path.write_bytes(PAYLOAD[:-1] + b"x")  # later damage is noticed
    assert not m.verify(spec_for(server))


def test_interrupted_download_resumes_with_range_in_a_later_call(server, tmp_path: Path) -> None:
    server.behaviour.linked_etag = f'"{SHA}"'
    server.behaviour.drop_after = [100_000]
    m = manager(tmp_path, retries=0)
    with pytest.raises(ModelError, match="resumes from there"):
        run(m.download(spec_for(server)))
    part = m.part_path(spec_for(server))
    assert part.exists() and 0 < part.stat().st_size <= 100_000
    assert not m.path_for(spec_for(server)).exists()
    kept = part.stat().st_size
    path = run(m.download(spec_for(server)))
    assert path.read_bytes() == PAYLOAD
    last = server.behaviour.requests[-1]
    assert last["range"] == f"bytes={kept}-" and last["if_range"] == '"v1"'


def test_interruptions_are_retried_in_the_same_call(server, tmp_path: Path) -> None:
    server.behaviour.drop_after = [50_000, 60_000]
    m = manager(tmp_path, retries=3)
    path = run(m.download(spec_for(server)))
    assert path.read_bytes() == PAYLOAD
    ranges = [r["range"] for r in server.behaviour.requests if r["path"].startswith("/cdn/")]
    assert ranges[0] is None and ranges[1].startswith("bytes=") and ranges[2].startswith("bytes=")


def test_server_ignoring_range_restarts_cleanly(server, tmp_path: Path) -> None:
    server.behaviour.ranges = False
    server.behaviour.drop_after = [70_000]
    m = manager(tmp_path, retries=2)
    assert run(m.download(spec_for(server))).read_bytes() == PAYLOAD


def test_changed_file_on_the_server_is_fetched_whole(server, tmp_path: Path) -> None:
    server.behaviour.drop_after = [70_000]
    m = manager(tmp_path, retries=0)
    with pytest.raises(ModelError):
        run(m.download(spec_for(server)))
    new = b"GGUF" + bytes(reversed(range(256))) * 1000
    server.behaviour.payload = new
    server.behaviour.etag = '"v2"'  # If-Range "v1" no longer matches: the server sends it all
    assert run(m.download(spec_for(server))).read_bytes() == new


def test_cancel_with_an_event_keeps_the_part_for_later(server, tmp_path: Path) -> None:
    m = manager(tmp_path)
    cancel = threading.Event()

    def progress(p: DownloadProgress) -> None:
        if p.downloaded >= 64_000:
            cancel.set()

    with pytest.raises(ModelDownloadCancelled, match="cancelled"):
        run(m.download(spec_for(server), progress=progress, cancel=cancel))
    assert m.part_path(spec_for(server)).stat().st_size >= 64_000
    assert not m.is_available(spec_for(server))
    assert run(m.download(spec_for(server))).read_bytes() == PAYLOAD
    assert server.behaviour.requests[-1]["range"] is not None


def test_asyncio_cancellation_stops_the_download(server, tmp_path: Path) -> None:
    server.behaviour.chunk_delay = 0.05
    m = manager(tmp_path)

    async def main():
        task = asyncio.create_task(m.download(spec_for(server)))
        while m._part_size(spec_for(server)) < 32_000:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert 0 < m.part_path(spec_for(server)).stat().st_size < len(PAYLOAD)
    assert not m.is_available(spec_for(server))


def test_no_network_says_so_and_offers_a_local_model(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = manager(tmp_path)
    spec = ModelSpec(filename="m.gguf", url=f"http://127.0.0.1:{port}/m.gguf")
    with pytest.raises(ModelError) as info:
        run(m.download(spec))
    msg = str(info.value)
    assert "no network" in msg and "local GGUF" in msg


def test_silent_server_times_out(server, tmp_path: Path) -> None:
    server.behaviour.slow = 3.0
    m = manager(tmp_path, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="in time"):
        run(m.download(spec_for(server)))
    assert time.monotonic() - t0 >= 0.5  # the read timeout fired; the 3 s answer never arrived


@pytest.mark.parametrize("status, message", [(404, "not found"), (500, "try again later"), (403, "refused access")])
def test_http_errors_are_clear(server, tmp_path: Path, status: int, message: str) -> None:
    server.behaviour.status = status
    with pytest.raises(ModelError, match=message):
        run(manager(tmp_path).download(spec_for(server)))


def test_something_that_is_not_a_gguf_is_refused(server, tmp_path: Path) -> None:
    server.behaviour.payload = b"<html>login page</html>" * 100
    m = manager(tmp_path)
    with pytest.raises(ModelError, match="not a GGUF"):
        run(m.download(spec_for(server)))
    assert not m.path_for(spec_for(server)).exists()


def test_download_sync_for_scripts(server, tmp_path: Path) -> None:
    assert manager(tmp_path).download_sync(spec_for(server)).read_bytes() == PAYLOAD


def test_local_model_validation(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from tests.support.tiny_gguf import make_tiny_qwen3_gguf

    m = ModelManager(tmp_path / "models")
    good = make_tiny_qwen3_gguf(tmp_path / "tiny.gguf")
    assert m.local_model(good) == good.resolve()
    with pytest.raises(ModelError, match="does not exist"):
        m.local_model(tmp_path / "missing.gguf")
    with pytest.raises(ModelError, match="not a file"):
        m.local_model(tmp_path)
    (tmp_path / "page.gguf").write_bytes(b"<html></html>")
    with pytest.raises(ModelError, match="not a GGUF"):
        m.local_model(tmp_path / "page.gguf")
    (tmp_path / "cut.gguf").write_bytes(good.read_bytes()[:1000])
    with pytest.raises(ModelError, match="truncated"):
        m.local_model(tmp_path / "cut.gguf")
    if os.name == "posix" and os.geteuid() != 0:
        locked = tmp_path / "locked.gguf"
        locked.write_bytes(good.read_bytes())
        locked.chmod(0)
        with pytest.raises(ModelError, match="cannot be read"):
            m.local_model(locked)
