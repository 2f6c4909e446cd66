"""Import → export → import gives the same notes: on a book with every World Info field set, on
the sample vault, on the real SillyTavern exports, and on hundreds of random entries. Notes go
through the real note writer's composer and the real parser between the steps."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from dle_desktop.core.entry import Entry, Skip
from dle_desktop.core.fields import DEFAULT_DEFINITIONS, FieldDefinitions, parse_field_definitions
from dle_desktop.core.frontmatter import split_note
from dle_desktop.core.note_parser import parse_note
from dle_desktop.core.worldinfo import (
    ExportDefaults,
    NoteSpec,
    convert_book,
    export_book,
    read_book_bytes,
    read_book_value,
)
from dle_desktop.vault.frontmatter_edit import compose_note

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "worldinfo"
SAMPLE = ROOT / "resources" / "sample_vault"


def import_book(value: Any) -> list[NoteSpec]:
    book = read_book_value(value, name="book")
    assert book.problems == ()
    return convert_book(book)


def write_and_read(
    specs: list[NoteSpec], definitions: FieldDefinitions = DEFAULT_DEFINITIONS
) -> tuple[list[Entry], dict[str, dict[str, Any]], list[Skip]]:
    """Each note as the note writer composes it, read back by the parser (and its raw frontmatter)."""
    entries: list[Entry] = []
    raw: dict[str, dict[str, Any]] = {}
    skipped: list[Skip] = []
    for i, spec in enumerate(specs):
        text = compose_note(spec.fields, spec.body)
        parsed = parse_note("v", f"Imported/{i:04d}.md", text, field_definitions=definitions)
        if isinstance(parsed, Skip):
            skipped.append(parsed)
            continue
        entries.append(parsed)
        data = split_note(text).data
        assert data is not None
        raw[parsed.uid] = data
    return entries, raw, skipped


def notes(specs: list[NoteSpec]) -> list[tuple[str, dict[str, Any], str, tuple[str, ...]]]:
    """What a note is: its title, fields and body (and the kept list). Uids are renumbered by the export."""
    return [(s.title, s.fields, s.body, s.kept) for s in specs]


def round_trip(value: Any, with_raw: bool = False) -> tuple[list[NoteSpec], list[NoteSpec], dict[str, Any]]:
    """Import, write, parse, export (from the entries alone, or with each note's raw frontmatter), import."""
    first = import_book(value)
    entries, raw, skipped = write_and_read(first)
    assert skipped == []
    book, report = export_book(entries, raw_fields=raw if with_raw else None)
    assert report.entries == len(first)
    return first, import_book(json.loads(json.dumps(book))), book


# -- (a) every World Info field -----------------------------------------------------------


def every_field_book() -> dict[str, Any]:
    return json.loads((FIXTURES / "every_field_book.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("with_raw", [False, True])
def test_every_field_book_imports_exports_and_imports_the_same(with_raw):
    first, second, _ = round_trip(every_field_book(), with_raw)
    assert notes(second) == notes(first)
    assert first[0].kept == (
        "selectiveLogic",
        "sticky",
        "delay",
        "group",
        "groupOverride",
        "groupWeight",
        "useGroupScoring",
        "caseSensitive",
        "matchWholeWords",
        "st_excludeRecursion",
        "delayUntilRecursion",
        "vectorized",
        "ignoreBudget",
        "matchPersonaDescription",
        "matchCharacterDescription",
        "matchCharacterPersonality",
        "matchCharacterDepthPrompt",
        "matchScenario",
        "matchCreatorNotes",
        "triggers",
        "automationId",
        "characterFilter",
    )


def test_every_field_comes_back_to_sillytavern_as_it_was():
    original = every_field_book()["entries"]
    _, _, book = round_trip(every_field_book())  # from the entries alone, as the service exports
    exported = book["entries"]
    assert list(exported) == list(original)
    for uid, entry in original.items():
        back = exported[uid]
        expected = dict(entry)
        expected["content"] = entry["content"].replace("\n---\n", "\n- - -\n")  # DLE's body rule
        if uid == "6":  # content cleaned by DLE's body rules; order clamped; probability unused in ST
            expected.update(
                content="Line\nbreaks\n\nand  gone", order=999, probability=100, useProbability=True, scanDepth=0
            )
        if uid == "7":  # no comment: DLE titles the note from its keys, and that title is the comment now
            expected["comment"] = "dragon"
        assert back == expected, uid


def test_a_disabled_entry_imports_disabled_and_the_index_skips_it():
    book = every_field_book()
    book["entries"] = {"0": {**book["entries"]["0"], "disable": True}}
    (spec,) = import_book(book)
    assert spec.fields["enabled"] is False
    _, _, skipped = write_and_read([spec])
    assert [s.code for s in skipped] == ["SKIP_ENABLED_FALSE"]  # so an export cannot carry it back


# -- (b) the sample vault -----------------------------------------------------------------


def sample_vault() -> tuple[list[Entry], dict[str, dict[str, Any]], FieldDefinitions]:
    definitions = parse_field_definitions(
        (SAMPLE / "DeepLore" / "field-definitions.yaml").read_text(encoding="utf-8"), "field-definitions.yaml"
    )
    entries: list[Entry] = []
    raw: dict[str, dict[str, Any]] = {}
    for path in sorted(SAMPLE.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        parsed = parse_note("sample", path.relative_to(SAMPLE).as_posix(), text, field_definitions=definitions)
        if isinstance(parsed, Entry):
            entries.append(parsed)
            raw[parsed.uid] = split_note(text).data or {}
    return entries, raw, definitions


def test_the_sample_vault_round_trips():
    entries, raw, definitions = sample_vault()
    assert len(entries) > 50
    book, report = export_book(entries, raw_fields=raw)
    guides = [e for e in entries if e.guide]
    assert report.entries == len(entries) - len(guides) == len(book["entries"])

    first = import_book(json.loads(json.dumps(book)))
    again, again_raw, skipped = write_and_read(first, definitions)
    assert skipped == []
    second_book, _ = export_book(again, raw_fields=again_raw)
    second = import_book(json.loads(json.dumps(second_book)))
    assert notes(second) == notes(first)

    # What the notes inject survives the trip exactly. The sample vault has two notes titled
    # "The Drowned Bell" (an artifact and a tavern): one book cannot, so the second is renamed.
    originals = [e for e in entries if not e.guide]
    titles = [e.title for e in originals]
    expected_titles = [t if t not in titles[:i] else f"{t} (2)" for i, t in enumerate(titles)]
    assert expected_titles != titles
    assert [e.title for e in again] == expected_titles
    assert [(e.content, e.keys, e.refine_keys, e.constant) for e in again] == [
        (e.content, e.keys, e.refine_keys, e.constant) for e in originals
    ]
    assert [(e.probability, e.cooldown, e.scan_depth, e.outlet, e.exclude_recursion) for e in again] == [
        (e.probability, e.cooldown, e.scan_depth, e.outlet, e.exclude_recursion) for e in originals
    ]
    assert [e.priority for e in again] == [min(max(round(e.priority), 0), 999) for e in originals]


def test_the_sample_vaults_positions_survive_a_trip_through_sillytavern():
    """before → 0 → before and after → 1 → after (DLE's own importer would swap them); a note
    without a position of its own comes back with the global default written out."""
    entries, raw, definitions = sample_vault()
    book, _ = export_book(entries, raw_fields=raw)
    again, _, _ = write_and_read(import_book(book), definitions)
    originals = [e for e in entries if not e.guide]
    assert any(e.position == "before" for e in originals) and any(e.position == "after" for e in originals)
    default = ExportDefaults().position
    assert [e.position for e in again] == [None if e.outlet else e.position or default for e in originals]


def test_the_sample_vaults_report_names_what_world_info_cannot_do():
    entries, raw, _ = sample_vault()
    _, report = export_book(entries, raw_fields=raw)
    by_title = {line.title: line.lost for line in report.lines}
    ashby = by_title["Ashby Grell"]
    assert "requires River Watch: World Info has no requirements between entries" in ashby
    assert "scene_type: World Info has no contextual gating; the entry fires whatever the scene_type" in ashby
    assert any(e.warmup for e in entries) and any(
        any(x.startswith("warmup ") for x in lost) for lost in by_title.values()
    )


# -- the real SillyTavern exports ---------------------------------------------------------

ST_FILES = sorted(
    p for p in (FIXTURES / "st").glob("st-*/*") if p.suffix in (".json", ".png") and p.name != "_meta.json"
)


@pytest.mark.skipif(not ST_FILES, reason="no SillyTavern exports under tests/fixtures/worldinfo/st yet")
@pytest.mark.parametrize("path", ST_FILES, ids=[p.relative_to(FIXTURES).as_posix() for p in ST_FILES])
def test_books_exported_by_a_real_sillytavern_round_trip(path):
    book = read_book_bytes(path.read_bytes(), name=path.stem)
    assert book.entries and book.problems == ()
    first = convert_book(book)
    entries, raw, skipped = write_and_read(first)
    assert len(entries) + len(skipped) == len(first)
    exported, _ = export_book(entries, raw_fields=raw)
    second = import_book(json.loads(json.dumps(exported)))
    kept = [s for s in first if s.fields.get("enabled") is not False]
    assert notes(second) == notes(kept)


# -- (c) many random entries ----------------------------------------------------------------

WORDS = [
    "lamp",
    "harbour",
    "Saint Maudry",
    "Ærø",
    "drágon",
    "#hash",
    "- dash",
    "key: colon",
    "'quote'",
    '"double"',
    "yes",
    "no",
    "null",
    "true",
    "False",
    "123",
    "1e3",
    "0x1F",
    "~",
    "@at",
    "[bracket]",
    "{brace}",
    "a, b",
    "trailing ",
    "  lead",
    "*star",
    "&anchor",
    "!bang",
    "%pct",
    "|pipe",
    ">fold",
    "? query",
    "tab\there",
    "日本語",
    "emoji 🐉",
    "back\\slash",
]
LINES = [
    "The tide turns at dusk.",
    "---",
    "{{char}} and {{user}} meet at the quay.",
    "",
    "",
    "",
    "  indented line",
    "# A heading inside",
    "- a list item",
    "%%a hidden comment%%",
    "\t tabbed",
    "Ærø's lamp, 日本語, 🐉.",
    "<% tp.file.title %> gone",
    "key: value looking line",
    "...",
]


def random_entry(rng: random.Random, uid: int) -> dict[str, Any]:
    def words(n: int) -> list[str]:
        return [rng.choice(WORDS) for _ in range(n)]

    entry: dict[str, Any] = {
        "uid": uid,
        "key": words(rng.randint(0, 4)) if rng.random() < 0.9 else ", ".join(words(3)),
        "keysecondary": words(rng.randint(0, 3)),
        "comment": rng.choice(["", " ".join(words(rng.randint(1, 3))), "Same Title", "same title", "Line\nbreak"]),
        "content": ("\r\n" if rng.random() < 0.2 else "\n").join(rng.choice(LINES) for _ in range(rng.randint(0, 8))),
        "constant": rng.random() < 0.2,
        "selective": rng.random() < 0.8,
        "position": rng.randint(0, 7),
        "depth": rng.randint(0, 10),
        "role": rng.choice([0, 1, 2, None]),
        "outletName": rng.choice(["", "maps", "side bar"]),
        "probability": rng.choice([100, 0, 1, 35, 99.5, 50]),
        "useProbability": rng.random() < 0.8,
        "preventRecursion": rng.random() < 0.3,
        "excludeRecursion": rng.random() < 0.3,
    }
    for name, value in (
        ("order", rng.choice([-3, 0, 7, 100, 250, 999, 1200, 42.4])),
        ("scanDepth", rng.choice([None, 0, 1, 6])),
        ("cooldown", rng.choice([None, 0, 2])),
        ("selectiveLogic", rng.randint(0, 3)),
        ("sticky", rng.choice([None, 0, 3])),
        ("delay", rng.choice([None, 2])),
        ("group", rng.choice(["", "weather", "a, b"])),
        ("groupOverride", rng.random() < 0.5),
        ("groupWeight", rng.choice([100, 1, 60])),
        ("useGroupScoring", rng.choice([None, True, False])),
        ("caseSensitive", rng.choice([None, True, False])),
        ("matchWholeWords", rng.choice([None, True, False])),
        ("delayUntilRecursion", rng.choice([0, False, True, 3])),
        ("vectorized", rng.random() < 0.3),
        ("ignoreBudget", rng.random() < 0.3),
        ("matchScenario", rng.random() < 0.3),
        ("triggers", rng.choice([[], ["normal"], ["continue", "swipe"]])),
        ("automationId", rng.choice(["", "auto-1"])),
        ("characterFilter", rng.choice([None, {"isExclude": False, "names": ["Mira"], "tags": []}])),
    ):
        if rng.random() < 0.6:
            entry[name] = value
    return entry


@pytest.mark.parametrize("seed", range(6))
def test_random_entries_round_trip(seed):
    rng = random.Random(seed)
    value = {"entries": {str(i): random_entry(rng, i) for i in range(120)}}
    first, second, _ = round_trip(value)
    assert notes(second) == notes(first)
