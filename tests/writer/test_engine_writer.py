"""The engine's note writer: a write is in the index as soon as it returns, and the bundled
sample vault is read-only."""

from __future__ import annotations

import asyncio

import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.errors import WriteRefused
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource
from tests.conftest import lore_text


def test_a_write_through_the_engine_is_indexed_when_it_returns(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Quay.md").write_text(lore_text("Quay", ("quay",)), encoding="utf-8")
    paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
    engine = Engine(
        paths, Settings(), SecretStore(use_keyring=False), vault_override=[FolderSource("mine", vault)], use_cache=False
    )

    async def main() -> None:
        await engine.start(watch=False)
        try:
            snapshot = await engine.wait_ready()
            quay = snapshot.find("Quay")
            await engine.writer.set_fields(
                "mine", "Quay.md", {"keys": ["quay", "harbour"]}, base=quay.content_hash, feature="optimize-keys"
            )
            assert engine.snapshot.find("Quay").keys == ("quay", "harbour")
            result = await engine.writer.create(
                "mine", "Gull Court.md", lore_text("Gull Court", ("gulls",)), feature="librarian"
            )
            assert engine.snapshot.find("Gull Court") is not None
            await engine.writer.undo(result.record.id)
            assert engine.snapshot.find("Gull Court") is None
            assert [r.action for r in engine.writer.history_for("mine", "Gull Court.md")] == ["undo", "create"]
        finally:
            await engine.stop()

    asyncio.run(main())
    assert (paths.data_dir / "write-history.sqlite").is_file()


def test_the_sample_vault_is_read_only(tmp_path):
    paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), use_cache=False)
    assert engine.using_sample_vault
    with pytest.raises(WriteRefused, match="read-only"):
        asyncio.run(engine.writer.create("Sample vault", "New.md", "x", feature="manual"))
