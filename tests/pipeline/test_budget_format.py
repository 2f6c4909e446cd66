"""Budget, truncation, template and groups (dle-behaviour §3.7), outlets and the notebook (§3.8)."""

from __future__ import annotations

import math

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.formatting import render, truncate_to_sentence
from dle_desktop.core.pipeline.state import ChatState

from .conftest import chat, note, parse, run, snapshot, titles, verdicts

ALWAYS = ["lorebook", "lorebook-always"]


def sized(title, tokens, priority, keys=("go",), **kw):
    """An entry whose content is exactly 4*tokens characters (token estimate = ceil(len/4))."""
    return note(title, list(keys), "x" * (4 * tokens), priority=priority, **kw)


def groups_by_key(result):
    return {g.key: g for g in result.groups}


# -- max entries ------------------------------------------------------------------------------------
def test_max_entries_counts_constants():
    snap = snapshot(*(note(f"C{i:02}", tags=ALWAYS) for i in range(12)), note("Dragon", ["go"], priority=200))
    result, _ = run(snap, chat("go"))
    assert titles(result) == [f"C{i:02}" for i in range(10)]
    [v] = verdicts(result, "C10", "budget", "cut")
    assert "max entries (10)" in v.reason
    assert verdicts(result, "Dragon", "budget", "cut")
    assert len(titles(run(snap, chat("go"), cfg=MatchConfig(unlimited_entries=True))[0])) == 13


def test_max_entries_setting():
    snap = snapshot(*(sized(f"E{i}", 1, i) for i in range(5)))
    assert titles(run(snap, chat("go"), cfg=MatchConfig(max_entries=3))[0]) == ["E0", "E1", "E2"]


# -- token budget --------------------------------------------------------------------------------------
def test_entries_that_exactly_fill_the_budget_fit():
    snap = snapshot(sized("A", 50, 1), sized("B", 50, 2))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100))
    assert titles(result) == ["A", "B"] and result.total_tokens == 100
    assert not any(i.truncated for i in result.injected)


def test_constants_are_inside_the_default_budget():
    snap = snapshot(*(sized(f"K{i}", 1000, i, keys=(), tags=ALWAYS) for i in range(1, 5)), sized("Dragon", 10, 100))
    result, _ = run(snap, chat("go"))
    assert titles(result) == ["K1", "K2", "K3", "K4"]
    k4 = result.injected[3]
    assert k4.truncated and k4.original_tokens == 1000
    assert verdicts(result, "Dragon", "budget", "cut")


def test_over_budget_entry_is_truncated_at_a_sentence_end_then_the_walk_stops():
    sentence = "The dragon sleeps now. "  # 23 characters, '.' at offset 21
    body = (sentence * 20).strip()  # 459 characters
    snap = snapshot(sized("A", 40, 1), note("B", ["go"], body, priority=2), sized("C", 1, 3))
    result, state = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100))
    assert titles(result) == ["A", "B"]
    b = result.injected[1]
    tokens = math.ceil(459 / 4)  # 115
    cpt = 459 / tokens
    max_chars = math.floor((100 - 40) * cpt)  # 239
    assert max_chars == 239
    expected = (sentence * 9) + "The dragon sleeps now."  # last '.' within 239 chars, at index 228
    assert b.entry.content == expected
    assert b.truncated and b.original_tokens == tokens
    assert b.entry.token_estimate == math.ceil(len(expected) / cpt)
    assert result.total_tokens == 40 + b.entry.token_estimate
    assert verdicts(result, "B", "budget", "truncated")
    assert verdicts(result, "C", "budget", "cut")  # fits, but the walk stopped
    assert b.entry.content_hash.endswith("_trunc")
    assert state.injection_log[-1]["entries"][1]["hash"].endswith("_trunc")


def test_truncation_hard_cuts_with_ellipsis_when_no_sentence_end_is_close_enough():
    body = ("word " * 100).strip()  # 499 characters, no sentence ender
    snap = snapshot(sized("A", 40, 1), note("B", ["go"], body, priority=2))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100))
    b = result.injected[1]
    cpt = 499 / math.ceil(499 / 4)
    max_chars = math.floor(60 * cpt)
    assert b.entry.content == body[:max_chars] + "..."
    assert b.truncated


def test_truncate_to_sentence_needs_more_than_40_percent():
    assert truncate_to_sentence("a" * 39 + "." + "b" * 100, 100) == ("a" * 39 + "." + "b" * 60) + "..."
    assert truncate_to_sentence("a" * 40 + "." + "b" * 100, 100) == "a" * 40 + "."
    assert truncate_to_sentence("short.", 100) == "short."


@pytest.mark.parametrize("ender", list('.!?*")}`]$') + ["。", "！", "？", "”", "）", "】", "’", "」", "_", "😀"])
def test_sentence_enders_include_punctuation_brackets_cjk_and_emoji(ender):
    text = "a" * 60 + ender + "b" * 100
    assert truncate_to_sentence(text, 100) == "a" * 60 + ender


def test_under_50_tokens_left_stops_the_walk_once_something_is_in():
    snap = snapshot(sized("A", 60, 1), sized("B", 100, 2), sized("C", 5, 3))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100))
    assert titles(result) == ["A"]  # C would fit but is never tried
    [vb] = verdicts(result, "B", "budget", "cut")
    assert "40" in vb.reason
    assert verdicts(result, "C", "budget", "cut")


def test_exactly_50_tokens_left_truncates():
    snap = snapshot(sized("A", 50, 1), sized("B", 100, 2))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100))
    assert titles(result) == ["A", "B"] and result.injected[1].truncated


def test_under_50_tokens_left_with_nothing_in_skips_to_the_next_entry():
    snap = snapshot(sized("A", 100, 1), sized("B", 10, 2), sized("C", 100, 3), sized("D", 1, 4))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=40))
    assert titles(result) == ["B"]
    [va] = verdicts(result, "A", "budget", "cut")
    assert "trying the next" in va.reason
    assert verdicts(result, "D", "budget", "cut")  # C ended the walk


def test_unlimited_budget_injects_everything():
    snap = snapshot(sized("A", 5000, 1), sized("B", 5000, 2))
    result, _ = run(snap, chat("go"), cfg=MatchConfig(unlimited_budget=True))
    assert titles(result) == ["A", "B"] and result.total_tokens == 10000


# -- outlets ---------------------------------------------------------------------------------------------
def test_outlets_bypass_budget_and_max_entries_and_get_their_own_group():
    snap = snapshot(
        sized("Huge", 5000, 1, outlet="sidebar"),
        sized("A", 90, 2),
        sized("B", 1, 3),
        sized("Also", 1, 4, outlet="sidebar", role="assistant"),
    )
    result, _ = run(snap, chat("go"), cfg=MatchConfig(max_tokens_budget=100, max_entries=1))
    assert set(titles(result)) == {"Huge", "A", "Also"}
    g = groups_by_key(result)["customWIOutlet_sidebar"]
    assert g.position == -1 and g.outlet == "sidebar"
    assert g.role == 0  # the first entry's role (none → system)
    assert g.titles == ("Huge", "Also")
    assert "<Huge>" in g.text and "<Also>" in g.text
    assert "customWIOutlet_sidebar" in [x.key for x in result.groups]
    assert groups_by_key(result)["deeplore_p1_d4_r0"].titles == ("A",)


def test_outlet_group_role_comes_from_its_first_entry():
    snap = snapshot(sized("Only", 1, 1, outlet="x", role="user"))
    g = groups_by_key(run(snap, chat("go"), cfg=MatchConfig(injection_role=2))[0])["customWIOutlet_x"]
    assert g.role == 1


def test_separate_outlet_names_are_separate_groups():
    snap = snapshot(sized("One", 1, 1, outlet="a"), sized("Two", 1, 2, outlet="b"))
    keys = [g.key for g in run(snap, chat("go"))[0].groups]
    assert keys == ["customWIOutlet_a", "customWIOutlet_b"]


# -- template ----------------------------------------------------------------------------------------------
def test_default_template_escapes_the_title_but_not_the_content():
    snap = snapshot(note('Tom & <Jerry> "Duo"', ["go"], "Raw <b>bold</b> & 'quoted' {{title}}"))
    [g] = run(snap, chat("go"))[0].groups
    t = "Tom &amp; &lt;Jerry&gt; &quot;Duo&quot;"
    assert g.text == f"<{t}>\nRaw <b>bold</b> & 'quoted' {{{{title}}}}\n</{t}>"


def test_entries_in_a_group_are_joined_by_a_blank_line():
    snap = snapshot(note("A", ["go"], "alpha", priority=1), note("B", ["go"], "beta", priority=2))
    [g] = run(snap, chat("go"))[0].groups
    assert g.text == "<A>\nalpha\n</A>\n\n<B>\nbeta\n</B>"


def test_custom_template():
    snap = snapshot(note("A", ["go"], "alpha"))
    [g] = run(snap, chat("go"), cfg=MatchConfig(injection_template="[{{title}}] {{content}} ({{title}})"))[0].groups
    assert g.text == "[A] alpha (A)"


def test_render_replaces_every_placeholder():
    e = parse(note("A&B", [], "x"))
    assert render(e, "{{title}}|{{content}}|{{title}}") == "A&amp;B|x|A&amp;B"


# -- groups -----------------------------------------------------------------------------------------------
def test_extension_mode_groups_by_effective_position_depth_and_role():
    snap = snapshot(
        note("Plain", ["go"], priority=1),
        note("Before", ["go"], priority=2, position="before"),
        note("After", ["go"], priority=3, position="after"),
        note("Deep", ["go"], priority=4, position="in_chat", depth=0, role="assistant"),
        note("Plain2", ["go"], priority=5),
        note("UserRole", ["go"], priority=6, role="user"),
    )
    result, _ = run(snap, chat("go"))
    g = groups_by_key(result)
    assert list(g) == [
        "deeplore_p1_d4_r0",
        "deeplore_p2_d4_r0",
        "deeplore_p0_d4_r0",
        "deeplore_p1_d0_r2",
        "deeplore_p1_d4_r1",
    ]
    assert g["deeplore_p1_d4_r0"].titles == ("Plain", "Plain2")
    assert (g["deeplore_p1_d0_r2"].position, g["deeplore_p1_d0_r2"].depth, g["deeplore_p1_d0_r2"].role) == (1, 0, 2)
    injected = {i.entry.title: (i.position, i.depth, i.role) for i in result.injected}
    assert injected["Before"] == (2, 4, 0) and injected["UserRole"] == (1, 4, 1)


def test_global_position_depth_and_role_apply_without_overrides():
    snap = snapshot(note("Plain", ["go"]), note("Own", ["go"], depth=2))
    cfg = MatchConfig(injection_position=2, injection_depth=7, injection_role=1)
    assert [g.key for g in run(snap, chat("go"), cfg=cfg)[0].groups] == ["deeplore_p2_d2_r1", "deeplore_p2_d7_r1"]


def test_depth_overrides_are_clamped_to_10000():
    snap = snapshot(note("Deep", ["go"], depth=99999))
    [g] = run(snap, chat("go"))[0].groups
    assert g.depth == 10000


def test_prompt_list_mode_groups_constants_lore_and_overrides():
    snap = snapshot(
        note("Rules", tags=ALWAYS, priority=1),
        note("Lore", ["go"], priority=2),
        note("Moved", ["go"], priority=3, position="before"),
        note("Lore2", ["go"], priority=4),
    )
    result, _ = run(snap, chat("go"), cfg=MatchConfig(injection_mode="prompt_list"))
    g = groups_by_key(result)
    assert set(g) == {"deeplore_constants", "deeplore_lore", "deeplore_override_p2_d4_r0"}
    assert g["deeplore_lore"].titles == ("Lore", "Lore2")
    assert (g["deeplore_lore"].position, g["deeplore_lore"].role) == (0, 0)
    assert g["deeplore_constants"].titles == ("Rules",)
    assert g["deeplore_override_p2_d4_r0"].titles == ("Moved",)


# -- notebook -------------------------------------------------------------------------------------------------
def test_notebook_is_injected_when_enabled_and_not_empty():
    snap = snapshot(note("Lore", ["go"]))
    state = ChatState(notebook="Remember the oath.")
    cfg = MatchConfig(
        notebook_enabled=True, notebook_position=2, notebook_depth=1, notebook_role=1, max_tokens_budget=100
    )
    result, _ = run(snap, chat("go"), state, cfg=cfg)
    nb = groups_by_key(result)["deeplore_notebook"]
    assert (nb.position, nb.depth, nb.role, nb.text) == (2, 1, 1, "Remember the oath.")
    assert titles(result) == ["Lore"]  # the notebook is not an entry and takes no budget


def test_notebook_is_absent_when_disabled_or_blank():
    snap = snapshot(note("Lore", ["go"]))
    assert "deeplore_notebook" not in groups_by_key(run(snap, chat("go"), ChatState(notebook="x"))[0])
    cfg = MatchConfig(notebook_enabled=True)
    assert "deeplore_notebook" not in groups_by_key(run(snap, chat("go"), ChatState(notebook="  \n"), cfg=cfg)[0])
