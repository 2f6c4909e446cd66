"""Keys and private files: the 0600 key file when no keyring exists, keys given for one run
(environment, keys file), and a data folder only its owner can read."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from dle_desktop.errors import ConfigError
from dle_desktop.state.secrets import SecretStore, env_name, read_keys_file

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask():
    """The common default: new files 0644, folders 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


@posix_only
def test_without_a_keyring_keys_persist_in_a_0600_file(tmp_path, loose_umask):
    path = tmp_path / "data" / "secrets.json"
    store = SecretStore(use_keyring=False, file_path=path)
    assert store.persistent and str(path) in store.problem and str(path) in store.location
    store.set("ai-profile:main", "sk-file-fallback-123")
    assert mode(path) == 0o600
    assert "sk-file-fallback-123" in path.read_text(encoding="utf-8")

    again = SecretStore(use_keyring=False, file_path=path)  # the next start
    assert again.get("ai-profile:main") == "sk-file-fallback-123"
    again.delete("ai-profile:main")
    assert SecretStore(use_keyring=False, file_path=path).get("ai-profile:main") is None


def test_without_a_keyring_or_file_keys_stay_in_memory_and_say_so():
    store = SecretStore(use_keyring=False)
    store.set("vault:x", "kept-in-memory-1")
    assert store.get("vault:x") == "kept-in-memory-1"
    assert not store.persistent and "memory" in store.location and "session only" in store.problem


def test_a_broken_key_file_is_reported_not_fatal(tmp_path, caplog):
    path = tmp_path / "secrets.json"
    path.write_text("{not json", encoding="utf-8")
    store = SecretStore(use_keyring=False, file_path=path)
    with caplog.at_level(logging.WARNING):
        assert store.get("ai-profile:main") is None
    assert "cannot be read" in caplog.text


def test_environment_keys_win_for_this_run(tmp_path):
    assert env_name("ai-profile:openrouter-main") == "DLE_AI_KEY_OPENROUTER_MAIN"
    assert env_name("vault:My Vault") == "DLE_VAULT_KEY_MY_VAULT"
    path = tmp_path / "secrets.json"
    SecretStore(use_keyring=False, file_path=path).set("ai-profile:openrouter-main", "stored-key-1")
    store = SecretStore(
        use_keyring=False,
        file_path=path,
        run_keys={"DLE_AI_KEY_OPENROUTER_MAIN": "env-key-2", "HOME": "/not/a/key", "PATH": "x"},
    )
    assert store.get("ai-profile:openrouter-main") == "env-key-2"
    assert store.get("vault:other") is None
    store.set("ai-profile:openrouter-main", "typed-key-3")  # typing a key in the app replaces the run's
    assert store.get("ai-profile:openrouter-main") == "typed-key-3"


@posix_only
def test_keys_file_must_be_private_and_well_formed(tmp_path, loose_umask):
    keys = tmp_path / "keys.env"
    keys.write_text(
        "# headless box\nDLE_AI_KEY_MAIN = sk-from-file-1\n\nDLE_OBSIDIAN_KEY=obs-key-2\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="chmod 600"):
        read_keys_file(keys)
    keys.chmod(0o600)
    assert read_keys_file(keys) == {"DLE_AI_KEY_MAIN": "sk-from-file-1", "DLE_OBSIDIAN_KEY": "obs-key-2"}
    keys.write_text("OPENAI_API_KEY=sk-x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 1"):
        read_keys_file(keys)
    with pytest.raises(ConfigError, match="cannot read"):
        read_keys_file(tmp_path / "missing.env")


@posix_only
def test_make_context_reads_the_keys_file_and_environment(tmp_path, monkeypatch):
    from dle_desktop.app.context import make_context

    keys = tmp_path / "keys.env"
    keys.write_text("DLE_AI_KEY_MAIN=sk-from-file-1\n", encoding="utf-8")
    keys.chmod(0o600)
    monkeypatch.setenv("DLE_VAULT_KEY_LORE", "vault-env-key-9")
    ctx = make_context(str(tmp_path / "data"), log_to_stderr=False, keys_file=str(keys))
    assert ctx.secrets.get("ai-profile:main") == "sk-from-file-1"
    assert ctx.secrets.get("vault:lore") == "vault-env-key-9"


def test_vault_url_without_key_takes_it_from_the_environment_or_the_saved_vault(caplog):
    from dle_desktop.engine.engine import source_from_spec
    from dle_desktop.state.settings import VaultConfig

    env = SecretStore(use_keyring=False, run_keys={"DLE_OBSIDIAN_KEY": "obs-env-key-1"})
    assert source_from_spec("http://127.0.0.1:27123", env).reveal_api_key() == "obs-env-key-1"

    saved = (VaultConfig(name="Lore", kind="obsidian-rest", host="127.0.0.1", port=27124, https=True),)
    keyring_like = SecretStore(use_keyring=False)
    keyring_like.set("vault:Lore", "saved-key-2")
    assert source_from_spec("https://127.0.0.1:27124", keyring_like, saved).reveal_api_key() == "saved-key-2"
    assert source_from_spec("http://127.0.0.1:27124", keyring_like, saved).reveal_api_key() is None  # not that vault

    with caplog.at_level(logging.WARNING):
        source = source_from_spec("http://inline-key-3@127.0.0.1:27123", env)
    assert source.reveal_api_key() == "inline-key-3"
    assert "process list" in caplog.text and "DLE_OBSIDIAN_KEY" in caplog.text


@posix_only
def test_the_data_folder_and_its_files_are_private(tmp_path, loose_umask):
    from dle_desktop.logging_setup import PrivateRotatingFileHandler
    from dle_desktop.state.chat_store import ChatStore
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.settings import Settings, SettingsStore
    from dle_desktop.vault.cache import IndexCache

    root = tmp_path / "data"
    root.mkdir()
    (root / "settings.json").write_text("{}", encoding="utf-8")  # left readable by an older version
    os.chmod(root / "settings.json", 0o644)
    paths = resolve_paths(root).ensure()
    for d in (paths.data_dir, paths.config_dir, paths.logs_dir, paths.index_cache_dir, paths.runtime_dir):
        assert mode(d) == 0o700, d
    assert mode(paths.settings_file) == 0o600

    SettingsStore(paths.settings_file).save(Settings())
    assert mode(paths.settings_file) == 0o600

    store = ChatStore(paths.state_db)
    store._db.execute("CREATE TABLE IF NOT EXISTS probe (x)")
    assert mode(paths.state_db) == 0o600
    wal = Path(f"{paths.state_db}-wal")
    assert not wal.exists() or mode(wal) == 0o600
    store.close()

    handler = PrivateRotatingFileHandler(paths.logs_dir / "dle-desktop.log", maxBytes=200, backupCount=2)
    logger = logging.getLogger("test-private-log")
    logger.addHandler(handler)
    try:
        for i in range(10):
            logger.warning("line %d of the private log, long enough to rotate", i)
    finally:
        logger.removeHandler(handler)
        handler.close()
    logs = sorted(paths.logs_dir.glob("dle-desktop.log*"))
    assert len(logs) >= 2 and all(mode(p) == 0o600 for p in logs)

    IndexCache(paths.index_cache_dir).save("k", {})
    assert all(mode(p) == 0o600 for p in paths.index_cache_dir.iterdir())


@posix_only
def test_vault_notes_keep_the_users_own_mode(tmp_path, loose_umask):
    """Privacy is per file, never a process umask: notes written into a vault stay 0644."""
    import asyncio

    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.vault.sources import FolderSource

    resolve_paths(tmp_path / "data").ensure()
    vault = tmp_path / "vault"
    vault.mkdir()
    asyncio.run(FolderSource("v", vault).write_text("New.md", "# New\n"))
    assert mode(vault / "New.md") == 0o644


@posix_only
def test_vector_files_are_private(tmp_path, loose_umask):
    """The Vector API store holds the texts SillyTavern sends: its database and rows are 0600."""
    import numpy as np

    from dle_desktop.vectors.store_scope import connect
    from dle_desktop.vectors.store_util import write_rows

    db = connect(tmp_path / "items.sqlite")
    db.execute("CREATE TABLE t (x)")
    db.close()
    write_rows(tmp_path / "vectors.0.f32", 0, np.zeros((2, 4), dtype=np.float32))
    assert mode(tmp_path / "items.sqlite") == 0o600 and mode(tmp_path / "vectors.0.f32") == 0o600


@posix_only
def test_the_vector_store_and_the_librarian_keep_their_folders_private(tmp_path, loose_umask):
    """Folders the app makes in the data folder are 0700 and its lock file 0600, whatever the umask."""
    import numpy as np

    from dle_desktop.librarian.gaps import GapStore
    from dle_desktop.librarian.sessions import Session, SessionStore
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.vectors.contracts import StoredItem
    from dle_desktop.vectors.store import VectorStore

    paths = AppPaths(tmp_path / "data", tmp_path / "data").ensure()
    store = VectorStore(paths.vectors_dir, ann_background=False)
    try:
        vec = np.ones((1, 4), dtype=np.float32) / 2.0
        store.insert("chat-1", "transformers", "model", [StoredItem(hash=1, index=0, text="a text")], vec)
    finally:
        store.close()
    sessions = SessionStore(paths.data_dir / "librarian" / "sessions")
    sessions.save(Session.new("new", title="a session"))
    GapStore(paths.data_dir / "librarian" / "gaps.json").flag("Mira", "missing")
    folders = [p for p in (paths.data_dir / "vectors").rglob("*") if p.is_dir()]
    assert folders, "the store made no collection folder"
    for folder in [
        paths.vectors_dir,
        *folders,
        paths.data_dir / "librarian",
        paths.data_dir / "librarian" / "sessions",
    ]:
        assert mode(folder) == 0o700, folder
    assert mode(paths.vectors_dir / ".lock") == 0o600


@posix_only
def test_what_an_older_version_left_readable_is_tightened_at_start(tmp_path, loose_umask):
    from dle_desktop.state.paths import AppPaths

    data = tmp_path / "data"
    loose = [data / "vectors" / "transformers" / "chat-1", data / "librarian" / "sessions", data / "models"]
    for folder in loose:
        folder.mkdir(parents=True)
        (folder / "file.bin").write_bytes(b"x")
    (data / "vectors" / ".lock").write_bytes(b"")
    AppPaths(data, data).ensure()
    for folder in loose:
        assert mode(folder) == 0o700 and mode(folder / "file.bin") == 0o600, folder
    assert mode(data / "vectors") == 0o700 and mode(data / "vectors" / ".lock") == 0o600


@posix_only
def test_a_data_folder_shared_with_other_things_keeps_their_modes(tmp_path, loose_umask):
    """--data-dir may name a folder that holds other things: only what the app keeps is tightened."""
    from dle_desktop.state.paths import AppPaths

    data = tmp_path / "data"
    (data / "Notes").mkdir(parents=True)
    (data / "Notes" / "mine.md").write_text("mine\n", encoding="utf-8")
    (data / "settings.json").write_text("{}", encoding="utf-8")
    AppPaths(data, data).ensure()
    assert mode(data / "Notes") == 0o755 and mode(data / "Notes" / "mine.md") == 0o644
    assert mode(data / "settings.json") == 0o600
