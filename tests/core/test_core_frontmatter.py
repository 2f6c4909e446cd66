"""Delimiters (reference §1.2) plus our deliberate YAML reading."""

import random

import pytest

from dle_desktop.core.frontmatter import split_note

from ._helpers import lore, parse


def test_basic_split():
    s = split_note("---\ntags: [lorebook]\nkeys: [a]\n---\n# T\nbody")
    assert s.data == {"tags": ["lorebook"], "keys": ["a"]}
    assert s.body == "# T\nbody"
    assert s.error is None


def test_body_line_is_first_line_after_closing_delimiter():
    text = "---\ntags: [lorebook]\nkeys: [a]\n---\n# T\nbody"
    s = split_note(text)
    assert text.splitlines()[s.body_line - 1] == "# T"
    s = split_note("---\n---\nbody")
    assert s.body_line == 3
    s = split_note("---\n\n---\nbody")
    assert "---\n\n---\nbody".splitlines()[s.body_line - 1] == "body"


def test_bom_stripped():
    s = split_note("\ufeff---\ntags: [lorebook]\n---\nbody")
    assert s.data == {"tags": ["lorebook"]} and s.body == "body"
    e = parse("\ufeff---\ntags: [lorebook]\n---\n# BOM Note\nx")
    assert e.title == "BOM Note"


def test_delimiter_must_be_first_line():
    text = "\n---\ntags: [lorebook]\n---\nx"
    s = split_note(text)
    assert s.data is None and s.body == text
    assert parse(text).code == "SKIP_NO_FRONTMATTER"
    assert split_note(" ---\ntags: [lorebook]\n---\nx").data is None


def test_closing_delimiter_may_have_trailing_blanks_but_not_more_dashes():
    assert split_note("---\ntags: [lorebook]\n---  \t\nbody").body == "body"
    assert split_note("---\ntags: [lorebook]\n----\nbody").data is None


def test_closing_at_end_of_file():
    s = split_note("---\ntags: [lorebook]\n---")
    assert s.data == {"tags": ["lorebook"]} and s.body == ""


def test_first_closing_delimiter_wins():
    s = split_note("---\na: 1\n---\nbody\n---\nmore")
    assert s.data == {"a": 1} and s.body == "body\n---\nmore"


def test_crlf_frontmatter():
    s = split_note("---\r\ntags: [lorebook]\r\nkeys: [a]\r\n---\r\n# T\r\nbody")
    assert s.data == {"tags": ["lorebook"], "keys": ["a"]}
    e = parse("---\r\ntags: [lorebook]\r\nkeys: [a]\r\n---\r\n# CR Title\r\nbody\r\n")
    assert e.title == "CR Title" and e.content == "body" and e.keys == ("a",)


def test_empty_frontmatter_is_empty_mapping():
    assert split_note("---\n---\nbody").data == {}
    assert split_note("---\n\n---\nbody").data == {}
    assert split_note("---\n# comment only\n---\nbody").data == {}


def test_yaml11_booleans_and_dates_stay_strings():
    s = split_note("---\na: yes\nb: no\nc: on\nd: off\ne: 2024-01-02\nf: 12:30:00\ng: y\n---\n")
    assert s.data == {"a": "yes", "b": "no", "c": "on", "d": "off", "e": "2024-01-02", "f": s.data["f"], "g": "y"}
    assert all(isinstance(v, (str, int)) for v in s.data.values())


@pytest.mark.parametrize(
    "word, value",
    [("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False), ("FALSE", False)],
)
def test_true_false_are_booleans(word, value):
    assert split_note(f"---\na: {word}\n---\n").data == {"a": value}


def test_null_and_tilde():
    assert split_note("---\na: null\nb: ~\nc:\n---\n").data == {"a": None, "b": None, "c": None}


def test_escapes_and_quotes_as_yaml_says():
    s = split_note("---\na: \"tab\\there\"\nb: 'It''s'\nc: King's\n---\n")
    assert s.data == {"a": "tab\there", "b": "It's", "c": "King's"}


def test_non_string_keys_become_text():
    assert split_note("---\n1: one\n2.5: x\n---\n").data == {"1": "one", "2.5": "x"}


def test_yaml_error_reports_file_line():
    s = split_note("---\ntags: [lorebook]\nok: 1\nbad: a: b\n---\nbody")
    assert s.data is None and s.error is not None
    assert s.error.line == 4
    assert s.body == "body"


def test_unclosed_flow_sequence_is_an_error():
    s = split_note("---\ntags: [lorebook\n---\nbody")
    assert s.error is not None and s.error.line >= 2


def test_random_garbage_never_raises():
    rng = random.Random(7)
    alphabet = list("abc:-[]{}'\"#|>&*!%@`\t\n ,?") + ["\u00e9", "\u4e2d", "\U0001f409", "\u200f", "\ufeff"]
    for _ in range(400):
        block = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        text = f"---\n{block}\n---\n# T\nbody"
        s = split_note(text)
        assert (s.data is None) == (s.error is not None)
        r = parse(text)
        assert r is not None  # Entry or Skip, never an exception


def test_pipe_block_scalar_loses_indentation():
    # deliberate: YAML semantics rather than DLE's kept indentation
    assert lore("summary: |\n  line1\n  line2").summary == "line1\nline2"


def test_deep_nesting_is_a_skip_not_a_crash():
    n = 5000
    r = parse(f"---\ntags: [lorebook]\na: {'[' * n}{']' * n}\n---\nbody")
    assert r.code == "SKIP_BAD_FRONTMATTER" and r.line == 3


def test_yaml_anchors_and_aliases_work():
    e = lore("keys: &k [crown, halo]\nrefine_keys: *k")
    assert e.keys == ("crown", "halo") and e.refine_keys == ("crown", "halo")


def test_alias_bomb_warning_messages_stay_small():
    lines = ["tags: [lorebook]", "l0: &l0 [lol]"]
    for i in range(1, 5):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    lines.append("keys: *l4")
    lines.append("position: *l4")
    lines.append("era: *l4")
    lines.append("priority: *l4")
    e = parse("---\n" + "\n".join(lines) + "\n---\nx")
    assert e.warnings and all(len(w.message) < 2000 for w in e.warnings)
    assert e.keys == () and e.position is None and e.priority == 100


def test_block_split_by_search_equals_the_delimiter_regex():
    """split_note finds the closing line by a search and slices; the one-regex form is the spec."""
    from dle_desktop.core.frontmatter import _FM_RE, _split_block

    rng = random.Random(11)
    pieces = ["---", "\n", "\r\n", "\r", " ", "\t", "a", "x: 1", "---  ", "----", "--", "\n---\n", "\r\n---\r\n"]
    pieces += ["\n---", "\n--- \t", "\n---x"]
    matched = 0
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        if rng.random() < 0.7:
            text = rng.choice(["---\n", "---\r\n", "---", "--\n"]) + text
        m = _FM_RE.match(text)
        want = (m.group(1), m.group(2)) if m else None
        assert _split_block(text) == want, repr(text)
        matched += want is not None
    assert matched > 1000
