"""The SillyTavern bridge's settings: defaults, validation, saving, and what applying them needs."""

from __future__ import annotations

import json
import os

import pytest

from dle_desktop.engine.settings_apply import IN_PLACE_FIELDS, WINDOW_FIELDS, plan
from dle_desktop.errors import ConfigError
from dle_desktop.state.settings import FIELDS, Settings, SettingsStore, settings_from_mapping


def test_defaults():
    s = Settings()
    assert s.server_allowed_origins == ("http://127.0.0.1:8000", "http://localhost:8000")
    assert s.st_vector_routing is False and s.st_folders == () and s.st_forget_deleted_chats is True
    for name in ("st_vector_routing", "st_folders", "st_forget_deleted_chats"):
        assert FIELDS[name].metadata["doc"], name


def test_the_listed_origins_can_still_be_emptied_or_changed():
    assert Settings().replace(server_allowed_origins=[]).server_allowed_origins == ()
    s = Settings().replace(server_allowed_origins=["http://127.0.0.1:8123"])
    assert s.server_allowed_origins == ("http://127.0.0.1:8123",)


def test_switches_take_booleans_only():
    s = Settings().replace(st_vector_routing=True, st_forget_deleted_chats="false")
    assert s.st_vector_routing is True and s.st_forget_deleted_chats is False
    for bad in (1, "yes", None, []):
        with pytest.raises(ConfigError, match="st_vector_routing"):
            Settings().replace(st_vector_routing=bad)


def test_st_folders_are_absolute_paths_kept_whole(tmp_path):
    spaced = str(tmp_path / "Silly Tavern, the copy")
    s = Settings().replace(st_folders=[spaced, spaced, str(tmp_path / "other")])
    assert s.st_folders == (spaced, str(tmp_path / "other"))  # duplicates dropped, order kept
    assert Settings().replace(st_folders=spaced).st_folders == (spaced,)  # one string is one folder
    assert Settings().replace(st_folders=["C:\\Users\\me\\SillyTavern"]).st_folders == ("C:\\Users\\me\\SillyTavern",)
    assert Settings().replace(st_folders=["~/SillyTavern"]).st_folders == (os.path.expanduser("~/SillyTavern"),)
    for bad, why in (("SillyTavern", "absolute"), ("/st\nx", "control character"), ("/a\x00b", "control character")):
        with pytest.raises(ConfigError, match=f"st_folders: .*{why}"):
            Settings().replace(st_folders=[bad])
    with pytest.raises(ConfigError, match="st_folders"):
        Settings().replace(st_folders=[3])


def test_they_are_saved_and_read_back(tmp_path):
    store = SettingsStore(tmp_path / "settings.json")
    s = Settings().replace(st_vector_routing=True, st_folders=[str(tmp_path / "ST")], st_forget_deleted_chats=False)
    store.save(s)
    raw = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert raw["st_folders"] == [str(tmp_path / "ST")] and raw["st_vector_routing"] is True
    assert SettingsStore(tmp_path / "settings.json").load() == s


def test_an_older_settings_file_without_them_gets_the_defaults():
    s = settings_from_mapping({"schema_version": 1, "scan_depth": 5})
    assert (s.st_vector_routing, s.st_folders, s.st_forget_deleted_chats) == (False, (), True)


def test_applying_them_needs_neither_a_new_engine_nor_a_server_restart(tmp_path):
    assert "st_folders" in WINDOW_FIELDS
    assert {"st_vector_routing", "st_forget_deleted_chats"} <= IN_PLACE_FIELDS
    old = Settings()
    todo = plan(old, old.replace(st_folders=[str(tmp_path)]))
    assert not todo.new_engine and not todo.in_place and not todo.restart_server and not todo.rebuild_ai
    for change in ({"st_vector_routing": True}, {"st_forget_deleted_chats": False}):
        todo = plan(old, old.replace(**change))
        # In place: the running engine's settings are what the bridge's hello reports.
        assert todo.in_place and not todo.new_engine and not todo.restart_server and not todo.rebuild_ai


def test_allowed_hosts_and_origins_refresh_the_running_server_only():
    for field, value in (
        ("server_allowed_origins", ["http://127.0.0.1:8123"]),
        ("server_allowed_hosts", ["192.168.1.20"]),
    ):
        todo = plan(Settings(), Settings().replace(**{field: value}))
        assert todo.refresh_access and todo.in_place
        assert not todo.new_engine and not todo.restart_server, field
