"""A real engine on a small vault folder, its Librarian, and the fake AI provider (a real
loopback HTTP server) as the librarian's connection."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.librarian.service import Librarian
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import settings_from_mapping
from dle_desktop.vault.sources import FolderSource
from tests.fakes.ai_provider import ai_fake  # noqa: F401 - the fixture

COMMENTED = """---
# The harbourmaster's entry; keep the comments.
tags: [lorebook]   # the lorebook tag
keys: [harbour, quay]  # short on purpose
priority: 60
summary: "The harbourmaster of Lantern Quay."
---
# Old Hobb

Old Hobb keeps the quay. He knows every smuggler by name.
"""

VAULT = {
    "Characters/Old Hobb.md": COMMENTED,
    "Places/Lantern Quay.md": "---\ntags: [lorebook]\nkeys: [Lantern Quay, lanterns]\n---\n# Lantern Quay\n\n"
    "The docks at night. Old Hobb works here. See [[Old Hobb]].\n",
    "Factions/Ferrymen.md": "---\ntags: [lorebook]\nkeys: [ferrymen]\n---\n# Ferrymen\n\nThe ferrymen's guild.\n",
}


def profile_for(fake, provider: str) -> dict:
    flavor = "custom" if provider == "openai" else provider
    return {
        "id": "fake",
        "name": "Fake",
        "provider": provider,
        "flavor": flavor,
        "base_url": fake.url + ("/v1" if provider == "openai" else ""),
        "model": "fake-model",
    }


def make_vault(root: Path) -> Path:
    for rel, text in VAULT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    return root


def vault_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@contextlib.asynccontextmanager
async def running(tmp_path: Path, fake, provider: str = "openai", data: str = "data"):
    root = tmp_path / "vault"
    if not root.exists():
        make_vault(root)
    settings = settings_from_mapping(
        {"connection_profiles": [profile_for(fake, provider)], "aiSearchProfileId": "fake"}
    )
    dirs = tmp_path / data
    engine = Engine(
        AppPaths(dirs, dirs).ensure(),
        settings,
        SecretStore(use_keyring=False),
        vault_override=[FolderSource("lore", root)],
        use_cache=False,
    )
    await engine.start(watch=False)
    await engine.wait_ready()
    try:
        yield engine, Librarian(engine), root
    finally:
        await engine.stop()


@pytest.fixture
def run():
    return asyncio.run


class Events(list):
    def kinds(self) -> list[str]:
        return [e.kind for e in self]

    def of(self, kind: str) -> list:
        return [e for e in self if e.kind == kind]
