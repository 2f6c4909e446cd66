"""Contextual gating (dle-behaviour §1.7, §3.5, §3.6 P2) and the folder filter (§3.5)."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.gating import evaluate_operator
from dle_desktop.core.pipeline.state import ChatState, EntryRef

from .conftest import chat, fields_yaml, note, run, snapshot, titles, verdicts

ALWAYS = ["lorebook", "lorebook-always"]


def field(name, operator="match_any", tolerance="moderate", type="string", multi=True, **kw):
    return {
        "name": name,
        "type": type,
        "multi": multi,
        "gating": {"enabled": kw.pop("enabled", True), "operator": operator, "tolerance": tolerance},
        **kw,
    }


def gate(fd, entry_fields: dict, context: dict, *, extra_notes=(), **state_kw):
    """Run one entry with `entry_fields` against a chat context; True if it was injected."""
    snap = snapshot(note("Gated", ["go"], **entry_fields), *extra_notes, field_definitions=fd)
    result, _ = run(snap, chat("go"), ChatState(context=context, **state_kw))
    return "Gated" in titles(result), result


# -- the default fields ----------------------------------------------------------------------------
def test_default_fields_are_match_any_moderate_and_multi():
    snap = snapshot(note("Gated", ["go"], location=["Bellsummit", "Duskfrost"]))
    result, _ = run(snap, chat("go"), ChatState(context={"location": "duskfrost"}))
    assert titles(result) == ["Gated"]
    result, _ = run(snap, chat("go"), ChatState(context={"location": "Elsewhere"}))
    assert titles(result) == []
    [v] = verdicts(result, "Gated", "contextual gating", "removed")
    assert "location" in v.reason


def test_with_no_active_value_anywhere_nothing_is_filtered():
    fd = fields_yaml(
        field("era", tolerance="strict"), field("mood", operator="exists"), field("place", operator="not_exists")
    )
    for ctx in ({}, {"era": ""}, {"era": []}, {"unrelated": "x"}):
        ok, _ = gate(fd, {"era": "Dawn", "place": "Here"}, ctx)
        assert ok, ctx


def test_a_disabled_field_does_not_gate_and_does_not_activate_gating():
    fd = fields_yaml(field("era", enabled=False), field("mood", operator="exists"))
    ok, _ = gate(fd, {"era": "Dawn"}, {"era": "Dusk"})
    assert ok


def test_context_key_can_differ_from_the_field_name():
    fd = fields_yaml(field("era", contextKey="current_era"))
    assert gate(fd, {"era": "Dawn"}, {"current_era": "dawn"})[0]
    assert not gate(fd, {"era": "Dawn"}, {"current_era": "dusk"})[0]
    assert gate(fd, {"era": "Dawn"}, {"era": "dusk"})[0]  # the field name is not the context key


# -- operators --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "entry,active,passes",
    [
        (["a", "b"], "B", True),
        (["a", "b"], ["x", "a"], True),
        (["a"], "c", False),
    ],
)
def test_match_any(entry, active, passes):
    assert gate(fields_yaml(field("f")), {"f": entry}, {"f": active})[0] is passes


@pytest.mark.parametrize(
    "entry,active,passes",
    [
        (["a", "b"], ["A", "b", "c"], True),
        (["a", "b"], ["a"], False),
        (["a"], "a", True),
    ],
)
def test_match_all(entry, active, passes):
    assert gate(fields_yaml(field("f", "match_all")), {"f": entry}, {"f": active})[0] is passes


@pytest.mark.parametrize(
    "entry,active,passes",
    [
        (["a"], ["b"], True),
        (["a", "b"], ["c", "B"], False),
    ],
)
def test_not_any(entry, active, passes):
    assert gate(fields_yaml(field("f", "not_any")), {"f": entry}, {"f": active})[0] is passes


def test_exists_and_not_exists_ignore_the_context_but_need_gating_active():
    fd = fields_yaml(field("f", "exists"), field("g"))
    assert gate(fd, {"f": "x"}, {"g": "anything"})[0]
    ok, result = gate(fd, {}, {"g": "anything"})
    assert not ok and verdicts(result, "Gated", "contextual gating", "removed")
    fd = fields_yaml(field("f", "not_exists"), field("g"))
    assert gate(fd, {}, {"g": "anything"})[0]
    assert not gate(fd, {"f": "x"}, {"g": "anything"})[0]


@pytest.mark.parametrize("entry,active,passes", [("Night", "night", True), ("Night", "day", False)])
def test_eq_is_case_insensitive_string_equality(entry, active, passes):
    fd = fields_yaml(field("f", "eq", multi=False))
    assert gate(fd, {"f": entry}, {"f": active})[0] is passes


@pytest.mark.parametrize(
    "op,entry,active,passes",
    [
        ("gt", 5, "3", True),
        ("gt", 3, "3", False),
        ("gt", 2, "3", False),
        ("lt", 2, "3", True),
        ("lt", 3, "3", False),
        ("lt", 5, "3", False),
        ("gt", 5, "many", False),
        ("lt", 5, "many", False),
        ("gt", 2.5, "2.25", True),
    ],
)
def test_gt_and_lt_compare_numbers(op, entry, active, passes):
    fd = fields_yaml(field("level", op, type="number", multi=False))
    assert gate(fd, {"level": entry}, {"level": active})[0] is passes


def test_evaluate_operator_table():
    assert evaluate_operator("match_any", "A", ["a"])
    assert not evaluate_operator("match_any", ["a"], [])
    assert evaluate_operator("match_all", [], ["a"])  # vacuous
    assert evaluate_operator("not_any", ["a"], [])
    assert evaluate_operator("exists", "x", None) and not evaluate_operator("exists", None, "x")
    assert evaluate_operator("not_exists", [], "x") and not evaluate_operator("not_exists", ["x"], None)
    assert evaluate_operator("eq", "Night", "NIGHT") and not evaluate_operator("eq", "a", "b")
    assert evaluate_operator("gt", "10", "9") and not evaluate_operator("gt", "9", "10")
    assert evaluate_operator("lt", 1, "1.5") and not evaluate_operator("lt", "x", "1")
    assert evaluate_operator("unknown_op", "a", "b")


# -- tolerance ----------------------------------------------------------------------------------------
def test_no_entry_value_passes_whatever_the_tolerance():
    for tol in ("strict", "moderate", "lenient"):
        fd = fields_yaml(field("era", tolerance=tol))
        assert gate(fd, {}, {"era": "dawn"})[0], tol


def test_entry_value_without_active_value_is_blocked_only_when_strict():
    for tol, passes in (("strict", False), ("moderate", True), ("lenient", True)):
        fd = fields_yaml(field("era", tolerance=tol), field("mood"))
        ok, result = gate(fd, {"era": "Dawn"}, {"mood": "calm"})
        assert ok is passes, tol
        if not passes:
            [v] = verdicts(result, "Gated", "contextual gating", "removed")
            assert "strict" in v.reason


@pytest.mark.parametrize("op,entry,active", [("match_any", ["a"], "b"), ("match_all", ["a", "b"], "a")])
def test_lenient_lets_a_failed_match_any_or_match_all_pass(op, entry, active):
    assert gate(fields_yaml(field("f", op, tolerance="lenient")), {"f": entry}, {"f": active})[0]
    assert not gate(fields_yaml(field("f", op, tolerance="moderate")), {"f": entry}, {"f": active})[0]
    assert not gate(fields_yaml(field("f", op, tolerance="strict")), {"f": entry}, {"f": active})[0]


@pytest.mark.parametrize("op,entry,active", [("not_any", ["a"], "a"), ("eq", "a", "b")])
def test_lenient_does_not_rescue_other_operators(op, entry, active):
    fd = fields_yaml(field("f", op, tolerance="lenient", multi=(op != "eq")))
    assert not gate(fd, {"f": entry}, {"f": active})[0]


def test_global_tolerance_setting_is_dead_per_field_tolerance_wins():
    snap = snapshot(note("Gated", ["go"], era="Dawn"))  # default field: moderate
    result, _ = run(
        snap, chat("go"), ChatState(context={"location": "x"}), cfg=MatchConfig(contextual_gating_tolerance="strict")
    )
    assert titles(result) == ["Gated"]


def test_every_enabled_field_must_pass():
    fd = fields_yaml(field("era"), field("location"))
    assert gate(fd, {"era": "dawn", "location": "keep"}, {"era": "dawn", "location": "keep"})[0]
    ok, result = gate(fd, {"era": "dawn", "location": "keep"}, {"era": "dawn", "location": "moor"})
    assert not ok
    [v] = verdicts(result, "Gated", "contextual gating", "removed")
    assert "location" in v.reason


# -- exemptions ------------------------------------------------------------------------------------------
def test_forced_entries_are_exempt_from_gating():
    fd = fields_yaml(field("era", tolerance="strict"))
    snap = snapshot(
        note("Const", tags=ALWAYS, era="Dawn"),
        note("Boot", tags=["lorebook", "lorebook-bootstrap"], era="Dawn"),
        note("Seed", ["go"], tags=["lorebook", "lorebook-seed"], era="Dawn"),
        note("Pinned", era="Dawn"),
        note("Plain", ["go"], era="Dawn"),
        field_definitions=fd,
    )
    state = ChatState(context={"era": "dusk"}, pins=(EntryRef("Pinned"),))
    result, _ = run(snap, chat("go"), state)
    assert sorted(titles(result)) == ["Boot", "Const", "Pinned", "Seed"]


def test_a_bootstrap_entry_matched_by_keyword_after_the_threshold_is_still_exempt():
    # DLE's exemption policy counts bootstrap entries even when bootstrap is not active (§3.6 P0).
    snap = snapshot(note("Boot", ["tavern"], tags=["lorebook", "lorebook-bootstrap"], era="Dawn"))
    result, _ = run(snap, chat("the tavern", pad=6), ChatState(context={"era": "dusk"}))
    assert titles(result) == ["Boot"]


# -- folder filter -----------------------------------------------------------------------------------------
def _folders():
    return snapshot(
        note("Gorduin", ["go"], folder="Characters"),
        note("Deep", ["go"], folder="Characters/Sub"),
        note("Lookalike", ["go"], folder="CharactersExtra"),
        note("Town", ["go"], folder="Places"),
        note("Root", ["go"]),
        note("Rules", tags=ALWAYS, folder="Places"),
    )


def test_folder_filter_keeps_the_folder_its_subfolders_and_root_entries():
    result, _ = run(_folders(), chat("go"), ChatState(folder_filter=("Characters",)))
    assert sorted(titles(result)) == ["Deep", "Gorduin", "Root", "Rules"]
    for t in ("Lookalike", "Town"):
        [v] = verdicts(result, t, "folder filter", "removed")
        assert "Characters" in v.reason


def test_folder_filter_prefix_needs_a_slash_boundary():
    result, _ = run(_folders(), chat("go"), ChatState(folder_filter=("Characters/Sub",)))
    assert sorted(titles(result)) == ["Deep", "Root", "Rules"]


def test_folder_filter_with_several_folders():
    result, _ = run(_folders(), chat("go"), ChatState(folder_filter=("Characters/Sub", "Places")))
    assert sorted(titles(result)) == ["Deep", "Root", "Rules", "Town"]


def test_no_folder_filter_or_an_empty_one_keeps_everything():
    for ff in (None, ()):
        result, _ = run(_folders(), chat("go"), ChatState(folder_filter=ff))
        assert len(titles(result)) == 6


def test_folder_filter_exempts_pinned_and_seed_entries():
    snap = snapshot(
        note("Pinned", folder="Places"),
        note("Seed", ["go"], tags=["lorebook", "lorebook-seed"], folder="Places"),
        note("Town", ["go"], folder="Places"),
    )
    state = ChatState(folder_filter=("Characters",), pins=(EntryRef("Pinned"),))
    assert sorted(titles(run(snap, chat("go"), state)[0])) == ["Pinned", "Seed"]
