"""Engine construction from settings, status and health, without a server."""

from __future__ import annotations

import asyncio

import pytest

from dle_desktop import __version__
from dle_desktop.engine.engine import SAMPLE_VAULT_NAME, Engine, source_from_config, source_from_spec
from dle_desktop.errors import ConfigError
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, VaultConfig
from dle_desktop.vault.sources import FolderSource


@pytest.fixture
def paths(tmp_path) -> AppPaths:
    return AppPaths(tmp_path / "data", tmp_path / "data").ensure()


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def rest_settings(*names: str) -> Settings:
    return Settings(
        vaults=tuple(VaultConfig(name=n, kind="obsidian-rest", host="127.0.0.1", port=27123) for n in names)
    )


def test_rest_vault_without_key_gets_the_vault_without_key_warning(paths):
    engine = Engine(paths, rest_settings("Remote"), SecretStore(use_keyring=False))
    assert [s.kind for s in engine.sources] == ["obsidian-rest"]
    report = engine.health()
    hits = [f for f in report.warnings if f.code == "vault_without_key"]
    assert len(hits) == 1
    assert "Remote" in hits[0].message
    status = engine.status()
    assert status["vaults"][0]["kind"] == "obsidian-rest"
    assert "27123" in status["vaults"][0]["location"]


def test_rest_vault_with_a_key_gets_no_vault_without_key_warning(paths):
    secrets = SecretStore(use_keyring=False)
    secrets.set("vault:Remote", "a-real-looking-key-123")
    engine = Engine(paths, rest_settings("Remote", "Keyless"), secrets)
    hits = [f for f in engine.health().warnings if f.code == "vault_without_key"]
    assert [h.message.split("'")[1] for h in hits] == ["Keyless"]
    # The key is never part of what status shows.
    assert "a-real-looking-key-123" not in repr(engine.status())


def test_disabled_rest_vault_without_key_is_not_flagged(paths):
    settings = Settings(vaults=(VaultConfig(name="Off", kind="obsidian-rest", enabled=False),))
    engine = Engine(paths, settings, SecretStore(use_keyring=False))
    assert "vault_without_key" not in codes(engine.health().warnings)
    assert "no_enabled_vaults" in codes(engine.health().errors)


def test_no_vaults_at_all_is_a_health_error(paths):
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), vault_override=[])
    assert "no_enabled_vaults" in codes(engine.health().errors)
    assert engine.status()["entries"] == 0
    assert engine.status()["vaults"] == []


def test_first_run_opens_the_sample_vault(paths):
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), use_cache=False)
    assert [s.name for s in engine.sources] == [SAMPLE_VAULT_NAME]
    assert engine.using_sample_vault
    result = asyncio.run(engine.indexer.sync_all())
    assert len(result.snapshot) == 61
    status = engine.status()
    assert status["sample_vault"] is True


def test_status_shape_after_a_sync(paths, make_vault, lore):
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta"), "C.md": "skipped"})
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), vault_override=[FolderSource("mine", root)])
    assert not engine.using_sample_vault
    before = engine.status()
    assert before["entries"] == 0 and before["index_version"] is None

    async def go():
        await engine.start(watch=False)
        try:
            return await engine.wait_ready()
        finally:
            await engine.stop()

    asyncio.run(go())
    status = engine.status()
    assert status["version"] == __version__
    assert status["entries"] == 2 and status["skipped"] == 1
    assert status["vaults"] == [
        {"name": "mine", "kind": "folder", "location": str(root), "enabled": True, "entries": 2, "error": None}
    ]
    assert isinstance(status["index_version"], int) and isinstance(status["index_built_at"], float)
    assert status["syncing"] is False and status["sync_paused"] is False and status["last_error"] is None


def test_health_of_the_sample_vault_has_the_documented_errors(paths):
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), use_cache=False)
    asyncio.run(engine.indexer.sync_all())
    report = engine.health()
    errors = {(f.code, f.entry) for f in report.errors}
    assert ("duplicate_title", "The Drowned Bell") in errors
    assert ("requires_missing", "Ashby Grell") in errors
    assert any(code == "circular_requires" for code, _ in errors)
    warnings = {(f.code, f.entry) for f in report.warnings}
    assert {
        ("excludes_always_active", "The Drowned Choir"),
        ("probability_zero", "Tollgulls"),
        ("cascade_missing", "Dredgers' Union"),
        ("empty_content", "Cray Saltpans"),
    } <= warnings


def test_source_from_spec(make_vault, tmp_path):
    root = make_vault({}, name="My Vault")
    src = source_from_spec(str(root))
    assert isinstance(src, FolderSource) and src.name == "My Vault" and src.root == root.resolve()
    with pytest.raises(ConfigError, match="not found"):
        source_from_spec(str(tmp_path / "nope"))
    rest = source_from_spec("http://k3y-value@127.0.0.1:27123")
    assert rest.kind == "obsidian-rest"
    assert "k3y-value" not in rest.describe() and "k3y-value" not in repr(rest)


def test_source_from_config_folder_and_rest(tmp_path):
    secrets = SecretStore(use_keyring=False)
    folder = source_from_config(VaultConfig(name="F", path=str(tmp_path), enabled=False), secrets)
    assert isinstance(folder, FolderSource) and folder.enabled is False and folder.root == tmp_path
    rest = source_from_config(
        VaultConfig(name="R", kind="obsidian-rest", host="localhost", port=27124, https=True), secrets
    )
    assert rest.kind == "obsidian-rest" and rest.describe().startswith("https://")
