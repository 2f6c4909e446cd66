"""The tolerant reader of the AI's answer (dle-behaviour §4.3), title matching and the threshold
(§4.3 step 6, §4.6)."""

from __future__ import annotations

import json
import random

import pytest

from dle_desktop.ai.extract import (
    ExtractError,
    Pick,
    dice_coefficient,
    extract_categories,
    extract_selection,
    match_titles,
    order_and_threshold,
)
from dle_desktop.core import model_json
from dle_desktop.errors import DleError
from tests.ai._entries import entry

A_HIGH = [Pick("Gorduin Wynlar", "high", "named in the chat")]
A_B = [Pick("Gorduin Wynlar", "high", "named"), Pick("Lantern Quay", "low", "the place")]
A_B_JSON = (
    '[{"title": "Gorduin Wynlar", "confidence": "high", "reason": "named"}, '
    '{"title": "Lantern Quay", "confidence": "low", "reason": "the place"}]'
)
ONE = '[{"title": "Gorduin Wynlar", "confidence": "high", "reason": "named in the chat"}]'


SHAPES = {
    # --- plain JSON
    "plain array": (A_B_JSON, A_B),
    "empty array": ("[]", []),
    "empty array with spaces": ("  [ ]\n", []),
    "name instead of title": (
        '[{"name": "Gorduin Wynlar", "confidence": "high", "reason": "named in the chat"}]',
        A_HIGH,
    ),
    "bare strings": (
        '["Gorduin Wynlar", "Lantern Quay"]',
        [Pick("Gorduin Wynlar", "medium", "AI search"), Pick("Lantern Quay", "medium", "AI search")],
    ),
    "strings and objects mixed": (
        '["Lantern Quay", {"title": "Gorduin Wynlar", "confidence": "high"}]',
        [Pick("Lantern Quay", "medium", "AI search"), Pick("Gorduin Wynlar", "high", "")],
    ),
    "byte order mark": ("\ufeff" + ONE, A_HIGH),
    # --- code fences
    "fence with json tag": (f"```json\n{ONE}\n```", A_HIGH),
    "fence without tag": (f"```\n{ONE}\n```", A_HIGH),
    "fence with JSON5 tag and indent": (f"  ```json5\n{ONE}\n  ```  ", A_HIGH),
    "fence never closed": (f"```json\n{ONE}\n", A_HIGH),
    "inline fence on one line": (f"Answer: ```json {ONE}```", A_HIGH),
    "two fences, first holds the answer": (f"```json\n{ONE}\n```\nand\n```\nnot json\n```", A_HIGH),
    # --- prose around
    "prose before": (f"Here are the entries I picked:\n{ONE}", A_HIGH),
    "prose after": (f"{ONE}\nThese cover the scene.", A_HIGH),
    "prose both sides with fence": (f"Sure!\n```json\n{ONE}\n```\nLet me know.", A_HIGH),
    "apostrophe in prose before": (f"I've looked at the scene's needs: {ONE}", A_HIGH),
    "bracketed prose with apostrophe": (f"[the hero's notes] then {ONE}", A_HIGH),
    "brackets in a reason": (
        '[{"title": "Gorduin Wynlar", "confidence": "high", "reason": "see [1] and {x}"}]',
        [Pick("Gorduin Wynlar", "high", "see [1] and {x}")],
    ),
    "escaped quote in a reason": (
        'Picks: [{"title": "Gorduin Wynlar", "reason": "he said \\"hi]\\""}]',
        [Pick("Gorduin Wynlar", "medium", 'he said "hi]"')],
    ),
    "a smaller array in prose first": (f"Options were [1, 2]. Final: {A_B_JSON}", A_B),
    "thinking block with a draft": (f'<think>maybe ["Lantern Quay", "X", "Y"]</think>\n{ONE}', A_HIGH),
    # --- wrapper objects
    "selected wrapper": ('{"selected": ' + ONE + "}", A_HIGH),
    "results wrapper": ('{"results": ' + ONE + "}", A_HIGH),
    "entries wrapper": ('{"entries": ' + ONE + "}", A_HIGH),
    "titles wrapper of strings": ('{"titles": ["Gorduin Wynlar"]}', [Pick("Gorduin Wynlar", "medium", "AI search")]),
    "wrapper key in capitals": ('{"Selected": ' + ONE + "}", A_HIGH),
    "first array under another key": ('{"thoughts": "short", "picks": ' + ONE + "}", A_HIGH),
    "wrapper beats an earlier unrelated array": ('{"notes": [1, 2], "selected": ' + ONE + "}", A_HIGH),
    "wrapper nested one level": ('{"response": {"selected": ' + ONE + "}}", A_HIGH),
    "empty selected wrapper": ('{"selected": []}', []),
    "wrapper in prose": ('Result: {"selected": ' + ONE + "} done", A_HIGH),
    # --- JSON inside JSON
    "json string holding the array": (json.dumps(ONE), A_HIGH),
    "text envelope as json": (json.dumps({"text": ONE}), A_HIGH),
    # --- forgiving JSON
    "trailing commas": ('[{"title": "Gorduin Wynlar", "confidence": "high", "reason": "named in the chat",},]', A_HIGH),
    "single quotes": ("[{'title': 'Gorduin Wynlar', 'confidence': 'high', 'reason': 'named in the chat'}]", A_HIGH),
    "single quotes with escaped apostrophe": (
        "[{'title': 'Gorduin Wynlar', 'reason': 'the hero\\'s \"friend\"'}]",
        [Pick("Gorduin Wynlar", "medium", 'the hero\'s "friend"')],
    ),
    "python literals": (
        "[{'title': 'Gorduin Wynlar', 'confidence': None, 'reason': 'x', 'x': True}]",
        [Pick("Gorduin Wynlar", "medium", "x")],
    ),
    # --- Node util.inspect of a Gemini response
    "node inspect envelope": (
        "{ candidates: [ { content: { parts: [ { text: '" + ONE.replace("'", "\\'") + "' } ], role: 'model' } } ] }",
        A_HIGH,
    ),
    "node inspect with split string": (
        '{\n  candidates: [\n    {\n      content: { parts: [ { text: \'[{"title": "Gorduin Wynlar", \' +\n'
        '          \'"confidence": "high", "reason": "it\\\'s named"}]\' } ] }\n    }\n  ]\n}',
        [Pick("Gorduin Wynlar", "high", "it's named")],
    ),
    # --- normalisation
    "unknown confidence becomes medium": (
        '[{"title": "Gorduin Wynlar", "confidence": "certain", "reason": 3}]',
        [Pick("Gorduin Wynlar", "medium", "")],
    ),
    "confidence in capitals": (
        '[{"title": "Gorduin Wynlar", "confidence": " HIGH ", "reason": "named in the chat"}]',
        A_HIGH,
    ),
    "unusable items dropped": (
        '[1, null, {"x": 1}, {"title": "null"}, "undefined", "", "  ", {"title": ""}, '
        '{"title": "", "name": "Lantern Quay"}, "Gorduin Wynlar"]',
        [Pick("Lantern Quay", "medium", ""), Pick("Gorduin Wynlar", "medium", "AI search")],
    ),
    "titles trimmed": (
        '[{"title": "  Gorduin Wynlar \\n", "confidence": "high", "reason": " named in the chat "}]',
        A_HIGH,
    ),
    # --- truncated answer (token limit)
    "truncated answer keeps finished objects": (A_B_JSON[:-1] + ', {"title": "Saff', A_B),
    "truncated inside a fence": ("```json\n" + A_B_JSON[:-1] + ',\n  {"title"', A_B),
    "truncated wrapper": ('{"selected": ' + A_B_JSON[:-1] + ', {"title": "Saff', A_B),
    "a lone object": ('{"title": "Gorduin Wynlar", "confidence": "high", "reason": "named in the chat"}', A_HIGH),
}


@pytest.mark.parametrize("raw, expected", SHAPES.values(), ids=SHAPES.keys())
def test_text_shapes(raw, expected):
    assert extract_selection(raw) == expected


OBJECT_SHAPES = {
    "a list": (json.loads(ONE), A_HIGH),
    "an empty list": ([], []),
    "gemini envelope": ({"candidates": [{"content": {"parts": [{"text": ONE}], "role": "model"}}]}, A_HIGH),
    "gemini envelope with thought part": (
        {"candidates": [{"content": {"parts": [{"text": '["Lantern Quay", "X"]', "thought": True}, {"text": ONE}]}}]},
        A_HIGH,
    ),
    "gemini envelope split over parts": (
        {"candidates": [{"content": {"parts": [{"text": ONE[:20]}, {"text": ONE[20:]}]}}]},
        A_HIGH,
    ),
    "text envelope": ({"text": f"```json\n{ONE}\n```"}, A_HIGH),
    "output_text envelope": ({"output_text": ONE}, A_HIGH),
    "anthropic content blocks": (
        {"content": [{"type": "thinking", "thinking": '["X"]'}, {"type": "text", "text": ONE}]},
        A_HIGH,
    ),
    "openai choices": ({"choices": [{"message": {"role": "assistant", "content": ONE}}]}, A_HIGH),
    "selected wrapper object": ({"selected": json.loads(ONE)}, A_HIGH),
    "array under any key": ({"lore": json.loads(ONE)}, A_HIGH),
    "bytes": (ONE.encode(), A_HIGH),
}


@pytest.mark.parametrize("raw, expected", OBJECT_SHAPES.values(), ids=OBJECT_SHAPES.keys())
def test_object_shapes(raw, expected):
    assert extract_selection(raw) == expected


FAILURES = {
    "empty text": "",
    "only whitespace": " \n\t",
    "prose only": "I could not find anything relevant, sorry.",
    "numbers only": "[1, 2, 3]",
    "objects without titles": '[{"x": 1}, {"y": 2}]',
    "every title rejected": '[{"title": "null"}, "undefined", ""]',
    "object without an array": '{"answer": "none"}',
    "None": None,
    "a number": 42,
    "dict with nothing": {"candidates": []},
    "unclosed bracket": '[{"title": ',
    "fence with nothing": "```json\n```",
}


@pytest.mark.parametrize("raw", FAILURES.values(), ids=FAILURES.keys())
def test_unusable_answers_raise_extract_error(raw):
    with pytest.raises(ExtractError):
        extract_selection(raw)


def test_extract_error_is_a_dle_error_with_a_message():
    with pytest.raises(DleError, match="no list"):
        extract_selection("nothing here")


def test_a_non_empty_array_with_nothing_usable_is_an_error_not_an_empty_answer():
    with pytest.raises(ExtractError, match="usable title"):
        extract_selection('["null"]')


def test_largest_bracket_candidate_wins():
    text = 'draft ["Lantern Quay"] final ["Gorduin Wynlar", "Lantern Quay", "Saffre"] end ["Other"]'
    assert [p.title for p in extract_selection(text)] == ["Gorduin Wynlar", "Lantern Quay", "Saffre"]


def test_bracket_scan_tries_only_a_capped_number_of_candidates(monkeypatch):
    monkeypatch.setattr(model_json, "MAX_SCAN_CANDIDATES", 3)
    # the answer is smaller than three junk spans: past the cap, it is not found
    text = " ".join("[" + "q" * (20 + i) + "]" for i in range(3)) + ' ["Gorduin Wynlar"]'
    with pytest.raises(ExtractError):
        extract_selection(text)
    monkeypatch.setattr(model_json, "MAX_SCAN_CANDIDATES", 4)
    assert extract_selection(text)[0].title == "Gorduin Wynlar"


# ---------------------------------------------------------------- property-style robustness

_ALPHABET = "[]{}\"'\\,:` \n\tabcxyz01-.titleconfidencereasonnamehigh"


@pytest.mark.parametrize("seed", range(40))
def test_random_junk_raises_only_extract_error(seed):
    rng = random.Random(seed)
    pieces = [
        ONE,
        "```json",
        "```",
        '{"selected":',
        "null",
        "'",
        '"',
        "\\",
        "[",
        "]",
        "{",
        "}",
        ",",
        "<think>",
        "candidates: [ { content: { parts: [ { text: '",
        "' +\n '",
        "True",
    ]
    text = "".join(
        rng.choice(pieces) if rng.random() < 0.3 else rng.choice(_ALPHABET) for _ in range(rng.randint(0, 400))
    )
    try:
        result = extract_selection(text)
    except ExtractError:
        return
    assert all(isinstance(p, Pick) and p.title and p.confidence in ("high", "medium", "low") for p in result)


@pytest.mark.parametrize("seed", range(15))
def test_random_json_values_raise_only_extract_error(seed):
    rng = random.Random(1000 + seed)

    def value(depth: int):
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return rng.choice([None, True, 1, 2.5, "title", "null", ""])
        if kind == 1:
            return rng.choice(["Gorduin Wynlar", "x", "[1]"])
        if kind == 2:
            return rng.randrange(100)
        if kind == 3:
            return rng.choice(["high", "low", "medium", "?"])
        if kind in (4, 5):
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        keys = ["title", "name", "confidence", "reason", "selected", "text", "candidates", "content", "parts", "k"]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randrange(4))}

    for _ in range(30):
        raw = value(0)
        for form in (raw, json.dumps(raw)):
            try:
                extract_selection(form)
                extract_categories(form)
            except ExtractError:
                pass


HUGE = 1_000_000
HUGE_INPUTS = {  # built when the test runs, not at import
    "nested brackets": lambda: "[" * (HUGE // 2) + "]" * (HUGE // 2),
    "many empty pairs": lambda: "[]" * (HUGE // 2),
    "many objects": lambda: '{"a":1}' * (HUGE // 7),
    "open quotes": lambda: "['" * (HUGE // 2),
    "deep objects": lambda: '{"a":' * (HUGE // 5) + "1" + "}" * (HUGE // 5),
    "almost an array": lambda: "[" + '"x",' * (HUGE // 4) + "x]",
    "many title objects": lambda: '{"title": "a"}' * (HUGE // 14),
    "random brackets": lambda: "".join(random.Random(7).choices("[]{}\"'\\,:ab 1", k=HUGE)),
}


@pytest.mark.parametrize("make", HUGE_INPUTS.values(), ids=HUGE_INPUTS.keys())
def test_a_megabyte_of_hostile_text_finishes(make):
    # no timing assertion: the bracket scan is linear and the candidates tried are capped, so
    # this finishes in seconds; a quadratic scan would hit pytest's timeout.
    try:
        extract_selection(make())
    except ExtractError:
        pass


def test_a_megabyte_answer_behind_prose_is_found():
    titles = [f"Entry {i}" for i in range(50_000)]
    text = "Thinking it through. " * 2000 + json.dumps(titles) + " That is all."
    assert [p.title for p in extract_selection(text)] == titles


def test_salvage_is_capped(monkeypatch):
    monkeypatch.setattr(model_json, "MAX_SALVAGE", 2)
    text = '[{"title": "A"}, {"title": "B"}, {"title": "C"}, {"title": '
    assert [p.title for p in extract_selection(text)] == ["A", "B"]


# ---------------------------------------------------------------- categories

CATEGORY_SHAPES = {
    "array": ('["Places", "Factions"]', ["Places", "Factions"]),
    "empty array": ("[]", []),
    "categories wrapper": ('{"categories": ["Places"]}', ["Places"]),
    "labels wrapper": ('{"labels": ["Places"]}', ["Places"]),
    "selected wrapper": ('{"selected": ["Places"]}', ["Places"]),
    "first array under another key": ('{"relevant": ["Places"]}', ["Places"]),
    "one nested level flattened": ('[["Places", "Factions"], "Rules"]', ["Places", "Factions", "Rules"]),
    "duplicates in any case dropped": ('["Places", "places", " Places "]', ["Places"]),
    "fenced with prose": ('Relevant:\n```json\n["Places"]\n```', ["Places"]),
    "objects with names": ('[{"name": "Places"}, {"category": "Rules"}]', ["Places", "Rules"]),
    "junk items ignored": ('["Places", 3, null, ""]', ["Places"]),
}


@pytest.mark.parametrize("raw, expected", CATEGORY_SHAPES.values(), ids=CATEGORY_SHAPES.keys())
def test_category_shapes(raw, expected):
    assert extract_categories(raw) == expected


def test_categories_as_objects_and_failures():
    assert extract_categories({"categories": ["Places"]}) == ["Places"]
    assert extract_categories(["Places"]) == ["Places"]
    for bad in ("no categories here", "[1, 2]", '{"categories": "Places"}', None):
        with pytest.raises(ExtractError):
            extract_categories(bad)


# ---------------------------------------------------------------- Dice and title matching


def test_dice_coefficient():
    assert dice_coefficient("night", "nacht") == pytest.approx(0.25)  # {ni,ig,gh,ht} vs {na,ac,ch,ht}
    assert dice_coefficient("Gorduin", "gorduin") == 1.0
    assert dice_coefficient("a", "b") == 0.0
    assert dice_coefficient("", "ab") == 0.0
    # sets, not multisets: "aaaa" has the one bigram "aa"
    assert dice_coefficient("aaaa", "aa") == 1.0


def test_exact_match_is_case_insensitive_and_keeps_pick_order():
    g, q = entry("Gorduin Wynlar"), entry("Lantern Quay")
    matched, unmatched = match_titles([Pick("lantern quay"), Pick("GORDUIN WYNLAR", "high")], [g, q])
    assert [(m[0].title, m[1], m[2]) for m in matched] == [("lantern quay", q, "exact"), ("GORDUIN WYNLAR", g, "exact")]
    assert unmatched == []


def test_fuzzy_match_at_or_above_the_threshold():
    g = entry("Gorduin Wynlar")
    matched, unmatched = match_titles([Pick("Gorduin Wynlarr"), Pick("Something Else")], [g])
    assert len(matched) == 1 and matched[0][1] is g
    assert matched[0][2].startswith("fuzzy 0.")
    assert float(matched[0][2].split()[1]) >= 0.6
    assert unmatched == [Pick("Something Else")]


def test_fuzzy_below_threshold_is_unmatched():
    matched, unmatched = match_titles([Pick("Gorduin")], [entry("Gorduin Wynlar")])
    # {go,or,rd,du,ui,in} vs 13 bigrams: 2·6/19 = 0.63 → matched; a shorter stem is not
    assert matched and matched[0][2] == "fuzzy 0.63"
    matched, unmatched = match_titles([Pick("Gord")], [entry("Gorduin Wynlar")])
    assert matched == [] and unmatched == [Pick("Gord")]


def test_exact_matches_are_taken_before_fuzzy_ones():
    a, b = entry("Lantern Quay"), entry("Lantern Quays")
    matched, _ = match_titles([Pick("Lantern Quays!"), Pick("Lantern Quay")], [a, b])
    assert [(m[0].title, m[1].title) for m in matched] == [
        ("Lantern Quays!", "Lantern Quays"),
        ("Lantern Quay", "Lantern Quay"),
    ]


def test_fuzzy_picks_the_best_free_candidate():
    a, b = entry("Saffre"), entry("Saffre Vale")
    matched, _ = match_titles([Pick("Saffre Val")], [a, b])
    assert matched[0][1] is b


def test_a_candidate_is_matched_once_and_duplicate_picks_are_dropped():
    g = entry("Gorduin Wynlar")
    matched, unmatched = match_titles(
        [Pick("Gorduin Wynlar", "high"), Pick("gorduin wynlar", "low"), Pick("Gorduin Wynlarr")], [g]
    )
    assert [(m[0].confidence, m[1]) for m in matched] == [("high", g)]
    assert unmatched == [Pick("Gorduin Wynlarr")]  # fuzzy, and its only candidate is taken


def test_same_title_in_two_vaults_prefers_candidate_order_and_a_repeat_takes_the_next():
    first, second = entry("Gorduin Wynlar", vault="main"), entry("Gorduin Wynlar", vault="extra")
    matched, _ = match_titles([Pick("Gorduin Wynlar")], [first, second])
    assert [m[1] for m in matched] == [first]
    matched, _ = match_titles([Pick("Gorduin Wynlar"), Pick("gorduin wynlar")], [first, second])
    assert [m[1] for m in matched] == [first, second]


def test_match_against_no_candidates():
    assert match_titles([Pick("A")], []) == ([], [Pick("A")])
    assert match_titles([], [entry("A")]) == ([], [])


# ---------------------------------------------------------------- ordering and threshold


def _matched(*confidences):
    return [(Pick(f"T{i}", c), entry(f"T{i}"), "exact") for i, c in enumerate(confidences)]


def test_order_is_high_medium_low_and_stable():
    ordered = order_and_threshold(_matched("low", "high", "medium", "high"), "low")
    assert [(m[0].title, m[0].confidence) for m in ordered] == [
        ("T1", "high"),
        ("T3", "high"),
        ("T2", "medium"),
        ("T0", "low"),
    ]


@pytest.mark.parametrize("threshold, kept", [("low", 3), ("medium", 2), ("high", 1)])
def test_threshold_keeps_tiers_at_or_above(threshold, kept):
    assert len(order_and_threshold(_matched("low", "medium", "high"), threshold)) == kept


def test_unknown_threshold_is_a_programming_error():
    with pytest.raises(ValueError):
        order_and_threshold([], "certain")
