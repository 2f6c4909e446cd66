"""The permissive JSON digger shared by AI search and Auto Lorebook (`core.model_json`): each
repair, each bound, and hostile input (deep nesting, a megabyte of text, unbalanced brackets,
brackets inside strings)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from dle_desktop.core import model_json
from dle_desktop.core.model_json import ArrayShape, NotJson, find_array, loads_lenient, without_thinking


def _has_name(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str)


def _holds_named(value: list[Any]) -> bool:
    return any(_has_name(v) for v in value)


#: A made-up caller: arrays of `{name…}` objects, salvaged when cut off.
NAMED = ArrayShape(_holds_named, wrapper_keys=("items",), salvage=_has_name)
#: The same without salvage and without reading provider envelopes.
NAMED_PLAIN = ArrayShape(_holds_named, wrapper_keys=("items",), read_envelopes=False)
A, B = {"name": "Amber Gate"}, {"name": "Bell Tower"}
AB = json.dumps([A, B])

# ---------------------------------------------------------------- repairs, one by one

REPAIRS = {
    "strict JSON": ('[{"name": "Amber Gate"}]', [A]),
    "trailing comma in an array": ('[{"name": "Amber Gate"},]', [A]),
    "trailing comma in an object": ('[{"name": "Amber Gate",}]', [A]),
    "trailing comma before a newline": ('[{"name": "Amber Gate"},\n  ]', [A]),
    "single quotes": ("[{'name': 'Amber Gate'}]", [A]),
    "single quotes holding a double quote": ("[{'name': 'the \"Gate\"'}]", [{"name": 'the "Gate"'}]),
    "escaped apostrophe in single quotes": ("[{'name': 'Amber\\'s Gate'}]", [{"name": "Amber's Gate"}]),
    "escaped apostrophe in double quotes": ('[{"name": "Amber\\\'s Gate"}]', [{"name": "Amber's Gate"}]),
    "escaped backslash stays": ("[{'name': 'a\\\\b'}]", [{"name": "a\\b"}]),
    "Python True False None": (
        "[{'name': 'x', 'a': True, 'b': False, 'c': None}]",
        [{"name": "x", "a": True, "b": False, "c": None}],
    ),
    "Python words inside strings stay": ('[{"name": "True None",}]', [{"name": "True None"}]),
    "all repairs at once": ("[{'name': 'x', 'ok': True,},]", [{"name": "x", "ok": True}]),
}


@pytest.mark.parametrize("text, expected", REPAIRS.values(), ids=REPAIRS.keys())
def test_each_repair(text, expected):
    assert loads_lenient(text) == expected
    assert find_array(f"Here you go: {text} Enjoy.", NAMED) == expected


@pytest.mark.parametrize("text", ["", "nothing", "[1, 2", "{'a': }", '{"a" "b"}', "[True False]"])
def test_what_no_repair_saves_is_not_json(text):
    with pytest.raises(NotJson):
        loads_lenient(text)


def test_not_json_is_a_value_error():
    assert issubclass(NotJson, ValueError)


# ---------------------------------------------------------------- where the array hides

FOUND = {
    "bare": (AB, [A, B]),
    "byte order mark": ("\ufeff" + AB, [A, B]),
    "fenced": (f"```json\n{AB}\n```", [A, B]),
    "fence never closed": (f"```json\n{AB}\n", [A, B]),
    "inline fence": (f"Answer: ```json {AB}```", [A, B]),
    "prose both sides": (f"Sure! {AB} Hope it helps.", [A, B]),
    "apostrophe in the prose before": (f"I've checked the town's map: {AB}", [A, B]),
    "stray apostrophe inside brackets before": (f"[the hero's notes] then {AB}", [A, B]),
    "a draft in a think block": (f'<think>[{{"name": "Draft"}}]</think>{AB}', [A, B]),
    "a draft in a reasoning block": (f'<REASONING>[{{"name": "Draft"}}]</REASONING>{AB}', [A, B]),
    "wrapper key": ('{"items": ' + AB + "}", [A, B]),
    "wrapper key in capitals": ('{"Items": ' + AB + "}", [A, B]),
    "any key holding a valid array": ('{"notes": [1, 2], "found": ' + AB + "}", [A, B]),
    "wrapper in a wrapper": ('{"response": {"items": ' + AB + "}}", [A, B]),
    "JSON in a JSON string": (json.dumps(AB), [A, B]),
    "the larger span wins": (f'draft [{{"name": "Draft"}}] final {AB}', [A, B]),
    "brackets inside strings": (
        '[{"name": "see [1] and {x}"}, {"name": "a ]} b"}]',
        [{"name": "see [1] and {x}"}, {"name": "a ]} b"}],
    ),
    "escaped quote before a bracket in a string": (
        'Picks: [{"name": "he said \\"hi]\\""}]',
        [{"name": 'he said "hi]"'}],
    ),
}


@pytest.mark.parametrize("text, expected", FOUND.values(), ids=FOUND.keys())
def test_the_array_is_found(text, expected):
    assert find_array(text, NAMED) == expected


def test_bytes_and_parsed_values_are_read_too():
    assert find_array(AB.encode(), NAMED) == [A, B]
    assert find_array([A], NAMED) == [A]
    assert find_array({"items": [A]}, NAMED) == [A]
    assert find_array(None, NAMED) is None
    assert find_array(42, NAMED) is None


ENVELOPES = {
    "gemini": {"candidates": [{"content": {"parts": [{"text": AB}]}}]},
    "gemini with a thought part": {
        "candidates": [{"content": {"parts": [{"text": '[{"name": "X"}]', "thought": True}, {"text": AB}]}}]
    },
    "anthropic blocks": {"content": [{"type": "thinking", "thinking": "[]"}, {"type": "text", "text": AB}]},
    "openai choices": {"choices": [{"message": {"content": AB}}]},
    "text field": {"text": f"```json\n{AB}\n```"},
}


@pytest.mark.parametrize("envelope", ENVELOPES.values(), ids=ENVELOPES.keys())
def test_provider_envelopes_are_opened_when_the_shape_reads_them(envelope):
    assert find_array(envelope, NAMED) == [A, B]
    assert find_array(json.dumps(envelope), NAMED) == [A, B]


def test_node_inspect_output_is_read():
    text = "{ candidates: [ { content: { parts: [ { text: '" + AB[:10] + "' +\n '" + AB[10:] + "' } ] } } ] }"
    assert find_array(text, NAMED) == [A, B]
    assert find_array(text, NAMED_PLAIN) is None


def test_without_envelopes_an_object_with_a_content_field_is_itself():
    lone = {"name": "Amber Gate", "content": '[{"name": "Inside"}]'}
    shape = ArrayShape(_holds_named, salvage=_has_name, read_envelopes=False)
    assert find_array(json.dumps(lone), shape) == [lone]
    assert find_array(json.dumps(lone), NAMED) == [{"name": "Inside"}]  # read as an envelope


def test_an_empty_envelope_list_is_no_answer():
    accept_empty = ArrayShape(lambda v: True)
    assert find_array({"candidates": []}, accept_empty) is None
    assert find_array({"other": []}, accept_empty) == []


def test_without_thinking_drops_only_closed_blocks():
    assert without_thinking("<think>a</think>b<Thinking>c</Thinking>d") == "bd"
    assert without_thinking("<think>never closed [1]") == "<think>never closed [1]"


# ---------------------------------------------------------------- salvage

SALVAGE = {
    "cut off after two objects": (AB[:-1] + ', {"name": "Cu', [A, B]),
    "cut off inside a fence": ("```json\n" + AB[:-1] + ',\n {"name"', [A, B]),
    "cut off inside a wrapper": ('{"items": ' + AB[:-1] + ', {"na', [A, B]),
    "a lone object": ('{"name": "Amber Gate"}', [A]),
    "nested objects are not items": (
        '[{"name": "Amber Gate", "at": {"name": "Inner"}}, {"na',
        [{"name": "Amber Gate", "at": {"name": "Inner"}}],
    ),
    "repaired objects are kept": ("[{'name': 'Amber Gate',}, {'name': 'Bell Tower'}, {'na", [A, B]),
}


@pytest.mark.parametrize("text, expected", SALVAGE.values(), ids=SALVAGE.keys())
def test_a_cut_off_answer_keeps_its_whole_objects(text, expected):
    assert find_array(text, NAMED) == expected
    assert find_array(text, NAMED_PLAIN) is None  # only a shape that asks salvages


NOTHING = {
    "empty": "",
    "whitespace": " \n\t",
    "prose": "I found nothing, sorry.",
    "an array of the wrong things": "[1, 2, 3]",
    "objects without names": '[{"x": 1}]',
    "an unclosed bracket": '[{"name": ',
    "only closing brackets": "]]]}}}",
    "crossed brackets": '[{"name": "A"]}',
    "a fence with nothing": "```json\n```",
    "only a think block": '<think>[{"name": "Draft"}]</think>',
}


@pytest.mark.parametrize("text", NOTHING.values(), ids=NOTHING.keys())
def test_nothing_usable_is_none(text):
    assert find_array(text, NAMED) is None


# ---------------------------------------------------------------- bounds


def test_only_the_largest_spans_are_tried(monkeypatch):
    monkeypatch.setattr(model_json, "MAX_SCAN_CANDIDATES", 3)
    text = " ".join("[" + "q" * (30 + i) + "]" for i in range(3)) + ' [{"name": "Amber Gate"}]'
    assert find_array(text, NAMED_PLAIN) is None  # the answer is smaller than three junk spans
    monkeypatch.setattr(model_json, "MAX_SCAN_CANDIDATES", 4)
    assert find_array(text, NAMED_PLAIN) == [A]


def test_salvage_parses_at_most_max_salvage_objects(monkeypatch):
    monkeypatch.setattr(model_json, "MAX_SALVAGE", 2)
    text = '[{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": '
    assert find_array(text, NAMED) == [{"name": "A"}, {"name": "B"}]


def test_repair_is_skipped_above_max_repair_chars(monkeypatch):
    text = "[{'name': 'Amber Gate', 'pad': '" + "x" * 100 + "'}]"
    assert loads_lenient(text)[0]["name"] == "Amber Gate"
    monkeypatch.setattr(model_json, "MAX_REPAIR_CHARS", 50)
    with pytest.raises(NotJson):
        loads_lenient(text)
    assert loads_lenient('[{"name": "strict JSON is still read", "pad": "' + "x" * 100 + '"}]')


def test_envelopes_and_strings_are_followed_to_max_depth_only(monkeypatch):
    nested: Any = AB
    for _ in range(2):
        nested = json.dumps(nested)  # JSON in a JSON string in a JSON string
    assert find_array(nested, NAMED_PLAIN) == [A, B]
    assert find_array(json.dumps(nested), NAMED_PLAIN) is None  # one string more is past MAX_DEPTH
    monkeypatch.setattr(model_json, "MAX_DEPTH", 3)
    assert find_array(nested, NAMED_PLAIN) is None
    wrapped: Any = [A]
    for i in range(10):
        wrapped = {f"w{i}": wrapped}
    assert find_array(wrapped, NAMED_PLAIN) is None


# ---------------------------------------------------------------- hostile input

HUGE = 1_000_000
HOSTILE = {  # built when the test runs, not at import
    "deeply nested arrays": lambda: "[" * (HUGE // 2) + "]" * (HUGE // 2),
    "deeply nested objects": lambda: '{"a":' * (HUGE // 5) + "1" + "}" * (HUGE // 5),
    "unbalanced opening brackets": lambda: "[{" * (HUGE // 2),
    "unbalanced closing brackets": lambda: "}]" * (HUGE // 2),
    "many empty pairs": lambda: "[]" * (HUGE // 2),
    "many small objects": lambda: '{"a":1}' * (HUGE // 7),
    "open quotes": lambda: "['" * (HUGE // 2),
    "a string full of brackets": lambda: '["' + "[{" * (HUGE // 2) + '"',
    "almost an array": lambda: "[" + '"x",' * (HUGE // 4) + "x]",
    "random brackets and quotes": lambda: "".join(random.Random(7).choices("[]{}\"'\\,:ab 1", k=HUGE)),
}


@pytest.mark.parametrize("make", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_megabyte_of_hostile_text_finds_nothing_and_finishes(make):
    # no timing assertion: the scan is linear and the spans tried are capped, so this takes
    # seconds; a quadratic scan or an unbounded recursion would hit pytest's timeout or crash.
    assert find_array(make(), NAMED) is None


def test_a_megabyte_of_salvageable_objects_is_capped():
    text = '{"name": "a"}' * (HUGE // 13)
    assert find_array(text, NAMED) == [{"name": "a"}] * model_json.MAX_SALVAGE


def test_a_megabyte_answer_behind_prose_is_found():
    items = [{"name": f"Entry {i}"} for i in range(40_000)]
    text = "Thinking it through. " * 2000 + json.dumps(items) + " That is all."
    assert find_array(text, NAMED) == items


def test_a_string_with_brackets_does_not_hide_the_array():
    text = '[{"name": "' + "]" * 5000 + '"}, {"name": "' + "{[" * 5000 + '"}]'
    assert [len(v["name"]) for v in find_array(text, NAMED) or []] == [5000, 10000]


@pytest.mark.parametrize("seed", range(20))
def test_random_junk_gives_an_accepted_array_or_none(seed):
    rng = random.Random(seed)
    pieces = [AB, "```json", "```", '{"items":', "'", '"', "\\", "[", "]", "{", "}", ",", "<think>", "True"]
    text = "".join(rng.choice(pieces) if rng.random() < 0.3 else rng.choice("[]{}\"' ,:ab") for _ in range(400))
    found = find_array(text, NAMED)
    assert found is None or _holds_named(found) or all(_has_name(v) for v in found)
