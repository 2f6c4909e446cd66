"""Fixtures shared by the Embeddings page and semantic strip tests: a tiny real GGUF embedding
model, settings that keep the test vault across an engine swap, and a loopback HTTP server that
serves a model file the way Hugging Face does (the model manager's own test server)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from dle_desktop.state.settings import Settings
from dle_desktop.vectors.model_manager import DEFAULT_MODEL, ModelManager, ModelSpec
from tests.support.tiny_gguf import make_tiny_qwen3_gguf
from tests.vectors.test_model_manager import Behaviour, _Handler, _Server


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf")


@pytest.fixture
def model_server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.behaviour = Behaviour()  # type: ignore[attr-defined]  # the stdlib server carries the fixture's state to its handler
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def settings_for(vault: Path, **changes) -> Settings:
    """Settings naming the test vault, so the engine that "OK" starts opens the same folder."""
    return Settings().replace(vaults=[{"name": "vault", "kind": "folder", "path": str(vault)}], **changes)


def serve_default_model(desk, httpd, payload: bytes, sha256: str | None = None) -> ModelSpec:
    """Point the app's download at the loopback server, under the default model's file name
    (so the engine picks the downloaded file up as its default model)."""
    httpd.behaviour.payload = payload
    host, port = httpd.server_address[:2]
    spec = ModelSpec(
        filename=DEFAULT_MODEL.filename,
        url=f"http://{host}:{port}/resolve/{DEFAULT_MODEL.filename}",
        sha256=sha256 or hashlib.sha256(payload).hexdigest(),
        description="Test model",
    )
    download = desk.model_download
    download.spec = spec
    # Small reads, so a ~300 kB file still reports progress many times and can be cancelled midway.
    download.manager = ModelManager(desk.runtime.ctx.paths.models_dir, chunk_size=16384, retry_delay=0.01, timeout=5.0)
    return spec


def embeddable_entries(desk) -> int:
    return sum(1 for e in desk.runtime.engine.snapshot.entries if not e.guide and e.content)
