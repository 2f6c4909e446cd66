"""The pure half of AI search (dle-behaviour §3.5, §4.6, §4.7): candidates per mode, link
expansion, the AI's picks replacing the keyword result, every fallback, the confidence
threshold's verdicts, and our fix that lets confidence decide who survives a budget cut."""

from __future__ import annotations

import dataclasses

import pytest

from dle_desktop.core.pipeline.ai_stage import AiOutcome, AiPick
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.run import GenerationResult, Pending, begin_generation, finish_generation
from dle_desktop.core.pipeline.state import ChatState

from .conftest import chat, matched_by, msg, note, snapshot, titles, verdicts

TWO = MatchConfig(ai_search_enabled=True, ai_search_mode="two-stage")
ONLY = MatchConfig(ai_search_enabled=True, ai_search_mode="ai-only")

SNAP = snapshot(
    note("Harbor", ["harbor"], body="The harbor. See [[Lighthouse]]."),
    note("Lighthouse", ["beacon"]),
    note("Market", ["market"]),
    note("Smugglers", ["smuggler"]),
    note("Weather", ["storm"]),
    note("Calendar", tags=["lorebook", "lorebook-always"]),
    note("Opening", ["zzz"], tags=["lorebook", "lorebook-bootstrap"]),
)
MESSAGES = chat("We reach the harbor; the market is loud and a smuggler waves.", pad=4)


def begin(cfg: MatchConfig, messages=MESSAGES, snap=SNAP) -> Pending:
    pending = begin_generation(snap, messages, ChatState(), cfg)
    assert isinstance(pending, Pending)
    return pending


def uid(pending: Pending, title: str) -> str:
    return next(a.entry.uid for a in pending.candidates if a.entry.title == title)


def pick(
    pending: Pending, title: str, confidence: str = "high", reason: str = "named in the chat", how="exact"
) -> AiPick:
    return AiPick(uid(pending, title), confidence, reason, how)


def test_keywords_mode_needs_no_ai_and_has_no_candidates():
    pending = begin(MatchConfig())
    assert not pending.needs_ai and pending.candidates == []
    result, _ = finish_generation(pending)
    assert set(titles(result)) == {"Calendar", "Harbor", "Market", "Smugglers"}


def test_two_stage_candidates_are_keyword_matches_plus_linked_notes():
    pending = begin(TWO)
    names = {a.entry.title for a in pending.candidates}
    assert names == {"Calendar", "Harbor", "Market", "Smugglers", "Lighthouse"}
    linked = next(a for a in pending.candidates if a.entry.title == "Lighthouse")
    assert linked.matched_by == "(wiki-linked from: Harbor)"
    assert [e.title for e in pending.selectable if e.title == "Calendar"] == []  # constants are never offered


def test_ai_only_candidates_are_the_whole_vault_with_forced_ones_marked():
    pending = begin(ONLY, messages=chat("hello there"))  # a new chat: the bootstrap is active
    forced = {a.entry.title for a in pending.candidates if a.forced}
    assert forced == {"Calendar", "Opening"}
    assert {e.title for e in pending.selectable} == {"Harbor", "Lighthouse", "Market", "Smugglers", "Weather"}


def test_two_stage_picks_replace_the_keyword_result_with_verdicts():
    pending = begin(TWO)
    outcome = AiOutcome(
        "picked",
        picks=(
            pick(pending, "Lighthouse", "high", "the beacon matters"),
            pick(pending, "Harbor", "medium", "where they are"),
        ),
    )
    result, _ = finish_generation(pending, outcome)
    assert set(titles(result)) == {"Calendar", "Harbor", "Lighthouse"}
    assert matched_by(result, "Harbor") == "harbor + AI: where they are (medium)"
    assert matched_by(result, "Lighthouse") == "AI: the beacon matters (high)"
    assert verdicts(result, "Market", "ai search", "removed")[0].reason == "a keyword candidate the AI did not pick"
    assert "picked with high confidence" in verdicts(result, "Lighthouse", "ai search", "matched")[0].reason


def test_fuzzy_titles_and_cache_tiers_are_explained():
    pending = begin(TWO)
    outcome = AiOutcome("picked", picks=(pick(pending, "Market", how="fuzzy 0.71"),), cache_tier="sliding-window")
    result, _ = finish_generation(pending, outcome)
    reason = verdicts(result, "Market", "ai search", "matched")[0].reason
    assert "title matched fuzzy 0.71" in reason and "from the cache (sliding-window)" in reason


def test_picks_below_the_threshold_are_removed_with_their_confidence():
    cfg = dataclasses.replace(TWO, ai_confidence_threshold="high")
    pending = begin(cfg)
    outcome = AiOutcome("picked", picks=(pick(pending, "Harbor"),), below_threshold=(pick(pending, "Market", "low"),))
    result, _ = finish_generation(pending, outcome)
    assert "Market" not in titles(result)
    assert "low confidence, below the threshold (high)" in verdicts(result, "Market", "ai search", "removed")[0].reason


def test_unmatched_titles_become_a_note():
    pending = begin(TWO)
    result, _ = finish_generation(
        pending, AiOutcome("picked", picks=(pick(pending, "Harbor"),), unmatched=("Atlantis",))
    )
    assert any("Atlantis" in n for n in result.notes)


@pytest.mark.parametrize(
    ("fallback", "expected"),
    [
        ("keyword", {"Calendar", "Harbor", "Market", "Smugglers"}),
        ("constants_only", {"Calendar"}),
        ("bootstrap_only", set()),
        ("none", set()),
    ],
)
def test_error_fallbacks_two_stage(fallback, expected):
    pending = begin(dataclasses.replace(TWO, ai_error_fallback=fallback))
    result, _ = finish_generation(pending, AiOutcome("error", message="the server answered 500"))
    assert set(titles(result)) == expected
    assert any(n.startswith("AI search failed: the server answered 500; fallback: " + fallback) for n in result.notes)


def test_bootstrap_only_fallback_keeps_the_active_bootstrap():
    pending = begin(dataclasses.replace(ONLY, ai_error_fallback="bootstrap_only"), messages=chat("hello there"))
    result, _ = finish_generation(pending, AiOutcome("error", message="timeout"))
    assert titles(result) == ["Opening"]


@pytest.mark.parametrize(
    ("fallback", "expected"),
    [
        ("constants", {"Calendar"}),
        ("constants_bootstrap", {"Calendar", "Opening"}),
        ("keyword", {"Calendar", "Opening"}),  # a new chat: no keyword in "hello there"
        ("none", set()),
    ],
)
def test_empty_answer_fallbacks(fallback, expected):
    pending = begin(dataclasses.replace(ONLY, ai_empty_fallback=fallback), messages=chat("hello there"))
    result, _ = finish_generation(pending, AiOutcome("empty"))
    assert set(titles(result)) == expected
    assert f"the AI picked no entries; fallback: {fallback}" in result.notes


def test_ai_only_keyword_fallback_warns_when_only_constants_remain():
    pending = begin(dataclasses.replace(ONLY, ai_error_fallback="keyword"), messages=chat("nothing here", pad=4))
    result, _ = finish_generation(pending, AiOutcome("error", message="breaker open"))
    assert titles(result) == ["Calendar"]
    assert "the keyword fallback found nothing beyond the constants" in result.notes


def test_empty_manifest_uses_keywords_in_two_stage_and_forced_in_ai_only():
    two = finish_generation(begin(TWO), AiOutcome("empty-manifest"))[0]
    assert set(titles(two)) == {"Calendar", "Harbor", "Market", "Smugglers"}
    only = finish_generation(begin(ONLY, messages=chat("hello")), AiOutcome("empty-manifest"))[0]
    assert set(titles(only)) == {"Calendar", "Opening"}


def test_confidence_decides_who_survives_the_budget_cut():
    # Every entry costs the same; the budget holds three of the four.
    snap = snapshot(
        *(
            note(t, [t.lower()], body="word " * 60, priority=p)
            for t, p in (("Alpha", 10), ("Beta", 20), ("Gamma", 30), ("Delta", 40))
        )
    )
    cost = snap.entries[0].token_estimate
    cfg = dataclasses.replace(TWO, max_tokens_budget=cost * 3, strip_duplicate_injections=False)
    msgs = chat("alpha beta gamma delta", pad=4)

    def decide(config: MatchConfig) -> GenerationResult:
        pending = begin_generation(snap, msgs, ChatState(), config)
        outcome = AiOutcome(
            "picked",
            picks=(
                pick(pending, "Delta", "high"),
                pick(pending, "Gamma", "medium"),
                pick(pending, "Beta", "medium"),
                pick(pending, "Alpha", "low"),
            ),
        )
        return finish_generation(pending, outcome)[0]

    fixed = decide(cfg)
    assert titles(fixed) == ["Beta", "Gamma", "Delta"]  # the surest three, in priority order
    assert verdicts(fixed, "Alpha", "budget", "cut")
    as_dle = decide(dataclasses.replace(cfg, fix_ai_confidence_budget=False))
    assert titles(as_dle) == ["Alpha", "Beta", "Gamma"]  # priority alone decides, as in DLE
    assert verdicts(as_dle, "Delta", "budget", "cut")


def test_a_skipped_generation_never_reaches_the_ai():
    out = begin_generation(SNAP, [*MESSAGES, msg("[system note]", is_system=True)], ChatState(), TWO)
    assert isinstance(out, GenerationResult) and out.skipped_reason
