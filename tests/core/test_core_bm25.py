"""BM25 (reference §2.2): tokeniser, IDF/score formula, query dedup, thresholds, incremental updates."""

import math
import random
import unicodedata

import pytest

from dle_desktop.core import bm25 as bm25_mod
from dle_desktop.core.bm25 import K1, B, Bm25Index, document_text, tokenize


# ---------------------------------------------------------------- tokeniser
def _reference_tokenize(text: str) -> list[str]:
    """The reference: NFC, toLowerCase, split on anything not \\p{L} or \\p{N}, keep length >= 2."""
    text = unicodedata.normalize("NFC", text).lower()
    out, cur = [], []
    for ch in text:
        if unicodedata.category(ch)[0] in "LN":
            cur.append(ch)
        else:
            out.append("".join(cur))
            cur = []
    out.append("".join(cur))
    return [t for t in out if len(t) >= 2]


def test_tokenize_basics():
    assert tokenize("Hello, World! a yz 42 x1") == ["hello", "world", "yz", "42", "x1"]


def test_tokenize_underscore_and_punctuation_split():
    assert tokenize("snake_case kebab-case dot.name") == ["snake", "case", "kebab", "case", "dot", "name"]


def test_tokenize_nfc():
    assert tokenize("cafe\u0301 Caf\u00e9") == ["caf\u00e9", "caf\u00e9"]


def test_tokenize_no_stemming():
    assert tokenize("dragons dragon") == ["dragons", "dragon"]


def test_tokenize_cjk_not_segmented():
    assert tokenize("\u9f8d\u738b\u6bbf \u9f8d") == ["\u9f8d\u738b\u6bbf"]


def test_tokenize_matches_reference_on_random_text():
    rng = random.Random(5)
    for _ in range(500):
        chars = []
        for _ in range(rng.randint(0, 80)):
            cp = rng.choice(
                [
                    rng.randint(0x20, 0x7E),
                    rng.randint(0xA0, 0x2FF),
                    rng.randint(0x300, 0x36F),
                    rng.randint(0x900, 0x97F),
                    rng.randint(0x4E00, 0x4E40),
                    rng.randint(0x1F300, 0x1F320),
                    rng.randint(0x2150, 0x218F),
                    rng.randint(0x660, 0x669),
                ]
            )
            chars.append(chr(cp))
        text = "".join(chars)
        assert tokenize(text) == _reference_tokenize(text)


def test_document_text():
    assert document_text("Angel Crown", ["the Crown", "halo"], "A circlet.") == "Angel Crown the Crown halo A circlet."


def test_parameters():
    assert (K1, B) == (1.5, 0.75)


# ---------------------------------------------------------------- scoring
CORPUS = {
    "d1": "apple banana",  # len 2
    "d2": "apple apple cherry",  # len 3
    "d3": "cherry date",  # len 2
}
AVG = 7 / 3


def _term_score(n, df, tf, dl, avg):
    idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avg))


def test_idf_and_score_by_hand_rare_term():
    idx = Bm25Index.build(CORPUS)
    # banana: N=3, df=1 → idf = ln(2.5/1.5 + 1) = ln(8/3); d1 tf=1 len=2
    idf = math.log(8 / 3)
    expected = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / AVG))
    hits = idx.search("banana", min_score=0)
    assert hits == [("d1", pytest.approx(expected))]
    # ln(8/3) = 0.98083; norm = 1 + 1.5*(0.25 + 0.75*6/7) = 2.33929; 0.98083*2.5/2.33929 = 1.0482
    assert expected == pytest.approx(1.0482, abs=1e-4)


def test_score_by_hand_common_term_with_tf():
    idx = Bm25Index.build(CORPUS)
    # apple: df=2 → idf = ln(1.5/2.5 + 1) = ln(1.6); d2 tf=2 len=3; d1 tf=1 len=2
    d2 = math.log(1.6) * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / AVG))
    d1 = math.log(1.6) * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / AVG))
    hits = dict(idx.search("apple", min_score=0))
    assert hits == {"d2": pytest.approx(d2), "d1": pytest.approx(d1)}
    assert d2 > d1


def test_multi_term_scores_add():
    idx = Bm25Index.build(CORPUS)
    hits = dict(idx.search("banana cherry", min_score=0))
    assert hits["d1"] == pytest.approx(_term_score(3, 1, 1, 2, AVG))
    assert hits["d3"] == pytest.approx(_term_score(3, 2, 1, 2, AVG))
    assert hits["d2"] == pytest.approx(_term_score(3, 2, 1, 3, AVG))


def test_query_terms_deduplicated():
    idx = Bm25Index.build(CORPUS)
    assert idx.search("banana banana BANANA", min_score=0) == idx.search("banana", min_score=0)


def test_unknown_terms_and_empty_index():
    idx = Bm25Index.build(CORPUS)
    assert idx.search("zebra", min_score=0) == []
    assert idx.search("", min_score=0) == []
    assert Bm25Index.build({}).search("apple", min_score=0) == []
    assert len(Bm25Index.build({})) == 0


def test_min_score_and_top_k_and_order():
    idx = Bm25Index.build(CORPUS)
    all_hits = idx.search("apple cherry banana", min_score=0, top_k=10)
    scores = [s for _, s in all_hits]
    assert scores == sorted(scores, reverse=True) and len(all_hits) == 3
    assert idx.search("apple cherry banana", min_score=0, top_k=2) == all_hits[:2]
    cut = (all_hits[1][1] + all_hits[2][1]) / 2
    assert idx.search("apple cherry banana", min_score=cut, top_k=10) == all_hits[:2]
    # min_score is inclusive
    assert idx.search("apple cherry banana", min_score=all_hits[2][1], top_k=10) == all_hits


def test_default_thresholds_match_pipeline_fuzzy():
    idx = Bm25Index.build({f"d{i}": f"filler{i} words here" for i in range(30)} | {"hit": "dragon lair"})
    assert idx.search("dragon") == [("hit", pytest.approx(idx.search("dragon", min_score=0)[0][1]))]


# ---------------------------------------------------------------- incremental
WORDS = "dragon crown angel vault archive oracle summit frost magic cost sword river king queen ash dawn".split()
QUERIES = [
    "dragon crown",
    "vault archive oracle",
    "magic cost",
    "king queen ash",
    "dawn",
    "river sword frost summit",
    " ".join(WORDS),
]


def _doc(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))


def _all_scores(idx):
    return {q: {d: round(s, 9) for d, s in idx.search(q, top_k=10_000, min_score=-1e9)} for q in QUERIES}


def _check_equal(idx, docs):
    full = Bm25Index.build(docs)
    assert len(idx) == len(docs)
    got, want = _all_scores(idx), _all_scores(full)
    for q in QUERIES:
        assert got[q].keys() == want[q].keys(), q
        for d in want[q]:
            assert got[q][d] == pytest.approx(want[q][d], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_with_changes_equals_full_rebuild(seed):
    rng = random.Random(seed)
    docs = {f"v\x00n{i}.md": _doc(rng) for i in range(rng.randint(0, 25))}
    idx = Bm25Index.build(docs)
    next_id = len(docs)
    for _step in range(40):
        removed, added = [], {}
        for _ in range(rng.randint(0, 4)):
            r = rng.random()
            if r < 0.35 and docs:  # remove
                d = rng.choice(sorted(docs))
                removed.append(d)
            elif r < 0.7 and docs:  # modify in place (same id)
                d = rng.choice(sorted(docs))
                added[d] = _doc(rng)
            elif r < 0.85:  # re-add a previously used id
                added[f"v\x00n{rng.randint(0, next_id)}.md"] = _doc(rng)
            else:
                added[f"v\x00n{next_id}.md"] = _doc(rng)
                next_id += 1
        removed.append("v\x00never-existed.md")
        new_docs = {d: t for d, t in docs.items() if d not in removed}
        new_docs.update(added)
        before = _all_scores(idx)
        new_idx = idx.with_changes(removed=removed, added=added)
        assert _all_scores(idx) == before  # the old index is untouched
        docs, idx = new_docs, new_idx
        _check_equal(idx, docs)


def test_with_changes_compaction_path(monkeypatch):
    # a low threshold forces the fold-into-a-new-base path on some steps, not on others
    monkeypatch.setattr(bm25_mod, "COMPACT_MIN", 3)
    monkeypatch.setattr(bm25_mod, "COMPACT_RATIO", 0.0)
    rng = random.Random(77)
    docs = {f"d{i}": _doc(rng) for i in range(10)}
    idx = Bm25Index.build(docs)
    compacted = overlaid = 0
    for _ in range(60):
        removed = rng.sample(sorted(docs), k=min(len(docs), rng.randint(0, 2)))
        added = {f"d{rng.randint(0, 30)}": _doc(rng) for _ in range(rng.randint(0, 3))}
        docs = {d: t for d, t in docs.items() if d not in removed} | added
        idx = idx.with_changes(removed=removed, added=added)
        if idx.overlay_size == 0:
            compacted += 1
        else:
            overlaid += 1
        _check_equal(idx, docs)
    assert compacted and overlaid


def test_with_changes_no_op_shares_state_and_scores():
    idx = Bm25Index.build(CORPUS)
    same = idx.with_changes()
    assert _all_scores(same) == _all_scores(idx)


def test_with_changes_accepts_generator_of_removed():
    idx = Bm25Index.build(CORPUS)
    new = idx.with_changes(removed=(d for d in ["d1"]))
    assert {d for d, _ in new.search("apple banana cherry", min_score=0)} == {"d2", "d3"}
    assert len(new) == 2 and len(idx) == 3


def test_large_vault_incremental_matches_rebuild():
    rng = random.Random(3)
    docs = {f"n{i}": _doc(rng) for i in range(2000)}
    idx = Bm25Index.build(docs)
    for _ in range(5):
        removed = rng.sample(sorted(docs), 20)
        added = {f"n{rng.randint(0, 2500)}": _doc(rng) for _ in range(30)}
        docs = {d: t for d, t in docs.items() if d not in removed} | added
        idx = idx.with_changes(removed=removed, added=added)
        assert idx.overlay_size > 0  # stays layered below the compaction threshold
    _check_equal(idx, docs)


def _reference_scores(docs, query):
    """BM25 by the formula, one document at a time, in plain Python."""
    terms = {d: tokenize(t) for d, t in docs.items()}
    n = len(docs)
    avg = sum(len(t) for t in terms.values()) / n or 1.0
    scores = {}
    for q in dict.fromkeys(tokenize(query)):
        df = sum(1 for t in terms.values() if q in t)
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        for d, t in terms.items():
            tf = t.count(q)
            if tf:
                norm = tf + K1 * (1 - B + B * len(t) / avg)
                scores[d] = scores.get(d, 0.0) + idf * tf * (K1 + 1) / norm
    return scores


@pytest.mark.parametrize("seed", range(6))
def test_array_postings_score_as_the_formula_says(seed):
    rng = random.Random(100 + seed)
    vocab = WORDS + ["caf\u00e9", "\u9f8d\u738b", "x1", "42"]
    docs = {f"d{i}": " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30))) for i in range(rng.randint(1, 60))}
    idx = Bm25Index.build(docs)
    for query in QUERIES + ["caf\u00e9 42", "\u9f8d\u738b x1 dragon"]:
        got = dict(idx.search(query, top_k=10_000, min_score=-1e9))
        want = {d: s for d, s in _reference_scores(docs, query).items() if s > 0}
        assert got.keys() == want.keys(), query
        for d, s in want.items():
            assert got[d] == pytest.approx(s, rel=1e-12), (query, d)
