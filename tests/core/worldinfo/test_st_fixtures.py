"""The books and cards a real SillyTavern exported (tests/fixtures/worldinfo/st, made by
make_fixtures.py with SillyTavern 1.19.0 and 1.12.14) read with `read_book_bytes` and mapped by
DLE's import rules (dle-behaviour §5.8), field by field, on every fixture file:

- each file is read as what it is (a World Info export, a V2 or V3 card, a PNG card) with every
  entry and no problem;
- every value make_fixtures.py set (entries.json) is what the reader hands on, in SillyTavern's
  World Info names, for every field the version's template and the card format carry;
- DLE's mapping of those values: title, keys, refine keys, priority, the position table, depth,
  role, probability, scanDepth, constant, outlet, enabled, the fields kept for the round trip, and
  the body's rules;
- a card's embedded book maps to the same notes as the book it was made from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dle_desktop.core.worldinfo import NoteSpec, WiBook, convert_book, read_book_bytes
from dle_desktop.core.worldinfo.reader import st_fields

ST = Path(__file__).resolve().parents[2] / "fixtures" / "worldinfo" / "st"
SPEC = json.loads((ST / "entries.json").read_text(encoding="utf-8"))
VERSIONS = sorted(p.name for p in ST.glob("st-*") if p.is_dir())
BOOK_FILE = f"{SPEC['book']}.json"
CARD_FILES = {
    f"{SPEC['character']}.png": "card-v3",  # ccv3 is read before chara, as SillyTavern does
    f"{SPEC['character']}.json": "card-v3",  # SillyTavern's JSON export re-reads the card V3 first
    f"{SPEC['character']}.v2.json": "card-v2",
    f"{SPEC['character']}.v3.json": "card-v3",
}
#: ST position → DLE position (5 and 6 have no DLE place; 7 is an outlet). DLE's own importer swaps
#: 0 and 1; ours maps them the way round their names say (core/worldinfo/convert.py).
DLE_POSITION = {0: "before", 1: "after", 2: "before", 3: "after", 4: "in_chat"}
ROLE = {0: "system", 1: "user", 2: "assistant"}
#: Fields SillyTavern's card conversion (convertWorldInfoToCharacterBook) does not carry.
NOT_IN_CARDS = {"addMemo", "characterFilter"}
ST_DEFAULT_ORDER = 100


def meta(version: str) -> dict[str, Any]:
    return json.loads((ST / version / "_meta.json").read_text(encoding="utf-8"))


def specs(version: str) -> list[dict[str, Any]]:
    """entries.json's entries this version has, as make_fixtures.py set them."""
    left_out = set(meta(version)["entries_left_out"])
    return [e for e in SPEC["entries"] if e["comment"] not in left_out or not e["comment"]]


def read(version: str, name: str) -> WiBook:
    """A fixture as a user's file: a card's book takes its own name (no name is given for it)."""
    return read_book_bytes((ST / version / name).read_bytes(), name="" if name in CARD_FILES else Path(name).stem)


def test_both_versions_are_there():
    assert VERSIONS == ["st-1.12.14", "st-1.19.0"]
    assert [meta(v)["sillytavern"] for v in VERSIONS] == ["1.12.14", "1.19.0"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", [BOOK_FILE, *CARD_FILES])
def test_every_fixture_reads_as_what_it_is_with_every_entry(version, name):
    book = read(version, name)
    assert book.kind == CARD_FILES.get(name, "world-info")
    assert book.problems == ()
    assert [e.comment for e in book.entries] == [s["comment"] for s in specs(version)]
    if name in CARD_FILES:
        assert book.name == SPEC["book"]  # the card's book keeps the name of the book it came from


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", [BOOK_FILE, *CARD_FILES])
def test_every_value_set_in_sillytaverns_editor_reaches_the_reader(version, name):
    lacking = set(meta(version)["fields_not_in_template"]) | (NOT_IN_CARDS if name in CARD_FILES else set())
    for entry, spec in zip(read(version, name).entries, specs(version), strict=True):
        fields = st_fields(entry.raw)
        wanted = {k: v for k, v in spec.items() if k != "since" and k not in lacking}
        assert {k: fields.get(k) for k in wanted} == wanted, spec["comment"]
        assert entry.keys == tuple(spec.get("key", ()))
        assert entry.secondary_keys == tuple(spec.get("keysecondary", ()))
        assert entry.content == spec["content"]


def expected_title(spec: dict[str, Any], uid: str) -> str:
    if spec["comment"]:
        return spec["comment"]
    joined = ", ".join(spec.get("key", []))
    return joined[:50] if joined else f"Entry_{uid}"


def check_mapping(note: NoteSpec, spec: dict[str, Any]) -> None:
    """One note against DLE's rules for the values SillyTavern wrote."""
    fields = note.fields
    where = spec["comment"] or note.title
    assert fields["type"] == "lore" and fields["status"] == "active", where
    # title, keys, refine keys
    assert note.title == expected_title(spec, note.uid) or note.title.startswith(
        expected_title(spec, note.uid) + " ("
    ), where
    assert fields["keys"] == spec.get("key", []), where
    assert fields.get("refine_keys", []) == spec.get("keysecondary", []), where
    # order → priority, the same number (the direction flips: a note of the book says so)
    assert fields["priority"] == spec.get("order", ST_DEFAULT_ORDER), where
    # constant → the always tag
    assert fields["tags"] == (["lorebook", "lorebook-always"] if spec.get("constant") else ["lorebook"]), where
    # the position table; the original number kept beside it
    position = spec.get("position", 0)
    assert fields["st_position"] == position, where
    if position in DLE_POSITION:
        assert fields["position"] == DLE_POSITION[position], where
    else:
        assert "position" not in fields, where  # 5, 6: no such place in DLE; 7: an outlet
        assert position == 7 or any(f"position {position}" in w for w in note.warnings), where
    if position == 7:
        assert fields["outlet"] == spec["outletName"], where
    if position == 4:
        assert fields["depth"] == spec.get("depth", 4), where
        assert fields["role"] == ROLE[spec.get("role", 0)], where
    # probability /100, only below 100; scanDepth kept; disable → enabled: false
    if spec.get("probability", 100) < 100:
        assert fields["probability"] == round(spec["probability"] / 100, 2), where
    else:
        assert "probability" not in fields, where
    assert fields.get("scanDepth") == spec.get("scanDepth"), where
    assert fields.get("enabled", True) is not spec.get("disable", False), where
    assert fields.get("cooldown") == spec.get("cooldown"), where
    # what DLE does not enforce is kept under its SillyTavern name, and the preview says so
    for name in ("sticky", "delay", "group"):
        if spec.get(name):
            assert fields[name] == spec[name] and name in note.kept, (where, name)
            assert any(name in w.lower() for w in note.warnings), (where, name)
    if spec.get("groupWeight", 100) != 100:
        assert fields["groupWeight"] == spec["groupWeight"] and "groupWeight" in note.kept, where
    if spec.get("selectiveLogic", 0) != 0:
        assert fields["selectiveLogic"] == spec["selectiveLogic"] and "selectiveLogic" in note.kept, where
        assert any("selectiveLogic" in w for w in note.warnings), where
    else:
        assert "selectiveLogic" not in fields, where
    if any(k.startswith("/") and k.rstrip("gimsuy").endswith("/") and len(k) > 2 for k in spec.get("key", [])):
        assert any("regular expression" in w for w in note.warnings), where
    if not spec.get("key") and not spec.get("constant"):
        assert any("no keys" in w for w in note.warnings), where
    # the body: `# title`, a blank line, the content with its `---` lines made `- - -`
    content = spec["content"].replace("\n---\n", "\n- - -\n")
    assert note.body == f"# {note.title}\n\n{content}\n", where


@pytest.mark.parametrize("version", VERSIONS)
def test_the_book_maps_field_by_field_as_dle_imports(version):
    notes = convert_book(read(version, BOOK_FILE))
    assert len(notes) == len(specs(version))
    for note, spec in zip(notes, specs(version), strict=True):
        check_mapping(note, spec)
    titles = [n.title for n in notes]
    assert len(set(titles)) == len(titles)  # the two "Lighthouse" entries become two notes


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", list(CARD_FILES))
def test_a_cards_embedded_book_maps_to_the_notes_of_the_book_it_was_made_from(version, name):
    from_book = convert_book(read(version, BOOK_FILE))
    from_card = convert_book(read(version, name))

    def comparable(note: NoteSpec) -> tuple:
        # SillyTavern's card conversion writes `use_group_scoring: useGroupScoring ?? false`: an
        # entry that left it to the global setting (null) comes back from a card as false.
        unset = NOT_IN_CARDS | ({"useGroupScoring"} if note.fields.get("useGroupScoring") is False else set())
        fields = {k: v for k, v in note.fields.items() if k not in unset}
        kept = tuple(k for k in note.kept if k not in unset)
        warnings = tuple(w for w in note.warnings if not any(f in w for f in unset))
        return note.uid, note.title, fields, note.body, kept, warnings

    assert [comparable(n) for n in from_card] == [comparable(n) for n in from_book]
