"""A real engine on a small vault folder with the fake AI provider (a real loopback HTTP server)
as its connection; every writer channel inherits it from AI search. `answer_writers` makes the
fake answer the Scribe, Auto Lorebook and AI Notepad prompts by recognising them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

from dle_desktop.engine.engine import Engine
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, settings_from_mapping
from dle_desktop.vault.sources import FolderSource
from tests.fakes.ai_provider import FakeAiProvider, SeenAiRequest, ai_fake  # noqa: F401 - the fixture

VAULT = {
    "Characters/Old Hobb.md": "---\ntags: [lorebook]\nkeys: [Hobb, harbourmaster]\n---\n# Old Hobb\n\n"
    "Old Hobb keeps the quay.\n",
    "Places/Lantern Quay.md": "---\ntags: [lorebook]\nkeys: [Lantern Quay]\n---\n# Lantern Quay\n\nThe docks at night.\n",
}
SUMMARY = "## Events\n- Hobb met Mira at the quay.\n- They agreed to find the Brass Key."
SUGGESTIONS = [
    {
        "title": "Brass Key",
        "type": "lore",
        "keys": ["brass key", "the key"],
        "summary": "A key that opens the sea gate.",
        "content": "An old brass key, green with salt.\n\nIt opens the sea gate.",
    },
    {"title": "old hobb", "type": "character", "keys": ["hobb"], "summary": "Already there.", "content": "x"},
]
EXTRACTED = "- Mira hides the key in her boot."
WHEN = datetime(2026, 3, 4, 5, 6, 7)


def answer_writers(req: SeenAiRequest) -> Any:
    user = req.user_text
    if "[RECENT CONVERSATION]" in user:
        return SUMMARY
    if "## Existing lorebook entries (do NOT suggest these):" in user:
        return "Here you go:\n```json\n" + json.dumps(SUGGESTIONS) + "\n```"
    if "[Latest AI response]" in user:
        latest = user.split("[Latest AI response]", 1)[1]
        return EXTRACTED if "key" in latest.lower() else "NOTHING_TO_NOTE"
    return "OK"


def profile_for(fake: FakeAiProvider) -> dict[str, Any]:
    return {
        "id": "fake",
        "name": "Fake",
        "provider": "openai",
        "flavor": "custom",
        "base_url": fake.url + "/v1",
        "model": "fake-model",
    }


def writer_settings(fake: FakeAiProvider, **extra: Any) -> Settings:
    return settings_from_mapping({"connection_profiles": [profile_for(fake)], "aiSearchProfileId": "fake", **extra})


def make_vault(root: Path) -> Path:
    for rel, text in VAULT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    return root


def chat(*texts: str) -> list[dict[str, Any]]:
    """A chat alternating user and character (Hobb), user first."""
    return [{"name": "Mira" if i % 2 == 0 else "Hobb", "is_user": i % 2 == 0, "mes": t} for i, t in enumerate(texts)]


@contextlib.asynccontextmanager
async def running(tmp_path: Path, settings: Settings) -> AsyncIterator[tuple[Engine, Path]]:
    root = tmp_path / "vault"
    if not root.exists():
        make_vault(root)
    dirs = tmp_path / "data"
    engine = Engine(
        AppPaths(dirs, dirs).ensure(),
        settings,
        SecretStore(use_keyring=False),
        vault_override=[FolderSource("lore", root)],
        use_cache=False,
    )
    # A fixed clock, so the session note's name and frontmatter are known to the byte.
    engine.writers.scribe.now = lambda: WHEN
    await engine.start(watch=False)
    await engine.wait_ready()
    try:
        yield engine, root
    finally:
        await engine.stop()
