"""Vault notes → a World Info book: every field SillyTavern writes, the mapping back, and the
report of what World Info cannot express. Entries come from real note text through the parser."""

from __future__ import annotations

from typing import Any

import pytest

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.fields import parse_field_definitions
from dle_desktop.core.frontmatter import split_note
from dle_desktop.core.note_parser import ST_ROUND_TRIP_FIELDS, parse_note
from dle_desktop.core.worldinfo import ExportDefaults, ExportLine, export_book
from dle_desktop.core.worldinfo.convert import KEPT_FIELDS

#: newWorldInfoEntryTemplate's fields in SillyTavern 1.19.0 (public/scripts/world-info.js,
#: newWorldInfoEntryDefinition minus excludeFromTemplate), in its order.
ST_TEMPLATE_FIELDS = [
    "key",
    "keysecondary",
    "comment",
    "content",
    "constant",
    "vectorized",
    "selective",
    "selectiveLogic",
    "addMemo",
    "order",
    "position",
    "disable",
    "ignoreBudget",
    "excludeRecursion",
    "preventRecursion",
    "matchPersonaDescription",
    "matchCharacterDescription",
    "matchCharacterPersonality",
    "matchCharacterDepthPrompt",
    "matchScenario",
    "matchCreatorNotes",
    "delayUntilRecursion",
    "probability",
    "useProbability",
    "depth",
    "outletName",
    "group",
    "groupOverride",
    "groupWeight",
    "scanDepth",
    "caseSensitive",
    "matchWholeWords",
    "useGroupScoring",
    "automationId",
    "role",
    "sticky",
    "cooldown",
    "delay",
    "triggers",
]
DEFINITIONS = parse_field_definitions(
    "fields:\n  - name: era\n    multi: true\n  - name: location\n    multi: true\n", "field-definitions.yaml"
)


def note(frontmatter: str, title: str = "Lamp", body: str = "The lamp burns oil.") -> tuple[Entry, dict[str, Any]]:
    text = f"---\ntags: [lorebook]\nkeys: [lamp]\n{frontmatter.strip()}\n---\n# {title}\n\n{body}\n"
    entry = parse_note("v", f"Lore/{title}.md", text, field_definitions=DEFINITIONS)
    assert isinstance(entry, Entry), entry
    data = split_note(text).data
    assert data is not None
    return entry, data


def export_one(frontmatter: str = "", *, raw: bool = True, defaults: ExportDefaults = ExportDefaults(), **kw: Any):
    entry, data = note(frontmatter, **kw)
    book, report = export_book([entry], defaults, raw_fields={entry.uid: data} if raw else None)
    (line,) = report.lines
    return book["entries"]["0"], line


def test_a_plain_note_as_sillytavern_writes_an_entry():
    wi, line = export_one("priority: 40")
    assert list(wi) == ["uid", *ST_TEMPLATE_FIELDS, "displayIndex"]
    assert wi == {
        "uid": 0,
        "key": ["lamp"],
        "keysecondary": [],
        "comment": "Lamp",
        "content": "The lamp burns oil.",
        "constant": False,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": 40,
        "position": 1,
        "disable": False,
        "ignoreBudget": False,
        "excludeRecursion": False,
        "preventRecursion": False,
        "matchPersonaDescription": False,
        "matchCharacterDescription": False,
        "matchCharacterPersonality": False,
        "matchCharacterDepthPrompt": False,
        "matchScenario": False,
        "matchCreatorNotes": False,
        "delayUntilRecursion": 0,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "outletName": "",
        "group": "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": 0,
        "sticky": None,
        "cooldown": None,
        "delay": None,
        "triggers": [],
        "displayIndex": 0,
    }
    assert line == ExportLine("Lamp", "Lore/Lamp.md", ())


def test_the_book_is_entries_keyed_by_uid_in_the_given_order():
    a, _ = note("", title="A")
    b, _ = note("", title="B")
    book, report = export_book([b, a])
    assert list(book) == ["entries"]
    assert [(k, v["uid"], v["displayIndex"], v["comment"]) for k, v in book["entries"].items()] == [
        ("0", 0, 0, "B"),
        ("1", 1, 1, "A"),
    ]
    assert report.entries == 2


@pytest.mark.parametrize(("priority", "order"), [("40", 40), ("", 100), ("12.5", 12), ("13.5", 14), ("1500", 1500)])
def test_priority_becomes_order_with_the_same_number(priority, order):
    wi, _ = export_one(f"priority: {priority}" if priority else "")
    assert wi["order"] == order


def test_keys_refine_keys_constant_content():
    wi, _ = export_one(
        "keys: [lamp, 'oil, whale']\nrefine_keys: [night]\nconstant: true",
        body="Burns %%not this%% [[Whale Oil|whale oil]].\n\n\n\nAll night.",
    )
    assert (wi["key"], wi["keysecondary"], wi["selective"], wi["constant"]) == (
        ["lamp", "oil, whale"],
        ["night"],
        True,
        True,
    )
    assert wi["content"] == "Burns  whale oil.\n\nAll night."  # as the pipeline injects it


def test_the_constant_tag_of_a_custom_tag_config():
    text = "---\ntags: [lore, lore-on]\nkeys: [a]\n---\n# A\n\nx\n"
    tags = TagConfig(lorebook="lore", constant="lore-on")
    entry = parse_note("v", "A.md", text, tags)
    assert isinstance(entry, Entry)
    book, _ = export_book([entry], tags=tags)
    assert book["entries"]["0"]["constant"] is True


@pytest.mark.parametrize(
    ("frontmatter", "position"),
    [
        ("position: before", 0),
        ("position: after", 1),
        ("position: in_chat", 4),
        ("", 1),  # ExportDefaults().position is after
        ("position: before\nst_position: 0", 0),  # the import wrote both: the ST number comes back
        ("position: before\nst_position: 2", 2),
        ("position: after\nst_position: 3", 3),
        ("st_position: 5", 5),
        ("st_position: 6", 6),
        ("position: after\nst_position: 0", 1),  # changed in the vault: the DLE position wins
        ("position: in_chat\nst_position: 0", 4),
        ("st_position: 0", 1),  # position removed in the vault: the default applies
        ("position: before\nst_position: 5", 0),
        ("position: before\nst_position: 12", 0),
        ("position: before\nst_position: 'zero'", 0),
        ("outlet: maps", 7),
        ("outlet: maps\nposition: before\nst_position: 1", 7),
        ("st_position: 7", 7),  # an outlet position without a name stays one
    ],
)
def test_the_position(frontmatter, position):
    wi, _ = export_one(frontmatter)
    assert wi["position"] == position


def test_after_with_st_position_two_was_edited_and_the_dle_position_wins():
    # 2 (top of the Author's Note) imports as before; a note saying after was moved in the vault.
    wi, _ = export_one("position: after\nst_position: 2")
    assert wi["position"] == 1


def test_an_outlet_carries_its_name():
    wi, line = export_one("outlet: maps")
    assert (wi["position"], wi["outletName"]) == (7, "maps")
    assert line.lost == ("outlet 'maps': only SillyTavern versions with World Info outlets inject it",)


def test_depth_role_and_scan_depth_from_the_note_or_the_defaults():
    defaults = ExportDefaults(position="in_chat", depth=6, role="assistant", scan_depth=3)
    wi, _ = export_one("position: in_chat\ndepth: 2\nrole: user\nscanDepth: 0")
    assert (wi["position"], wi["depth"], wi["role"], wi["scanDepth"]) == (4, 2, 1, 0)
    wi, _ = export_one("", defaults=defaults)
    assert (wi["position"], wi["depth"], wi["role"], wi["scanDepth"]) == (4, 6, 2, 3)


@pytest.mark.parametrize(("frontmatter", "probability"), [("", 100), ("probability: 0.35", 35), ("probability: 0", 0)])
def test_probability(frontmatter, probability):
    wi, _ = export_one(frontmatter)
    assert (wi["probability"], wi["useProbability"]) == (probability, True)


def test_cooldown_and_exclude_recursion():
    wi, _ = export_one("cooldown: 3\nexcludeRecursion: true")
    assert (wi["cooldown"], wi["preventRecursion"], wi["excludeRecursion"]) == (3, True, False)


KEPT = """
selectiveLogic: 2
sticky: 3
delay: 1
group: weather
groupOverride: true
groupWeight: 60
useGroupScoring: false
caseSensitive: true
matchWholeWords: false
st_excludeRecursion: true
delayUntilRecursion: 2
vectorized: true
ignoreBudget: true
matchPersonaDescription: true
matchCharacterDescription: true
matchCharacterPersonality: true
matchCharacterDepthPrompt: true
matchScenario: true
matchCreatorNotes: true
triggers: [normal, continue]
automationId: auto-1
characterFilter:
  isExclude: true
  names: [Mira]
  tags: []
"""


def test_the_kept_st_fields_come_back_from_the_raw_frontmatter():
    wi, line = export_one(KEPT)
    assert {k: wi[k] for k in wi if k not in ("uid", "key", "comment", "content", "order", "position", "depth")} == {
        "keysecondary": [],
        "constant": False,
        "vectorized": True,
        "selective": True,
        "selectiveLogic": 2,
        "addMemo": True,
        "disable": False,
        "ignoreBudget": True,
        "excludeRecursion": True,
        "preventRecursion": False,
        "matchPersonaDescription": True,
        "matchCharacterDescription": True,
        "matchCharacterPersonality": True,
        "matchCharacterDepthPrompt": True,
        "matchScenario": True,
        "matchCreatorNotes": True,
        "delayUntilRecursion": 2,
        "probability": 100,
        "useProbability": True,
        "outletName": "",
        "group": "weather",
        "groupOverride": True,
        "groupWeight": 60,
        "scanDepth": None,
        "caseSensitive": True,
        "matchWholeWords": False,
        "useGroupScoring": False,
        "automationId": "auto-1",
        "role": 0,
        "sticky": 3,
        "cooldown": None,
        "delay": 1,
        "triggers": ["normal", "continue"],
        "displayIndex": 0,
        "characterFilter": {"isExclude": True, "names": ["Mira"], "tags": []},
    }
    assert line.lost == ()


def test_without_raw_fields_the_entry_alone_carries_the_kept_fields():
    wi, line = export_one(KEPT + "\nst_position: 0\nposition: before", raw=False)
    with_raw, _ = export_one(KEPT + "\nst_position: 0\nposition: before")
    assert wi == with_raw and wi["position"] == 0 and wi["selectiveLogic"] == 2
    assert line.lost == ()


def test_dles_own_group_weight_spelling_is_read():
    wi, _ = export_one("group: weather\ngroup_weight: 30", raw=False)
    assert (wi["group"], wi["groupWeight"]) == ("weather", 30)


def test_raw_fields_win_over_what_the_parser_kept():
    entry, data = note("sticky: 2\nst_position: 1\nposition: before")
    book, _ = export_book([entry], raw_fields={entry.uid: {**data, "sticky": 5, "st_position": 2}})
    assert (book["entries"]["0"]["sticky"], book["entries"]["0"]["position"]) == (5, 2)


def test_the_parser_keeps_st_fields_apart_from_the_custom_fields():
    entry, _ = note("st_position: 3\nselectiveLogic: 1\nsticky: 2\ncharacterFilter:\n  names: [Mira]\nera: [Founding]")
    assert entry.st_fields == (
        ("st_position", 3),
        ("selectiveLogic", 1),
        ("sticky", 2),
        ("characterFilter", {"names": ["Mira"]}),
    )
    # only what the parser always kept (sticky) and the gating field are custom fields: the AI
    # manifest, the graph and gating never see st_position or selectiveLogic
    assert entry.custom_fields == {"era": ("Founding",), "sticky": 2}


def test_an_entry_pickled_before_st_fields_existed_reads_them_as_empty():
    entry, _ = note("")
    state = dict(entry.__dict__)
    del state["st_fields"]
    old = Entry.__new__(Entry)
    old.__dict__.update(state)
    assert old.st_fields == ()
    book, _ = export_book([old])
    assert book["entries"]["0"]["position"] == 1


def test_every_kept_name_is_one_the_parser_keeps():
    assert {name for _st, name, _d in KEPT_FIELDS} | {"st_position", "keysecondary"} == ST_ROUND_TRIP_FIELDS


def test_unselective_secondary_keys_come_back_unselective():
    wi, _ = export_one("keysecondary: [storm]")
    assert (wi["keysecondary"], wi["selective"]) == (["storm"], False)
    wi, _ = export_one("keysecondary: [storm]\nrefine_keys: [fog]")
    assert (wi["keysecondary"], wi["selective"]) == (["fog"], True)


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("selectiveLogic: 7", "selectiveLogic: 7 is not a value SillyTavern reads; left out"),
        ("sticky: many", "sticky: 'many' is not a value SillyTavern reads; left out"),
        ("groupOverride: 'yes'", "groupOverride: 'yes' is not a value SillyTavern reads; left out"),
        ("caseSensitive: 1", "caseSensitive: 1 is not a value SillyTavern reads; left out"),
        ("groupWeight: -4", "groupWeight: -4 is not a value SillyTavern reads; left out"),
        ("triggers: [normal, 3]", "triggers: [normal, 3] is not a value SillyTavern reads; left out"),
        ("characterFilter: Mira", "characterFilter: 'Mira' is not a value SillyTavern reads; left out"),
    ],
)
def test_a_kept_field_with_a_bad_value_is_left_out_and_reported(frontmatter, problem):
    wi, line = export_one(frontmatter)
    assert problem.replace("[normal, 3]", "['normal', 3]") in line.lost
    name = frontmatter.split(":")[0]
    assert (
        wi.get(name)
        == {
            "selectiveLogic": 0,
            "sticky": None,
            "groupOverride": False,
            "caseSensitive": None,
            "groupWeight": 100,
            "triggers": [],
            "characterFilter": None,
        }[name]
    )


def test_what_world_info_cannot_express_is_reported_entry_by_entry():
    text = """
requires: [Harbour]
excludes: [Storm]
cascade_links: [Lamplighters]
warmup: 2
era: [Founding]
location: Old Harbour
sticky: 2
"""
    _, line = export_one(text)
    assert line.lost == (
        "requires Harbour: World Info has no requirements between entries",
        "excludes Storm: World Info cannot block one entry by another",
        "cascade_links Lamplighters: World Info cannot pull other entries in (only recursion on their keys)",
        "warmup 2: World Info has no warmup (its delay counts messages, not key hits)",
        "era: World Info has no contextual gating; the entry fires whatever the era",
        "location: World Info has no contextual gating; the entry fires whatever the location",
    )


def test_seed_bootstrap_and_keyless_entries_are_reported():
    text = "---\ntags: [lorebook, lorebook-seed, lorebook-bootstrap]\n---\n# S\n\nx\n"
    entry = parse_note("v", "S.md", text)
    assert isinstance(entry, Entry)
    _, report = export_book([entry])
    assert report.lines[0].lost == (
        "lorebook-seed: World Info has no story-context seed; exported as a normal entry",
        "lorebook-bootstrap: World Info cannot force an entry in only while the chat is new",
        "no keys: World Info never selects it (here only AI search or a cascade could)",
    )


def test_guide_entries_are_left_out_of_the_book_with_a_line():
    guide = parse_note("v", "G.md", "---\ntags: [lorebook-guide]\nkeys: [g]\n---\n# Style\n\nWrite well.\n")
    lore, _ = note("")
    assert isinstance(guide, Entry)
    book, report = export_book([guide, lore])
    assert [e["comment"] for e in book["entries"].values()] == ["Lamp"]
    assert report.entries == 1
    assert report.lines[0] == ExportLine(
        "Style", "G.md", ("lorebook-guide: written for the AI writers only; not exported",)
    )
