"""Per-chat state transitions (dle-behaviour §3.6 P8, §3.8, §3.9, §3.1 swipe rollback) and the
deliberate difference: a swipe restores the whole tracking state from before the previous
generation, not only the strip-dedup log."""

from __future__ import annotations

import json
import random

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.run import swipe_key
from dle_desktop.core.pipeline.state import SWIPE_SLOTS, ChatState, EntryRef

from .conftest import NO_STRIP, chat, msg, note, run, snapshot, titles

ALWAYS = ["lorebook", "lorebook-always"]


def _vault():
    return snapshot(
        note("Rules", tags=ALWAYS),
        note("Dragon", ["dragon"], cooldown=2),
        note("Maybe", ["dragon"], probability=0.5),
        note("Wyrm", ["wyrm"]),
    )


def _same(a: ChatState, b: ChatState) -> bool:
    return a.to_json() == b.to_json()


# -- swipe rollback -------------------------------------------------------------------------------
def test_a_swipe_of_the_same_slot_reproduces_the_first_run_exactly():
    snap = _vault()
    cfg = MatchConfig(reinjection_cooldown=1)
    _, s1 = run(snap, chat("a wyrm"), cfg=cfg, rng=random.Random(1))
    messages = chat("a wyrm", "the dragon and the wyrm")
    first, s2 = run(snap, messages, s1, cfg=cfg, rng=random.Random(7))
    again, s2b = run(snap, messages, s2, cfg=cfg, rng=random.Random(7))
    assert again.swipe_rollback and not first.swipe_rollback
    assert again.to_json()["injected"] == first.to_json()["injected"]
    assert again.to_json()["groups"] == first.to_json()["groups"]
    assert [v.to_json() for v in again.verdicts] == [v.to_json() for v in first.verdicts]
    assert _same(s2b, s2)


def test_a_swipe_restores_cooldowns_history_log_counts_analytics_and_generation_count():
    snap = _vault()
    cfg = MatchConfig(reinjection_cooldown=3)
    _, s1 = run(snap, chat("hello"), cfg=cfg)
    messages = chat("hello", "the dragon")
    _, s2 = run(snap, messages, s1, cfg=cfg, rng=random.Random(3))
    for name in ChatState.TRACKING:
        assert s2.before_last[name] == getattr(s1, name), name
    rolled = s2.rolled_back()
    for name in ChatState.TRACKING:
        assert getattr(rolled, name) == getattr(s1, name), name
    assert rolled.before_last is None


def test_a_swipe_keeps_the_strip_log_of_earlier_generations():
    # DLE clears the whole strip log on a swipe; we restore it, so an entry injected two
    # generations ago is still stripped on the swipe, exactly as on the first try.
    snap = snapshot(note("Wyrm", ["wyrm"]))
    _, s1 = run(snap, chat("wyrm"))
    messages = chat("wyrm", "wyrm again")
    first, s2 = run(snap, messages, s1)
    swiped, _ = run(snap, messages, s2)
    assert titles(first) == [] and titles(swiped) == []
    assert swiped.swipe_rollback


def test_without_rollback_a_repeat_of_the_slot_would_see_its_own_cooldown():
    snap = snapshot(note("Dragon", ["dragon"], cooldown=3))
    messages = chat("dragon")
    first, s1 = run(snap, messages, cfg=NO_STRIP)
    no_roll, _ = run(snap, messages, s1, cfg=NO_STRIP, swipe=False)
    swiped, _ = run(snap, messages, s1, cfg=NO_STRIP)
    assert titles(first) == ["Dragon"] and titles(no_roll) == [] and titles(swiped) == ["Dragon"]


def test_swipe_true_forces_a_rollback_and_swipe_id_changes_the_slot():
    snap = snapshot(note("Dragon", ["dragon"], cooldown=3))
    _, s1 = run(snap, chat("dragon"), cfg=NO_STRIP)
    other_swipe = chat("x", "dragon")[:1] + [msg("dragon", swipe_id=1)]
    assert swipe_key(other_swipe) == "1|1"
    r, _ = run(snap, [msg("dragon", swipe_id=2)], s1, cfg=NO_STRIP)
    assert titles(r) == [] and not r.swipe_rollback  # slot 0|2 differs from 0|0
    r, _ = run(snap, [msg("dragon", swipe_id=2)], s1, cfg=NO_STRIP, swipe=True)
    assert titles(r) == ["Dragon"] and r.swipe_rollback


def test_repeated_swipes_keep_rolling_back_to_the_same_state():
    snap = _vault()
    _, s1 = run(snap, chat("x"))
    messages = chat("x", "dragon")
    r2, s2 = run(snap, messages, s1, rng=random.Random(5))
    r3, s3 = run(snap, messages, s2, rng=random.Random(5))
    r4, s4 = run(snap, messages, s3, rng=random.Random(5))
    assert titles(r2) == titles(r3) == titles(r4)
    assert _same(s2, s3) and _same(s3, s4)
    assert s4.generation_count == 2


def test_a_swipe_on_a_fresh_chat_state_does_nothing_special():
    snap = snapshot(note("Dragon", ["dragon"]))
    r, s = run(snap, chat("dragon"), swipe=True)
    assert titles(r) == ["Dragon"] and s.generation_count == 1


# -- counts -------------------------------------------------------------------------------------------
def test_counts_are_per_slot_and_a_swipe_does_not_double_count():
    snap = snapshot(note("Rules", tags=ALWAYS))
    _, s = run(snap, chat("a"))
    _, s = run(snap, chat("a", "b", "c"), s)
    assert s.counts == {"v:Rules": 2}
    _, s = run(snap, chat("a", "b", "c"), s)  # swipe of the last slot
    assert s.counts == {"v:Rules": 2}
    assert s.swipe_keys == {"0|0": ("v:Rules",), "2|0": ("v:Rules",)}


def test_regenerating_a_slot_without_rollback_replaces_its_counts():
    snap = snapshot(note("Rules", tags=ALWAYS), note("Dragon", ["dragon"]))
    _, s = run(snap, chat("dragon"), cfg=NO_STRIP)
    assert s.counts == {"v:Rules": 1, "v:Dragon": 1}
    _, s = run(snap, chat("nothing"), s, cfg=NO_STRIP, swipe=False)  # same slot 0|0
    assert s.counts == {"v:Rules": 1}


def test_only_the_last_10_slots_are_kept():
    snap = snapshot(note("Rules", tags=ALWAYS))
    s = ChatState()
    for i in range(14):
        _, s = run(snap, chat(*["m"] * (i + 1)), s)
    assert len(s.swipe_keys) == SWIPE_SLOTS == 10
    assert sorted(int(k.split("|")[0]) for k in s.swipe_keys) == list(range(4, 14))
    assert s.counts == {"v:Rules": 14}  # counts survive slot pruning


# -- injection log and generation count ---------------------------------------------------------------------
def test_injection_log_keeps_look_back_plus_one_generations():
    snap = snapshot(note("Rules", tags=ALWAYS))
    for lookback in (1, 2, 4):
        s = ChatState()
        for g in range(8):
            _, s = run(snap, chat("x", pad=g), s, cfg=MatchConfig(strip_lookback_depth=lookback))
        assert [r["gen"] for r in s.injection_log] == list(range(8 - lookback - 1, 8))
        assert s.generation_count == 8


def test_injection_log_records_title_placement_and_content_hash():
    snap = snapshot(note("Rules", tags=ALWAYS, position="before", depth=3, role="user"))
    _, s = run(snap, chat("x"))
    rules = snap.entries[0]
    assert s.injection_log == (
        {"gen": 0, "entries": [{"title": "Rules", "pos": 2, "depth": 3, "role": 1, "hash": rules.content_hash}]},
    )


# -- analytics --------------------------------------------------------------------------------------------------
def test_analytics_count_matched_and_injected():
    snap = snapshot(note("Big", ["go"], "x" * 400, priority=1), note("Cut", ["go"], priority=2))
    cfg = MatchConfig(max_entries=1, strip_duplicate_injections=False)
    _, s = run(snap, chat("go"), cfg=cfg)
    _, s = run(snap, chat("go", pad=1), s, cfg=cfg)
    assert s.analytics["v:Big"] == {"matched": 2, "injected": 2, "last_triggered": 1}
    assert s.analytics["v:Cut"] == {"matched": 2, "injected": 0, "last_triggered": 1}


def test_analytics_matched_is_the_post_dedup_set():
    snap = snapshot(note("Dragon", ["dragon"]))
    _, s = run(snap, chat("dragon"))
    _, s = run(snap, chat("dragon", pad=1), s)  # stripped
    assert s.analytics["v:Dragon"]["matched"] == 1 and s.analytics["v:Dragon"]["injected"] == 1


# -- persistence ----------------------------------------------------------------------------------------------------
def test_chat_state_json_round_trip_including_before_last():
    snap = _vault()
    cfg = MatchConfig(reinjection_cooldown=2)
    state = ChatState(
        pins=(EntryRef("Wyrm"), EntryRef("Rules", "v")),
        blocks=(EntryRef("Maybe"),),
        context={"era": ["dawn", "dusk"], "location": "keep"},
        folder_filter=("Places",),
        notebook="Oath.",
    )
    _, state = run(snap, chat("dragon"), state, cfg=cfg, rng=random.Random(2))
    _, state = run(snap, chat("dragon", "wyrm"), state, cfg=cfg, rng=random.Random(2))
    raw = json.loads(json.dumps(state.to_json()))
    back = ChatState.from_json(raw)
    assert back == state
    assert back.before_last == state.before_last and back.before_last is not None
    assert back.to_json() == state.to_json()
    assert raw["pins"] == ["Wyrm", {"title": "Rules", "vault": "v"}]
    # the rolled-back state is the same whether or not it went through JSON
    assert back.rolled_back() == state.rolled_back()


def test_chat_state_from_json_accepts_dle_spellings_for_pins():
    s = ChatState.from_json({"pins": [{"title": "A", "vaultSource": "w"}], "blocks": ["B"]})
    assert s.pins == (EntryRef("A", "w"),) and s.blocks == (EntryRef("B"),)
    assert s.generation_count == 0 and s.before_last is None and s.folder_filter is None


def test_pins_blocks_context_and_notebook_are_not_rolled_back():
    snap = snapshot(note("Dragon", ["dragon"]))
    _, s1 = run(snap, chat("dragon"))
    s1 = s1.replace(pins=(EntryRef("Dragon"),), notebook="n", context={"era": "x"})
    rolled = s1.rolled_back()
    assert rolled.pins == (EntryRef("Dragon"),) and rolled.notebook == "n" and rolled.context == {"era": "x"}


def test_analytics_keep_at_most_500_entries_evicting_the_oldest():
    snap = snapshot(note("Rules", tags=ALWAYS))
    old = {f"v:Old{i:03}": {"matched": 1, "injected": 1, "last_triggered": i} for i in range(500)}
    _, s = run(snap, chat("x"), ChatState(generation_count=600, analytics=old))
    assert len(s.analytics) == 500
    assert "v:Rules" in s.analytics and "v:Old000" not in s.analytics and "v:Old001" in s.analytics
