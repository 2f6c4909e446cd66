"""Post-pipeline stages (dle-behaviour §3.6): pins and blocks, re-injection cooldown,
requires/excludes, strip-duplicate injections."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.state import ChatState, EntryRef

from .conftest import NO_STRIP, chat, matched_by, multi_snapshot, note, run, snapshot, titles, verdicts

ALWAYS = ["lorebook", "lorebook-always"]


def vt(result):
    return [(i.entry.vault, i.entry.title) for i in result.injected]


# -- pins ----------------------------------------------------------------------------------------------
def test_a_pin_injects_an_unmatched_entry_as_constant_with_priority_10():
    snap = snapshot(note("First", ["go"], priority=5), note("Second", ["go"], priority=20), note("Pinned"))
    result, _ = run(snap, chat("go"), ChatState(pins=(EntryRef("Pinned"),)))
    assert titles(result) == ["First", "Pinned", "Second"]
    assert matched_by(result, "Pinned") == "(pinned)"
    pinned = next(i for i in result.injected if i.entry.title == "Pinned")
    assert pinned.entry.priority == 10 and pinned.entry.constant
    assert verdicts(result, "Pinned", "pins", "matched")


def test_a_pin_replaces_an_already_matched_copy():
    snap = snapshot(note("Dragon", ["dragon"]))
    result, _ = run(snap, chat("dragon"), ChatState(pins=(EntryRef("Dragon"),)))
    assert titles(result) == ["Dragon"] and matched_by(result, "Dragon") == "(pinned)"


def test_pins_are_case_insensitive_and_bypass_every_gate():
    snap = snapshot(note("Dragon", ["dragon"], probability=0, cooldown=3, warmup=5, scanDepth=0))
    state = ChatState(pins=(EntryRef("dragon"),), cooldowns={"v:Dragon": 3})
    assert titles(run(snap, chat("nothing"), state)[0]) == ["Dragon"]


def test_bare_pins_match_every_vault_and_qualified_pins_one():
    snap = multi_snapshot({"v": [note("Lore")], "w": [note("Lore")]})
    bare, _ = run(snap, chat("x"), ChatState(pins=(EntryRef("Lore"),)))
    assert sorted(vt(bare)) == [("v", "Lore"), ("w", "Lore")]
    qualified, _ = run(snap, chat("x"), ChatState(pins=(EntryRef("Lore", "w"),)))
    assert vt(qualified) == [("w", "Lore")]


def test_a_pin_that_matches_nothing_leaves_a_note():
    result, _ = run(snapshot(note("Lore")), chat("x"), ChatState(pins=(EntryRef("Ghost"),)))
    assert titles(result) == [] and any("Ghost" in n for n in result.notes)


def test_pinned_entries_still_count_against_the_budget_and_max_entries():
    snap = snapshot(note("A", ["go"], priority=1), note("B", ["go"], priority=20), note("Pinned"))
    result, _ = run(snap, chat("go"), ChatState(pins=(EntryRef("Pinned"),)), cfg=MatchConfig(max_entries=2))
    assert titles(result) == ["A", "Pinned"]


# -- blocks ----------------------------------------------------------------------------------------------
def test_blocks_remove_matched_constant_and_pinned_entries():
    snap = snapshot(note("Dragon", ["dragon"]), note("Rules", tags=ALWAYS), note("Pinned"), note("Kept", ["dragon"]))
    state = ChatState(pins=(EntryRef("Pinned"),), blocks=(EntryRef("dragon"), EntryRef("RULES"), EntryRef("Pinned")))
    result, _ = run(snap, chat("dragon"), state)
    assert titles(result) == ["Kept"]
    for t in ("Dragon", "Rules", "Pinned"):
        assert verdicts(result, t, "blocks", "removed"), t


def test_a_vault_qualified_block_removes_only_that_vaults_copy():
    snap = multi_snapshot({"v": [note("Lore", ["go"])], "w": [note("Lore", ["go"])]})
    result, _ = run(snap, chat("go"), ChatState(blocks=(EntryRef("Lore", "v"),)))
    assert vt(result) == [("w", "Lore")]


# -- re-injection cooldown ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3])
def test_reinjection_cooldown_n_skips_g_plus_1_to_g_plus_n(n):
    snap = snapshot(note("Dragon", ["dragon"]))
    cfg = MatchConfig(reinjection_cooldown=n, strip_duplicate_injections=False)
    state, fired = ChatState(), []
    for g in range(2 * n + 3):
        result, state = run(snap, chat("dragon", pad=g), state, cfg=cfg)
        fired.append(bool(titles(result)))
        if not fired[-1]:
            [v] = verdicts(result, "Dragon", "reinjection cooldown", "removed")
            assert f"re-injection cooldown is {n}" in v.reason
    assert fired == [g % (n + 1) == 0 for g in range(2 * n + 3)]


def test_reinjection_history_records_generation_plus_one_only_when_enabled():
    snap = snapshot(note("Dragon", ["dragon"]))
    _, s = run(snap, chat("dragon"), cfg=MatchConfig(reinjection_cooldown=2))
    assert s.injection_history == {"v:Dragon": 1}
    _, s = run(snap, chat("dragon"))
    assert s.injection_history == {}


def test_reinjection_cooldown_exempts_forced_entries():
    snap = snapshot(note("Rules", tags=ALWAYS), note("Pinned"))
    cfg = MatchConfig(reinjection_cooldown=5)
    state = ChatState(pins=(EntryRef("Pinned"),))
    for g in range(3):
        result, state = run(snap, chat("x", pad=g), state, cfg=cfg)
        assert titles(result) == ["Pinned", "Rules"]


# -- requires / excludes -----------------------------------------------------------------------------------------
def test_requires_needs_every_listed_title_active():
    snap = snapshot(
        note("Gorduin", ["gorduin"], requires=["Oracles", "Bellsummit"]),
        note("Oracles", ["oracles"]),
        note("Bellsummit", ["summit"]),
    )
    assert titles(run(snap, chat("gorduin oracles summit"))[0]) == ["Bellsummit", "Gorduin", "Oracles"]
    result, _ = run(snap, chat("gorduin oracles"))
    assert titles(result) == ["Oracles"]
    [v] = verdicts(result, "Gorduin", "requires/excludes", "removed")
    assert "Bellsummit" in v.reason


def test_requires_is_case_insensitive():
    snap = snapshot(note("A", ["alpha"], requires=["bellsummit"]), note("Bellsummit", ["summit"]))
    assert titles(run(snap, chat("alpha summit"))[0]) == ["A", "Bellsummit"]


def test_excludes_any_listed_title_active_removes_the_entry():
    snap = snapshot(note("Peace", ["treaty"], excludes=["War", "Siege"]), note("War", ["war"]), note("Siege"))
    assert titles(run(snap, chat("treaty"))[0]) == ["Peace"]
    result, _ = run(snap, chat("treaty war"))
    assert titles(result) == ["War"]
    [v] = verdicts(result, "Peace", "requires/excludes", "removed")
    assert "War" in v.reason


def test_references_to_missing_titles_are_stripped_so_they_never_block():
    snap = snapshot(note("A", ["alpha"], requires=["Nowhere"], excludes=["Alpha Centauri"]))
    assert titles(run(snap, chat("alpha"))[0]) == ["A"]


def test_drops_cascade_across_passes():
    # Processing order is priority descending: A (100) is checked first while B is still active,
    # then B drops (C missing), and only a second pass drops A.
    snap = snapshot(
        note("A", ["go"], requires=["B"]), note("B", ["go"], priority=50, requires=["C"]), note("C"), note("D", ["go"])
    )
    result, _ = run(snap, chat("go"))
    assert titles(result) == ["D"]
    assert verdicts(result, "A", "requires/excludes", "removed")
    assert verdicts(result, "B", "requires/excludes", "removed")


def test_drops_are_final_even_when_the_reason_is_dropped_later():
    # A (checked first) is excluded by B; B then drops for its missing requirement. A is not
    # brought back: passes only ever remove entries.
    snap = snapshot(note("A", ["go"], excludes=["B"]), note("B", ["go"], priority=50, requires=["C"]), note("C"))
    assert titles(run(snap, chat("go"))[0]) == []


def test_excluding_a_constant_always_blocks_and_the_constant_stays():
    snap = snapshot(note("Rules", tags=ALWAYS, requires=["Nowhere"]), note("Rebel", ["rebel"], excludes=["Rules"]))
    result, _ = run(snap, chat("rebel"))
    assert titles(result) == ["Rules"]


def test_forced_entries_stay_even_when_their_own_requirements_fail():
    snap = snapshot(
        note("Rules", tags=ALWAYS, requires=["Magic"]), note("Magic", ["magic"]), note("Pinned", excludes=["Rules"])
    )
    result, _ = run(snap, chat("hello"), ChatState(pins=(EntryRef("Pinned"),)))
    assert titles(result) == ["Pinned", "Rules"]


def test_requires_satisfied_by_a_forced_entry():
    snap = snapshot(note("Rules", tags=ALWAYS), note("Detail", ["detail"], requires=["Rules"]))
    assert titles(run(snap, chat("detail"))[0]) == ["Detail", "Rules"]


def test_mutual_exclusion_drops_the_lower_priority_entry_first():
    snap = snapshot(
        note("Low", ["go"], priority=100, excludes=["High"]), note("High", ["go"], priority=20, excludes=["Low"])
    )
    assert titles(run(snap, chat("go"))[0]) == ["High"]


def test_requires_excludes_returns_the_set_sorted_ascending():
    snap = snapshot(note("Z", ["go"], priority=1), note("M", ["go"], priority=50, requires=["Z"]), note("A", ["go"]))
    assert titles(run(snap, chat("go"))[0]) == ["Z", "M", "A"]


# -- strip-duplicate injections -----------------------------------------------------------------------------------
def _series(snap, n, cfg=MatchConfig(), state=None, text="dragon", **kw):
    state = state or ChatState()
    out = []
    for g in range(n):
        result, state = run(snap, chat(text, pad=g), state, cfg=cfg, **kw)
        out.append(result)
    return out, state


def test_defaults_strip_a_repeat_at_g_plus_1_and_g_plus_2_and_allow_it_at_g_plus_3():
    snap = snapshot(note("Dragon", ["dragon"]))
    results, _ = _series(snap, 7)
    assert [bool(titles(r)) for r in results] == [True, False, False, True, False, False, True]
    [v] = verdicts(results[1], "Dragon", "strip duplicates", "removed")
    assert "look-back 2" in v.reason


@pytest.mark.parametrize("lookback", [1, 3])
def test_look_back_depth_sets_how_many_generations_are_stripped(lookback):
    snap = snapshot(note("Dragon", ["dragon"]))
    results, _ = _series(snap, 2 * (lookback + 1) + 1, MatchConfig(strip_lookback_depth=lookback))
    fired = [bool(titles(r)) for r in results]
    assert fired == [g % (lookback + 1) == 0 for g in range(len(fired))]


def test_strip_dedup_off_injects_every_time():
    snap = snapshot(note("Dragon", ["dragon"]))
    results, _ = _series(snap, 4, NO_STRIP)
    assert all(titles(r) == ["Dragon"] for r in results)


def test_forced_entries_are_never_stripped():
    snap = snapshot(
        note("Rules", tags=ALWAYS), note("Boot", ["tavern"], tags=["lorebook", "lorebook-bootstrap"]), note("Pinned")
    )
    results, _ = _series(snap, 4, text="tavern", state=ChatState(pins=(EntryRef("Pinned"),)))
    assert all(sorted(titles(r)) == ["Boot", "Pinned", "Rules"] for r in results)


def test_changed_content_is_not_a_duplicate():
    before = snapshot(note("Dragon", ["dragon"], "Dragons breathe fire."))
    after = snapshot(note("Dragon", ["dragon"], "Dragons breathe ice."))
    _, s = run(before, chat("dragon"))
    result, _ = run(after, chat("dragon", pad=1), s)
    assert titles(result) == ["Dragon"]


@pytest.mark.parametrize("change", [dict(injection_position=2), dict(injection_depth=0), dict(injection_role=1)])
def test_changed_position_depth_or_role_is_not_a_duplicate(change):
    snap = snapshot(note("Dragon", ["dragon"]))
    _, s = run(snap, chat("dragon"))
    same, _ = run(snap, chat("dragon", pad=1), s)
    moved, _ = run(snap, chat("dragon", pad=1), s, cfg=MatchConfig(**change))
    assert titles(same) == [] and titles(moved) == ["Dragon"]


def test_a_truncated_injection_does_not_strip_the_full_text():
    body = "Dragons are old. " * 60  # ~255 tokens
    snap = snapshot(note("Dragon", ["dragon"], body.strip()))
    _, s = run(snap, chat("dragon"), cfg=MatchConfig(max_tokens_budget=100))
    assert s.injection_log[-1]["entries"][0]["hash"].endswith("_trunc")
    result, _ = run(snap, chat("dragon", pad=1), s)
    assert titles(result) == ["Dragon"]


def test_a_stripped_entry_is_not_logged_so_the_look_back_moves_on():
    snap = snapshot(note("Dragon", ["dragon"]))
    _results, state = _series(snap, 3)
    assert [len(r["entries"]) for r in state.injection_log] == [1, 0, 0]
