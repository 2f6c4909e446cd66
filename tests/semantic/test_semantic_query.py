"""The semantic query (issue 12): message text without speaker names or out-of-character noise,
the newest message weighted most, shown in the decision record; query vectors cached between
generations."""

from __future__ import annotations

import asyncio

import numpy as np

from dle_desktop.core.index import VaultSlice, build_snapshot
from dle_desktop.core.note_parser import parse_note
from dle_desktop.core.pipeline.chat import ChatMessage
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.passages import (
    CHUNK_CHARS,
    MAX_CHUNK_CHARS,
    body_chunks,
    entry_passages,
    passage_excerpt,
)
from dle_desktop.core.pipeline.run import run_generation, semantic_query
from dle_desktop.core.pipeline.semantic_query import build_semantic_query, clean_message
from dle_desktop.core.pipeline.semantic_stage import RELATIVE_MIN_HITS, semantic_threshold
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.vectors.contracts import EmbeddingProfile
from dle_desktop.vectors.vault_embeddings import VaultEmbeddings


def msg(name, text, user=False, **kw):
    return ChatMessage(name, text, is_user=user, **kw)


def test_clean_message_drops_ooc_asides():
    assert clean_message("((brb))") == ""
    assert clean_message("[OOC: back in five]") == ""
    assert clean_message("(OOC: sorry)  ") == ""
    assert clean_message("OOC: typo above\nThe boat drifts.") == "The boat drifts."
    assert clean_message("She smiles. ((lol)) Then she rows on.") == "She smiles. Then she rows on."
    assert clean_message("  ...  ") == ""
    assert clean_message("*nods*  \n\n\n  Fine.") == "*nods*\nFine."


def test_query_has_no_speaker_names_and_skips_noise():
    messages = [
        msg("Tamsin", "Hello there."),
        msg("System", "Mira joined.", is_system=True),
        msg("Mira", "[OOC: brb]", user=True),
        msg("Tamsin", ""),
        msg("Mira", "Tell me about the glowing fish.", user=True),
    ]
    q = build_semantic_query(messages, 4)
    assert q is not None and q.parts == ("Tell me about the glowing fish.",)
    assert "Tamsin" not in q.text and "Mira" not in q.text
    q2 = build_semantic_query(messages, 5)
    assert q2.parts == ("Hello there.", "Tell me about the glowing fish.")
    assert q2.last == "Tell me about the glowing fish."


def test_weights_and_shown_text():
    q = build_semantic_query([msg("A", "one"), msg("B", "two")], 4, last_weight=0.7)
    assert q.weights() == (0.7, 0.30000000000000004) or abs(q.weights()[1] - 0.3) < 1e-9
    assert q.shown().startswith("«two» (weight 0.7)") and "«one»" in q.shown()
    single = build_semantic_query([msg("A", "only")], 4)
    assert single.weights() == (1.0, 0.0) and single.shown() == "«only»"


def test_nothing_to_search():
    assert build_semantic_query([], 4) is None
    assert build_semantic_query([msg("A", "((ooc))")], 4) is None
    assert build_semantic_query([msg("A", "hi")], 0) is None
    assert semantic_query([msg("A", "hi")], MatchConfig()) is None  # the stage is off
    assert semantic_query([msg("A", "hi")], MatchConfig(semantic_enabled=True)).parts == ("hi",)


def test_generation_shows_the_query():
    e = parse_note("v", "Storm.md", "---\ntags: [lorebook]\nkeys: [tempest]\n---\n# Storm\nStorms.")
    snap = build_snapshot([VaultSlice("v", (e,))])
    chat = [msg("Mira", "The wind howls.", user=True)]
    r, _ = run_generation(snap, chat, ChatState(), MatchConfig(semantic_enabled=True), semantic_hits=[])
    assert r.semantic_query == "«The wind howls.»" and r.to_json()["semantic_query"] == "«The wind howls.»"
    off, _ = run_generation(snap, chat, ChatState(), MatchConfig())
    assert off.semantic_query is None and off.to_json()["semantic_query"] is None


class CountingEmbedder:
    profile = EmbeddingProfile("counting", prompt_version="raw")

    def __init__(self):
        self.calls: list[list[str]] = []

    async def embed(self, texts, *, query=False):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % 4] = 1.0
        return out


def test_query_vectors_are_cached_and_weighted():
    emb = CountingEmbedder()
    ve = VaultEmbeddings(store=None, embedder=emb)
    q1 = asyncio.run(ve.query_vector(["a", "b", "c"], 0.6))
    assert emb.calls == [["a", "b", "c"]] and abs(np.linalg.norm(q1) - 1) < 1e-6
    asyncio.run(ve.query_vector(["b", "c", "d"], 0.6))
    assert emb.calls[-1] == ["d"]  # the window slid by one message: one new text embedded
    assert ve.query_cache_hits == 2 and ve.query_cache_misses == 4
    only_last = asyncio.run(ve.query_vector(["b", "c", "d"], 1.0))
    d = asyncio.run(ve.query_vectors(["d"]))[0]
    assert np.allclose(only_last, d)


# -- passages (issue 12, step 3) ---------------------------------------------------------------


def _entry(body, summary="A brewer's guild."):
    fm = f'summary: "{summary}"\n' if summary else ""
    return parse_note("v", "Brewers.md", f"---\ntags: [lorebook]\nkeys: [brewer]\n{fm}---\n# Brewers\n{body}")


def test_passages_keep_paragraphs_and_cut_long_ones():
    paras = [f"Paragraph {i} " + "word " * 60 for i in range(5)]
    chunks = body_chunks("\n\n".join(paras))
    assert all(len(c) <= MAX_CHUNK_CHARS for c in chunks)
    assert all(c.count("Paragraph") >= 1 for c in chunks)  # no paragraph is split across chunks
    assert sum(c.count("Paragraph") for c in chunks) == 5
    long = "A sentence that goes on. " * 80
    cut = body_chunks(long)
    assert len(cut) > 1 and all(len(c) <= MAX_CHUNK_CHARS for c in cut) and all(c.endswith(".") for c in cut)
    assert CHUNK_CHARS < MAX_CHUNK_CHARS


def test_entry_passages_start_with_title_and_summary():
    e = _entry("First paragraph about ale.\n\nSecond paragraph about the ledgers.")
    ps = entry_passages(e)
    assert ps[0] == "Brewers\nA brewer's guild."
    assert ps[1].startswith("Brewers\nFirst paragraph")
    assert passage_excerpt(e, 1) == "First paragraph about ale.\n\nSecond paragraph about the ledgers.".replace(
        "\n\n", " "
    )
    assert passage_excerpt(e, 99) is None
    no_summary = _entry("Only a body.", summary=None)
    assert entry_passages(no_summary) == ["Brewers\nOnly a body."]


def test_verdict_quotes_the_matching_passage():
    e = _entry("The stout bearded brewer keeps the guild's accounts.")
    snap = build_snapshot([VaultSlice("v", (e,))])
    r, _ = run_generation(
        snap,
        [msg("U", "Who keeps the books?", user=True)],
        ChatState(),
        MatchConfig(semantic_enabled=True, semantic_min_score=0.0),
        semantic_hits=[(e.uid, 0.8, 1)],
    )
    v = next(v for v in r.verdicts if v.stage == "semantic")
    assert "matched on: «The stout bearded brewer keeps the guild's accounts.»" in v.reason
    r2, _ = run_generation(
        snap,
        [msg("U", "Who keeps the books?", user=True)],
        ChatState(),
        MatchConfig(semantic_enabled=True, semantic_min_score=0.0),
        semantic_hits=[(e.uid, 0.8)],
    )
    assert "matched on" not in next(v for v in r2.verdicts if v.stage == "semantic").reason  # old-style hits


# -- threshold and budget (issue 12, steps 4 and 5) --------------------------------------------


def test_relative_threshold_is_scale_free_and_keeps_the_floor():
    hits = [(f"u{i}", s) for i, s in enumerate([0.62, 0.50, 0.41, 0.33, 0.30, 0.29, 0.28, 0.27, 0.25])]
    cfg = MatchConfig(semantic_relative_margin=0.5, semantic_min_score=0.0)
    t = semantic_threshold(hits, cfg)
    assert abs(t - (0.30 + 0.5 * (0.62 - 0.30))) < 1e-9
    # another model's scale (affine): the same hits pass
    other = [(u, 0.5 + 0.4 * s) for u, s in hits]
    t2 = semantic_threshold(other, cfg)
    assert [u for u, s in hits if s >= t] == [u for u, s in other if s >= t2]
    assert semantic_threshold(hits, MatchConfig(semantic_relative_margin=0.5, semantic_min_score=0.7)) == 0.7
    assert semantic_threshold(hits, MatchConfig(semantic_relative_margin=0.0, semantic_min_score=0.1)) == 0.1
    few = hits[: RELATIVE_MIN_HITS - 1]
    assert semantic_threshold(few, cfg) == 0.0  # too few hits for a distribution: the floor alone


def _budget_snap():
    notes = [
        ("Lore A", "constant: true\npriority: 1", "Xa. " * 400),
        ("Lore B", "constant: true\npriority: 2", "Yb. " * 400),
        ("Brewer", "keys: [zzz]\npriority: 90", "The stout bearded brewer keeps the ledgers."),
    ]
    entries = [parse_note("v", f"{t}.md", f"---\ntags: [lorebook]\n{fm}\n---\n# {t}\n{body}") for t, fm, body in notes]
    return build_snapshot([VaultSlice("v", tuple(entries))])


def test_semantic_budget_fix_keeps_the_strong_match_before_constants():
    snap = _budget_snap()
    brewer = snap.find("Brewer")
    chat = [msg("U", "Who is the bearded man with the accounts?", user=True)]
    hits = [(brewer.uid, 0.8, 1)]
    base = dict(semantic_enabled=True, semantic_min_score=0.0, max_tokens_budget=500)
    on, _ = run_generation(snap, chat, ChatState(), MatchConfig(**base), semantic_hits=hits)
    off, _ = run_generation(snap, chat, ChatState(), MatchConfig(**base, fix_semantic_budget=False), semantic_hits=hits)
    assert "Brewer" not in [i.entry.title for i in off.injected]  # constants came first and filled the budget
    titles = [i.entry.title for i in on.injected]
    assert "Brewer" in titles and titles == sorted(titles, key=lambda t: snap.find(t).priority)  # priority order kept
    # keywords only (semantic off): the fix does nothing, DLE's order stands
    kw_on, _ = run_generation(snap, chat, ChatState(), MatchConfig(max_tokens_budget=500))
    kw_off, _ = run_generation(snap, chat, ChatState(), MatchConfig(max_tokens_budget=500, fix_semantic_budget=False))
    assert [i.entry.title for i in kw_on.injected] == [i.entry.title for i in kw_off.injected]


def test_an_entry_bm25_and_semantic_both_find_counts_as_semantic():
    a = parse_note("v", "Harbour.md", "---\ntags: [lorebook]\nkeys: [zzz]\n---\n# Harbour\nShips dock at the harbour.")
    b = parse_note("v", "Storm.md", "---\ntags: [lorebook]\nkeys: [yyy]\n---\n# Storm\nGales in autumn.")
    snap = build_snapshot([VaultSlice("v", (a, b))])
    chat = [msg("U", "ships dock", user=True)]
    cfg = MatchConfig(
        semantic_enabled=True,
        semantic_min_score=0.0,
        semantic_top_k=1,
        fuzzy_search_enabled=True,
        fuzzy_search_min_score=0.1,
    )
    r, _ = run_generation(snap, chat, ChatState(), cfg, semantic_hits=[(a.uid, 0.7, 0), (b.uid, 0.69, 0)])
    how = {i.entry.title: i.matched_by for i in r.injected}
    assert how["Harbour"] == "(semantic, score: 0.70)" and how["Storm"] == "(semantic, score: 0.69)"
    v = next(v for v in r.verdicts if v.title == "Harbour" and v.stage == "semantic")
    assert "BM25 had matched it" in v.reason and "matched on: «Ships dock at the harbour.»" in v.reason
    off, _ = run_generation(snap, chat, ChatState(), MatchConfig(fuzzy_search_enabled=True, fuzzy_search_min_score=0.1))
    assert {i.entry.title: i.matched_by for i in off.injected}["Harbour"].startswith("(fuzzy")  # keywords mode: DLE's


def test_settings_saved_with_the_old_floor_take_the_new_default(tmp_path):
    import json as _json

    from dle_desktop.state.settings import SettingsStore

    path = tmp_path / "settings.json"
    path.write_text(_json.dumps({"schema_version": 1, "semantic_min_score": 0.35}), encoding="utf-8")
    assert SettingsStore(path).load().semantic_min_score == 0.2
    path.write_text(_json.dumps({"schema_version": 1, "semantic_min_score": 0.4}), encoding="utf-8")
    assert SettingsStore(path).load().semantic_min_score == 0.4  # the user's own value stays
    path.write_text(
        _json.dumps({"schema_version": 1, "semantic_min_score": 0.35, "semantic_relative_margin": 0.3}),
        encoding="utf-8",
    )
    assert SettingsStore(path).load().semantic_min_score == 0.35  # chosen with the new settings: kept


def test_the_summary_says_when_the_semantic_budget_fix_left_constants_out():
    snap = _budget_snap()
    brewer = snap.find("Brewer")
    chat = [msg("U", "Who is the bearded man with the accounts?", user=True)]
    base = dict(semantic_enabled=True, semantic_min_score=0.0, max_tokens_budget=300)
    on, _ = run_generation(snap, chat, ChatState(), MatchConfig(**base), semantic_hits=[(brewer.uid, 0.8, 1)])
    left_out = {"Lore A", "Lore B"} - {i.entry.title for i in on.injected}
    assert left_out
    said = [n for n in on.notes if "fix_semantic_budget" in n]
    assert len(said) == 1 and all(t in said[0] for t in left_out) and "constant" in said[0]
    off, _ = run_generation(
        snap, chat, ChatState(), MatchConfig(**base, fix_semantic_budget=False), semantic_hits=[(brewer.uid, 0.8, 1)]
    )
    assert not [n for n in off.notes if "fix_semantic_budget" in n]  # DLE's order: nothing to explain
