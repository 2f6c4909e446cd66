"""The semantic stage (ours): off by default, fused with BM25 by reciprocal rank, with verdicts."""

from __future__ import annotations

import random

from dle_desktop.core.index import VaultSlice, build_snapshot
from dle_desktop.core.note_parser import parse_note
from dle_desktop.core.pipeline.chat import ChatMessage
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.run import run_generation
from dle_desktop.core.pipeline.state import ChatState


def _snap(*notes):
    entries = [parse_note("v", f"{t}.md", f"---\ntags: [lorebook]\n{fm}\n---\n# {t}\n{body}") for t, fm, body in notes]
    return build_snapshot([VaultSlice("v", tuple(entries))])


SNAP = _snap(
    ("Storm", "keys: [tempest]", "Storms cross the delta in autumn."),
    ("Harbour", "keys: [harbour]", "Ships dock at the harbour."),
    ("Bell", "keys: [bell]\ncooldown: 2", "A drowned bell rings at night."),
    ("Rules", "keys: [rules]\nprobability: 0", "The rules of tidewriting."),
)
CHAT = [ChatMessage("U", "The weather turns bad and the wind howls.", is_user=True)]


def uid(title):
    return SNAP.find(title).uid


def titles(result):
    return [i.entry.title for i in result.injected]


def test_off_by_default_ignores_semantic_hits():
    r, _ = run_generation(SNAP, CHAT, ChatState(), MatchConfig(), semantic_hits=[(uid("Storm"), 0.9)])
    assert titles(r) == []


def test_adds_entries_above_min_score_with_a_verdict():
    cfg = MatchConfig(semantic_enabled=True, semantic_min_score=0.5)
    r, _ = run_generation(SNAP, CHAT, ChatState(), cfg, semantic_hits=[(uid("Storm"), 0.81), (uid("Harbour"), 0.3)])
    assert titles(r) == ["Storm"]
    v = next(v for v in r.verdicts if v.title == "Storm" and v.stage == "semantic")
    assert v.outcome == "matched" and "0.81" in v.reason
    assert r.injected[0].matched_by == "(semantic, score: 0.81)"


def test_top_k_and_fused_order_prefers_entries_bm25_also_found():
    cfg = MatchConfig(
        semantic_enabled=True,
        semantic_min_score=0.0,
        semantic_top_k=1,
        fuzzy_search_enabled=True,
        fuzzy_search_min_score=0.1,
    )
    chat = [ChatMessage("U", "ships dock", is_user=True)]  # BM25 finds Harbour only
    hits = [(uid("Storm"), 0.70), (uid("Harbour"), 0.69)]
    r, _ = run_generation(SNAP, chat, ChatState(), cfg, semantic_hits=hits)
    # Harbour came in through BM25 already; the one semantic slot goes to Storm.
    assert set(titles(r)) == {"Harbour", "Storm"}
    cfg2 = MatchConfig(semantic_enabled=True, semantic_min_score=0.0, semantic_top_k=1)
    r2, _ = run_generation(SNAP, chat, ChatState(), cfg2, semantic_hits=hits)
    assert titles(r2) == ["Storm"]  # without BM25 the higher similarity wins the single slot


def test_respects_cooldown_and_probability():
    cfg = MatchConfig(semantic_enabled=True, semantic_min_score=0.0, strip_duplicate_injections=False)
    hits = [(uid("Bell"), 0.9), (uid("Rules"), 0.8)]
    r1, s1 = run_generation(SNAP, CHAT, ChatState(), cfg, semantic_hits=hits, rng=random.Random(1))
    assert titles(r1) == ["Bell"]  # probability 0 keeps Rules out
    assert any(v.title == "Rules" and v.stage == "semantic" and v.outcome == "skipped" for v in r1.verdicts)
    r2, _ = run_generation(SNAP, CHAT + [ChatMessage("U", "again", is_user=True)], s1, cfg, semantic_hits=hits)
    assert "Bell" not in titles(r2)  # cooldown 2
    assert any(v.title == "Bell" and "cooldown" in v.reason for v in r2.verdicts)


def test_unknown_or_guide_uids_are_ignored():
    cfg = MatchConfig(semantic_enabled=True, semantic_min_score=0.0)
    r, _ = run_generation(SNAP, CHAT, ChatState(), cfg, semantic_hits=[("v\x00missing.md", 0.99)])
    assert titles(r) == []
