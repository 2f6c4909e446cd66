"""Fixtures for the Obsidian REST emulation: a real OlraRunner on 127.0.0.1 (port 0) over real
folders, reached with httpx; a stand-in engine that only names the open vaults, or a real Engine
on an EngineThread where the index matters."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from dle_desktop.olra import OlraRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.vault.sources import FolderSource


class _Indexer:
    def __init__(self, sources) -> None:
        self.sources = sources


class VaultsOnly:
    """What the runner reads of an engine: its open vaults (and whether it is the sample vault)."""

    def __init__(self, sources, using_sample_vault: bool = False) -> None:
        self.indexer = _Indexer(list(sources))
        self.using_sample_vault = using_sample_vault


class Served:
    def __init__(self, runner: OlraRunner, roots: dict[str, Path]) -> None:
        self.runner = runner
        self.roots = roots
        self.key = runner.key()
        self.client = httpx.Client(base_url=runner.url, timeout=30)

    @property
    def root(self) -> Path:
        return next(iter(self.roots.values()))

    def auth(self, accept: str = "application/json", **extra) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", "Accept": accept, **extra}

    def get(self, url: str, **kw) -> httpx.Response:
        return self.client.get(url, headers=kw.pop("headers", None) or self.auth(), **kw)

    def put(self, url: str, content: bytes | str, content_type: str = "text/markdown") -> httpx.Response:
        return self.client.put(url, content=content, headers=self.auth(content_type, **{"Content-Type": content_type}))

    def close(self) -> None:
        self.client.close()
        self.runner.stop()


@pytest.fixture
def secrets() -> SecretStore:
    return SecretStore(use_keyring=False)


@pytest.fixture
def olra(tmp_path, secrets):
    """`olra({"a.md": "..."}, ...)` → a running emulation over one vault folder (`vaults=` for
    several: {name: files}); `.client`, `.key`, `.root`, `.runner`."""
    made: list[Served] = []

    def make(files: dict | None = None, *, vaults: dict[str, dict] | None = None, engine=None, **runner_kw) -> Served:
        from tests.conftest import write_files

        vaults = vaults if vaults is not None else {"v": files or {}}
        roots = {name: write_files(tmp_path / "vaults" / name, content) for name, content in vaults.items()}
        engine = engine or VaultsOnly([FolderSource(name, root) for name, root in roots.items()])
        data = tmp_path / "data"
        runner = OlraRunner(engine, secrets, AppPaths(data, data).ensure(), port=0, **runner_kw)
        assert runner.start(), runner.error
        served = Served(runner, roots)
        made.append(served)
        return served

    yield make
    for served in made:
        served.close()


def raw_request(port: int, request: bytes, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send bytes exactly as given (httpx would normalise `..` away) and read the whole answer;
    (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")[1:]
                        if line.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if length is not None and len(body) >= length:
                    break
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
