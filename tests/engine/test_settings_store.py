"""Settings on real files: round trip, DLE names, refusals, broken files set aside, no secrets."""

from __future__ import annotations

import json
import time

import pytest

from dle_desktop.errors import ConfigError
from dle_desktop.state.paths import AppPaths, resolve_paths
from dle_desktop.state.settings import SCHEMA_VERSION, Settings, SettingsStore, VaultConfig, settings_from_mapping


@pytest.fixture
def store(tmp_path) -> SettingsStore:
    return SettingsStore(tmp_path / "config" / "settings.json")


def test_missing_file_gives_defaults_and_does_not_create_it(store):
    assert store.load() == Settings()
    assert not store.path.exists()
    assert store.problem is None


def test_round_trip(store):
    settings = Settings(
        vaults=(
            VaultConfig(name="Main", path="/tmp/lore"),
            VaultConfig(name="Remote", kind="obsidian-rest", host="localhost", port=27124, https=True, enabled=False),
        ),
        multi_vault_conflict_resolution="merge",
        lorebook_tag="lore",
        scan_depth=7,
        fuzzy_search_min_score=0.75,
        recursive_scan=True,
        server_port=0,
        sync_paused=True,
    )
    store.save(settings)
    loaded = SettingsStore(store.path).load()
    assert loaded == settings
    raw = json.loads(store.path.read_text(encoding="utf-8"))
    assert raw["schema_version"] == SCHEMA_VERSION
    assert raw["vaults"][1] == {
        "name": "Remote",
        "kind": "obsidian-rest",
        "path": "",
        "host": "localhost",
        "port": 27124,
        "https": True,
        "enabled": False,
    }
    assert [p.name for p in store.path.parent.iterdir()] == ["settings.json"]  # no temp file left


def test_save_is_atomic_replace(store):
    store.save(Settings(scan_depth=5))
    inode = store.path.stat().st_ino
    store.save(Settings(scan_depth=6))
    assert store.path.stat().st_ino != inode
    assert store.load().scan_depth == 6


def test_dle_camel_case_names_are_accepted(store):
    store.path.parent.mkdir(parents=True)
    store.path.write_text(
        json.dumps(
            {
                "scanDepth": 6,
                "multiVaultConflictResolution": "first",
                "cacheTTL": 60,
                "lorebookTag": "lore",
                "fuzzySearchMinScore": 1.5,
                "unlimitedBudget": True,
                "settingsVersion": 3,
            }
        ),
        encoding="utf-8",
    )
    s = store.load()
    assert store.problem is None
    assert (s.scan_depth, s.multi_vault_conflict_resolution, s.cache_ttl, s.lorebook_tag) == (6, "first", 60, "lore")
    assert s.fuzzy_search_min_score == 1.5 and s.unlimited_budget is True
    # Both spellings in one mapping work too.
    assert settings_from_mapping({"scan_depth": 2, "maxEntries": 20}).max_entries == 20


def test_unknown_names_are_refused_naming_them():
    with pytest.raises(ConfigError) as err:
        settings_from_mapping({"scanDepth": 4, "bogusSetting": 1, "another_one": True})
    assert "another_one" in str(err.value) and "bogusSetting" in str(err.value)
    assert "scanDepth" not in str(err.value)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"scanDepth": 101}, "outside"),
        ({"scan_depth": -1}, "outside"),
        ({"maxTokensBudget": 99}, "outside"),
        ({"fuzzySearchMinScore": 5}, "outside"),
        ({"server_port": 70000}, "outside"),
        ({"scanDepth": "four"}, "expected a number"),
        ({"scanDepth": True}, "expected a number"),
        ({"scanDepth": None}, "expected a number"),
        ({"scanDepth": float("nan")}, "NaN"),
        ({"recursiveScan": 1}, "expected true or false"),
        ({"recursiveScan": "yes"}, "expected true or false"),
        ({"lorebookTag": 5}, "expected text"),
        ({"multiVaultConflictResolution": "newest"}, "not one of"),
        ({"vaults": "C:/lore"}, "must be a list"),
        ({"vaults": [{"name": ""}]}, "non-empty name"),
        ({"vaults": [{"name": "a", "path": "/x"}, {"name": "A", "path": "/y"}]}, "unique"),
        ({"vaults": [{"name": "a", "kind": "dropbox"}]}, "kind must be"),
        ({"vaults": [{"name": "a", "kind": "obsidian-rest", "port": 0}]}, "outside 1-65535"),
        ({"vaults": [{"name": "a", "kind": "obsidian-rest", "port": "http"}]}, "port must be a number"),
        ({"vaults": [{"name": "a", "colour": "red"}]}, "colour"),
        ({"vaults": ["just a string"]}, "must be an object"),
    ],
)
def test_bad_values_are_refused(raw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        settings_from_mapping(raw)


def test_numbers_and_booleans_in_text_form():
    s = settings_from_mapping({"scanDepth": "6", "recursiveScan": "true", "fuzzySearchMinScore": "0.3"})
    assert s.scan_depth == 6 and isinstance(s.scan_depth, int)
    assert s.recursive_scan is True and s.fuzzy_search_min_score == 0.3


def test_replace_validates():
    s = Settings().replace(scan_depth=9)
    assert s.scan_depth == 9
    with pytest.raises(ConfigError):
        Settings().replace(scan_depth=1000)


@pytest.mark.parametrize(
    "content",
    [
        b"{ this is not json",
        b"\xff\xfe\x00garbage",
        b'{"scanDepth": 500}',
        b'{"unknownThing": 1}',
        b"[1, 2, 3]",
    ],
)
def test_broken_file_is_set_aside_and_defaults_are_used(store, content):
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(content)
    settings = store.load()
    assert settings == Settings()
    kept = list(store.path.parent.glob("settings.json.broken-*"))
    assert len(kept) == 1
    assert kept[0].read_bytes() == content  # nothing lost
    assert store.problem and kept[0].name in store.problem
    assert not store.path.exists()
    # Saving afterwards writes a fresh file and leaves the broken copy alone.
    store.save(settings)
    assert kept[0].read_bytes() == content


def test_a_second_broken_file_does_not_overwrite_the_first_broken_copy(store):
    """Two broken loads within the same second must keep both broken copies."""
    store.path.parent.mkdir(parents=True)
    # Copies already set aside under the names this second (and the next two) would produce.
    now = time.time()
    existing = {}
    for dt in (0, 1, 2):
        name = f"settings.json.broken-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now + dt))}"
        (store.path.parent / name).write_bytes(f"earlier broken copy {dt}".encode())
        existing[name] = f"earlier broken copy {dt}".encode()
    store.path.write_bytes(b"{ newly broken")
    assert store.load() == Settings()
    for name, data in existing.items():
        assert (store.path.parent / name).read_bytes() == data
    copies = [p.read_bytes() for p in store.path.parent.glob("settings.json.broken-*")]
    assert b"{ newly broken" in copies
    assert len(copies) == 4


def test_settings_from_a_newer_version_are_refused(store):
    store.path.parent.mkdir(parents=True)
    store.path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1, "scan_depth": 5}), encoding="utf-8")
    assert store.load() == Settings()
    assert "newer" in store.problem
    # Left in place for the newer version, and protected from being overwritten by this one.
    assert json.loads(store.path.read_text())["scan_depth"] == 5
    assert store.read_only


def test_api_keys_are_never_written(store):
    settings = settings_from_mapping(
        {
            "vaults": [
                {
                    "name": "Remote",
                    "kind": "obsidian-rest",
                    "host": "127.0.0.1",
                    "port": 27123,
                    "apiKey": "SUPER-SECRET-1",
                },
                {"name": "Other", "kind": "obsidian-rest", "api_key": "SUPER-SECRET-2"},
            ]
        }
    )
    assert not hasattr(settings.vaults[0], "apiKey") and not hasattr(settings.vaults[0], "api_key")
    store.save(settings)
    text = store.path.read_text(encoding="utf-8")
    assert "SUPER-SECRET" not in text
    assert "apiKey" not in text and "api_key" not in text
    assert settings.vaults[0].secret_id == "vault:Remote"


def test_data_dir_puts_everything_under_one_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("DLE_DESKTOP_DATA_DIR", raising=False)
    paths = resolve_paths(tmp_path / "dd").ensure()
    assert isinstance(paths, AppPaths)
    assert paths.settings_file == (tmp_path / "dd" / "settings.json").resolve()
    for d in (paths.index_cache_dir, paths.logs_dir, paths.runtime_dir):
        assert d.is_dir() and d.resolve().is_relative_to((tmp_path / "dd").resolve())
    monkeypatch.setenv("DLE_DESKTOP_DATA_DIR", str(tmp_path / "env"))
    assert resolve_paths().data_dir == (tmp_path / "env").resolve()


def test_newer_schema_is_left_untouched_and_never_overwritten(tmp_path):
    import json

    import pytest

    from dle_desktop.errors import ConfigError
    from dle_desktop.state.settings import Settings, SettingsStore

    path = tmp_path / "settings.json"
    original = json.dumps({"schema_version": 99, "scan_depth": 7})
    path.write_text(original, encoding="utf-8")
    store = SettingsStore(path)
    assert store.load() == Settings()
    assert "newer" in store.problem
    with pytest.raises(ConfigError):
        store.save(Settings(scan_depth=9))
    assert path.read_text(encoding="utf-8") == original
    assert not list(tmp_path.glob("settings.json.broken-*"))


def test_settings_path_that_is_a_folder_gives_defaults_not_a_traceback(tmp_path):
    from dle_desktop.state.settings import Settings, SettingsStore

    path = tmp_path / "settings.json"
    path.mkdir()
    store = SettingsStore(path)
    assert store.load() == Settings()
    assert store.read_only and "cannot be read" in store.problem
