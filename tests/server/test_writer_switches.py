"""The bridge panel's writer switches (PUT /api/dle/v1/writers): saved into settings.json and
taken by the running instance at once, through the same path as a change another process writes;
nothing else of the file changes; bad input is a 400 in words; a broken settings file is left as
it is. The in-process `Runtime` that `serve` and the app run, on loopback; real files."""

from __future__ import annotations

import json
from pathlib import Path

from dle_desktop.state.settings import SettingsStore
from tests.retrieval._support import API
from tests.server.test_live_access_settings import DEFAULT_PAGE, running, wait_until, write_settings


def put(client, token: str, body) -> object:
    return client.put(f"{API}/writers", json=body, headers={"Origin": DEFAULT_PAGE, "X-DLE-Token": token})


def test_a_switch_is_saved_and_taken_at_once_and_nothing_else_changes(tmp_path: Path):
    with running(tmp_path) as (runtime, client, token):
        before = runtime.ctx.settings
        assert not before.scribe_enabled and not before.ai_notepad_enabled
        r = put(client, token, {"scribe_enabled": True, "ai_notepad_enabled": True, "ai_notepad_mode": "extract"})
        assert r.status_code == 200, r.text
        answer = r.json()
        assert answer["scribe"]["enabled"] is True and answer["auto_suggest"]["enabled"] is False
        assert answer["ai_notepad"] == answer["ai_notepad"] | {"enabled": True, "mode": "extract"}
        engine = runtime.engine
        assert (engine.settings.scribe_enabled, engine.settings.ai_notepad_mode) == (True, "extract")
        on_disk = SettingsStore(runtime.ctx.paths.settings_file).load()
        assert (on_disk.scribe_enabled, on_disk.ai_notepad_enabled, on_disk.ai_notepad_mode) == (True, True, "extract")
        assert on_disk.replace(scribe_enabled=False, ai_notepad_enabled=False, ai_notepad_mode="tag") == before
        wait_until(lambda: runtime.ctx.settings.scribe_enabled, "the app's settings to show the switch")
        assert client.get(f"{API}/writers", headers={"X-DLE-Token": token}).json()["scribe"]["enabled"] is True


def test_another_process_turning_a_writer_on_is_followed(tmp_path: Path):
    with running(tmp_path) as (runtime, _client, _token):
        write_settings(runtime, auto_suggest_enabled=True, scan_depth=runtime.ctx.settings.scan_depth + 2)
        wait_until(lambda: runtime.engine.settings.auto_suggest_enabled, "the engine to take the switch")
        assert runtime.engine.settings.scan_depth == runtime.ctx.settings.scan_depth  # not a followed field


def test_bad_switches_are_a_400_in_words_and_change_nothing(tmp_path: Path):
    with running(tmp_path) as (runtime, client, token):
        saved = runtime.ctx.paths.settings_file.read_bytes()
        for body, words in (
            ({"scribe_enabled": "yes"}, "scribe_enabled must be true or false"),
            ({"ai_notepad_mode": "both"}, "ai_notepad_mode"),
            ({"scribe_interval": 3}, "unknown field"),
            ([1], "send {"),
        ):
            r = put(client, token, body)
            assert r.status_code == 400, (body, r.text)
            assert words in r.json()["error"], (body, r.json())
        assert runtime.ctx.paths.settings_file.read_bytes() == saved
        assert not runtime.engine.settings.scribe_enabled


def test_a_broken_settings_file_is_not_overwritten(tmp_path: Path):
    with running(tmp_path) as (runtime, client, token):
        settings_file = runtime.ctx.paths.settings_file
        settings_file.write_text("{ not json", encoding="utf-8")
        r = put(client, token, {"scribe_enabled": True})
        assert r.status_code == 409 and "settings file" in r.json()["error"], r.text
        assert settings_file.read_text(encoding="utf-8") == "{ not json"
        assert not runtime.engine.settings.scribe_enabled
        settings_file.write_text(json.dumps({}), encoding="utf-8")
