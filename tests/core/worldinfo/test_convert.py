"""DLE's import mapping (dle-behaviour §5.8), rule by rule, checked on the exact fields and body."""

from __future__ import annotations

from typing import Any

import pytest

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.note_parser import parse_note
from dle_desktop.core.worldinfo import NoteSpec, book_notes, convert_book, convert_entry, read_book_value
from dle_desktop.vault.frontmatter_edit import compose_note


def spec(**raw: Any) -> NoteSpec:
    """The note one WI entry (in ST's names) becomes."""
    raw.setdefault("comment", "Lamp")
    raw.setdefault("key", ["lighthouse"])
    raw.setdefault("content", "The lamp.")
    book = read_book_value({"entries": {"0": raw}}, name="b")
    assert book.problems == ()
    return convert_entry(book.entries[0])


def fields(**raw: Any) -> list[tuple[str, Any]]:
    return list(spec(**raw).fields.items())


BASE = [("type", "lore"), ("status", "active"), ("tags", ["lorebook"]), ("keys", ["lighthouse"])]


def test_a_plain_entry_byte_for_byte():
    s = spec(uid=3, comment="The Lighthouse", order=100, position=0)
    assert s.uid == "3" and s.title == "The Lighthouse"
    assert list(s.fields.items()) == [*BASE, ("priority", 100), ("position", "before"), ("st_position", 0)]
    assert s.body == "# The Lighthouse\n\nThe lamp.\n"
    assert (s.kept, s.warnings) == ((), ())
    assert "summary" not in s.fields  # left empty so the app can offer Summarize


# -- title ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "title", "warning"),
    [
        ({"comment": "  Old\r\nLighthouse \n"}, "Old Lighthouse", None),
        ({"comment": "Bell\x00Tower\x07"}, "BellTower", None),
        ({"comment": "[[Harbour|The Harbour]] Lamps"}, "The Harbour Lamps", None),
        (
            {"comment": "", "key": ["lamp", "lantern"]},
            "lamp, lantern",
            "no comment: titled from its keys ('lamp, lantern')",
        ),
        (
            {"comment": "", "key": ["a" * 30, "b" * 30]},
            "a" * 30 + ", " + "b" * 18,
            f"no comment: titled from its keys ('{'a' * 30}, {'b' * 18}')",
        ),
        ({"uid": 9, "comment": "\n", "key": []}, "Entry_9", "no comment and no keys: titled Entry_9"),
    ],
)
def test_the_title_rule(raw, title, warning):
    s = spec(**raw)
    assert s.title == title
    assert s.body.startswith(f"# {title}\n")
    assert (warning in s.warnings) if warning else not any("titled" in w for w in s.warnings)


def test_a_title_of_only_punctuation_is_warned_about():
    assert "the title '???' has no letters or digits; give the note a real name" in spec(comment="???").warnings
    assert not any("letters or digits" in w for w in spec(comment="Ærø 7").warnings)


# -- keys -------------------------------------------------------------------------------


def test_keys_are_deduplicated_and_long_ones_cut_as_the_note_parser_would():
    s = spec(key=["lamp", "lamp", "x" * 250, "oil"])
    assert s.fields["keys"] == ["lamp", "x" * 200, "oil"]
    assert "keys: a key of 250 characters was cut to 200" in s.warnings


def test_a_comma_string_of_keys():
    assert spec(key="lamp, lantern,oil").fields["keys"] == ["lamp", "lantern", "oil"]


def test_regex_keys_stay_literal_with_a_warning():
    s = spec(key=["/dra(g|k)on/i", "wyrm"])
    assert s.fields["keys"] == ["/dra(g|k)on/i", "wyrm"]
    assert s.warnings == (
        "keys: '/dra(g|k)on/i' is a regular expression in SillyTavern; DLE matches it as plain text, "
        "so it will almost never fire (rewrite it as plain keys)",
    )


def test_secondary_keys_become_refine_keys():
    assert fields(keysecondary=["storm", "night"])[4] == ("refine_keys", ["storm", "night"])


def test_secondary_keys_of_an_unselective_entry_are_kept_unenforced():
    s = spec(keysecondary=["storm"], selective=False)
    assert "refine_keys" not in s.fields
    assert s.fields["keysecondary"] == ["storm"] and s.kept == ("keysecondary",)
    assert s.warnings[0].startswith("secondary keys are kept as keysecondary: SillyTavern ignores them")


def test_no_keys_and_not_constant_is_warned_about():
    assert "no keys: it never fires by keyword (only AI search or a cascade can select it)" in spec(key=[]).warnings
    assert not any(w.startswith("no keys") for w in spec(key=[], constant=True).warnings)


# -- priority, position, depth, role ------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "priority"), [(120, 120), (None, 50), ("300", 300), (1500, 999), (-5, 0), (12.6, 13), ("abc", 50)]
)
def test_order_becomes_priority_clamped_with_default_50(order, priority):
    raw = {} if order is None else {"order": order}
    assert spec(**raw).fields["priority"] == priority


def test_the_order_direction_note_is_said_once_per_book():
    book = read_book_value([{"key": ["a"], "order": 1}, {"key": ["b"], "order": 2, "position": 0}], name="b")
    notes = book_notes(book)
    assert len(notes) == 2
    assert notes[0].startswith("SillyTavern's order becomes DLE's priority with the same number (0–999)")
    assert notes[1].startswith("Positions: 0 (before the character) → before, 1 (after it) → after")
    assert not any("order" in w for s in convert_book(book) for w in s.warnings)
    assert book_notes(read_book_value([{"key": ["a"], "position": 4}], name="b")) == ()


@pytest.mark.parametrize(
    ("position", "expected", "warning"),
    [
        (0, [("position", "before"), ("st_position", 0)], None),
        (1, [("position", "after"), ("st_position", 1)], None),
        (2, [("position", "before"), ("st_position", 2)], "position 2 (top of Author's Note): DLE has no Author's"),
        (3, [("position", "after"), ("st_position", 3)], "position 3 (bottom of Author's Note): DLE has no Author's"),
        (5, [("st_position", 5)], "position 5 (top of example messages): DLE has no such place; the global"),
        (6, [("st_position", 6)], "position 6 (bottom of example messages): DLE has no such place"),
        (9, [], "position 9 is unknown; the global position applies"),
        ("left", [], "position 'left' is not a number; the global position applies"),
        ("1", [("position", "after"), ("st_position", 1)], None),
    ],
)
def test_the_position_table(position, expected, warning):
    s = spec(position=position, order=10)
    assert list(s.fields.items())[5:] == expected
    assert any(w.startswith(warning) for w in s.warnings) if warning else s.warnings == ()


def test_in_chat_carries_depth_and_role():
    assert fields(position=4, depth=2, role=1, order=10)[5:] == [
        ("position", "in_chat"),
        ("st_position", 4),
        ("depth", 2),
        ("role", "user"),
    ]
    assert fields(position=4, depth=0, role=2)[7:] == [("depth", 0), ("role", "assistant")]
    # SillyTavern's own fallbacks when the entry has none: depth 4, system
    assert fields(position=4, depth=None, role=None)[7:] == [("depth", 4), ("role", "system")]


def test_depth_and_role_are_left_out_where_they_mean_nothing():
    assert [k for k, _ in fields(position=1, depth=9, role=2)] == [*dict(BASE), "priority", "position", "st_position"]


def test_an_outlet():
    s = spec(position=7, outletName=" sidebar ")
    assert list(s.fields.items())[5:] == [("st_position", 7), ("outlet", "sidebar")]
    nameless = spec(position=7, outletName="")
    assert "outlet" not in nameless.fields
    assert nameless.warnings == ("outlet position without an outlet name; the global position applies",)


# -- probability, scan depth, constant, cooldown, recursion, disable ----------------------


@pytest.mark.parametrize(
    ("raw", "probability"),
    [
        ({"probability": 37, "useProbability": True}, 0.37),
        ({"probability": 33.333}, 0.33),
        ({"probability": 100, "useProbability": True}, None),
        ({"probability": 120}, None),
        ({"probability": 37, "useProbability": False}, None),
        ({"probability": None}, None),
    ],
)
def test_probability_over_100_rounded_only_when_used_and_below_100(raw, probability):
    assert spec(**raw).fields.get("probability") == probability


def test_probability_zero_never_fires():
    s = spec(probability=0)
    assert s.fields["probability"] == 0 and "probability 0: this entry never fires" in s.warnings


def test_scan_depth():
    assert spec(scanDepth=6).fields["scanDepth"] == 6
    assert spec(scanDepth=0).fields["scanDepth"] == 0
    assert "scanDepth" not in spec(scanDepth=None).fields
    s = spec(scanDepth=-2)
    assert "scanDepth" not in s.fields and s.warnings == ("scanDepth -2 is negative; the global scan depth applies",)


def test_constant_becomes_the_always_tag_after_the_lorebook_tag():
    assert spec(constant=True).fields["tags"] == ["lorebook", "lorebook-always"]
    tags = TagConfig(lorebook="lore", constant="lore-on")
    book = read_book_value([{"key": ["a"], "constant": True}], name="b")
    assert convert_entry(book.entries[0], tags).fields["tags"] == ["lore", "lore-on"]


def test_cooldown_and_prevent_recursion_are_dle_fields():
    s = spec(cooldown=3, preventRecursion=True)
    assert (s.fields["cooldown"], s.fields["excludeRecursion"]) == (3, True)
    assert "cooldown" not in spec(cooldown=0).fields


def test_a_disabled_entry_imports_disabled():
    s = spec(disable=True)
    assert s.fields["enabled"] is False
    assert s.warnings == ("disabled in SillyTavern: imported with enabled: false, so DLE skips it until you enable it",)
    assert "enabled" not in spec(disable=False).fields


# -- kept ST fields -----------------------------------------------------------------------

KEPT_CASES = [
    ("selectiveLogic", 3, "selectiveLogic", "selectiveLogic AND_ALL is kept but DLE matches refine keys as AND_ANY"),
    (
        "selectiveLogic",
        1,
        "selectiveLogic",
        "selectiveLogic NOT_ALL is kept but DLE matches refine keys as AND_ANY: here",
    ),
    (
        "selectiveLogic",
        2,
        "selectiveLogic",
        "selectiveLogic NOT_ANY is kept but DLE matches refine keys as AND_ANY: here",
    ),
    ("sticky", 3, "sticky", "sticky 3 is kept for SillyTavern; DLE does not keep the entry for 3 more messages"),
    ("delay", 2, "delay", "delay 2 is kept for SillyTavern; DLE does not hold the entry back"),
    ("group", "weather", "group", "inclusion group 'weather' is kept for SillyTavern; DLE does not pick one entry"),
    ("groupOverride", True, "groupOverride", "groupOverride true is kept for SillyTavern; it only matters for"),
    ("groupWeight", 60, "groupWeight", "groupWeight 60 is kept for SillyTavern; it only matters for inclusion groups"),
    ("useGroupScoring", False, "useGroupScoring", "useGroupScoring false is kept for SillyTavern"),
    ("caseSensitive", True, "caseSensitive", "caseSensitive true is kept for SillyTavern; DLE uses its global case"),
    ("matchWholeWords", False, "matchWholeWords", "matchWholeWords false is kept for SillyTavern; DLE uses its global"),
    ("excludeRecursion", True, "st_excludeRecursion", "excludeRecursion is kept as st_excludeRecursion; DLE cannot"),
    ("delayUntilRecursion", 2, "delayUntilRecursion", "delayUntilRecursion is kept for SillyTavern; DLE does not"),
    ("vectorized", True, "vectorized", "vectorized is kept for SillyTavern's Vector Storage"),
    ("ignoreBudget", True, "ignoreBudget", "ignoreBudget is kept for SillyTavern; DLE counts this entry against"),
    ("matchPersonaDescription", True, "matchPersonaDescription", "matchPersonaDescription is kept for SillyTavern"),
    ("matchCharacterDescription", True, "matchCharacterDescription", "matchCharacterDescription is kept"),
    ("matchCharacterPersonality", True, "matchCharacterPersonality", "matchCharacterPersonality is kept"),
    ("matchCharacterDepthPrompt", True, "matchCharacterDepthPrompt", "matchCharacterDepthPrompt is kept"),
    ("matchScenario", True, "matchScenario", "matchScenario is kept for SillyTavern; DLE matches keys in the chat"),
    ("matchCreatorNotes", True, "matchCreatorNotes", "matchCreatorNotes is kept for SillyTavern"),
    ("triggers", ["normal", "swipe"], "triggers", 'triggers ["normal", "swipe"] are kept for SillyTavern'),
    ("automationId", "auto-7", "automationId", "automationId is kept for SillyTavern; DLE runs no automations"),
    (
        "characterFilter",
        {"isExclude": False, "names": ["Mira"], "tags": []},
        "characterFilter",
        "characterFilter is kept for SillyTavern; DLE does not limit entries",
    ),
]


@pytest.mark.parametrize(("st_name", "value", "name", "warning"), KEPT_CASES)
def test_each_kept_field_is_written_under_its_st_name_with_what_it_does_here(st_name, value, name, warning):
    s = spec(**{st_name: value})
    assert list(s.fields.items())[-1] == (name, value)
    assert s.kept == (name,)
    assert len(s.warnings) == 1 and s.warnings[0].startswith(warning)


@pytest.mark.parametrize(
    ("st_name", "default"),
    [
        ("selectiveLogic", 0),
        ("sticky", None),
        ("sticky", 0),
        ("delay", 0),
        ("group", ""),
        ("groupOverride", False),
        ("groupWeight", 100),
        ("useGroupScoring", None),
        ("caseSensitive", None),
        ("excludeRecursion", False),
        ("delayUntilRecursion", 0),
        ("delayUntilRecursion", False),
        ("vectorized", False),
        ("triggers", []),
        ("automationId", ""),
        ("characterFilter", {"isExclude": False, "names": [], "tags": []}),
    ],
)
def test_sillytaverns_defaults_are_not_written(st_name, default):
    s = spec(**{st_name: default})
    assert list(s.fields.items()) == [*BASE, ("priority", 50)]
    assert (s.kept, s.warnings) == ((), ())


# -- body -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "body"),
    [
        ("Line one\r\nLine two\r\n", "Line one\nLine two"),
        ("Above\n---\nBelow\n  -----  \nEnd", "Above\n- - -\nBelow\n- - -\nEnd"),
        ("Kept %%deeplore-exclude%%secret\nstuff%%/deeplore-exclude%% text", "Kept  text"),
        ("A %%hidden%% note", "A  note"),
        ("{{char}} meets {{user}} at <% tp.date.now() %>dawn", "{{char}} meets {{user}} at dawn"),
        ("Before\n```dataview\nLIST\n```\nAfter `=this.file.name` end", "Before\nAfter  end"),
        ("See [the vault](obsidian://open?vault=x) or obsidian://open?x=1 now", "See the vault or  now"),
        ("One\n\n\n\n\nTwo", "One\n\nTwo"),
        ("\n\n  padded  \n\n", "padded"),
    ],
)
def test_dles_body_rules(content, body):
    assert spec(comment="T", content=content).body == f"# T\n\n{body}\n"


def test_an_empty_content_is_a_title_only_body_with_a_warning():
    s = spec(comment="T", content="  \n")
    assert s.body == "# T\n"
    assert "empty content: the entry has nothing to inject" in s.warnings


def test_huge_content_is_warned_about():
    s = spec(content="word " * 17_000)  # 84,999 characters once trimmed: ceil(84,999 / 4) tokens
    assert "huge content: about 21,250 tokens; it will crowd every other entry out of a normal budget" in s.warnings
    assert not any(w.startswith("huge") for w in spec(content="word " * 15_000).warnings)


@pytest.mark.parametrize(
    ("content", "warning"),
    [
        ('<div class="x">boxed</div>', "the content holds <div> tags (DLE injects only the text inside them)"),
        ("A map: ![map](map.png)", "the content holds images or embeds (DLE leaves them out of the prompt)"),
        ("See [[The Harbour]]", "the content holds [[...]] (read as Obsidian links: DLE injects only their text)"),
    ],
)
def test_content_that_dles_injection_changes_is_kept_with_a_warning(content, warning):
    s = spec(content=content)
    assert s.body.endswith(f"{content}\n") and warning in s.warnings


# -- books ------------------------------------------------------------------------------


def test_duplicate_titles_in_one_book_become_unique_in_book_order():
    book = read_book_value(
        [
            {"comment": "Lamp", "key": ["a"], "content": "1"},
            {"comment": "lamp", "key": ["b"], "content": "2"},
            {"comment": "Lamp (2)", "key": ["c"], "content": "3"},
            {"comment": "Lamp", "key": ["d"], "content": "4"},
        ],
        name="b",
    )
    specs = convert_book(book)
    assert [s.title for s in specs] == ["Lamp", "lamp (3)", "Lamp (2)", "Lamp (4)"]
    assert [s.body for s in specs] == ["# Lamp\n\n1\n", "# lamp (3)\n\n2\n", "# Lamp (2)\n\n3\n", "# Lamp (4)\n\n4\n"]
    assert specs[1].warnings == ("another entry of this book is titled 'lamp': renamed 'lamp (3)'",)
    assert specs[0].warnings == specs[2].warnings == ()
    assert convert_book(book) == specs  # deterministic


def test_a_renamed_title_only_body_stays_title_only():
    book = read_book_value([{"comment": "A", "key": ["a"]}, {"comment": "A", "key": ["b"]}], name="b")
    assert [s.body for s in convert_book(book)] == ["# A\n", "# A (2)\n"]


def test_the_written_note_byte_for_byte_and_as_the_parser_reads_it():
    """The every-field entry as the note writer composes it, and the Entry it parses to."""
    s = spec(
        uid=0,
        comment="Harbour at Night",
        key=["harbour", "docks"],
        keysecondary=["night"],
        content="At night {{char}} lights the lamps.",
        constant=True,
        order=250,
        position=4,
        depth=2,
        role=1,
        probability=35,
        scanDepth=6,
        cooldown=2,
        preventRecursion=True,
        sticky=3,
        group="weather",
        groupWeight=60,
    )
    text = compose_note(s.fields, s.body)
    assert text == (
        "---\n"
        "type: lore\n"
        "status: active\n"
        "tags:\n"
        "  - lorebook\n"
        "  - lorebook-always\n"
        "keys:\n"
        "  - harbour\n"
        "  - docks\n"
        "refine_keys:\n"
        "  - night\n"
        "priority: 250\n"
        "position: in_chat\n"
        "st_position: 4\n"
        "depth: 2\n"
        "role: user\n"
        "probability: 0.35\n"
        "scanDepth: 6\n"
        "cooldown: 2\n"
        "excludeRecursion: true\n"
        "sticky: 3\n"
        "group: weather\n"
        "groupWeight: 60\n"
        "---\n"
        "# Harbour at Night\n"
        "\n"
        "At night {{char}} lights the lamps.\n"
    )
    entry = parse_note("v", "Harbour at Night.md", text)
    assert isinstance(entry, Entry)
    assert (entry.title, entry.content, entry.keys, entry.refine_keys) == (
        "Harbour at Night",
        "At night {{char}} lights the lamps.",
        ("harbour", "docks"),
        ("night",),
    )
    assert (entry.priority, entry.position, entry.depth, entry.role, entry.probability) == (
        250,
        "in_chat",
        2,
        "user",
        0.35,
    )
    assert (entry.scan_depth, entry.cooldown, entry.exclude_recursion, entry.constant) == (6, 2, True, True)
    assert entry.summary == ""
    assert entry.custom_fields == {"sticky": 3, "group": "weather"}


def test_a_character_book_entry_maps_through_sillytaverns_names():
    card = {
        "spec": "chara_card_v3",
        "data": {
            "name": "Mira",
            "character_book": {
                "entries": [
                    {
                        "id": 3,
                        "keys": ["lighthouse"],
                        "secondary_keys": ["fog"],
                        "comment": "Lamp",
                        "content": "The lamp burns whale oil.",
                        "selective": True,
                        "insertion_order": 40,
                        "enabled": True,
                        "position": "before_char",
                        "extensions": {"position": 4, "depth": 2, "role": 1, "sticky": 2, "group_weight": 30},
                    },
                    {"keys": ["gull"], "secondary_keys": ["shore"], "content": "Loud.", "position": "before_char"},
                ]
            },
        },
    }
    first, second = convert_book(read_book_value(card, name="Mira"))
    assert list(first.fields.items()) == [
        ("type", "lore"),
        ("status", "active"),
        ("tags", ["lorebook"]),
        ("keys", ["lighthouse"]),
        ("refine_keys", ["fog"]),
        ("priority", 40),
        ("position", "in_chat"),
        ("st_position", 4),
        ("depth", 2),
        ("role", "user"),
        ("sticky", 2),
        ("groupWeight", 30),
    ]
    assert (first.uid, first.kept) == ("3", ("sticky", "groupWeight"))
    # no `selective` (a card's default is off, as SillyTavern reads it) and no insertion_order
    assert (second.uid, second.title) == ("1", "gull")
    assert list(second.fields.items())[4:] == [
        ("priority", 50),
        ("position", "before"),
        ("st_position", 0),
        ("keysecondary", ["shore"]),
    ]
