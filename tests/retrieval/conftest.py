"""Fixtures for the retrieval API tests: a real Engine on an EngineThread, a real ServerRunner on
a free loopback port, httpx clients, a tmp data dir, and small generated vaults."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from dle_desktop.state.settings import Settings

from ._support import LiveServer, world_files


@pytest.fixture
def world(make_vault, lore) -> Path:
    return make_vault(world_files(lore), name="world")


@pytest.fixture
def start_server(tmp_path) -> Callable[..., LiveServer]:
    """`start_server(vault, settings=None, data=None, sync=True)`; every server is closed afterwards."""
    started: list[LiveServer] = []

    def start(vault: Path, settings: Settings | None = None, data: Path | None = None, sync: bool = True) -> LiveServer:
        s = LiveServer(vault, data or tmp_path / f"data{len(started)}", settings, sync)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


@pytest.fixture
def server(world, start_server) -> LiveServer:
    return start_server(world)


@pytest.fixture
def sample_copy(tmp_path, sample_vault) -> Path:
    """A private copy of the bundled sample vault."""
    return Path(shutil.copytree(sample_vault, tmp_path / "sample"))
