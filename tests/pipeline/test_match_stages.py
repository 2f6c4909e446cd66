"""matchEntries, stage by stage (dle-behaviour §3.4): constants, bootstrap, the keyword pass
with warmup → probability → cooldown, active character, cascade, recursion, BM25, sort."""

from __future__ import annotations

import random

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.state import ChatState

from .conftest import NO_STRIP, FixedRng, chat, matched_by, msg, note, run, snapshot, titles, verdicts

ALWAYS = ["lorebook", "lorebook-always"]
BOOT = ["lorebook", "lorebook-bootstrap"]
UNLIMITED = MatchConfig(unlimited_budget=True, unlimited_entries=True)


# -- 1. constants ------------------------------------------------------------------------------------
def test_constant_tag_injects_without_any_key():
    snap = snapshot(note("World Rules", tags=ALWAYS, body="Magic always has a cost."))
    result, _ = run(snap, chat("hello"))
    assert titles(result) == ["World Rules"]
    assert matched_by(result, "World Rules") == "(constant)"


def test_constant_frontmatter_flag_is_the_same_as_the_tag():
    snap = snapshot(note("Rules", constant=True))
    result, _ = run(snap, chat("hello"))
    assert matched_by(result, "Rules") == "(constant)"


def test_constants_are_independent_of_scan_depth():
    snap = snapshot(note("Rules", tags=ALWAYS), note("Dragon", ["dragon"]))
    result, _ = run(snap, chat("dragon"), cfg=MatchConfig(scan_depth=0))
    assert titles(result) == ["Rules"]


def test_a_constant_with_keys_is_recorded_as_constant_not_by_key():
    snap = snapshot(note("Rules", ["dragon"], tags=ALWAYS))
    result, _ = run(snap, chat("dragon"))
    assert matched_by(result, "Rules") == "(constant)"


def test_constants_ignore_probability_and_cooldown():
    snap = snapshot(note("Rules", tags=ALWAYS, probability=0, cooldown=3))
    state = ChatState(cooldowns={"v:Rules": 3})
    result, _ = run(snap, chat("x"), state)
    assert titles(result) == ["Rules"]


# -- 2. bootstrap --------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,active", [(0, True), (1, True), (3, True), (4, False), (10, False)])
def test_bootstrap_is_forced_while_the_chat_has_at_most_new_chat_threshold_messages(n, active):
    snap = snapshot(note("Opening", tags=BOOT))
    messages = [msg(f"line {i}", user=i % 2 == 0) for i in range(n)]
    result, _ = run(snap, messages)
    assert (titles(result) == ["Opening"]) is active
    if active:
        assert matched_by(result, "Opening") == "(bootstrap)"
        assert verdicts(result, "Opening", "bootstrap", "matched")


def test_bootstrap_threshold_is_a_setting_with_an_inclusive_boundary():
    snap = snapshot(note("Opening", tags=BOOT))
    cfg = MatchConfig(new_chat_threshold=5)
    assert titles(run(snap, chat(*"abcde"), cfg=cfg)[0]) == ["Opening"]
    assert titles(run(snap, chat(*"abcdef"), cfg=cfg)[0]) == []


def test_after_the_threshold_a_bootstrap_entry_matches_by_keyword_like_any_other():
    snap = snapshot(note("Opening", ["tavern"], tags=BOOT))
    result, _ = run(snap, chat("the tavern", pad=5))
    assert matched_by(result, "Opening") == "tavern"


def test_a_seed_entry_is_not_auto_injected():
    snap = snapshot(note("Seed", tags=["lorebook", "lorebook-seed"]))
    assert titles(run(snap, chat("hi"))[0]) == []
    snap = snapshot(note("Seed", ["harbour"], tags=["lorebook", "lorebook-seed"]))
    assert titles(run(snap, chat("the harbour"))[0]) == ["Seed"]


# -- 3. keyword pass -------------------------------------------------------------------------------------
def test_global_scan_depth_bounds_the_window():
    snap = snapshot(note("Dragon", ["dragon"]))
    five_back = chat("a dragon", "b", "c", "d", "e")
    four_back = chat("a dragon", "b", "c", "d")
    assert titles(run(snap, five_back)[0]) == []
    assert titles(run(snap, four_back)[0]) == ["Dragon"]
    assert titles(run(snap, five_back, cfg=MatchConfig(scan_depth=5))[0]) == ["Dragon"]


def test_per_entry_scan_depth_narrows_or_widens_the_window():
    snap = snapshot(
        note("Near", ["dragon"], scanDepth=1),
        note("Global", ["dragon"]),
        note("Far", ["dragon"], scanDepth=8),
    )
    messages = chat("dragon", "b", "c", "d", "e", "f")  # 'dragon' is 6 messages back
    assert titles(run(snap, messages)[0]) == ["Far"]
    messages = chat("dragon", "b")  # 2 back
    assert titles(run(snap, messages)[0]) == ["Far", "Global"]
    messages = chat("b", "dragon")  # last message
    assert titles(run(snap, messages)[0]) == ["Far", "Global", "Near"]


def test_a_window_reports_why_a_key_elsewhere_in_the_chat_did_not_count():
    snap = snapshot(note("Near", ["dragon"], scanDepth=1), note("Far", ["dragon"], scanDepth=8))
    result, _ = run(snap, chat("dragon", "b"))
    assert verdicts(result, "Near", "keywords", "skipped")


def test_entry_scan_depth_zero_never_matches_by_keyword():
    snap = snapshot(note("AI Only", ["dragon"], scanDepth=0))
    result, _ = run(snap, chat("dragon"))
    assert titles(result) == []
    [v] = verdicts(result, "AI Only", "keywords", "skipped")
    assert "scanDepth 0" in v.reason


def test_global_scan_depth_zero_disables_keyword_matching():
    snap = snapshot(note("Dragon", ["dragon"], scanDepth=5))
    assert titles(run(snap, chat("dragon"), cfg=MatchConfig(scan_depth=0))[0]) == []


def test_keyword_match_records_the_key_in_the_verdict():
    snap = snapshot(note("Dragon", ["wyrm", "dragon"]))
    result, _ = run(snap, chat("a dragon"))
    [v] = verdicts(result, "Dragon", "keywords", "matched")
    assert "dragon" in v.reason


# -- refine keys --------------------------------------------------------------------------------------------
def test_refine_keys_need_a_primary_and_any_refine_key():
    snap = snapshot(note("Crown", ["crown"], refine_keys=["vault", "artifact"]))
    assert titles(run(snap, chat("the crown in the vault"))[0]) == ["Crown"]
    assert titles(run(snap, chat("the crown, an artifact"))[0]) == ["Crown"]
    result, _ = run(snap, chat("the crown of the king"))
    assert titles(result) == []
    [v] = verdicts(result, "Crown", "keywords", "skipped")
    assert "refine" in v.reason
    assert titles(run(snap, chat("the vault artifact"))[0]) == []  # refine keys alone never match


def test_refine_keys_use_the_entry_window_and_the_whole_word_rule():
    snap = snapshot(note("Crown", ["crown"], refine_keys=["art"]))
    assert titles(run(snap, chat("crown and artifact"))[0]) == ["Crown"]
    assert titles(run(snap, chat("crown and artifact"), cfg=MatchConfig(match_whole_words=True))[0]) == []
    snap = snapshot(note("Crown", ["crown"], refine_keys=["vault"], scanDepth=1))
    assert titles(run(snap, chat("the vault", "the crown"))[0]) == []


# -- warmup ---------------------------------------------------------------------------------------------------
def test_warmup_sums_occurrences_of_all_primary_keys():
    snap = snapshot(note("Dragon", ["dragon", "wyrm"], warmup=3))
    result, _ = run(snap, chat("a dragon and a wyrm"))
    assert titles(result) == []
    [v] = verdicts(result, "Dragon", "keywords", "skipped")
    assert "2" in v.reason and "3" in v.reason
    assert titles(run(snap, chat("a dragon and a wyrm", "another dragon"))[0]) == ["Dragon"]


def test_warmup_boundary_is_at_least_n():
    snap = snapshot(note("Dragon", ["dragon"], warmup=2))
    assert titles(run(snap, chat("dragon"))[0]) == []
    assert titles(run(snap, chat("dragon dragon"))[0]) == ["Dragon"]


def test_warmup_counts_non_overlapping_occurrences():
    snap = snapshot(note("Aa", ["aa"], warmup=3))
    assert titles(run(snap, chat("aaaa aa"))[0]) == ["Aa"]  # 2 + 1
    assert titles(run(snap, chat("aaaaa"))[0]) == []  # 2, not 4


def test_warmup_counts_overlapping_keys_each():
    snap = snapshot(note("Angel Crown", ["angel crown", "crown"], warmup=2))
    assert titles(run(snap, chat("the angel crown"))[0]) == ["Angel Crown"]


def test_warmup_counts_every_listed_key_even_case_variants():
    snap = snapshot(note("Dragon", ["Dragon", "dragon"], warmup=2))
    assert titles(run(snap, chat("a dragon"))[0]) == ["Dragon"]


def test_warmup_does_not_count_refine_keys():
    snap = snapshot(note("Dragon", ["dragon"], refine_keys=["fire"], warmup=2))
    assert titles(run(snap, chat("dragon fire fire"))[0]) == []


def test_warmup_counts_only_inside_the_entry_window():
    snap = snapshot(note("Dragon", ["dragon"], warmup=2, scanDepth=1))
    assert titles(run(snap, chat("dragon", "dragon"))[0]) == []
    assert titles(run(snap, chat("x", "dragon dragon"))[0]) == ["Dragon"]


def test_warmup_whole_word_counts_only_whole_words():
    snap = snapshot(note("Ab", ["ab"], warmup=2))
    cfg = MatchConfig(match_whole_words=True)
    assert titles(run(snap, chat("about ab"), cfg=cfg)[0]) == []
    assert titles(run(snap, chat("ab, ab"), cfg=cfg)[0]) == ["Ab"]


def test_warmup_is_checked_every_generation():
    snap = snapshot(note("Dragon", ["dragon"], warmup=2))
    r1, s1 = run(snap, chat("dragon dragon"), cfg=NO_STRIP)
    r2, _ = run(snap, chat("one dragon", pad=1), s1, cfg=NO_STRIP)
    assert titles(r1) == ["Dragon"] and titles(r2) == []


# -- probability ----------------------------------------------------------------------------------------------
def test_probability_zero_never_fires_and_rolls_nothing():
    snap = snapshot(note("Rare", ["rare"], probability=0))
    rng = FixedRng(0.0)
    result, _ = run(snap, chat("rare"), rng=rng)
    assert titles(result) == [] and rng.calls == 0
    [v] = verdicts(result, "Rare", "keywords", "skipped")
    assert "probability" in v.reason


@pytest.mark.parametrize("roll,fires", [(0.0, True), (0.4, True), (0.5, True), (0.5000001, False), (0.9, False)])
def test_fractional_probability_skips_when_the_roll_exceeds_p(roll, fires):
    snap = snapshot(note("Maybe", ["maybe"], probability=0.5))
    rng = FixedRng(roll)
    result, _ = run(snap, chat("maybe"), rng=rng)
    assert (titles(result) == ["Maybe"]) is fires
    assert rng.calls == 1
    if not fires:
        [v] = verdicts(result, "Maybe", "keywords", "skipped")
        assert "probability 0.5" in v.reason and f"{roll:.3f}" in v.reason


@pytest.mark.parametrize("extra", [{}, {"probability": 1}])
def test_no_probability_or_one_always_fires_without_rolling(extra):
    snap = snapshot(note("Sure", ["sure"], **extra))
    rng = FixedRng(0.99)
    assert titles(run(snap, chat("sure"), rng=rng)[0]) == ["Sure"]
    assert rng.calls == 0


def test_probability_above_one_is_clamped_to_always():
    snap = snapshot(note("Sure", ["sure"], probability=50))
    rng = FixedRng(0.99)
    assert titles(run(snap, chat("sure"), rng=rng)[0]) == ["Sure"]


def test_rolls_happen_in_vault_order():
    snap = snapshot(note("First", ["go"], probability=0.5), note("Second", ["go"], probability=0.5))
    assert titles(run(snap, chat("go"), rng=FixedRng(0.9, 0.1))[0]) == ["Second"]
    assert titles(run(snap, chat("go"), rng=FixedRng(0.1, 0.9))[0]) == ["First"]


def test_a_seeded_random_source_is_deterministic_and_roughly_fair():
    snap = snapshot(*(note(f"E{i:02}", ["go"], probability=0.3) for i in range(60)))
    a = titles(run(snap, chat("go"), cfg=UNLIMITED, rng=random.Random(42))[0])
    b = titles(run(snap, chat("go"), cfg=UNLIMITED, rng=random.Random(42))[0])
    assert a == b
    rng = random.Random(42)
    expected = [f"E{i:02}" for i in range(60) if not rng.random() > 0.3]
    assert a == expected
    assert 5 < len(a) < 35


def test_warmup_is_checked_before_probability():
    snap = snapshot(note("Dragon", ["dragon"], warmup=2, probability=0.5))
    rng = FixedRng(0.0)
    run(snap, chat("dragon"), rng=rng)
    assert rng.calls == 0


def test_probability_is_rolled_before_the_cooldown_check():
    snap = snapshot(note("Dragon", ["dragon"], probability=0.5, cooldown=3))
    state = ChatState(cooldowns={"v:Dragon": 2})
    rng = FixedRng(0.9)
    result, _ = run(snap, chat("dragon"), state, rng=rng)
    assert rng.calls == 1  # the roll is consumed even though cooldown would skip it
    [v] = verdicts(result, "Dragon", "keywords", "skipped")
    assert "probability" in v.reason
    rng = FixedRng(0.1)
    result, _ = run(snap, chat("dragon"), state, rng=rng)
    assert rng.calls == 1
    [v] = verdicts(result, "Dragon", "keywords", "skipped")
    assert "cooldown" in v.reason


# -- cooldown ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3])
def test_cooldown_n_skips_the_next_n_generations_then_allows_it(n):
    snap = snapshot(note("Dragon", ["dragon"], cooldown=n))
    state = ChatState()
    fired = []
    for g in range(2 * n + 3):
        result, state = run(snap, chat("dragon", pad=g), state, cfg=NO_STRIP)
        fired.append(titles(result) == ["Dragon"])
        if not fired[-1]:
            [v] = verdicts(result, "Dragon", "keywords", "skipped")
            assert "cooldown" in v.reason
    # injected at g, skipped at g+1 .. g+N, eligible at g+N+1
    expected = [g % (n + 1) == 0 for g in range(2 * n + 3)]
    assert fired == expected


def test_cooldown_tracker_values_tick_down_and_disappear():
    snap = snapshot(note("Dragon", ["dragon"], cooldown=2))
    _, s0 = run(snap, chat("dragon"), cfg=NO_STRIP)
    assert s0.cooldowns == {"v:Dragon": 2}  # set to cooldown+1, then ticked once
    _, s1 = run(snap, chat("dragon", pad=1), s0, cfg=NO_STRIP)
    assert s1.cooldowns == {"v:Dragon": 1}
    _, s2 = run(snap, chat("dragon", pad=2), s1, cfg=NO_STRIP)
    assert s2.cooldowns == {}
    r3, _ = run(snap, chat("dragon", pad=3), s2, cfg=NO_STRIP)
    assert titles(r3) == ["Dragon"]


def test_cooldown_ticks_even_when_the_entry_is_not_mentioned():
    snap = snapshot(note("Dragon", ["dragon"], cooldown=2))
    _, s = run(snap, chat("dragon"), cfg=NO_STRIP)
    _, s = run(snap, chat("nothing", pad=1), s, cfg=NO_STRIP)
    _, s = run(snap, chat("nothing", pad=2), s, cfg=NO_STRIP)
    assert titles(run(snap, chat("dragon", pad=3), s, cfg=NO_STRIP)[0]) == ["Dragon"]


def test_cooldown_is_only_set_for_injected_entries():
    snap = snapshot(
        note("Big", ["dragon"], body="x" * 2000, cooldown=5, priority=1),
        note("Dragon", ["dragon"], cooldown=5, priority=2),
    )
    cfg = MatchConfig(max_entries=1, strip_duplicate_injections=False)
    result, state = run(snap, chat("dragon"), cfg=cfg)
    assert titles(result) == ["Big"]
    assert set(state.cooldowns) == {"v:Big"}


def test_entries_without_cooldown_get_no_tracker():
    snap = snapshot(note("Dragon", ["dragon"]))
    _, state = run(snap, chat("dragon"))
    assert state.cooldowns == {}


# -- 4. active character -----------------------------------------------------------------------------------------
CHAR = MatchConfig(character_context_scan=True)


def test_active_character_title_match_is_added_without_a_keyword():
    snap = snapshot(note("Gorduin Wynlar", ["archivist"]))
    result, _ = run(snap, chat("hello"), cfg=CHAR, character_name="Gorduin Wynlar")
    assert matched_by(result, "Gorduin Wynlar") == "(active character)"
    assert titles(run(snap, chat("hello"), character_name="Gorduin Wynlar")[0]) == []  # off by default


def test_active_character_is_case_insensitive_and_needs_the_whole_name():
    snap = snapshot(note("Gorduin Wynlar"))
    assert titles(run(snap, chat("hi"), cfg=CHAR, character_name="gorduin wynlar")[0]) == ["Gorduin Wynlar"]
    assert titles(run(snap, chat("hi"), cfg=CHAR, character_name="Gorduin")[0]) == []


def test_active_character_falls_back_to_an_exact_key():
    snap = snapshot(note("The Archivist", ["Gorduin", "old man"]))
    result, _ = run(snap, chat("hi"), cfg=CHAR, character_name="gorduin")
    assert matched_by(result, "The Archivist") == "(active character)"
    assert titles(run(snap, chat("hi"), cfg=CHAR, character_name="Gord")[0]) == []


def test_active_character_prefers_a_title_over_a_key():
    snap = snapshot(note("Alias Holder", ["Aria"]), note("Aria"))
    result, _ = run(snap, chat("hi"), cfg=CHAR, character_name="Aria")
    assert titles(result) == ["Aria"]


def test_active_character_has_no_gates():
    snap = snapshot(note("Aria", ["aria"], probability=0, cooldown=5, warmup=9))
    state = ChatState(cooldowns={"v:Aria": 4})
    rng = FixedRng(0.99)
    result, _ = run(snap, chat("hi"), state, cfg=CHAR, character_name="Aria", rng=rng)
    assert matched_by(result, "Aria") == "(active character)"


def test_active_character_is_off_with_scan_depth_zero():
    snap = snapshot(note("Aria"))
    cfg = MatchConfig(character_context_scan=True, scan_depth=0)
    assert titles(run(snap, chat("hi"), cfg=cfg, character_name="Aria")[0]) == []


# -- 5. cascade ----------------------------------------------------------------------------------------------------
def _cascade_vault(**b_fields):
    return snapshot(
        note("A", ["alpha"], cascade_links=["B"]),
        note("B", **b_fields, cascade_links=["C"]),
        note("C"),
    )


def test_cascade_pulls_linked_entries_one_level_only():
    snap = _cascade_vault()
    result, _ = run(snap, chat("alpha"))
    assert titles(result) == ["A", "B"]
    assert matched_by(result, "B") == "(cascade from: A)"
    assert verdicts(result, "B", "cascade", "matched")


def test_cascade_link_titles_are_case_insensitive():
    snap = snapshot(note("A", ["alpha"], cascade_links=["bellsummit"]), note("Bellsummit"))
    assert titles(run(snap, chat("alpha"))[0]) == ["A", "Bellsummit"]


def test_cascade_from_constants_bootstraps_and_the_active_character():
    snap = snapshot(
        note("K", tags=ALWAYS, cascade_links=["FromK"]),
        note("FromK"),
        note("Boot", tags=BOOT, cascade_links=["FromBoot"]),
        note("FromBoot"),
        note("Aria", cascade_links=["FromAria"]),
        note("FromAria"),
    )
    result, _ = run(
        snap, chat("hi"), cfg=MatchConfig(character_context_scan=True, unlimited_entries=True), character_name="Aria"
    )
    assert set(titles(result)) == {"K", "FromK", "Boot", "FromBoot", "Aria", "FromAria"}


def test_cascade_checks_cooldown_only_when_the_linked_entry_has_one():
    state = ChatState(cooldowns={"v:B": 2})
    with_cd = _cascade_vault(cooldown=3)
    result, _ = run(with_cd, chat("alpha"), state)
    assert titles(result) == ["A"]
    [v] = verdicts(result, "B", "cascade", "skipped")
    assert "cooldown" in v.reason
    without_cd = _cascade_vault()  # a stale tracker for an entry that has no cooldown is ignored
    assert titles(run(without_cd, chat("alpha"), state)[0]) == ["A", "B"]


def test_cascade_rolls_probability():
    snap = _cascade_vault(probability=0.5)
    assert titles(run(snap, chat("alpha"), rng=FixedRng(0.9))[0]) == ["A"]
    assert titles(run(snap, chat("alpha"), rng=FixedRng(0.1))[0]) == ["A", "B"]
    assert titles(run(_cascade_vault(probability=0), chat("alpha"))[0]) == ["A"]


def test_cascade_ignores_warmup():
    snap = _cascade_vault(warmup=10)
    assert titles(run(snap, chat("alpha"))[0]) == ["A", "B"]


def test_cascade_to_a_missing_title_is_dropped_at_index_time():
    snap = snapshot(note("A", ["alpha"], cascade_links=["Nowhere"]))
    assert titles(run(snap, chat("alpha"))[0]) == ["A"]


def test_cascade_is_off_with_scan_depth_zero():
    snap = snapshot(note("K", tags=ALWAYS, cascade_links=["B"]), note("B"))
    assert titles(run(snap, chat("hi"), cfg=MatchConfig(scan_depth=0))[0]) == ["K"]


# -- 6. recursion --------------------------------------------------------------------------------------------------
REC = MatchConfig(recursive_scan=True, unlimited_entries=True, unlimited_budget=True)


def test_recursion_matches_keys_found_in_matched_lore():
    snap = snapshot(
        note("A", ["alpha"], "A is near Bellsummit."),
        note("Bellsummit", ["Bellsummit"], "Bellsummit hosts the Oracles."),
        note("Oracles", ["oracles"], "The Oracles keep records."),
    )
    assert titles(run(snap, chat("alpha"))[0]) == ["A"]  # off by default
    result, _ = run(snap, chat("alpha"), cfg=REC)
    assert titles(result) == ["A", "Bellsummit", "Oracles"]
    assert matched_by(result, "Bellsummit") == "Bellsummit (recursion step 1)"
    assert matched_by(result, "Oracles") == "oracles (recursion step 2)"


def test_recursion_stops_at_max_steps():
    snap = snapshot(
        note("A", ["alpha"], "see beta"),
        note("B", ["beta"], "see gamma"),
        note("C", ["gamma"], "see delta"),
        note("D", ["delta"], "end"),
    )
    cfg = MatchConfig(recursive_scan=True, max_recursion_steps=2)
    assert titles(run(snap, chat("alpha"), cfg=cfg)[0]) == ["A", "B", "C"]
    result, _ = run(snap, chat("alpha"), cfg=REC)  # default 3 steps
    assert titles(result) == ["A", "B", "C", "D"]


def test_recursion_stops_when_a_step_finds_nothing_new():
    snap = snapshot(note("A", ["alpha"], "see beta"), note("B", ["beta"], "mentions alpha again"))
    result, _ = run(snap, chat("alpha"), cfg=MatchConfig(recursive_scan=True, max_recursion_steps=10))
    assert titles(result) == ["A", "B"]
    stages = {v.stage for v in result.verdicts}
    assert "recursion 1" in stages and not any(s.startswith("recursion") and s != "recursion 1" for s in stages)


def test_recursion_step_one_uses_constants_content():
    snap = snapshot(note("Rules", tags=ALWAYS, body="The Wardens guard the gate."), note("Wardens", ["wardens"]))
    assert titles(run(snap, chat("hi"))[0]) == ["Rules"]
    result, _ = run(snap, chat("hi"), cfg=REC)
    assert matched_by(result, "Wardens") == "wardens (recursion step 1)"


def test_exclude_recursion_content_is_not_a_source_but_the_entry_can_be_matched():
    snap = snapshot(
        note("A", ["alpha"], "see beta", excludeRecursion=True),
        note("B", ["beta"]),
        note("C", ["gamma"], "see epsilon"),
        note("E", ["epsilon"], "quiet", excludeRecursion=True),
    )
    result, _ = run(snap, chat("alpha gamma"), cfg=REC)
    assert titles(result) == ["A", "C", "E"]  # B not found through A; E found through C
    assert matched_by(result, "E") == "epsilon (recursion step 1)"


def test_recursion_source_is_truncated_to_50000_characters():
    def vault(pad):
        return snapshot(note("Big", tags=ALWAYS, body="x" * pad + " wyrmkey"), note("Wyrm", ["wyrmkey"]))

    # content = pad x's + ' wyrmkey' (8 chars): the key ends at pad + 8
    assert "Wyrm" in titles(run(vault(49_992), chat("hi"), cfg=REC)[0])  # ends at exactly 50,000
    assert "Wyrm" not in titles(run(vault(49_993), chat("hi"), cfg=REC)[0])  # one character past


def test_recursion_applies_refine_keys_cooldown_probability_and_warmup():
    base = dict(body="see beta beta")
    cases = {
        "refine": (dict(refine_keys=["nope"]), ChatState(), FixedRng(0.0)),
        "cooldown": (dict(cooldown=2), ChatState(cooldowns={"v:B": 1}), FixedRng(0.0)),
        "probability": (dict(probability=0.5), ChatState(), FixedRng(0.9)),
        "warmup": (dict(warmup=3), ChatState(), FixedRng(0.0)),
    }
    for name, (fields, state, rng) in cases.items():
        snap = snapshot(note("A", ["alpha"], base["body"]), note("B", ["beta"], **fields))
        result, _ = run(snap, chat("alpha"), state, cfg=REC, rng=rng)
        assert titles(result) == ["A"], name
        assert verdicts(result, "B", "recursion 1", "skipped"), name
    # warmup is counted in the recursion text: 'beta' twice meets warmup 2
    snap = snapshot(note("A", ["alpha"], "see beta beta"), note("B", ["beta"], warmup=2))
    assert titles(run(snap, chat("alpha"), cfg=REC)[0]) == ["A", "B"]


def test_recursion_does_not_use_the_entry_scan_depth():
    snap = snapshot(note("A", ["alpha"], "see beta"), note("B", ["beta"], scanDepth=0))
    assert titles(run(snap, chat("alpha"), cfg=REC)[0]) == ["A", "B"]


def test_recursion_is_off_with_scan_depth_zero():
    snap = snapshot(note("Rules", tags=ALWAYS, body="wardens"), note("Wardens", ["wardens"]))
    cfg = MatchConfig(recursive_scan=True, scan_depth=0)
    assert titles(run(snap, chat("hi"), cfg=cfg)[0]) == ["Rules"]


# -- 7. BM25 fuzzy ----------------------------------------------------------------------------------------------------
FUZZY = MatchConfig(fuzzy_search_enabled=True, unlimited_entries=True, unlimited_budget=True)


def _fuzzy_vault(*extra):
    fillers = [
        note(f"Filler {i}", [f"fillerkey{i}"], f"Unrelated filler text number {i} about weather.") for i in range(8)
    ]
    return snapshot(note("Volcano", [], "The volcano erupts with molten basalt and ash."), *extra, *fillers)


def test_fuzzy_supplements_keyword_matches_with_bm25_hits():
    snap = _fuzzy_vault()
    messages = chat("we saw molten basalt near the volcano")
    assert titles(run(snap, messages)[0]) == []  # off by default
    result, _ = run(snap, messages, cfg=FUZZY)
    assert titles(result) == ["Volcano"]
    by = matched_by(result, "Volcano")
    assert by.startswith("(fuzzy, score: ") and by.endswith(")")
    score = float(by[len("(fuzzy, score: ") : -1])
    assert score >= 0.5


def test_fuzzy_minimum_score():
    snap = _fuzzy_vault()
    cfg = MatchConfig(fuzzy_search_enabled=True, fuzzy_search_min_score=50.0)
    assert titles(run(snap, chat("molten basalt volcano"), cfg=cfg)[0]) == []


def test_fuzzy_keeps_the_top_20_hits():
    targets = [note(f"Target {i:02}", [], f"zephyrine shard number {i}") for i in range(25)]
    fillers = [note(f"Filler {i:03}", [], f"plain words {i}") for i in range(200)]
    snap = snapshot(*targets, *fillers)
    result, _ = run(snap, chat("a zephyrine glows"), cfg=FUZZY)
    assert len(titles(result)) == 20
    assert all(t.startswith("Target") for t in titles(result))


def test_fuzzy_skips_keyword_matched_and_constant_entries():
    snap = _fuzzy_vault(
        note("Basalt", ["basalt"], "Basalt is molten rock from a volcano."),
        note("Rules", tags=ALWAYS, body="molten basalt volcano rules"),
    )
    result, _ = run(snap, chat("molten basalt volcano"), cfg=FUZZY)
    assert matched_by(result, "Basalt") == "basalt"
    assert matched_by(result, "Rules") == "(constant)"
    assert matched_by(result, "Volcano").startswith("(fuzzy")


def test_fuzzy_applies_cooldown_warmup_and_probability():
    snap = _fuzzy_vault()
    volcano = next(e for e in snap.entries if e.title == "Volcano")
    assert volcano.keys == ()
    cd = snapshot(note("Volcano", [], "The volcano erupts with molten basalt.", cooldown=2))
    result, _ = run(cd, chat("molten basalt volcano"), ChatState(cooldowns={"v:Volcano": 1}), cfg=FUZZY)
    assert titles(result) == [] and verdicts(result, "Volcano", "fuzzy", "skipped")
    pr = snapshot(
        note("Volcano", [], "The volcano erupts with molten basalt.", probability=0.5),
        note("Other", ["zzz"], "nothing"),
    )
    assert titles(run(pr, chat("molten basalt volcano"), cfg=FUZZY, rng=FixedRng(0.9))[0]) == []
    assert titles(run(pr, chat("molten basalt volcano"), cfg=FUZZY, rng=FixedRng(0.1))[0]) == ["Volcano"]
    wu = snapshot(
        note("Volcano", ["volcano"], "The volcano erupts with molten basalt.", warmup=2, refine_keys=["never-said"]),
        note("Other", ["zzz"], "nothing"),
    )
    cfg = MatchConfig(fuzzy_search_enabled=True, fix_refine_keys_in_fuzzy=False)
    result, _ = run(wu, chat("molten basalt volcano"), cfg=cfg)
    assert titles(result) == []
    assert any("warmup" in v.reason for v in verdicts(result, "Volcano", "fuzzy", "skipped"))


def test_fuzzy_queries_only_the_global_scan_window():
    # A wide per-entry scanDepth must not widen the BM25 query (DLE queries the global window).
    snap = _fuzzy_vault(note("Wide", ["zzz"], scanDepth=10))
    messages = chat("molten basalt volcano", "a", "b", "c", "d", "e")
    assert titles(run(snap, messages, cfg=FUZZY)[0]) == []
    assert titles(run(snap, messages, cfg=MatchConfig(fuzzy_search_enabled=True, scan_depth=6))[0]) == ["Volcano"]


def test_fuzzy_is_off_with_scan_depth_zero():
    snap = _fuzzy_vault()
    cfg = MatchConfig(fuzzy_search_enabled=True, scan_depth=0)
    assert titles(run(snap, chat("molten basalt volcano"), cfg=cfg)[0]) == []


# -- 8. sort ------------------------------------------------------------------------------------------------------------
def test_matches_are_sorted_by_priority_then_title():
    snap = snapshot(
        note("banana", ["go"], priority=50),
        note("Zed", ["go"], priority=10),
        note("Apple", ["go"], priority=50),
        note("cherry", ["go"]),
    )
    assert titles(run(snap, chat("go"))[0]) == ["Zed", "Apple", "banana", "cherry"]


def test_title_order_ignores_case_like_locale_compare():
    snap = snapshot(note("Banana", ["go"]), note("apple", ["go"]), note("Cherry", ["go"]))
    assert titles(run(snap, chat("go"))[0]) == ["apple", "Banana", "Cherry"]


def test_default_priority_is_100_and_lower_numbers_go_first():
    snap = snapshot(note("Default", ["go"]), note("High", ["go"], priority=99), note("Low", ["go"], priority=101))
    assert titles(run(snap, chat("go"))[0]) == ["High", "Default", "Low"]


def test_title_order_follows_locale_compare_for_accents_case_and_symbols():
    # localeCompare (ICU root): accents do not move a letter ('É' sorts with 'E'), lower case
    # precedes upper case only as a tie-break, symbols precede digits precede letters.
    snap = snapshot(
        *(note(t, ["go"]) for t in ("Fig", "Éclair", "apple", "Apple", "Eclair", "~Tilde", "42 Answers", "Zebra"))
    )
    result, _ = run(snap, chat("go"), cfg=UNLIMITED)
    assert titles(result) == ["~Tilde", "42 Answers", "apple", "Apple", "Eclair", "Éclair", "Fig", "Zebra"]


# Sorted by JavaScript's String.prototype.localeCompare (ICU root collation), as DLE sorts titles.
LOCALE_COMPARE_ORDER = [
    "_under",
    "-dash",
    "—emdash",
    "!bang",
    "?q",
    "'Single'",
    '"Quoted"',
    "(Paren)",
    "[Bracket]",
    "@At",
    "#Hash",
    "~Tilde",
    "$Dollar",
    "10",
    "42 Answers",
    "9",
    "a b",
    "a_b",
    "a-b",
    "a,b",
    "a.b",
    "ab",
    "Aether",
    "Æther",
    "Angel",
    "Ängel",
    "apple",
    "Apple",
    "Ca va",
    "Ça va",
    "dz",
    "ǅ",
    "Eclair",
    "Éclair",
    "Fig",
    "item 1",
    "Item 10",
    "Item 2",
    "naive",
    "Naive",
    "naïve",
    "nandu",
    "ñandu",
    "okami",
    "Okami",
    "Ōkami",
    "omega",
    "ss",
    "ß",
    "strasse",
    "Strasse",
    "Straße",
    "uber",
    "Uber",
    "Über",
    "Zebra",
    "zoe",
    "Zoe",
    "Zoë",
    "Δelta",
    "Ωmega",
    "москва",
    "Москва",
    "東京",
]


def test_title_order_matches_locale_compare_on_a_mixed_list():
    from dle_desktop.core.pipeline.priority_order import title_order_key

    shuffled = sorted(LOCALE_COMPARE_ORDER, key=lambda t: (len(t), t[::-1]))
    assert sorted(shuffled, key=title_order_key) == LOCALE_COMPARE_ORDER
