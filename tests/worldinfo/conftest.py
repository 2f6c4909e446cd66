"""Real parts for the World Info service tests: an engine on a vault folder under tmp_path, its
SQLite write history in a data folder, and books built as SillyTavern writes them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource

T = TypeVar("T")
VAULT = "mine"


def wi_entry(uid: int, comment: str, keys: list[str], content: str, **fields: Any) -> dict[str, Any]:
    """One entry as SillyTavern's World Info export has it (the fields a test cares about)."""
    entry: dict[str, Any] = {
        "uid": uid,
        "key": keys,
        "keysecondary": [],
        "comment": comment,
        "content": content,
        "constant": False,
        "selective": True,
        "order": 100,
        "position": 0,
        "disable": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
    }
    entry.update(fields)
    return entry


def wi_book(*entries: dict[str, Any]) -> bytes:
    return json.dumps({"entries": {str(e["uid"]): e for e in entries}}, indent=4).encode("utf-8")


def many_entries(n: int) -> bytes:
    return wi_book(*(wi_entry(i, f"Place {i:05d}", [f"place{i}"], f"Place {i} lies on the river.") for i in range(n)))


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


class EngineRun:
    """An engine over a vault folder, started without a watcher; `run(coro_fn)` runs on one loop."""

    def __init__(self, tmp_path: Path, settings: Settings | None = None) -> None:
        self.vault = tmp_path / "vault"
        self.vault.mkdir(exist_ok=True)
        self.paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
        self.settings = settings or Settings()
        self.engine: Engine | None = None

    def run(self, fn: Callable[[Engine], Awaitable[T]]) -> T:
        async def main() -> T:
            engine = Engine(
                self.paths,
                self.settings,
                SecretStore(use_keyring=False),
                vault_override=[FolderSource(VAULT, self.vault)],
                use_cache=False,
            )
            self.engine = engine
            await engine.start(watch=False)
            try:
                await engine.wait_ready()
                return await fn(engine)
            finally:
                await engine.stop()

        return asyncio.run(main())


@pytest.fixture
def run(tmp_path: Path) -> EngineRun:
    return EngineRun(tmp_path)
