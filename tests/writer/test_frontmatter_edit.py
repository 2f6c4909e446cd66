"""Frontmatter edits with exact expected text: what is kept byte for byte, what changes, and
what is refused."""

from __future__ import annotations

import pytest

from dle_desktop.core.frontmatter import split_note
from dle_desktop.core.note_parser import parse_note
from dle_desktop.errors import FrontmatterEditError
from dle_desktop.vault.frontmatter_edit import REMOVE, compose_note, edit_fields, replace_body

COMMENTED = """---
# Reviewed by hand, spring 211.
tags: [lorebook, place]   # keep 'place' for the graph
keys:   [Lantern Quay, the quay]  # "the quay" matches often
priority: 40 # lower runs first
summary: >-
  The harbour district, where the night market runs.
---
# Lantern Quay
"""


def test_optimize_keys_changes_only_the_keys_line_of_a_commented_note():
    new = edit_fields(COMMENTED, {"keys": ["Lantern Quay", "night market", "harbour guild"]})
    old_lines, new_lines = COMMENTED.splitlines(keepends=True), new.splitlines(keepends=True)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [3]
    assert new_lines[3] == 'keys:   [Lantern Quay, night market, harbour guild]  # "the quay" matches often\n'
    entry = parse_note("v", "Lantern Quay.md", new)
    assert entry.keys == ("Lantern Quay", "night market", "harbour guild")


def test_a_scalar_on_a_block_style_note_changes_one_line():
    text = "---\ntags:\n  - lorebook\nkeys:\n  - a\n  - b\npriority: 50\nsummary: |\n  two\n  lines\n---\nbody\n"
    new = edit_fields(text, {"priority": 20})
    assert new == text.replace("priority: 50\n", "priority: 20\n")


def test_block_list_keeps_its_indentation_and_quoting():
    text = '---\ntags:\n- lorebook\nkeys:\n    -   "a"\n    -   "b"\nx: 1\n---\n'
    new = edit_fields(text, {"keys": ["c", "d e"]})
    assert new == '---\ntags:\n- lorebook\nkeys:\n    -   "c"\n    -   "d e"\nx: 1\n---\n'


def test_single_quoted_scalar_stays_single_quoted():
    text = "---\nsummary: 'old one'\n---\n"
    assert edit_fields(text, {"summary": "it's new"}) == "---\nsummary: 'it''s new'\n---\n"


def test_crlf_note_stays_crlf_everywhere():
    text = "---\r\ntags: [lorebook]\r\nkeys:\r\n  - a\r\n---\r\n# T\r\nbody\r\n"
    new = edit_fields(text, {"keys": ["x", "y"], "priority": 5})
    assert new == "---\r\ntags: [lorebook]\r\nkeys:\r\n  - x\r\n  - y\r\npriority: 5\r\n---\r\n# T\r\nbody\r\n"
    assert "\n" not in new.replace("\r\n", "")


def test_mixed_line_endings_are_kept_where_they_were():
    text = "---\r\ntags: [lorebook]\nkeys: [a]\r\npriority: 1\n---\r\n# M\nx\r\ny\n"
    new = edit_fields(text, {"keys": ["b"]})
    assert new == text.replace("keys: [a]", "keys: [b]")


def test_bom_and_missing_final_newline_are_kept():
    text = "\ufeff---\ntags: [lorebook]\nkeys: [a]\n---\n# T\nno newline at the end"
    new = edit_fields(text, {"keys": ["b"]})
    assert new == "\ufeff---\ntags: [lorebook]\nkeys: [b]\n---\n# T\nno newline at the end"


def test_closing_delimiter_at_the_end_of_the_file():
    text = "---\ntags: [lorebook]\n---"
    assert edit_fields(text, {"keys": ["k"]}) == "---\ntags: [lorebook]\nkeys: [k]\n---"


def test_unicode_keys_and_values_round_trip():
    text = "---\ntags: [lorebook]\n名前: 東京\nkeys: [Ærø]\n---\n# Ærø\n"
    new = edit_fields(text, {"名前": "大阪 🌊", "keys": ["Ærø", "Zürich"]})
    assert new == "---\ntags: [lorebook]\n名前: 大阪 🌊\nkeys: [Ærø, Zürich]\n---\n# Ærø\n"


def test_a_note_without_frontmatter_gets_one():
    text = "# Loose\r\nNo fields.\r\n"
    new = edit_fields(text, {"tags": ["lorebook"], "keys": ["loose"]})
    assert new == "---\r\ntags:\r\n  - lorebook\r\nkeys:\r\n  - loose\r\n---\r\n# Loose\r\nNo fields.\r\n"
    assert parse_note("v", "Loose.md", new).keys == ("loose",)


def test_a_bom_note_without_frontmatter_keeps_the_bom_first():
    new = edit_fields("\ufeffbody", {"tags": ["lorebook"]})
    assert new == "\ufeff---\ntags:\n  - lorebook\n---\nbody"


def test_new_lists_follow_the_notes_own_list_style():
    text = "---\ntags: [lorebook]\n---\n"
    assert edit_fields(text, {"keys": ["a"]}) == "---\ntags: [lorebook]\nkeys: [a]\n---\n"


def test_empty_frontmatter_gets_its_first_field():
    assert edit_fields("---\n---\nbody\n", {"keys": ["a"]}) == "---\nkeys:\n  - a\n---\nbody\n"


def test_comment_only_frontmatter_keeps_the_comment():
    assert edit_fields("---\n# todo\n---\n", {"priority": 1}) == "---\n# todo\npriority: 1\n---\n"


def test_remove_fields_and_keep_the_comments_around_them():
    new = edit_fields(COMMENTED, {"priority": REMOVE, "summary": REMOVE})
    assert new == (
        "---\n# Reviewed by hand, spring 211.\ntags: [lorebook, place]   # keep 'place' for the graph\n"
        'keys:   [Lantern Quay, the quay]  # "the quay" matches often\n---\n# Lantern Quay\n'
    )


def test_removing_every_field_leaves_an_empty_block():
    assert edit_fields("---\na: 1\nb: 2\n---\nx", {"a": REMOVE, "b": REMOVE}) == "---\n---\nx"


def test_alias_spelling_is_edited_instead_of_adding_a_second_field():
    text = "---\nTags: [lorebook]\nKeys: [old]\n---\n"
    new = edit_fields(text, {"keys": ["new"]})
    assert new == "---\nTags: [lorebook]\nKeys: [new]\n---\n"


def test_quoted_field_name_keeps_its_quotes():
    assert edit_fields('---\n"keys": [a]\n---\n', {"keys": ["b"]}) == '---\n"keys": [b]\n---\n'


def test_comment_after_the_key_of_a_block_list_is_kept():
    text = "---\nkeys:  # the main ones\n  - a\n  - b\nx: 1\n---\n"
    assert edit_fields(text, {"keys": ["c"]}) == "---\nkeys:  # the main ones\n  - c\nx: 1\n---\n"


def test_multiline_strings_become_literal_blocks():
    new = edit_fields("---\nsummary: short\n---\n", {"summary": "line one\nline two"})
    assert new == "---\nsummary: |-\n  line one\n  line two\n---\n"
    assert split_note(new).data["summary"] == "line one\nline two"


def test_strings_yaml_1_1_would_misread_are_quoted():
    new = edit_fields("---\ntags: [lorebook]\n---\n", {"time": "12:30", "count": "1_000", "flag": "true"})
    data = split_note(new).data
    assert (data["time"], data["count"], data["flag"]) == ("12:30", "1_000", "true")


def test_numbers_booleans_and_empty_values():
    new = edit_fields(
        "---\ntags: [lorebook]\n---\n", {"priority": 5, "probability": 0.5, "enabled": False, "outlet": None}
    )
    assert split_note(new).data == {
        "tags": ["lorebook"],
        "priority": 5,
        "probability": 0.5,
        "enabled": False,
        "outlet": None,
    }


def test_nested_mapping_value():
    text = "---\nmeta:\n    author: jun\nx: 1\n---\n"
    new = edit_fields(text, {"meta": {"author": "kai", "year": 211}})
    assert new == "---\nmeta:\n    author: kai\n    year: 211\nx: 1\n---\n"


def test_no_change_returns_the_same_text():
    assert edit_fields(COMMENTED, {}) == COMMENTED
    assert edit_fields(COMMENTED, {"absent": REMOVE}) == COMMENTED


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nkeys: [a, b\n---\n", "not valid YAML"),
        ("---\nkeys: a\n  bad: indent\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nkeys: [a]\nkeys: [b]\n---\n", "written 2 times"),
        ("---\n{keys: [a], tags: [lorebook]}\n---\n", "flow mapping"),
        ("---\nkeys: [a]\nno closing line\n", "never closed"),
    ],
)
def test_malformed_frontmatter_is_refused_with_a_clear_message(text, message):
    with pytest.raises(FrontmatterEditError, match=message):
        edit_fields(text, {"keys": ["new"]})


def test_changing_an_anchor_that_another_field_uses_is_refused():
    text = "---\nbase: &b [x]\nkeys: *b\n---\n"
    with pytest.raises(FrontmatterEditError, match="anchor"):
        edit_fields(text, {"base": ["y"]})
    # Changing the field that uses it is fine: the alias is simply replaced.
    assert edit_fields(text, {"keys": ["y"]}) == "---\nbase: &b [x]\nkeys: [y]\n---\n"


def test_values_that_are_not_yaml_data_are_refused():
    with pytest.raises(FrontmatterEditError, match="not object"):
        edit_fields("---\na: 1\n---\n", {"a": object()})
    with pytest.raises(FrontmatterEditError, match="needs a name"):
        edit_fields("---\na: 1\n---\n", {"": 1})


def test_replace_body_keeps_the_frontmatter_and_bom_byte_for_byte():
    text = "\ufeff---\r\ntags: [lorebook]   # c\r\n---\r\n# Old\r\nold body\r\n"
    new = replace_body(text, "# New\nnew body\n")
    assert new == "\ufeff---\r\ntags: [lorebook]   # c\r\n---\r\n# New\r\nnew body\r\n"
    assert replace_body("# only body", "x") == "x"


def test_compose_note_in_dle_house_style():
    text = compose_note(
        {
            "type": "lore",
            "priority": 50,
            "tags": ["lorebook"],
            "keys": ["Glass Road", "road"],
            "summary": "The trade road east.",
        },
        "# Glass Road\n\nIt sings at dusk.\n",
    )
    assert text == (
        "---\ntype: lore\npriority: 50\ntags:\n  - lorebook\nkeys:\n  - Glass Road\n  - road\n"
        "summary: The trade road east.\n---\n# Glass Road\n\nIt sings at dusk.\n"
    )
    entry = parse_note("v", "Glass Road.md", text)
    assert (entry.title, entry.keys, entry.priority) == ("Glass Road", ("Glass Road", "road"), 50)
