"""Fixtures for the SillyTavern Vector API tests: the tiny real Qwen3 GGUF (generated once per
session), live servers (engine + ServerRunner on a free loopback port), unique collection ids."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ._support import StServer

_counter = itertools.count()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    from tests.support.tiny_gguf import make_tiny_qwen3_gguf

    return Path(make_tiny_qwen3_gguf(tmp_path_factory.mktemp("models") / "tiny-qwen3-embedding.gguf"))


def _server(base: Path, model: Path | None) -> StServer:
    vault = base / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    return StServer(base / "data", vault, model)


@pytest.fixture(scope="module")
def st(tmp_path_factory, tiny_model) -> StServer:
    """One server per test module; tests use their own collection ids (`cid`)."""
    server = _server(tmp_path_factory.mktemp("st"), tiny_model)
    yield server
    server.close()


@pytest.fixture
def fresh(tmp_path, tiny_model) -> StServer:
    """A server of its own, for tests that purge everything or restart."""
    server = _server(tmp_path, tiny_model)
    yield server
    server.close()


@pytest.fixture
def no_model(tmp_path) -> StServer:
    """A server with no local embedding model configured."""
    server = _server(tmp_path, None)
    yield server
    server.close()


@pytest.fixture
def cid(request) -> str:
    """A collection id of this test's own, shaped like ST's chat ids."""
    return f"Seraphina - {request.node.name[:40]} - {next(_counter)}"
