"""Applying changed settings: retrieval-only changes go into the running engine (same engine, same
index, no re-sync) and take effect on the next generation; what needs more says so in its plan."""

from __future__ import annotations

import dataclasses

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.engine.settings_apply import plan
from dle_desktop.state.settings import FIELDS, GROUPS, ProfileConfig, Settings, VaultConfig, grouped_fields
from tests.retrieval._support import LiveServer, messages, titles, write_world


@pytest.fixture
def live(tmp_path):
    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data")
    yield server
    server.close()


def test_a_retrieval_change_keeps_the_engine_and_its_index_and_rules_the_next_generation(live):
    engine = live.engine
    before = live.retrieve("c1", messages("We walked along the quayside at dusk."))
    assert titles(before) == ["Lantern Quay"]  # DLE's default: "quay" matches inside "quayside"
    snapshot, syncs = engine.snapshot, engine.last_sync

    new = live.settings.replace(
        match_whole_words=True, injection_template="[{{title}}] {{content}}", injection_position=2
    )
    todo = plan(live.settings, new)
    assert todo.in_place and not todo.new_engine and not todo.rebuild_ai and not todo.restart_server
    live.thread.call(engine.apply_settings(new), timeout=30)

    assert live.engine is engine and engine.snapshot is snapshot and engine.last_sync is syncs  # no re-sync
    assert engine.settings is new and engine.retrieval.config.match_whole_words
    after = live.retrieve("c2", messages("We walked along the quayside at dusk."))
    assert titles(after) == []  # whole words now: "quayside" is not "quay"
    quay = live.retrieve("c3", messages("Meet me at the quay."))
    assert titles(quay) == ["Lantern Quay"]
    assert [g["position_name"] for g in quay["groups"]] == ["before"]
    assert quay["groups"][0]["text"].startswith("[Lantern Quay] ")


def test_a_fresh_ai_connection_keeps_usage_counts_and_starts_with_a_closed_breaker(live):
    engine = live.engine
    old_ai = engine.ai
    old_ai.usage["ai_search"].calls = 3
    old_ai.breaker.record_failure(trips=True)
    old_ai.breaker.record_failure(trips=True)
    assert old_ai.breaker.snapshot()["state"] != "closed"
    heard = []
    engine.subscribe(lambda ev: heard.append(ev.data["state"]) if ev.kind == "ai_breaker" else None)

    profile = ProfileConfig(id="local", name="Local", base_url="http://127.0.0.1:9", model="m")
    new = live.settings.replace(connection_profiles=[profile.to_json()], ai_search_profile_id="local")
    todo = plan(live.settings, new)
    assert todo.rebuild_ai and not todo.new_engine
    live.thread.call(engine.apply_settings(new, rebuild_ai=todo.rebuild_ai), timeout=30)

    assert engine.ai is not old_ai and engine.ai.settings is new
    assert engine.ai.usage["ai_search"].calls == 3
    assert engine.ai.breaker.snapshot()["state"] == "closed" and heard[-1] == "closed"
    assert engine.ai.channel("ai_search").profile.id == "local"


def test_ai_search_options_reach_the_running_ai_service_without_a_new_one(live):
    engine = live.engine
    ai = engine.ai
    new = live.settings.replace(ai_search_scan_depth=9, manifest_summary_mode="summary_only")
    todo = plan(live.settings, new)
    assert todo.in_place and not todo.rebuild_ai
    live.thread.call(engine.apply_settings(new), timeout=30)
    assert engine.ai is ai and ai.settings.ai_search_scan_depth == 9


def test_changes_that_the_running_engine_cannot_take_ask_for_what_they_need():
    s = Settings()
    vault = VaultConfig(name="Mine", path="/tmp/mine")
    cases = {
        "vaults": (s.replace(vaults=[vault.to_json()]), (True, False, False)),
        "tag": (s.replace(lorebook_tag="lore"), (True, False, False)),
        "model": (s.replace(embedding_model_path="/m.gguf"), (True, False, False)),
        "port": (s.replace(server_port=9000), (False, False, True)),
        "ai model": (s.replace(ai_search_model="other"), (False, True, False)),
        "budget": (s.replace(max_tokens_budget=5000, fix_guide_leak=False), (False, False, False)),
    }
    got = {
        name: (p.new_engine, p.rebuild_ai, p.restart_server)
        for name, p in ((name, plan(s, new)) for name, (new, _) in cases.items())
    }
    assert got == {name: want for name, (_, want) in cases.items()}
    assert plan(s, s.replace(close_to_tray=False)).in_place is False  # the window's own: nothing to restart
    assert plan(s, s, ["vault:Mine"]).new_engine  # a REST vault's key is read when the vault is made
    assert plan(s, s, ["ai-profile:local"]).rebuild_ai
    assert not plan(s, s).in_place and plan(s, s).describe() == ""


def test_every_setting_on_a_settings_page_has_a_group_an_explanation_and_a_range():
    placed = [f for _, fs in grouped_fields() for f in fs]
    assert placed and all(
        f.metadata["group"] in GROUPS and f.metadata["page"] in ("retrieval", "embeddings", "channels") for f in placed
    )
    no_doc = [f.name for f in placed if not f.metadata["doc"]]
    no_range = [
        f.name
        for f in placed
        if isinstance(f.default, (int, float))
        and not isinstance(f.default, bool)
        and (f.metadata["lo"] is None or f.metadata["hi"] is None)
    ]
    assert (no_doc, no_range) == ([], [])
    # Everything the pipeline reads has a place in the UI (else only settings.json could set it).
    assert sorted(f.name for f in dataclasses.fields(MatchConfig) if FIELDS[f.name].metadata["group"] is None) == []


def test_new_allowed_origins_keep_the_ai_search_cache(live):
    """A page allowed by `st install` (or the Access panel) changes who may call, not what AI search
    would answer: the cached AI answers stay. A change that does touch AI search still drops them."""
    engine = live.engine
    engine.ai.cache.store("c1", "manifest", ["a line"], ["uid"], None, [])
    new = live.settings.replace(
        server_allowed_origins=["http://127.0.0.1:8000"], server_allowed_hosts=["lore.example.test"]
    )
    live.thread.call(engine.apply_settings(new), timeout=30)
    assert len(engine.ai.cache) == 1

    prompt = new.replace(ai_search_system_prompt="Pick the lore that matters.")
    live.thread.call(engine.apply_settings(prompt), timeout=30)
    assert len(engine.ai.cache) == 0
