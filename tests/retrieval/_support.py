"""Helpers for the retrieval API tests: a live engine + HTTP server, a small world vault, chat builders."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx

from dle_desktop.engine.engine import Engine
from dle_desktop.engine.thread import EngineThread
from dle_desktop.server.app import ServerRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource

API = "/api/dle/v1"
VAULT = "lore"

#: The small world most tests use. One concern per entry, so each stage is observable alone.
WORLD = {
    "Places/Lantern Quay.md": dict(title="Lantern Quay", keys=("quay",)),
    "People/Tamsin Reed.md": dict(title="Tamsin Reed", keys=("tamsin",), extra="priority: 20"),
    "Artifacts/Drowned Bell.md": dict(title="Drowned Bell", keys=("bell",), extra="cooldown: 2"),
    "Rules/Omen.md": dict(title="Omen", keys=("omen",), extra="probability: 0.5"),
    "History/Eel Year.md": dict(title="Eel Year", keys=("eels",), extra="era: Eel Year"),
    "Hidden Archive.md": dict(title="Hidden Archive", keys=("zzz-never-said",)),
}


def note_text(title: str, keys=(), extra: str = "") -> str:
    """A lore note (the same shape as tests/conftest.py's lore_text), usable outside fixtures."""
    lines = ["---", "tags: [lorebook]"]
    if keys:
        lines.append("keys: [" + ", ".join(json.dumps(k, ensure_ascii=False) for k in keys) + "]")
    if extra:
        lines.extend(extra.strip("\n").splitlines())
    lines += ["---", f"# {title}", f"{title} is a place of note in the test world."]
    return "\n".join(lines) + "\n"


def world_files(lore_text=note_text) -> dict[str, str]:
    return {path: lore_text(spec["title"], spec["keys"], extra=spec.get("extra", "")) for path, spec in WORLD.items()}


def write_world(root: Path) -> Path:
    for rel, text in world_files().items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def messages(*texts: str, first_user: bool = True) -> list[dict]:
    """SillyTavern messages alternating user / character, starting with the user."""
    out = []
    for i, text in enumerate(texts):
        is_user = (i % 2 == 0) == first_user
        out.append({"name": "User" if is_user else "Narrator", "mes": text, "is_user": is_user})
    return out


def titles(generation: dict) -> list[str]:
    return [i["title"] for i in generation["injected"]]


def verdicts_for(generation: dict, title: str) -> list[tuple[str, str, str]]:
    return [(v["stage"], v["outcome"], v["reason"]) for v in generation["verdicts"] if v["title"] == title]


class LiveServer:
    """Engine + HTTP server on a real port. `restart()` keeps the data dir."""

    def __init__(
        self,
        vault: Path,
        data: Path,
        settings: Settings | None = None,
        sync: bool = True,
        secrets: SecretStore | None = None,
        client_timeout: float = 60,
    ) -> None:
        self.vault = vault
        self.data = data
        self.settings = settings or Settings()
        self.sync = sync
        self.secrets = secrets or SecretStore(use_keyring=False)
        self.client_timeout = client_timeout
        self._start()

    def _start(self) -> None:
        self.thread = EngineThread().start()
        self.paths = AppPaths(self.data, self.data).ensure()
        self.engine = Engine(self.paths, self.settings, self.secrets, vault_override=[FolderSource(VAULT, self.vault)])
        self.thread.call(self.engine.start(initial_sync=self.sync, watch=False), timeout=30)
        if self.sync:
            self.thread.call(self.engine.wait_ready(), timeout=30)
        self.runner = ServerRunner(self.engine, "127.0.0.1", 0, switch_writers=self._switch_writers)
        self.thread.call(self.runner.start(), timeout=30)
        self.url = self.runner.url
        self.port = self.runner.port
        self.client = httpx.Client(base_url=self.url, timeout=self.client_timeout)

    async def _switch_writers(self, changes) -> None:
        """What the Runtime does, less the settings file (these tests have none)."""
        await self.engine.apply_settings(self.engine.settings.replace(**changes))

    def close(self) -> None:
        if self.thread is None:
            return
        self.client.close()
        try:
            self.thread.call(self.runner.stop(), timeout=15)
            self.thread.call(self.engine.stop(), timeout=30)
        finally:
            self.thread.stop()
            self.thread = None

    def restart(self) -> None:
        self.close()
        self._start()

    # -- API helpers ------------------------------------------------------------------------
    def retrieve(self, chat_id: str, msgs: list[dict], **extra) -> dict:
        r = self.client.post(f"{API}/retrieve", json={"chat_id": chat_id, "messages": msgs, **extra})
        assert r.status_code == 200, r.text
        return r.json()

    def state(self, chat_id: str) -> dict:
        r = self.client.get(f"{API}/chats/{chat_id}")
        assert r.status_code == 200, r.text
        return r.json()

    def records(self, chat_id: str, limit: int = 50) -> list[dict]:
        r = self.client.get(f"{API}/chats/{chat_id}/records", params={"limit": limit})
        assert r.status_code == 200, r.text
        return r.json()["records"]

    def put(self, chat_id: str, what: str, key: str, value) -> dict:
        r = self.client.put(f"{API}/chats/{chat_id}/{what}", json={key: value})
        assert r.status_code == 200, r.text
        return r.json()

    def everything(self, chat_id: str) -> tuple[dict, list[dict]]:
        """All that is observable of a chat: its state and its decision records."""
        return self.state(chat_id), self.records(chat_id)

    def db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.paths.state_db)


def dump(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)
