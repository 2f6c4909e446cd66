"""A new field is written without ruamel.yaml when its value is plain (frontmatter_edit's
`_plain_render`, for speed: an import renders 100,000 fields). Those bytes must be exactly what
ruamel.yaml writes for the same field in the house style, and every value the shortcut is not
sure about must go to ruamel."""

from __future__ import annotations

import random
import string

import pytest

from dle_desktop.vault.frontmatter_edit import _ListStyle, _plain_render, _ruamel_render, compose_note

HOUSE = _ListStyle()

VALUES = [
    "lore",
    "active",
    "Harbour",
    "Harbour's Edge",
    "the old quay, at night",
    "Place 00012",
    "gate (2)",
    "a/b/c",
    "Entry_12",
    "São Paulo",
    "Überwald",
    "東京",
    "x" * 300,
    "two  spaces",
    "ends with a dot.",
    "semi-colon-free words",
    0,
    7,
    -3,
    999,
    True,
    False,
    0.35,
    0.6,
    1.0,
    12.5,
    -0.25,
    123456.789,
    ["harbour", "docks"],
    ["one"],
    ["Harbour's Edge", "gate (2)", 4, True],
    ("tuple", "items"),
]

#: Values ruamel quotes or styles specially: the shortcut must decline every one.
DECLINED = [
    "",
    "yes",
    "No",
    "ON",
    "off",
    "TRUE",
    "null",
    "y",
    "N",
    "key: value",
    "a #comment",
    "#tag",
    "-dash",
    "'quoted'",
    '"quoted"',
    "[flow]",
    "{map}",
    "*alias",
    "&anchor",
    "!tag",
    "%directive",
    "@at",
    "`tick",
    "trailing ",
    " leading",
    "line\nbreak",
    "12",
    "1.5",
    "2024-01-01",
    "_underscore first",
    "tab\there",
    "ctrl\x07",
    None,
    1e-05,
    1e20,
    float("nan"),
    float("inf"),
    [],
    ["ok", "yes"],
    ["ok", None],
    [["nested"]],
    {"a": 1},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_plain_values_render_exactly_as_ruamel_renders_them(value):
    fast = _plain_render("field", value)
    assert fast is not None
    assert fast == _ruamel_render("field", value, None, HOUSE, False, 2)


@pytest.mark.parametrize("value", DECLINED, ids=repr)
def test_values_ruamel_treats_specially_are_left_to_ruamel(value):
    assert _plain_render("field", value) is None


@pytest.mark.parametrize("name", ["yes", "on", "1field", "with space", "colon:", "dotted.name", ""])
def test_field_names_that_are_not_plain_are_left_to_ruamel(name):
    assert _plain_render(name, "value") is None


def test_random_strings_either_match_ruamel_or_are_declined():
    rng = random.Random(25)
    alphabet = string.ascii_letters + string.digits + " .,'()/-_:#!?&*[]{}\"`@%|>\\éßü東\t"
    accepted = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        fast = _plain_render("field", text)
        if fast is not None:
            accepted += 1
            assert fast == _ruamel_render("field", text, None, HOUSE, False, 2), repr(text)
    assert accepted > 100  # the shortcut is taken often enough to be worth checking


def test_a_composed_note_is_the_same_with_or_without_the_shortcut():
    fields = {"type": "lore", "tags": ["lorebook"], "keys": ["harbour", "docks"], "priority": 120, "probability": 0.35}
    text = compose_note(fields, "# Harbour\n")
    assert text == (
        "---\ntype: lore\ntags:\n  - lorebook\nkeys:\n  - harbour\n  - docks\npriority: 120\n"
        "probability: 0.35\n---\n# Harbour\n"
    )


def test_random_numbers_either_match_ruamel_or_are_declined():
    rng = random.Random(26)
    numbers = [round(rng.uniform(-1000, 1000), rng.randint(0, 6)) for _ in range(500)]
    numbers += [rng.randint(-(10**12), 10**12) for _ in range(200)] + [rng.random() / 10**k for k in range(12)]
    for number in numbers:
        fast = _plain_render("field", number)
        if fast is not None:
            assert fast == _ruamel_render("field", number, None, HOUSE, False, 2), repr(number)
