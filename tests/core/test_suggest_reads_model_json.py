"""Auto Lorebook reads the model's answer with the shared digger (`core.model_json`), so it takes
what AI search takes: answers its old reader refused are now suggestions."""

from __future__ import annotations

import json

import pytest

from dle_desktop.core.writers.suggest import SuggestionsRefused, parse_suggestions

KEY = {"title": "Brass Key", "type": "lore", "keys": ["key", "brass"], "summary": "A key.", "content": "Old."}

NEWLY_READ = {
    "single quotes": "[{'title': 'Brass Key', 'type': 'lore', 'keys': ['key', 'brass'], 'summary': 'A key.'}]",
    "an escaped apostrophe": "[{'title': 'Brass Key', 'summary': 'Mira\\'s key.', 'keys': ['key']}]",
    "Python literals": "[{'title': 'Brass Key', 'summary': 'A key.', 'keys': None, 'secret': True}]",
    "a smaller draft array before the answer": 'Draft: [{"title": "Draft Key"}]. Final: ' + json.dumps([KEY]),
    "an unrelated array before the wrapper key": json.dumps({"notes": ["seen"], "suggestions": [KEY]}),
    "JSON in a JSON string": json.dumps(json.dumps([KEY])),
}


@pytest.mark.parametrize("raw", NEWLY_READ.values(), ids=NEWLY_READ.keys())
def test_answers_the_old_reader_refused_are_read(raw):
    found, dropped = parse_suggestions(raw, [])
    assert [s.title for s in found] == ["Brass Key"] and dropped == []


def test_a_single_quoted_cut_off_answer_keeps_its_whole_objects():
    raw = "[{'title': 'Brass Key', 'summary': 'A key.',}, {'title': 'Lantern Quay', 'summ"
    assert [s.title for s in parse_suggestions(raw, [])[0]] == ["Brass Key"]


def test_a_lone_suggestion_with_keys_is_one_suggestion_not_its_keys():
    found, dropped = parse_suggestions(json.dumps(KEY), [])
    assert [(s.title, s.keys) for s in found] == [("Brass Key", ("key", "brass"))] and dropped == []


def test_a_suggestion_whose_content_holds_json_is_itself_not_an_envelope():
    item = KEY | {"content": '[{"title": "Inner", "summary": "s"}]'}
    found, _ = parse_suggestions(json.dumps(item), [])
    assert [s.title for s in found] == ["Brass Key"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('<think>[{"title": "A", "summary": "s"}]</think>No new entries.', "holds no JSON"),
        ('["Brass Key", "Lantern Quay"]', "no array of suggestion objects"),
        ("[{'title': 'A' 'summary': 'b'}]", "broken JSON"),
    ],
)
def test_what_no_repair_saves_is_still_refused_with_the_reason(raw, reason):
    with pytest.raises(SuggestionsRefused, match=reason):
        parse_suggestions(raw, [])
