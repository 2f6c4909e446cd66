"""The keyword rule (dle-behaviour §3.3): case folding with NFC, substring by default,
whole-word mode with ASCII word boundaries, literal keys, first matching key recorded."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.matcher import KeywordIndex, count_occurrences, first_matching_key, key_matches

from .conftest import chat, matched_by, note, parse, run, snapshot, titles

WHOLE = MatchConfig(match_whole_words=True)
CASE = MatchConfig(case_sensitive=True)


def fires(key: str, text: str, cfg: MatchConfig = MatchConfig()) -> bool:
    snap = snapshot(note("Entry", [key]))
    result, _ = run(snap, chat(text), cfg=cfg)
    return titles(result) == ["Entry"]


# -- case folding ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key,text",
    [
        ("DRAGON", "a dragon"),
        ("dragon", "A DRAGON"),
        ("DrAgOn", "dRaGoN"),
        ("ÉLAN", "avec élan"),
        ("Магия", "МАГИЯ"),
        ("ΔΡΆΚΩΝ", "ο δράκων"),
    ],
)
def test_matching_ignores_case_by_default(key, text):
    assert fires(key, text)


def test_nfc_normalisation_makes_composed_and_decomposed_forms_equal():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert fires(composed, f"at the {decomposed} tonight")
    assert fires(decomposed, f"at the {composed} tonight")
    assert fires(composed.upper(), f"at the {decomposed}")


# -- substring default ---------------------------------------------------------------------------
@pytest.mark.parametrize("key,text", [("ab", "tell me about it"), ("rat", "Socrates said"), ("cat", "concatenate")])
def test_substring_by_default_so_short_keys_hit_inside_words(key, text):
    assert fires(key, text)
    assert not fires(key, text, WHOLE)


def test_no_match_when_the_key_is_absent():
    assert not fires("dragon", "a wyvern appears")


# -- whole-word mode -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["ab", "ab.", "(ab)", "x ab y", "ab's", "-ab-", "ab\nmore"])
def test_whole_word_matches_with_non_word_neighbours(text):
    assert fires("ab", text, WHOLE)


@pytest.mark.parametrize("text", ["abc", "cab", "_ab", "ab_", "ab1", "1ab"])
def test_whole_word_rejects_ascii_word_neighbours(text):
    assert not fires("ab", text, WHOLE)


def test_whole_word_boundaries_are_ascii_only_so_cyrillic_suffixes_do_not_stop_a_match():
    # JavaScript's \w is ASCII: 'м' after 'Магия' is not a word character.
    assert fires("Магия", "древняя Магиям", WHOLE)
    assert fires("магия", "МАГИЯ", WHOLE)


def test_whole_word_non_ascii_final_letter_is_followed_by_an_ascii_letter():
    # 'é' is not \w, so the suffix is (?!\w) and the ASCII 's' blocks it.
    assert not fires("café", "three cafés", WHOLE)
    assert fires("café", "the café.", WHOLE)
    assert fires("café", "the cafébar", MatchConfig())  # substring mode


def test_whole_word_keys_with_spaces_match_as_plain_substrings():
    assert fires("the crown", "bathe crownless", WHOLE)
    assert not fires("crown", "crownless", WHOLE)


def test_whole_word_applies_at_text_edges():
    assert fires("dragon", "dragon", WHOLE)


# -- case-sensitive mode ------------------------------------------------------------------------------
def test_case_sensitive_mode_requires_exact_case():
    assert fires("Dragon", "the Dragon", CASE)
    assert not fires("Dragon", "the dragon", CASE)
    assert not fires("dragon", "the DRAGON", CASE)


def test_case_sensitive_still_normalises_nfc():
    assert fires("Caf\u00e9", "Cafe\u0301", CASE)
    assert not fires("Caf\u00e9", "cafe\u0301", CASE)


def test_case_sensitive_and_whole_word_combine():
    cfg = MatchConfig(case_sensitive=True, match_whole_words=True)
    assert fires("Ab", "x Ab y", cfg)
    assert not fires("Ab", "x ab y", cfg)
    assert not fires("Ab", "x Abc y", cfg)


# -- regex-special characters are literal ------------------------------------------------------------
@pytest.mark.parametrize(
    "key,hit,miss",
    [
        ("/foo(/", "call /foo(/ now", "call /foo/ now"),
        ("a.b*", "see a.b* here", "see axbbb here"),
        ("[x]", "the [x] mark", "the x mark"),
        ("c++", "we write c++ code", "we write c code"),
        ("$5", "costs $5 total", "costs 5 total"),
        ("^_^", "smile ^_^ ok", "smile _ ok"),
        ("a|b", "choose a|b", "choose a or b"),
        ("\\d+", "regex \\d+ here", "regex 42 here"),
    ],
)
def test_regex_special_characters_are_literal(key, hit, miss):
    for cfg in (MatchConfig(), WHOLE):
        assert fires(key, hit, cfg), (key, hit, cfg.match_whole_words)
        assert not fires(key, miss, cfg), (key, miss, cfg.match_whole_words)


def test_whole_word_with_non_word_key_edges_uses_lookarounds():
    # '/foo(/' starts and ends with non-word characters: (?<!\w) ... (?!\w)
    assert not fires("/foo(/", "x/foo(/ now", WHOLE)
    assert not fires("/foo(/", "call /foo(/y", WHOLE)
    assert fires("/foo(/", "(/foo(/)", WHOLE)
    # 'a.b*' starts with a word character (\b) and ends with a non-word one ((?!\w)).
    assert not fires("a.b*", "za.b* here", WHOLE)
    assert not fires("a.b*", "a.b*c here", WHOLE)
    assert fires("a.b*", "(a.b*)", WHOLE)


# -- the first matching key in keys order is recorded ----------------------------------------------
def test_first_matching_key_in_keys_order_is_recorded_not_first_in_text():
    snap = snapshot(note("Angel Crown", ["Crown", "Angel", "circlet"]))
    result, _ = run(snap, chat("the angel wore the crown"))
    assert matched_by(result, "Angel Crown") == "Crown"  # as the author wrote it


def test_a_later_key_is_recorded_when_earlier_keys_miss():
    snap = snapshot(note("Angel Crown", ["Crown", "Angel", "circlet"]))
    result, _ = run(snap, chat("a silver circlet"))
    assert matched_by(result, "Angel Crown") == "circlet"


def test_whole_word_skips_a_key_that_only_occurs_inside_a_word():
    snap = snapshot(note("Ratling", ["rat", "vermin"]))
    result, _ = run(snap, chat("Socrates hates vermin"), cfg=WHOLE)
    assert matched_by(result, "Ratling") == "vermin"


def test_matched_key_keeps_the_primary_keys_spelling_when_a_refine_key_normalises_the_same():
    snap = snapshot(note("Orb", ["Orb"], refine_keys=["ORB"]))
    result, _ = run(snap, chat("an orb glows"))
    assert matched_by(result, "Orb") == "Orb"


# -- the matcher directly ------------------------------------------------------------------------------
def test_overlapping_and_nested_keys_are_all_found():
    e1 = parse(note("A", ["angel crown"]))
    e2 = parse(note("B", ["crown"]))
    e3 = parse(note("C", ["own"]))
    idx = KeywordIndex([e1, e2, e3])
    hit = idx.scan("The Angel Crown")
    assert idx.candidates(hit) == [0, 1, 2]
    assert first_matching_key(hit, idx.keys[2], whole_words=True) is None  # 'own' inside 'crown'
    assert first_matching_key(hit, idx.keys[1], whole_words=True) == "crown"


def test_count_is_non_overlapping_per_key():
    e = parse(note("A", ["aa"]))
    idx = KeywordIndex([e])
    assert count_occurrences(idx.scan("aaaa"), idx.keys[0], whole_words=False) == 2
    assert count_occurrences(idx.scan("aaaaa"), idx.keys[0], whole_words=False) == 2
    assert count_occurrences(idx.scan("aa aa"), idx.keys[0], whole_words=True) == 2
    assert count_occurrences(idx.scan("aaaa"), idx.keys[0], whole_words=True) == 0


def test_an_entry_without_keys_never_matches_by_keyword():
    snap = snapshot(note("Keyless", [], "dragon dragon"))
    result, _ = run(snap, chat("dragon"))
    assert titles(result) == []


def test_case_variants_of_one_key_record_the_first_spelling():
    snap = snapshot(note("Orb", ["Orb", "ORB"]))
    result, _ = run(snap, chat("an orb glows"))
    assert matched_by(result, "Orb") == "Orb"


# (key, text, substring match, whole-word match, whole-word count) computed by running the rule of
# dle-behaviour §3.3 as JavaScript (String.includes and RegExp with \b / (?<!\w) / (?!\w), flag i).
JS_RULE_CASES = [
    ("$", "BМ1'\n$c1", True, False, 0),
    ("'", "*-_'", True, False, 0),
    ("b", "1bм$́*.(-", True, False, 0),
    ("a", ".Ba", True, False, 0),
    ("c", "bc(('́ ", True, False, 0),
    ("éé", "'ééBé\n$", True, False, 0),
    ("М", "a-́a1bм ", True, False, 0),
    ("*", "_*東aé", True, False, 0),
    ("🐉", "1' A$м'_🐉", True, False, 0),
    ("м", "*.é. Мa-", True, False, 0),
    ("-", "B-'_*", True, False, 0),
    ("é", " (a1é'*_м", True, False, 0),
    ("A", "_B\n1́__a\n.é", True, False, 0),
    ("1", "b(_1 東-東*́ca", True, False, 0),
    ("'Мм", "\nA'МмМ東", True, False, 0),
    ("_", "éé$B*-B_м", True, False, 0),
    ("b_", "_ab_b", True, False, 0),
    (".", "cc 東_._b", True, False, 0),
    ("мA", "cbcbМA.A$.a", True, False, 0),
    ("(", "(1", True, False, 0),
    ("cМ", "1cмМ$(", True, False, 0),
    ("М*", "🐉'.М*_\n1A-м", True, False, 0),
    ("B", "'bм'́\nМ'b", True, True, 2),
    ("́", "c Bc東_́🐉(-", True, False, 0),
    ("$.", "\n$$$.Bé '1--", True, False, 0),
    ("東", "cAМ_東'bB\n", True, False, 0),
    ("_1", "(bB_1B🐉$", True, False, 0),
    ("b1", "AМ1B1c", True, False, 0),
    ("BA", "B🐉Мм東BBA-", True, False, 0),
    ("c1", "(́1*Ac11", True, False, 0),
]


@pytest.mark.parametrize("key,text,substring,whole,whole_count", JS_RULE_CASES)
def test_matcher_agrees_with_the_javascript_rule(key, text, substring, whole, whole_count):
    idx = KeywordIndex([parse(note("E", [key]))])
    [k] = idx.keys[0]
    hit = idx.scan(text)
    assert key_matches(hit, k, whole_words=False) is substring
    assert key_matches(hit, k, whole_words=True) is whole
    assert count_occurrences(hit, (k,), whole_words=True) == whole_count
