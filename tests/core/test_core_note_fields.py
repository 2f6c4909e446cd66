"""Reference §1.3: every frontmatter field's coercion and validation, as our parser implements it."""

import math

import pytest

from dle_desktop.core.entry import Entry
from dle_desktop.core.note_parser import MAX_DEPTH, MAX_KEY_LENGTH, parse_note

from ._helpers import codes, lore, note


# ---------------------------------------------------------------- keys
def test_keys_list():
    assert lore("keys: [Gorduin, Head Archivist]").keys == ("Gorduin", "Head Archivist")


def test_keys_block_list():
    assert lore("keys:\n  - a\n  - b c").keys == ("a", "b c")


def test_keys_single_scalar():
    e = lore("keys: Angel Crown")
    assert e.keys == ("Angel Crown",)
    assert codes(e) == []


def test_keys_comma_string_split_with_warning():
    e = lore("keys: Angel Crown, the Crown ,  halo")
    assert e.keys == ("Angel Crown", "the Crown", "halo")
    assert codes(e) == ["W_COMMA_SPLIT"]


def test_keys_quoted_comma_string_also_split():
    e = lore("keys: 'a, b'")
    assert e.keys == ("a", "b") and "W_COMMA_SPLIT" in codes(e)


def test_keys_comma_inside_list_item_is_not_split():
    e = lore('keys: ["Smith, John", x]')
    assert e.keys == ("Smith, John", "x") and codes(e) == []


def test_keys_comma_string_not_split_when_strict():
    e = lore("keys: a, b", lenient=False)
    assert e.keys == ("a, b",)
    assert "W_COMMA_SPLIT" not in codes(e)


def test_keys_numbers_are_stringified():
    assert lore("keys: 42").keys == ("42",)
    assert lore("keys: [1, 2.5, 3.0]").keys == ("1", "2.5", "3")


def test_keys_boolean_items_stringified_like_javascript():
    # JS String(true) is "true"; Python's str(True) would be "True"
    assert lore("keys: [true, False]").keys == ("true", "false")


def test_keys_yaml11_words_and_dates_stay_text():
    assert lore("keys: [yes, no, on, off, 2024-01-01]").keys == ("yes", "no", "on", "off", "2024-01-01")


def test_keys_blank_and_null_items_dropped_and_trimmed():
    assert lore("keys: [' x ', '', null, '  ']").keys == ("x",)


def test_keys_over_200_chars_truncated_with_warning():
    long = "k" * 250
    e = lore(f"keys: [{long}, short]")
    assert e.keys == ("k" * MAX_KEY_LENGTH, "short")
    assert MAX_KEY_LENGTH == 200
    assert "W_TRUNCATED" in codes(e)


def test_keys_exactly_200_chars_not_truncated():
    e = lore(f"keys: [{'k' * 200}]")
    assert len(e.keys[0]) == 200 and "W_TRUNCATED" not in codes(e)


def test_keys_nested_mapping_item_ignored_with_warning():
    # an unquoted `a: b` inside a block list is a mapping in YAML
    e = lore("keys:\n  - plain\n  - Note: subtitle")
    assert e.keys == ("plain",)
    assert "W_BAD_VALUE" in codes(e)


def test_keys_missing_is_empty():
    assert lore("").keys == ()


# ---------------------------------------------------------------- priority
def test_priority_default_100():
    assert lore("").priority == 100


def test_priority_number():
    assert lore("priority: 20").priority == 20
    assert lore("priority: 0").priority == 0
    assert lore("priority: 2.5").priority == 2.5


def test_priority_quoted_number_coerced_with_warning():
    e = lore("priority: '50'")
    assert e.priority == 50
    assert codes(e) == ["W_COERCED_NUM"]


def test_priority_inline_comment_is_a_yaml_comment():
    # deliberate difference: DLE reads "50 # core" and falls back to 100
    e = lore("priority: 50 # core")
    assert e.priority == 50 and codes(e) == []


def test_priority_not_a_number_falls_back_to_default():
    e = lore("priority: high")
    assert e.priority == 100 and codes(e) == ["W_BAD_VALUE"]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "true"])
def test_priority_non_finite_or_bool_ignored(value):
    e = lore(f"priority: {value}")
    assert e.priority == 100 and "W_BAD_VALUE" in codes(e)


# ---------------------------------------------------------------- depth
@pytest.mark.parametrize(
    "raw, expected, warned",
    [
        ("0", 0, False),
        ("4", 4, False),
        ("-5", 0, True),
        ("20000", MAX_DEPTH, True),
        ("10000", 10000, False),
        ("'7'", 7, False),
    ],
)
def test_depth_clamped_0_to_10000(raw, expected, warned):
    e = lore(f"depth: {raw}")
    assert e.depth == expected
    assert ("W_BAD_VALUE" in codes(e)) is warned


def test_depth_absent_is_none():
    assert lore("").depth is None


# ---------------------------------------------------------------- cooldown / warmup
@pytest.mark.parametrize("raw", ["0", "-1", "-3.5"])
def test_cooldown_and_warmup_non_positive_become_none(raw):
    e = lore(f"cooldown: {raw}\nwarmup: {raw}")
    assert e.cooldown is None and e.warmup is None


def test_cooldown_and_warmup_positive_kept_and_coerced():
    e = lore("cooldown: '3'\nwarmup: 2")
    assert e.cooldown == 3 and e.warmup == 2
    assert codes(e) == ["W_COERCED_NUM"]


def test_cooldown_text_ignored():
    e = lore("cooldown: soon")
    assert e.cooldown is None and "W_BAD_VALUE" in codes(e)


# ---------------------------------------------------------------- probability
@pytest.mark.parametrize("raw, expected", [("0", 0), ("0.7", 0.7), ("1", 1), ("-0.2", 0)])
def test_probability_in_range_or_clamped_low(raw, expected):
    e = lore(f"probability: {raw}")
    assert e.probability == expected
    assert "W_BAD_VALUE" not in codes(e)


def test_probability_absent_is_none_meaning_always():
    assert lore("").probability is None


def test_probability_above_one_clamped_to_one_with_warning():
    # DLE: ST-style 0-100 values clamp to 1 (BUG-099); we warn
    e = lore("probability: 50")
    assert e.probability == 1
    assert codes(e) == ["W_BAD_VALUE"]
    assert "0.5" in e.warnings[0].message  # the hint suggests the 0-1 form


# ---------------------------------------------------------------- position / role
@pytest.mark.parametrize("raw, expected", [("before", "before"), ("AFTER", "after"), ("In_Chat", "in_chat")])
def test_position_case_insensitive(raw, expected):
    assert lore(f"position: {raw}").position == expected


@pytest.mark.parametrize("raw, expected", [("system", "system"), ("User", "user"), ("ASSISTANT", "assistant")])
def test_role_case_insensitive(raw, expected):
    assert lore(f"role: {raw}").role == expected


def test_invalid_position_and_role_become_none_with_warning():
    e = lore("position: top\nrole: narrator")
    assert e.position is None and e.role is None
    assert codes(e) == ["W_BAD_VALUE", "W_BAD_VALUE"]


# ---------------------------------------------------------------- scanDepth / excludeRecursion
def test_scan_depth_zero_is_kept():
    assert lore("scanDepth: 0").scan_depth == 0


def test_scan_depth_default_none():
    assert lore("").scan_depth is None


def test_scan_depth_value():
    assert lore("scanDepth: 6").scan_depth == 6


def test_exclude_recursion():
    assert lore("excludeRecursion: true").exclude_recursion is True
    assert lore("excludeRecursion: false").exclude_recursion is False
    assert lore("").exclude_recursion is False
    e = lore("excludeRecursion: yes")  # YAML 1.1 word is text here: not a boolean
    assert e.exclude_recursion is False and "W_BAD_VALUE" in codes(e)


# ---------------------------------------------------------------- constant / outlet / graph
def test_constant_via_field():
    assert lore("constant: true").constant is True


def test_constant_via_tag():
    e = lore(body="# T\nx", frontmatter="")
    assert e.constant is False
    r = parse_note("v", "n.md", note("tags: [lorebook, lorebook-always]"))
    assert r.constant is True


def test_constant_field_false_does_not_override_tag():
    r = parse_note("v", "n.md", note("tags: [lorebook, lorebook-always]\nconstant: false"))
    assert r.constant is True  # OR of field and tag


def test_constant_string_true_is_not_boolean():
    e = lore("constant: 'true'")
    assert e.constant is False and "W_BAD_VALUE" in codes(e)


def test_outlet():
    assert lore("outlet: ' sidebar '").outlet == "sidebar"
    assert lore("outlet: ''").outlet is None
    assert lore("").outlet is None


def test_graph_false_hides():
    assert lore("graph: false").graph is False
    assert lore("graph: true").graph is True
    assert lore("").graph is True


# ---------------------------------------------------------------- not implemented
def test_sticky_delay_group_kept_with_warning():
    e = lore("sticky: 2\ndelay: 1\ngroup: weather\ngroup_weight: 10")
    assert e.custom_fields == {"sticky": 2, "delay": 1, "group": "weather", "group_weight": 10}
    assert codes(e) == ["W_NOT_IMPLEMENTED"] * 4


def test_not_implemented_list_value_kept_as_tuple():
    e = lore("group: [a, b]")
    assert e.custom_fields["group"] == ("a", "b")


# ---------------------------------------------------------------- summary / requires / excludes / refine
def test_summary_forms():
    assert lore("").summary == ""
    assert lore("summary: 42").summary == "42"
    assert lore("summary: 4.0").summary == "4"
    assert lore("summary: '  padded  '").summary == "padded"
    e = lore("summary: [a, b]")
    assert e.summary == "" and "W_BAD_VALUE" in codes(e)


def test_summary_block_scalars():
    assert lore("summary: |-\n  a\n  b").summary == "a\nb"
    assert lore("summary: >-\n  a\n  b").summary == "a b"
    assert lore("summary: >\n  a\n  b\n").summary == "a b"
    # `|` keeps relative indentation only (YAML), not the common indent
    assert lore("summary: |\n  a\n    b\n").summary == "a\n  b"


def test_requires_excludes_refine_cascade_scalar_or_list():
    e = lore("requires: Solo\nexcludes: [A, B]\nrefine_keys: vault\ncascade_links: [C]")
    assert e.original_requires == ("Solo",) and e.requires == ("Solo",)
    assert e.original_excludes == ("A", "B")
    assert e.refine_keys == ("vault",)
    assert e.original_cascade_links == ("C",)


def test_requires_comma_string_is_not_split():
    # only keys get the lenient comma split
    assert lore("requires: A, B").original_requires == ("A, B",)


def test_title_field_is_ignored():
    e = lore("title: Not This", body="# From H1\nx")
    assert e.title == "From H1"


# ---------------------------------------------------------------- aliases
def test_aliases_normalised_with_warning():
    e = lore("Keys: [a]\nscandepth: 2\nrefineKeys: [r]\ncascadeLinks: [c]\nexclude_recursion: true\nPRIORITY: 7")
    assert e.keys == ("a",)
    assert e.scan_depth == 2
    assert e.refine_keys == ("r",)
    assert e.original_cascade_links == ("c",)
    assert e.exclude_recursion is True
    assert e.priority == 7
    assert codes(e) == ["W_ALIAS_USED"] * 6


def test_alias_hyphenated_spelling():
    e = lore("scan-depth: 3\nrefine-keys: [x]")
    assert e.scan_depth == 3 and e.refine_keys == ("x",)


def test_canonical_wins_over_alias_silently():
    for fm in ("Keys: [alias]\nkeys: [canon]", "keys: [canon]\nKeys: [alias]"):
        e = lore(fm)
        assert e.keys == ("canon",)
        assert "W_ALIAS_USED" not in codes(e)


def test_aliases_ignored_when_not_lenient():
    e = lore("Keys: [a]\nscandepth: 2\nrefineKeys: [r]\ncascadeLinks: [c]\nexclude_recursion: true", lenient=False)
    assert e.keys == () and e.scan_depth is None and e.refine_keys == ()
    assert e.original_cascade_links == () and e.exclude_recursion is False
    assert codes(e) == []


def test_alias_for_tags_admits_when_lenient_only():
    text = note("Tags: [lorebook]")
    assert isinstance(parse_note("v", "n.md", text), Entry)
    assert parse_note("v", "n.md", text, lenient=False).code == "SKIP_NO_LOREBOOK_TAG"


def test_canonical_names_are_not_warned():
    e = lore("keys: [a]\nscanDepth: 1\nrefine_keys: [r]\ncascade_links: [c]\nexcludeRecursion: true")
    assert codes(e) == []


# ---------------------------------------------------------------- derived
def test_content_hash_is_of_raw_text():
    from dle_desktop.core.hashing import simple_hash

    text = note("tags: [lorebook]", "# T\nbody")
    assert parse_note("v", "n.md", text).content_hash == simple_hash(text)
    # a frontmatter-only edit changes the hash even though the content is the same
    text2 = note("tags: [lorebook]\npriority: 3", "# T\nbody")
    a, b = parse_note("v", "n.md", text), parse_note("v", "n.md", text2)
    assert a.content == b.content and a.content_hash != b.content_hash


def test_folder_uid_tracker_key():
    e = parse_note("Lore", "A/B/C.md", note("tags: [lorebook]", "# Cee\nx"))
    assert e.folder == "A/B"
    assert e.uid == "Lore\x00A/B/C.md"
    assert e.tracker_key == "Lore:Cee"


def test_to_json_round_trips_main_fields():
    e = lore("keys: [a]\nlocation: [x]\nsticky: 2")
    j = e.to_json()
    assert j["keys"] == ["a"] and j["custom_fields"] == {"location": ["x"], "sticky": 2}
    assert j["content"] == e.content
    assert "content" not in e.to_json(with_content=False)
    assert [w["code"] for w in j["warnings"]] == ["W_NOT_IMPLEMENTED"]


def test_entry_is_frozen():
    e = lore("")
    with pytest.raises(AttributeError):  # a frozen dataclass's FrozenInstanceError is one
        e.title = "x"  # type: ignore[misc]  # the assignment a frozen dataclass refuses, on purpose


def test_keys_deduplicated_in_order():
    assert lore("keys: [a, b, a]").keys == ("a", "b")


def test_nan_not_accepted_anywhere_numeric():
    e = lore("depth: .nan\ncooldown: .nan\nwarmup: .nan\nprobability: .nan\nscanDepth: .nan")
    assert e.depth is None and e.cooldown is None and e.warmup is None
    assert e.probability is None and e.scan_depth is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in (e.priority,))
