"""Issue 25: a vault folder mirrored into a SillyTavern World Info book. Real engine, real vault
folder, a SillyTavern user folder under tmp_path, the book file read back as SillyTavern would:
written after changes, never over a book that is not ours, and a book edited in SillyTavern waits
for the user's choice of side."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.state.settings.model import settings_from_mapping
from dle_desktop.worldinfo.sync import SETTLE_S, WorldInfoSync, book_digest, stable_uids
from tests.conftest import lore_text, write_files

from .conftest import VAULT, EngineRun

BOOK = "Saffre"


def make_run(tmp_path: Path, enabled: bool = True, folder: str = "Places") -> tuple[EngineRun, Path]:
    st_root = tmp_path / "st"
    (st_root / "data" / "default-user").mkdir(parents=True)
    settings = settings_from_mapping(
        {"wi_syncs": [{"book": BOOK, "vault": VAULT, "folder": folder, "st_root": str(st_root), "enabled": enabled}]}
    )
    run = EngineRun(tmp_path, settings)
    write_files(
        run.vault,
        {
            "Places/Harbour.md": lore_text("Harbour", ["harbour", "docks"], extra="requires: [Beacon]"),
            "Places/Beacon.md": lore_text("Beacon", ["beacon"], extra="priority: 20"),
            "People/Mira.md": lore_text("Mira", ["mira"]),
        },
    )
    return run, st_root / "data" / "default-user" / "worlds" / f"{BOOK}.json"


def read_book(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def by_title(book: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["comment"]: e for e in book["entries"].values()}


def sync_of(engine: Engine) -> tuple[WorldInfoSync, Any]:
    sync = engine.wi_sync
    return sync, sync.configs[0]


def book_if_any(path: Path) -> dict[str, Any] | None:
    return read_book(path) if path.exists() else None


async def settled(engine: Engine, path: Path, predicate, timeout: float = 10.0) -> None:
    """Wait (bounded) until the book at `path` satisfies `predicate`: the sync runs by itself."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        book = await asyncio.to_thread(book_if_any, path)
        if book is not None and predicate(book):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the book never reached the expected state: {await asyncio.to_thread(book_if_any, path)}")


def test_the_first_index_writes_the_folder_into_the_book_and_nothing_else(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        sync, config = sync_of(engine)
        outcome = await sync.sync(config)
        assert outcome.status == "unchanged"

    run.run(go)
    entries = by_title(read_book(book_path))
    assert sorted(entries) == ["Beacon", "Harbour"]  # People/ is not in the synced folder
    assert entries["Harbour"]["key"] == ["harbour", "docks"]
    assert sorted(e["uid"] for e in entries.values()) == [0, 1]


def test_a_sync_that_is_off_writes_nothing(tmp_path):
    run, book_path = make_run(tmp_path, enabled=False)

    async def go(engine: Engine) -> None:
        await asyncio.sleep(SETTLE_S * 3)

    run.run(go)
    assert not book_path.exists()


def test_a_changed_note_is_in_the_book_after_the_re_index_and_old_notes_keep_their_uids(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        before = {t: e["uid"] for t, e in by_title(read_book(book_path)).items()}
        # "Anchorage" sorts before the others: a fresh export would number it 0 and shift them.
        write_files(run.vault, {"Places/Anchorage.md": lore_text("Anchorage", ["anchorage"])})
        (run.vault / "Places" / "Beacon.md").write_text(lore_text("Beacon", ["beacon", "lighthouse"]), encoding="utf-8")
        await engine.sync_now()
        await settled(engine, book_path, lambda b: len(b["entries"]) == 3)
        after = by_title(read_book(book_path))
        assert {t: after[t]["uid"] for t in before} == before
        assert after["Anchorage"]["uid"] == max(before.values()) + 1
        assert after["Beacon"]["key"] == ["beacon", "lighthouse"]

    run.run(go)


def test_a_book_that_is_not_ours_is_never_overwritten(tmp_path):
    run, book_path = make_run(tmp_path)
    book_path.parent.mkdir(parents=True)
    theirs = json.dumps({"entries": {"0": {"uid": 0, "key": ["x"], "comment": "Theirs", "content": "mine"}}})
    book_path.write_text(theirs, encoding="utf-8")

    async def go(engine: Engine) -> None:
        sync, config = sync_of(engine)
        outcome = await sync.sync(config)
        assert outcome.status == "foreign"
        assert "did not write" in outcome.message
        outcome = await sync.sync(config, winner="vault")  # not even when asked to win a conflict
        assert outcome.status == "foreign"

    run.run(go)
    assert book_path.read_text(encoding="utf-8") == theirs


def st_edits(book_path: Path, edit) -> None:
    """Change the book as SillyTavern's editor saves it: its own indentation and key order."""
    book = read_book(book_path)
    edit(book)
    book_path.write_text(json.dumps(book, indent=2, sort_keys=True), encoding="utf-8")


def test_a_resave_by_sillytavern_without_changes_is_no_conflict(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        st_edits(book_path, lambda book: None)
        sync, config = sync_of(engine)
        assert (await sync.sync(config)).status == "unchanged"

    run.run(go)


def test_an_edit_in_sillytavern_waits_for_a_choice_and_touches_nothing(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> tuple[str, str]:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)

        def edit(book: dict[str, Any]) -> None:
            entry = next(e for e in book["entries"].values() if e["comment"] == "Harbour")
            entry["key"] = ["harbour", "quay"]
            book["entries"]["7"] = {
                **entry,
                "uid": 7,
                "comment": "Lantern Row",
                "key": ["lantern"],
                "content": "Lamps.",
            }

        st_edits(book_path, edit)
        edited = book_path.read_text(encoding="utf-8")
        note = (run.vault / "Places" / "Harbour.md").read_text(encoding="utf-8")
        sync, config = sync_of(engine)
        outcome = await sync.sync(config)
        assert outcome.status == "conflict"
        kinds = {(c.title, c.kind) for c in outcome.changes}
        assert ("Harbour", "changed in SillyTavern") in kinds
        assert ("Lantern Row", "added in SillyTavern") in kinds
        harbour = next(c for c in outcome.changes if c.title == "Harbour")
        assert harbour.fields == ("key",)
        # A vault change meanwhile does not push the book either.
        (run.vault / "Places" / "Beacon.md").write_text(lore_text("Beacon", ["beacon", "fire"]), encoding="utf-8")
        await engine.sync_now()
        await asyncio.sleep(SETTLE_S * 3)
        return edited, note

    edited, note = run.run(go)
    assert book_path.read_text(encoding="utf-8") == edited
    assert (run.vault / "Places" / "Harbour.md").read_text(encoding="utf-8") == note


def test_the_vault_wins_the_book_is_rewritten_from_the_notes(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        st_edits(book_path, lambda book: book["entries"]["0"].update(content="Rewritten in SillyTavern."))
        sync, config = sync_of(engine)
        assert (await sync.sync(config)).status == "conflict"
        outcome = await sync.sync(config, winner="vault")
        assert outcome.status == "written"
        assert all("SillyTavern" not in e["content"] for e in read_book(book_path)["entries"].values())
        assert (await sync.sync(config)).status == "unchanged"

    run.run(go)


def test_sillytavern_wins_its_edits_go_into_the_notes_and_the_rest_of_each_note_stays(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)

        def edit(book: dict[str, Any]) -> None:
            entry = next(e for e in book["entries"].values() if e["comment"] == "Harbour")
            entry["key"] = ["harbour", "quay"]
            book["entries"]["9"] = {
                **entry,
                "uid": 9,
                "comment": "Lantern Row",
                "key": ["lantern"],
                "content": "Lamps.",
            }

        st_edits(book_path, edit)
        sync, config = sync_of(engine)
        outcome = await sync.sync(config, winner="sillytavern")
        assert outcome.status == "written", outcome.message
        await engine.sync_now()
        entries = by_title(read_book(book_path))
        assert entries["Harbour"]["key"] == ["harbour", "quay"]
        assert "Lantern Row" in entries

    run.run(go)
    harbour = (run.vault / "Places" / "Harbour.md").read_text(encoding="utf-8")
    assert "quay" in harbour
    assert "requires: [Beacon]" in harbour  # World Info has no requires: it survives SillyTavern's win
    assert (run.vault / "Places" / "Lantern Row.md").exists()


def test_an_unreadable_book_of_ours_is_a_conflict_until_the_vault_wins(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        book_path.write_text("{ not json", encoding="utf-8")
        sync, config = sync_of(engine)
        outcome = await sync.sync(config)
        assert outcome.status == "conflict"
        assert "unreadable" in outcome.message
        assert (await sync.sync(config, winner="vault")).status == "written"

    run.run(go)
    assert len(read_book(book_path)["entries"]) == 2


def test_a_missing_sillytavern_user_folder_is_an_error_in_words(tmp_path):
    run, _book_path = make_run(tmp_path)
    settings = settings_from_mapping(
        {"wi_syncs": [{"book": BOOK, "vault": VAULT, "st_root": str(tmp_path / "gone"), "enabled": True}]}
    )
    run.settings = settings

    async def go(engine: Engine) -> None:
        sync, config = sync_of(engine)
        outcome = await sync.sync(config)
        assert outcome.status == "error"
        assert "user folder" in outcome.message and "was not found" in outcome.message

    run.run(go)
    assert not (tmp_path / "gone").exists()


def test_turning_a_sync_on_in_settings_writes_its_book(tmp_path):
    run, book_path = make_run(tmp_path, enabled=False)

    async def go(engine: Engine) -> None:
        await asyncio.sleep(SETTLE_S * 2)
        assert not book_path.exists()
        on = engine.settings.replace(wi_syncs=[{**engine.settings.wi_syncs[0].to_json(), "enabled": True}])
        await engine.apply_settings(on)
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)

    run.run(go)


@pytest.mark.parametrize(
    ("previous", "paths", "expected"),
    [
        ({}, {"0": "a.md", "1": "b.md"}, {"0": "a.md", "1": "b.md"}),
        ({"5": "b.md", "2": "a.md"}, {"0": "a.md", "1": "b.md", "2": "c.md"}, {"2": "a.md", "5": "b.md", "6": "c.md"}),
        ({"0": "gone.md"}, {"0": "new.md"}, {"1": "new.md"}),
    ],
)
def test_stable_uids_keep_each_note_s_number(previous, paths, expected):
    book = {"entries": {uid: {"uid": int(uid), "comment": path} for uid, path in paths.items()}}
    out, out_paths = stable_uids(book, paths, previous)
    assert out_paths == expected
    assert {uid: e["comment"] for uid, e in out["entries"].items()} == expected
    assert all(e["uid"] == int(uid) for uid, e in out["entries"].items())


def test_the_digest_ignores_formatting_and_key_order():
    a = {"entries": {"0": {"uid": 0, "key": ["x"], "content": "c"}}}
    b = json.loads(json.dumps({"entries": {"0": {"content": "c", "key": ["x"], "uid": 0}}}, indent=2))
    assert book_digest(a) == book_digest(b)
    assert book_digest(a) != book_digest({"entries": {"0": {"uid": 0, "key": ["y"], "content": "c"}}})


def test_a_stopped_engine_writes_no_book_after_it(tmp_path):
    run, book_path = make_run(tmp_path)

    async def go(engine: Engine) -> None:
        await settled(engine, book_path, lambda b: len(b["entries"]) == 2)
        sync, _config = sync_of(engine)
        sync.index_changed(None)  # a rewrite is due in SETTLE_S...
        await sync.close()  # ...and the engine stops first
        book_path.unlink()
        await asyncio.sleep(SETTLE_S * 2)
        assert not book_path.exists()

    run.run(go)
