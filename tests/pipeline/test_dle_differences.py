"""The deliberate differences from DLE (dle-behaviour §3.12), each with the DLE behaviour back
when its fix flag is off, and the surprising DLE defaults we keep."""

from __future__ import annotations

import dataclasses

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.state import ChatState, EntryRef

from .conftest import chat, matched_by, note, run, snapshot, titles, verdicts

GUIDE = ["lorebook-guide"]
DLE = MatchConfig(fix_guide_leak=False, fix_refine_keys_in_fuzzy=False)


def _guide_vault():
    fillers = [note(f"Filler {i}", [f"fk{i}"], f"plain unrelated filler {i}") for i in range(6)]
    return snapshot(
        note("Style Guide", [], "Prose style: volcano imagery, molten basalt metaphors.", tags=GUIDE),
        note("Keyed Guide", ["volcano"], "How to write volcanoes.", tags=GUIDE),
        note("Const Guide", [], "Always follow.", tags=GUIDE + ["lorebook-always"]),
        note("Source", ["source"], "see volcano", cascade_links=["Keyed Guide"]),
        *fillers,
    )


# -- guide entries ---------------------------------------------------------------------------------
def test_guides_never_reach_the_prompt_by_any_path():
    snap = _guide_vault()
    cfg = MatchConfig(
        fuzzy_search_enabled=True, recursive_scan=True, character_context_scan=True, unlimited_entries=True
    )
    result, _ = run(
        snap,
        chat("source: molten basalt volcano"),
        ChatState(pins=(EntryRef("Style Guide"),)),
        cfg=cfg,
        character_name="Keyed Guide",
    )
    assert titles(result) == ["Source"]


def test_with_the_fix_off_guides_leak_through_bm25_only_as_in_dle():
    snap = _guide_vault()
    leak = dataclasses.replace(DLE, fuzzy_search_enabled=True, unlimited_entries=True)
    result, _ = run(snap, chat("molten basalt volcano"), cfg=leak)
    assert "Style Guide" in titles(result)
    assert matched_by(result, "Style Guide").startswith("(fuzzy, score: ")
    # ... but never through keywords, constants or cascade (the writer-visible snapshot excludes them)
    no_fuzzy = dataclasses.replace(DLE, unlimited_entries=True)
    assert titles(run(snap, chat("source: volcano"), cfg=no_fuzzy)[0]) == ["Source"]


def test_with_the_fix_off_a_leaked_guide_still_passes_its_own_gates():
    snap = snapshot(
        note("Style Guide", ["volcano"], "volcano basalt lava", tags=GUIDE, warmup=3),
        *(note(f"F{i}", [f"k{i}"], f"filler {i}") for i in range(6)),
    )
    leak = dataclasses.replace(DLE, fuzzy_search_enabled=True)
    result, _ = run(snap, chat("volcano basalt lava"), cfg=leak)
    assert titles(result) == []
    assert verdicts(result, "Style Guide", "fuzzy", "skipped")
    assert titles(run(snap, chat("volcano volcano volcano basalt"), cfg=leak)[0]) == ["Style Guide"]


# -- refine keys on BM25 hits ------------------------------------------------------------------------
def _refined():
    return snapshot(
        note("Volcano", ["xyzzy"], "The volcano erupts with molten basalt.", refine_keys=["night"]),
        *(note(f"F{i}", [f"k{i}"], f"filler {i}") for i in range(6)),
    )


def test_refine_keys_apply_to_bm25_hits():
    cfg = MatchConfig(fuzzy_search_enabled=True)
    result, _ = run(_refined(), chat("molten basalt volcano"), cfg=cfg)
    assert titles(result) == []
    [v] = verdicts(result, "Volcano", "fuzzy", "skipped")
    assert "refine" in v.reason
    assert titles(run(_refined(), chat("molten basalt volcano at night"), cfg=cfg)[0]) == ["Volcano"]


def test_with_the_fix_off_refine_keys_are_ignored_for_bm25_hits_as_in_dle():
    cfg = dataclasses.replace(DLE, fuzzy_search_enabled=True)
    assert titles(run(_refined(), chat("molten basalt volcano"), cfg=cfg)[0]) == ["Volcano"]


# -- DLE defaults we keep --------------------------------------------------------------------------------
def test_match_config_defaults_are_dles():
    c = MatchConfig()
    assert (c.scan_depth, c.new_chat_threshold, c.max_entries, c.max_tokens_budget) == (4, 3, 10, 3072)
    assert not c.unlimited_entries and not c.unlimited_budget
    assert not c.match_whole_words and not c.case_sensitive
    assert not c.recursive_scan and c.max_recursion_steps == 3
    assert not c.character_context_scan and not c.fuzzy_search_enabled and c.fuzzy_search_min_score == 0.5
    assert c.reinjection_cooldown == 0
    assert c.strip_duplicate_injections and c.strip_lookback_depth == 2
    assert (c.injection_mode, c.injection_position, c.injection_depth, c.injection_role) == ("extension", 1, 4, 0)
    assert c.injection_template == "<{{title}}>\n{{content}}\n</{{title}}>"
    assert not c.notebook_enabled and (c.notebook_position, c.notebook_depth, c.notebook_role) == (1, 4, 0)
    assert c.fix_guide_leak and c.fix_refine_keys_in_fuzzy


def test_occurrence_weighting_is_a_no_op_as_in_dle():
    snap = snapshot(note("Beta", ["go"]), note("Alpha", ["go", "again"]))
    cfg = MatchConfig(keyword_occurrence_weighting=True)
    assert titles(run(snap, chat("go go go again again"), cfg=cfg)[0]) == ["Alpha", "Beta"]
    assert titles(run(snap, chat("go"), cfg=cfg)[0]) == ["Alpha", "Beta"]


def test_config_from_an_object_takes_matching_names_only():
    class Settings:
        scan_depth = 7
        fuzzy_search_enabled = True
        unrelated = "x"

    c = MatchConfig.from_object(Settings())
    assert c.scan_depth == 7 and c.fuzzy_search_enabled and c.max_entries == 10
