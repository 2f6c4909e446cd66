"""The fast frontmatter reader (core/simple_yaml.py) gives exactly what the YAML parser gives,
type for type, or declines; and it does take the common shapes."""

import math
import random

import pytest
import yaml

from dle_desktop.core.frontmatter import _LoreLoader, _read_simple, split_note


def _typed(value):
    """A form that tells 1, 1.0 and True apart, and compares NaN with itself."""
    if isinstance(value, dict):
        return ("dict", tuple((_typed(k), _typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_typed(v) for v in value))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _yaml(block):
    try:
        loaded = yaml.load(block, Loader=_LoreLoader)
    except yaml.YAMLError:
        return "error"
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return "not a mapping"
    return {str(k): v for k, v in loaded.items()}


def _same_as_yaml(block):
    fast = _read_simple(block)
    if fast is not None:
        assert _typed(fast) == _typed(_yaml(block)), repr(block)
    return fast is not None


@pytest.mark.parametrize(
    "block",
    [
        'tags: [lorebook, character]\nkeys: [Ada, the Clockmaker]\npriority: 50\nsummary: "A maker."',
        "tags:\n  - lorebook\n  - place\nkeys:\n- Quay\n- Lantern Quay\n",
        "priority: 35  # lower is more important\nconstant: true\nenabled: False\nprobability: 0.5",
        "depth: -3\nscanDepth: +4\nvalue: 0x1F\noct: 0777\nunder: 1_000\nfl: 1_0.5\nexp: 1.0e+3\nstr_exp: 1e3",
        "a: .inf\nb: -.Inf\nc: .NaN\nd: ~\ne: null\nf: Null\ng:\nh: yes\ni: no\nj: on\nk: off\nl: y\nm: 2024-06-02",
        "keys: [\"quoted, with comma\", 'single', plain words, 42, 3.5, true, null, ~]",
        "keys: []\nrequires: [ ]\nsummary: ''\nnote: \"\"",
        'summary: Heron\'s Rest is a "quiet" place #not a comment\nurl: C#',
        "# a comment first\n\ntags: [lorebook]  # trailing\n   # indented comment\nkeys:\n  # between\n  - a\n\n  - b # c",
        "era: [Founding, Eel Year]\nlocation: Old Harbour\nthreat_level: 3",
        "sticky: 2\ngroup: x\nexcludeRecursion: true\nrefine_keys: [a b, c]",
        "snake_case: 1\nkebab-key: 2\n_private: 3\nCaps: Value",
        "text: caf\u00e9 \u9f8d \U0001f409\nnbsp: a\u00a0\n",
        "neg: -ish\ndashes: --x\nplus: +x\ndot: .x\nzero: 0\nsigned: -0.0",
        "",
        "# only a comment",
    ],
)
def test_common_shapes_are_read_fast_and_the_same(block):
    assert _same_as_yaml(block)


@pytest.mark.parametrize(
    "block",
    [
        "tags: [lorebook, broken\nkeys: [one, two",  # unclosed flow list
        "tags: [lorebook]\nkeys: a: b: c",  # mapping in a scalar
        "tags: [lorebook]\nkeys:\n  - one\n - two",  # bad indentation
        "- lorebook\n- keys",  # a list, not a mapping
        "tags: [lorebook]\nkeys:\n\t- one",  # a tab
        'tags: [lorebook]\nsummary: "never closed',  # unterminated quote
        "summary: >-\n  folded\n  text",  # block scalar
        "summary: first line\n  continued",  # multi-line plain scalar
        "gating:\n  enabled: true",  # nested mapping
        'summary: "an \\"escaped\\" quote"',  # escapes
        "summary: 'it''s'",  # an escaped single quote
        "a: &x 1\nb: *x",  # anchors
        "a: !!str 1",  # explicit tag
        "a: 1\na: 2",  # a repeated key
        "true: 1",  # a key YAML reads as a bool
        "keys: [a, b,]",  # trailing comma
        "keys: [a, [b]]",  # nested list
        "keys: {a: 1}",  # flow mapping
        "a: b\r\nc: d",  # carriage return
        "a: x\u2028y",  # a Unicode line separator
        "a: x\x85y",  # NEL
        "<<: {a: 1}",  # merge key
        "keys:\n  -",  # an empty item
        "keys:\n  - - nested",  # nested block list
        "key: value\n  - item",  # an item after a value
        "time: 1:30",  # a colon
        "%YAML 1.1\n---\na: 1",  # a directive
    ],
)
def test_other_shapes_go_to_the_yaml_parser(block):
    assert _read_simple(block) is None


_KEYS = ["tags", "keys", "priority", "summary", "a", "b_c", "d-e", "true", "null", "Yes", "x1", "on"]
_SCALARS = [
    "lorebook",
    "Ada Lovelace",
    "Heron's Rest",
    "42",
    "-7",
    "+3",
    "0x1f",
    "0o17",
    "017",
    "1_000",
    "3.14",
    "-.5",
    ".inf",
    "-.INF",
    ".nan",
    "1e3",
    "1.0e3",
    "1.0e+3",
    "true",
    "False",
    "TRUE",
    "yes",
    "No",
    "on",
    "null",
    "Null",
    "~",
    "2024-06-02",
    "C#",
    "a#b",
    "-x",
    "--x",
    "---",
    "- x",
    "-",
    "?x",
    ":x",
    "x:",
    "x:y",
    "x: y",
    "a b  c",
    "@at",
    "`tick",
    "%pct",
    "!bang",
    "&amp",
    "*star",
    "|",
    ">",
    "=",
    "<<",
    "caf\u00e9",
    "\u9f8d\u738b",
    "a\u00a0",
    "\u00a0a",
    "x\\y",
    'x"y',
    "x'y",
    "[",
    "]",
    "{",
    "}",
    "a,b",
    "#",
    "é#",
]
_QUOTED = ['"double"', "'single'", '"with, comma"', "'with ] bracket'", '""', "''", '"a\\"b"', "'a''b'", '"x # y"']


#: Scalars the fast reader takes: blocks made mostly of these reach its multi-line paths.
_TAKEN = [s for s in _SCALARS if _read_simple(f"k: {s}") is not None]


def _scalar(rng, clean=False):
    r = rng.random()
    if r < 0.2:
        return rng.choice(_QUOTED[:6] if clean else _QUOTED)
    return rng.choice(_TAKEN if clean and r < 0.97 else _SCALARS)


def _line_value(rng, clean):
    r = rng.random()
    if r < 0.55:
        return " " + _scalar(rng, clean)
    if r < 0.85:
        items = [_scalar(rng, clean) for _ in range(rng.randint(0, 4))]
        sep = rng.choice([", ", ",", " , "])
        return " [" + sep.join(items) + rng.choice(["]", " ]", "], ", "] #c", "]x", ""]) + ""
    if r < 0.9:
        return rng.choice(["", " ", "  # comment", " #c"])
    return rng.choice(
        [" " + _scalar(rng, clean) + " # c", " " + _scalar(rng, clean) + "#c", "  " + _scalar(rng, clean) + "  "]
    )


def _random_block(rng, clean=False):
    lines = []
    for _ in range(rng.randint(0, 7)):
        r = rng.random()
        if r < 0.65:
            lines.append(rng.choice(_KEYS) + ":" + _line_value(rng, clean))
        elif r < 0.85:
            indent = rng.choice(["", "  ", "  ", "    ", " "])
            lines.append(f"{indent}- {_scalar(rng, clean)}" + rng.choice(["", " # c", "#c", "  "]))
        elif r < 0.92 or clean:
            lines.append(rng.choice(["", "  ", "# c", "  # c", "\t# c"]))
        else:
            lines.append(rng.choice(["  more text", "  nested: 1", "key:value", " - x", "...", "---"]))
    return "\n".join(lines)


@pytest.mark.parametrize("clean", [False, True])
def test_random_blocks_read_fast_only_when_identical(clean):
    rng = random.Random(20240602)
    fast = multi_line = 0
    total = 6000
    for _ in range(total):
        block = _random_block(rng, clean)
        taken = _same_as_yaml(block)
        fast += taken
        multi_line += taken and block.count("\n") >= 3
    # The generator is meant to exercise both sides: many blocks read fast, many declined.
    assert total // 10 < fast < total - total // 10
    assert multi_line > (total // 100 if clean else 0)


def test_split_note_uses_the_same_result_either_way():
    text = "---\ntags: [lorebook]\nkeys:\n  - Ada\npriority: 20\n---\n# Ada\nbody"
    s = split_note(text)
    assert s.data == {"tags": ["lorebook"], "keys": ["Ada"], "priority": 20}
    assert s.body == "# Ada\nbody" and s.body_line == 7 and s.error is None
