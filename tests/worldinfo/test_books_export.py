"""Issue 25: finding SillyTavern's books, reading book files and streams (refused before they are
read whole when too big), and exporting indexed entries through the service. Real folders,
real files, a real engine."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dle_desktop.core.worldinfo import MAX_BOOK_BYTES, ExportDefaults, export_book
from dle_desktop.engine.engine import Engine
from dle_desktop.errors import InputError, NotFound
from dle_desktop.state.settings import Settings
from dle_desktop.worldinfo import WorldInfoService, export_defaults, find_book, list_books, read_book_stream
from tests.conftest import lore_text

from .conftest import VAULT, EngineRun, files_under, wi_book, wi_entry

BOOK = wi_book(
    wi_entry(0, "Harbour", ["harbour", "docks"], "The harbour never sleeps.", order=120, position=1),
    wi_entry(1, "Beacon", ["beacon"], "A fire on the cliff.", constant=True, position=4, depth=2, role=1, sticky=3),
    wi_entry(2, "Weather", ["rain"], "Rain most days.", group="weather", groupWeight=60, selectiveLogic=3,
             keysecondary=["storm"], probability=35, scanDepth=6, cooldown=2, delay=1),
)  # fmt: skip


def st_folder(tmp_path: Path, user: str = "default-user") -> Path:
    worlds = tmp_path / "SillyTavern" / "data" / user / "worlds"
    worlds.mkdir(parents=True)
    return worlds


class CountingStream(io.BytesIO):
    """Standard input that remembers how much was read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        out = super().read(size)
        self.taken += len(out)
        return out


# -- SillyTavern's books -------------------------------------------------------------------------------


def test_list_books_counts_entries_and_lists_a_broken_file_with_its_error(tmp_path: Path):
    worlds = st_folder(tmp_path)
    (worlds / "Harbour Lore.json").write_bytes(BOOK)
    (worlds / "broken.json").write_text('{"entries": ', encoding="utf-8")
    (worlds / "empty.json").write_bytes(b"")
    (worlds / "readme.txt").write_text("not a book", encoding="utf-8")
    (worlds / ".hidden.json").write_bytes(BOOK)

    books = list_books(tmp_path / "SillyTavern")
    assert [(b.name, b.entries) for b in books] == [("broken", None), ("empty", None), ("Harbour Lore", 3)]
    assert "not valid JSON" in books[0].error and "empty" in books[1].error
    assert books[2].error is None and books[2].size == len(BOOK)
    assert list_books(tmp_path / "SillyTavern", "nobody") == []


def test_a_configured_data_root_and_a_bad_user_name(tmp_path: Path):
    data_root = tmp_path / "elsewhere"
    (data_root / "alice" / "worlds").mkdir(parents=True)
    (data_root / "alice" / "worlds" / "A.json").write_bytes(BOOK)
    assert [b.name for b in list_books(tmp_path / "st", "alice", data_root)] == ["A"]
    for user in ("..", "a/b", ""):
        with pytest.raises(InputError, match="not a SillyTavern user"):
            list_books(tmp_path / "st", user)


def test_find_book_by_name_exactly_or_ignoring_case(tmp_path: Path):
    worlds = st_folder(tmp_path)
    (worlds / "Harbour Lore.json").write_bytes(BOOK)
    root = tmp_path / "SillyTavern"
    assert find_book(root, "Harbour Lore") == worlds / "Harbour Lore.json"
    assert find_book(root, "harbour lore") == worlds / "Harbour Lore.json"
    with pytest.raises(NotFound, match="books: Harbour Lore"):
        find_book(root, "Other")
    for name in ("../Harbour Lore", "a/b", ""):
        with pytest.raises(InputError):
            find_book(root, name)


# -- reading -------------------------------------------------------------------------------------------


def test_a_stream_past_the_limit_is_refused_after_reading_one_byte_past_it():
    stream = CountingStream(b" " * (MAX_BOOK_BYTES + 4096))
    with pytest.raises(InputError, match="at most 50 MB"):
        read_book_stream(stream, "standard input")
    assert stream.taken == MAX_BOOK_BYTES + 1


def test_read_book_refuses_what_is_no_book_with_the_readers_message(tmp_path: Path):
    with pytest.raises(InputError, match="not valid JSON"):
        WorldInfoService.read_book(b'{"entries": {', "pasted")
    with pytest.raises(InputError, match="no such file"):
        WorldInfoService.read_book(tmp_path / "missing.json")
    with pytest.raises(InputError, match="not a file"):
        WorldInfoService.read_book(tmp_path)
    book = WorldInfoService.read_book(BOOK, "pasted")
    assert [e.comment for e in book.entries] == ["Harbour", "Beacon", "Weather"]


# -- export --------------------------------------------------------------------------------------------


def test_export_defaults_come_from_the_injection_settings():
    settings = Settings().replace(injection_position=2, injection_depth=7, injection_role=1, scan_depth=6)
    assert export_defaults(settings) == ExportDefaults(position="before", depth=7, role="user", scan_depth=None)
    assert export_defaults(Settings()) == ExportDefaults(position="in_chat", depth=4, role="system")


def test_export_filters_by_folder_tag_and_vault(tmp_path: Path):
    run = EngineRun(tmp_path, Settings().replace(injection_position=2))
    (run.vault / "Lore").mkdir()
    (run.vault / "Lore" / "Harbour.md").write_text(
        lore_text("Harbour", ("harbour",), tags="[lorebook, port]"), encoding="utf-8"
    )
    (run.vault / "Lore" / "Beacon.md").write_text(lore_text("Beacon", ("beacon",)), encoding="utf-8")
    (run.vault / "Lorem.md").write_text(lore_text("Lorem", ("lorem",), tags="[lorebook, port]"), encoding="utf-8")

    async def go(engine: Engine):
        wi = engine.worldinfo
        titles = {}
        for name, kwargs in {
            "all": {},
            "folder": {"folder": "Lore"},
            "folder/": {"folder": "Lore/"},
            "tag": {"tag": "#Port"},
            "both": {"folder": "Lore", "tag": "port"},
            "vault": {"vault": VAULT},
        }.items():
            book, report = await wi.export(**kwargs)
            titles[name] = sorted(e["comment"] for e in book["entries"].values())
            assert report.entries == len(book["entries"])
        with pytest.raises(InputError, match="nothing to export"):
            await wi.export(tag="nothing")
        with pytest.raises(NotFound):
            await wi.export(vault="other")
        with pytest.raises(InputError, match="import folder"):
            await wi.export(folder="../x")
        entries = [e for e in engine.snapshot.entries if e.path.startswith("Lore/")]
        expected, _ = export_book(entries, export_defaults(engine.settings), engine.tag_config)
        assert (await wi.export(folder="Lore"))[0] == expected  # the settings' defaults were passed
        return titles

    titles = run.run(go)
    assert titles == {
        "all": ["Beacon", "Harbour", "Lorem"],
        "folder": ["Beacon", "Harbour"],
        "folder/": ["Beacon", "Harbour"],
        "tag": ["Harbour", "Lorem"],
        "both": ["Harbour"],
        "vault": ["Beacon", "Harbour", "Lorem"],
    }


def test_import_export_import_gives_the_same_notes(tmp_path: Path):
    """The round trip through the service: a book with ST-only fields is imported, the vault is
    exported, and the exported book imported again (into another folder) gives notes byte for
    byte the same."""
    run = EngineRun(tmp_path)

    async def go(engine: Engine):
        wi = engine.worldinfo
        first = await wi.plan_import(
            WorldInfoService.read_book(BOOK, "Book"), vault=VAULT, folder="A", collision="rename"
        )
        await wi.run_import(first)
        exported, _ = await wi.export(folder="A")
        book_file = tmp_path / "exported.json"
        book_file.write_text(json.dumps(exported), encoding="utf-8")
        second = await wi.plan_import(
            WorldInfoService.read_book(book_file), vault=VAULT, folder="B", collision="rename"
        )
        await wi.run_import(second)
        return first, second

    first, second = run.run(go)
    assert [r.action for r in second.rows] == ["create"] * 3
    by_title = {r.title: r.text for r in second.rows}
    assert {r.title: r.text for r in first.rows} == by_title
    for row in first.rows:
        a = (run.vault / row.path).read_bytes()
        b = (run.vault / row.path.replace("A/", "B/", 1)).read_bytes()
        assert a == b
    assert len(files_under(run.vault)) == 6
