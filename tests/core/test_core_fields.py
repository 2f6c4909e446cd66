"""Reference §1.7: field-definitions.yaml (both layouts) and custom-field extraction."""

import pytest

from dle_desktop.core.fields import (
    DEFAULT_DEFINITIONS,
    DEFAULT_FIELDS,
    RESERVED_NAMES,
    FieldDefinition,
    extract_custom_value,
    parse_field_definitions,
)
from dle_desktop.core.note_parser import parse_note

from ._helpers import codes, note

# The layout DLE's serializer writes: `fields:`, 2-space items, 4-space properties, 6-space gating.
DLE_LAYOUT = """fields:
  - name: mood
    label: Mood
    type: string
    multi: false
    contextKey: current_mood
    gating:
      enabled: true
      operator: eq
      tolerance: strict
    values:
      - calm
      - angry
  - name: level
    label: Level
    type: number
    multi: false
    gating:
      enabled: true
      operator: gt
      tolerance: moderate
    values: []
  - name: secret
    type: boolean
    gating:
      enabled: false
  - name: factions
    type: string
    multi: true
"""

# The layout the DLE wiki documents (DLE itself parses it to zero fields).
WIKI_LAYOUT = """- name: era
  label: Era
  type: string
  multi: true
  gating:
    operator: match_any
    tolerance: lenient
- name: weather
  type: string
"""


def test_defaults():
    names = [f.name for f in DEFAULT_FIELDS]
    assert names == ["era", "location", "scene_type", "character_present"]
    for f in DEFAULT_FIELDS:
        assert (f.type, f.multi, f.operator, f.tolerance, f.gating_enabled) == (
            "string",
            True,
            "match_any",
            "moderate",
            True,
        )
    assert DEFAULT_DEFINITIONS.source == "defaults"


def test_dle_layout():
    defs = parse_field_definitions(DLE_LAYOUT, "DeepLore/field-definitions.yaml")
    by = defs.by_name()
    assert list(by) == ["mood", "level", "secret", "factions"]
    assert defs.problems == ()
    assert defs.source == "DeepLore/field-definitions.yaml"
    mood = by["mood"]
    assert (mood.label, mood.type, mood.multi, mood.operator, mood.tolerance) == (
        "Mood",
        "string",
        False,
        "eq",
        "strict",
    )
    assert mood.context_key == "current_mood"
    assert mood.values == ("calm", "angry")
    assert by["level"].type == "number" and by["level"].operator == "gt" and by["level"].values == ()
    assert by["secret"].type == "boolean" and by["secret"].gating_enabled is False
    assert by["factions"].multi is True
    # unspecified properties take the documented defaults
    f = by["factions"]
    assert (f.operator, f.tolerance, f.gating_enabled, f.label) == ("match_any", "moderate", True, "factions")
    assert f.to_json()["context_key"] == "factions"


def test_wiki_layout_accepted():
    defs = parse_field_definitions(WIKI_LAYOUT)
    assert [f.name for f in defs.fields] == ["era", "weather"]
    assert defs.by_name()["era"].tolerance == "lenient"
    assert defs.by_name()["era"].multi is True
    assert defs.by_name()["weather"].multi is False
    assert defs.problems == ()


def test_invalid_yaml_falls_back_to_defaults_with_problem():
    defs = parse_field_definitions("fields:\n  - name: [oops\n")
    assert defs.fields == DEFAULT_FIELDS
    assert len(defs.problems) == 1 and "YAML" in defs.problems[0]


@pytest.mark.parametrize("text", ["", "fields: []", "fields:\n", "just: a map", "42"])
def test_zero_usable_fields_fall_back_to_defaults(text):
    defs = parse_field_definitions(text)
    assert defs.fields == DEFAULT_FIELDS
    assert defs.problems  # the fallback is reported, not silent


def test_reserved_and_bad_names_rejected():
    text = "fields:\n  - name: keys\n  - name: Mood\n  - name: 9lives\n  - name: scandepth\n  - label: no name\n  - name: ok_one\n"
    defs = parse_field_definitions(text)
    assert [f.name for f in defs.fields] == ["ok_one"]
    assert len(defs.problems) == 5
    assert {"keys", "scandepth", "refine_keys", "fileclass", "aliases"} <= RESERVED_NAMES


def test_unknown_type_operator_tolerance_fixed_up_with_problems():
    text = "fields:\n  - name: f\n    type: date\n    gating:\n      operator: fuzzy\n      tolerance: loose\n"
    defs = parse_field_definitions(text)
    f = defs.fields[0]
    assert (f.type, f.operator, f.tolerance) == ("string", "match_any", "moderate")
    assert len(defs.problems) == 3


def test_duplicate_definition_first_wins():
    defs = parse_field_definitions("fields:\n  - name: a\n    type: number\n  - name: a\n    type: boolean\n")
    assert [(f.name, f.type) for f in defs.fields] == [("a", "number")]
    assert any("twice" in p for p in defs.problems)


def test_non_mapping_item_reported():
    defs = parse_field_definitions("fields:\n  - just_text\n  - name: good\n")
    assert [f.name for f in defs.fields] == ["good"]
    assert len(defs.problems) == 1


def test_multi_accepts_text_true():
    defs = parse_field_definitions("fields:\n  - name: a\n    multi: 'true'\n")
    assert defs.fields[0].multi is True


def test_signature_tracks_name_type_multi_only():
    a = parse_field_definitions("fields:\n  - name: a\n    label: One\n")
    b = parse_field_definitions("fields:\n  - name: a\n    label: Two\n")
    c = parse_field_definitions("fields:\n  - name: a\n    multi: true\n")
    assert a.signature() == b.signature() != c.signature()


# ---------------------------------------------------------------- extract_custom_value
S_MULTI = FieldDefinition("f", "F", "string", multi=True)
S_SINGLE = FieldDefinition("f", "F", "string", multi=False)
NUM = FieldDefinition("f", "F", "number")
BOOL = FieldDefinition("f", "F", "boolean")


def test_string_multi_wraps_scalar_and_trims():
    assert extract_custom_value(S_MULTI, "Bellsummit") == ["Bellsummit"]
    assert extract_custom_value(S_MULTI, [" a ", "b", None, ""]) == ["a", "b"]
    assert extract_custom_value(S_MULTI, 3) == ["3"]


def test_string_single_trimmed():
    assert extract_custom_value(S_SINGLE, "  calm  ") == "calm"
    assert extract_custom_value(S_SINGLE, 7) == "7"


@pytest.mark.parametrize(
    "value, expected",
    [
        (12, 12),
        ("12", 12),
        (2.5, 2.5),
        ("-3", -3),
        ("abc", None),
        (float("nan"), None),
        ("nan", None),
        (True, None),
        (None, None),
    ],
)
def test_number(value, expected):
    assert extract_custom_value(NUM, value) == expected


@pytest.mark.parametrize("value, expected", [(True, True), ("true", True), (False, False), ("yes", False), (1, False)])
def test_boolean(value, expected):
    assert extract_custom_value(BOOL, value) is expected


# ---------------------------------------------------------------- through the parser
def _parse(fm: str, defs=DEFAULT_DEFINITIONS):
    return parse_note("v", "n.md", note("tags: [lorebook]\n" + fm), field_definitions=defs)


def test_default_fields_extracted():
    e = _parse("era: [Age of Ash, Dawn]\nlocation: Bellsummit\nscene_type: 3\ncharacter_present: []")
    assert e.custom_fields == {"era": ("Age of Ash", "Dawn"), "location": ("Bellsummit",), "scene_type": ("3",)}


def test_custom_definitions_per_type():
    defs = parse_field_definitions(DLE_LAYOUT)
    e = _parse("mood: ' calm '\nlevel: '7'\nsecret: true\nfactions: Oracles\nera: [x]", defs)
    # `era` is not defined in this file, so it is not a custom field here
    assert e.custom_fields == {"mood": "calm", "level": 7, "secret": True, "factions": ("Oracles",)}
    assert codes(e) == []


def test_number_field_nan_or_text_absent():
    defs = parse_field_definitions(DLE_LAYOUT)
    assert "level" not in _parse("level: .nan", defs).custom_fields
    assert "level" not in _parse("level: lots", defs).custom_fields
    assert _parse("level: 2.5", defs).custom_fields["level"] == 2.5


def test_boolean_field_other_text_is_false():
    defs = parse_field_definitions(DLE_LAYOUT)
    assert _parse("secret: 'true'", defs).custom_fields["secret"] is True
    assert _parse("secret: nope", defs).custom_fields["secret"] is False


def test_undefined_fields_ignored():
    e = _parse("type: npc\nstatus: draft\nfaction: x")
    assert e.custom_fields == {}


def test_wiki_layout_definitions_used_by_parser():
    defs = parse_field_definitions(WIKI_LAYOUT)
    e = _parse("era: Dawn\nweather: ' rain '\nlocation: X", defs)
    assert e.custom_fields == {"era": ("Dawn",), "weather": "rain"}


def test_empty_context_key_and_label_default_to_name():
    # `contextKey:` with no value is YAML null; the context key must fall back to the name, not "None"
    defs = parse_field_definitions("fields:\n  - name: mood\n    contextKey:\n    label:\n")
    f = defs.fields[0]
    assert f.context_key == "mood"
    assert f.label == "mood"


def test_snake_case_context_key_spelling_accepted():
    defs = parse_field_definitions("fields:\n  - name: mood\n    context_key: current\n")
    assert defs.fields[0].context_key == "current"
