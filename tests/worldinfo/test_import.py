"""Issue 25: importing a World Info book through the service. Real engine, real vault folder, real
SQLite write history: the preview writes nothing; the import is one batch, re-indexed once, and
either completes or leaves nothing; one Undo takes it back."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from dle_desktop.engine.engine import Engine
from dle_desktop.errors import InputError, NotFound, WriteRefused
from dle_desktop.vault.writer import NoteWriter
from dle_desktop.worldinfo import ImportFailed, WorldInfoService
from tests.conftest import lore_text

from .conftest import VAULT, EngineRun, files_under, many_entries, wi_book, wi_entry

HARBOUR = wi_entry(0, "Harbour", ["harbour", "docks"], "The harbour never sleeps.", order=120, position=0)
BEACON = wi_entry(1, "Beacon", ["beacon"], "A fire on the cliff.", constant=True, position=4, depth=2, role=1, sticky=3)

HARBOUR_NOTE = (
    "---\n"
    "type: lore\n"
    "status: active\n"
    "tags:\n"
    "  - lorebook\n"
    "keys:\n"
    "  - harbour\n"
    "  - docks\n"
    "priority: 120\n"
    "position: before\n"
    "st_position: 0\n"
    "---\n"
    "# Harbour\n"
    "\n"
    "The harbour never sleeps.\n"
)
BEACON_NOTE = (
    "---\n"
    "type: lore\n"
    "status: active\n"
    "tags:\n"
    "  - lorebook\n"
    "  - lorebook-always\n"
    "keys:\n"
    "  - beacon\n"
    "priority: 100\n"
    "position: in_chat\n"
    "st_position: 4\n"
    "depth: 2\n"
    "role: user\n"
    "sticky: 3\n"
    "---\n"
    "# Beacon\n"
    "\n"
    "A fire on the cliff.\n"
)


def book_of(*entries: dict) -> object:
    return WorldInfoService.read_book(wi_book(*entries), "Test book")


# -- the preview and the notes written -------------------------------------------------------------


def test_the_preview_writes_nothing_and_the_import_writes_the_notes_byte_for_byte(run: EngineRun):
    async def go(engine: Engine):
        wi = engine.worldinfo
        plan = await wi.plan_import(book_of(HARBOUR, BEACON), vault=VAULT, folder="Lore", collision="rename")
        assert files_under(run.vault) == []
        assert [(r.action, r.path) for r in plan.rows] == [("create", "Lore/Harbour.md"), ("create", "Lore/Beacon.md")]
        assert plan.rows[0].text == HARBOUR_NOTE and plan.rows[1].text == BEACON_NOTE
        assert plan.rows[1].kept == ("sticky",)
        assert any("sticky" in w for w in plan.rows[1].warnings)
        assert any("priority" in n for n in plan.notes)  # the flipped direction is said once
        result = await wi.run_import(plan)
        return result, engine.snapshot

    result, snapshot = run.run(go)
    assert result.written == ("Lore/Harbour.md", "Lore/Beacon.md") and not result.cancelled
    assert (run.vault / "Lore" / "Harbour.md").read_bytes() == HARBOUR_NOTE.encode("utf-8")
    assert (run.vault / "Lore" / "Beacon.md").read_bytes() == BEACON_NOTE.encode("utf-8")
    # In the index when run_import returns, as DLE reads them.
    harbour, beacon = snapshot.find("Harbour"), snapshot.find("Beacon")
    assert harbour.keys == ("harbour", "docks") and harbour.priority == 120 and harbour.position == "before"
    assert beacon.constant and beacon.position == "in_chat" and beacon.depth == 2 and beacon.role == "user"


def test_one_reindex_for_the_whole_import(run: EngineRun):
    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(
            WorldInfoService.read_book(many_entries(40), "Forty"), vault=VAULT, folder="", collision="rename"
        )
        events: list[str] = []
        unsubscribe = engine.subscribe(lambda e: events.append(e.kind))
        seen: list[tuple[int, int]] = []
        await engine.worldinfo.run_import(plan, progress=lambda done, total: seen.append((done, total)))
        unsubscribe()
        return events, seen, len(engine.snapshot)

    events, seen, indexed = run.run(go)
    assert events.count("index") == 1
    assert seen == [(i, 40) for i in range(1, 41)]
    assert indexed == 40
    assert events.count("wi_import") >= 2  # writing..., done


def test_titles_that_are_paths_or_device_names_land_inside_the_folder(run: EngineRun):
    entries = [
        wi_entry(0, "../../escape", ["a"], "x"),
        wi_entry(1, "a/b\\c", ["b"], "x"),
        wi_entry(2, "..", ["c"], "x"),
        wi_entry(3, "nul\x00byte", ["d"], "x"),
        wi_entry(4, "CON", ["e"], "x"),
        wi_entry(5, "/etc/passwd", ["f"], "x"),
    ]

    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(book_of(*entries), vault=VAULT, folder="Lore", collision="rename")
        await engine.worldinfo.run_import(plan)
        return [r.path for r in plan.rows]

    paths = run.run(go)
    assert all(p.startswith("Lore/") and p.count("/") == 1 for p in paths), paths
    assert len(set(paths)) == len(paths)
    assert "Lore/_CON.md" in paths
    outside = [p for p in files_under(run.vault.parent) if not p.startswith(("vault/", "data/"))]
    assert outside == []
    assert sorted(files_under(run.vault)) == sorted(paths)


def test_duplicate_titles_in_one_book_become_separate_notes(run: EngineRun):
    entries = [
        wi_entry(0, "Gate", ["gate"], "first"),
        wi_entry(1, "gate", ["gate"], "second"),
        wi_entry(2, "A/B", ["ab"], "slash"),
        wi_entry(3, "A_B", ["ab"], "underscore"),
    ]

    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(book_of(*entries), vault=VAULT, folder="", collision="skip")
        await engine.worldinfo.run_import(plan)
        return plan

    plan = run.run(go)
    assert [(r.action, r.path) for r in plan.rows] == [
        ("create", "Gate.md"),
        ("create", "gate (2).md"),
        ("create", "A_B.md"),
        ("rename", "A_B_imported.md"),  # another entry of this plan took the name: renamed even in skip mode
    ]
    assert any("same name" in w for w in plan.rows[3].warnings)
    assert len(files_under(run.vault)) == 4


def test_empty_keys_and_huge_content_are_warned_about_in_the_preview(run: EngineRun):
    huge = "The archive holds many scrolls. " * 20_000
    entries = [wi_entry(0, "Keyless", [], "nothing to match"), wi_entry(1, "Archive", ["archive"], huge)]

    async def go(engine: Engine):
        return await engine.worldinfo.plan_import(book_of(*entries), vault=VAULT, folder="", collision="rename")

    plan = run.run(go)
    assert any("no keys" in w for w in plan.rows[0].warnings)
    assert any("huge content" in w for w in plan.rows[1].warnings)
    assert files_under(run.vault) == []


# -- collisions --------------------------------------------------------------------------------------


def test_rename_uses_dles_imported_names_against_the_disk_and_the_index(run: EngineRun):
    (run.vault / "Lore").mkdir()
    (run.vault / "Lore" / "Harbour.md").write_text(lore_text("Harbour", ("harbour",)), encoding="utf-8")

    async def go(engine: Engine):
        # Made after the index was built: only the folder on disk knows it.
        (run.vault / "Lore" / "Harbour_imported.md").write_text("plain text, not lore\n", encoding="utf-8")
        plan = await engine.worldinfo.plan_import(book_of(HARBOUR), vault=VAULT, folder="Lore", collision="rename")
        await engine.worldinfo.run_import(plan)
        return plan

    plan = run.run(go)
    [row] = plan.rows
    assert (row.action, row.path) == ("rename", "Lore/Harbour_imported_2.md")
    assert (run.vault / "Lore" / "Harbour_imported_2.md").read_text(encoding="utf-8") == HARBOUR_NOTE
    assert (run.vault / "Lore" / "Harbour.md").read_text(encoding="utf-8") == lore_text("Harbour", ("harbour",))


def test_when_every_imported_name_is_taken_the_entry_is_skipped_with_a_problem(run: EngineRun):
    lore = run.vault / "Lore"
    lore.mkdir()
    (lore / "Harbour.md").write_text("x\n", encoding="utf-8")
    (lore / "Harbour_imported.md").write_text("x\n", encoding="utf-8")
    for n in range(2, 21):
        (lore / f"Harbour_imported_{n}.md").write_text("x\n", encoding="utf-8")

    async def go(engine: Engine):
        return await engine.worldinfo.plan_import(book_of(HARBOUR), vault=VAULT, folder="Lore", collision="rename")

    plan = run.run(go)
    assert plan.rows[0].action == "skip"
    assert any("20 '_imported' names are all taken" in p for p in plan.problems)
    assert plan.writes == 0


def test_skip_leaves_the_existing_note(run: EngineRun):
    (run.vault / "Harbour.md").write_text("mine\n", encoding="utf-8")

    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(book_of(HARBOUR, BEACON), vault=VAULT, folder="", collision="skip")
        result = await engine.worldinfo.run_import(plan)
        return plan, result

    plan, result = run.run(go)
    assert [r.action for r in plan.rows] == ["skip", "create"]
    assert result.skipped == ("Harbour.md",) and result.written == ("Beacon.md",)
    assert (run.vault / "Harbour.md").read_text(encoding="utf-8") == "mine\n"


def test_overwrite_shows_the_diff_writes_over_that_version_and_undo_puts_it_back(run: EngineRun):
    old = lore_text("Harbour", ("harbour",), body="My own harbour.")
    (run.vault / "Harbour.md").write_text(old, encoding="utf-8")

    async def go(engine: Engine):
        wi = engine.worldinfo
        plan = await wi.plan_import(book_of(HARBOUR), vault=VAULT, folder="", collision="overwrite")
        [row] = plan.rows
        assert row.action == "overwrite" and row.path == "Harbour.md"
        assert "-My own harbour." in row.diff and "+The harbour never sleeps." in row.diff
        assert row.diff.startswith("--- Harbour.md (in the vault)\n+++ Harbour.md (imported)\n")
        result = await wi.run_import(plan)
        assert (run.vault / "Harbour.md").read_text(encoding="utf-8") == HARBOUR_NOTE
        undo = await wi.undo_import(result.batch)
        assert undo.complete and len(undo.undone) == 1
        return engine.snapshot.find("Harbour")

    harbour = run.run(go)
    assert (run.vault / "Harbour.md").read_text(encoding="utf-8") == old
    assert harbour.content.startswith("My own harbour")


def test_a_note_edited_between_preview_and_import_stops_the_import_and_nothing_stays(run: EngineRun):
    (run.vault / "Harbour.md").write_text("mine\n", encoding="utf-8")

    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(
            book_of(BEACON, HARBOUR), vault=VAULT, folder="", collision="overwrite"
        )
        (run.vault / "Harbour.md").write_text("mine, edited after the preview\n", encoding="utf-8")
        with pytest.raises(ImportFailed) as failed:
            await engine.worldinfo.run_import(plan)
        return failed.value

    failed = run.run(go)
    assert "Harbour.md" in str(failed) and "removed again" in str(failed)
    assert failed.removed == ("Beacon.md",) and failed.left == ()
    assert files_under(run.vault) == ["Harbour.md"]
    assert (run.vault / "Harbour.md").read_text(encoding="utf-8") == "mine, edited after the preview\n"


# -- failing, cancelling, undoing --------------------------------------------------------------------


class FailingWriter(NoteWriter):
    """A real note writer whose `fail_at`-th create raises, as a full disk or a bug would."""

    def __init__(self, *args, fail_at: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fail_at = fail_at
        self.calls = 0

    async def create(self, *args, **kwargs):  # type: ignore[override]  # a test double takes what create takes
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError(28, "No space left on device")
        return await super().create(*args, **kwargs)


def test_a_crash_on_note_k_leaves_none_of_the_import_in_the_vault(run: EngineRun):
    (run.vault / "Keep.md").write_text(lore_text("Keep", ("keep",)), encoding="utf-8")

    async def go(engine: Engine):
        writer = FailingWriter(
            lambda: engine.sources, history=engine.writer.history, on_written=engine.note_written, fail_at=7
        )
        wi = WorldInfoService(
            writer, sources=lambda: engine.sources, snapshot=lambda: engine.snapshot, tags=lambda: engine.tag_config
        )
        plan = await wi.plan_import(
            WorldInfoService.read_book(many_entries(12), "Twelve"), vault=VAULT, folder="Lore", collision="rename"
        )
        with pytest.raises(ImportFailed) as failed:
            await wi.run_import(plan)
        history = [r for r in writer.history.recent(100) if r.feature.startswith("wi-import")]
        return failed.value, history, engine.snapshot

    failed, history, snapshot = run.run(go)
    message = str(failed)
    assert "entry 7 of 12" in message and "No space left on device" in message and "vault is as it was" in message
    # Entries 1-6, and any the other writers had started before the failure, were removed again.
    assert len(failed.removed) >= 6 and len(failed.left) == 0
    assert files_under(run.vault) == ["Keep.md"]
    assert [e.title for e in snapshot.entries] == ["Keep"]
    creates = [r for r in history if r.action == "create"]
    assert len(creates) == len(failed.removed) and all(r.undone for r in creates)
    assert sum(r.action == "undo" for r in history) == len(creates)


def test_cancel_mid_import_removes_what_was_written(run: EngineRun):
    async def go(engine: Engine):
        cancel = threading.Event()

        def progress(done: int, total: int) -> None:
            if done == 5:
                cancel.set()

        plan = await engine.worldinfo.plan_import(
            WorldInfoService.read_book(many_entries(20), "Twenty"), vault=VAULT, folder="", collision="rename"
        )
        result = await engine.worldinfo.run_import(plan, progress=progress, cancel=cancel)
        return result, len(engine.snapshot)

    result, indexed = run.run(go)
    assert result.cancelled and result.written == ()
    # The five done, and the few the other writers had started before the cancel, were removed.
    assert 5 <= len(result.removed) < 20 and result.left == ()
    assert files_under(run.vault) == [] and indexed == 0


def test_cancel_import_by_batch_from_another_thread(run: EngineRun):
    async def go(engine: Engine):
        wi = engine.worldinfo
        plan = await wi.plan_import(
            WorldInfoService.read_book(many_entries(30), "Thirty"), vault=VAULT, folder="", collision="rename"
        )
        stopper: list[threading.Thread] = []

        def progress(done: int, total: int) -> None:
            if done == 3:
                [batch] = wi.running
                stopper.append(threading.Thread(target=wi.cancel_import, args=(batch,)))
                stopper[0].start()
                stopper[0].join()

        result = await wi.run_import(plan, progress=progress)
        assert wi.running == () and not wi.cancel_import()
        return result

    result = run.run(go)
    assert result.cancelled and files_under(run.vault) == []


def test_an_import_whose_task_is_cancelled_removes_what_it_wrote_before_it_ends(run: EngineRun):
    """The app quitting mid-import cancels the task: the writes under way finish (recorded), then
    every one is undone, then the cancel goes on."""
    import asyncio

    async def go(engine: Engine):
        plan = await engine.worldinfo.plan_import(
            WorldInfoService.read_book(many_entries(30), "Thirty"), vault=VAULT, folder="", collision="rename"
        )
        task: asyncio.Task | None = None

        def progress(done: int, total: int) -> None:
            if done == 4 and task is not None:
                task.cancel()

        task = asyncio.create_task(engine.worldinfo.run_import(plan, progress=progress))
        with pytest.raises(asyncio.CancelledError):
            await task
        history = engine.writer.history.recent(100)
        return history, engine.worldinfo.running

    history, running = run.run(go)
    assert files_under(run.vault) == [] and running == ()
    creates = [r for r in history if r.action == "create"]
    assert creates and all(r.undone for r in creates)


def test_undo_of_the_whole_import_and_its_refusals(run: EngineRun):
    async def go(engine: Engine):
        wi = engine.worldinfo
        plan = await wi.plan_import(
            WorldInfoService.read_book(many_entries(10), "Ten"), vault=VAULT, folder="Lore", collision="rename"
        )
        result = await wi.run_import(plan)
        (run.vault / "Lore" / "Place 00003.md").write_text("my edit\n", encoding="utf-8")
        undo = await wi.undo_import(result.batch)
        again = await wi.undo_import(result.batch)  # the edited note is still in the way, and still kept
        assert again.undone == () and [c.path for c in again.conflicts] == ["Lore/Place 00003.md"]
        small = await wi.plan_import(book_of(HARBOUR), vault=VAULT, folder="", collision="rename")
        clean = await wi.run_import(small)
        assert (await wi.undo_import(clean.batch)).complete
        with pytest.raises(WriteRefused, match="already undone"):
            await wi.undo_import(clean.batch)
        with pytest.raises(NotFound):
            await wi.undo_import("wi-no-such-batch")
        return undo, [e.title for e in engine.snapshot.entries]

    undo, titles = run.run(go)
    assert len(undo.undone) == 9
    [conflict] = undo.conflicts
    assert conflict.path == "Lore/Place 00003.md"
    assert files_under(run.vault) == ["Lore/Place 00003.md"]
    # The undone notes left the index; the hand-edited one is the watcher's to re-read (it is off here).
    assert titles in ([], ["Place 00003"])


# -- refusals before anything is written -------------------------------------------------------------


@pytest.mark.parametrize(
    "folder", ["../outside", "/abs", "Lore/../..", ".hidden", "Lore/.obsidian", "C:\\x", "a\x00b", "x" * 256]
)
def test_a_folder_outside_the_vault_or_hidden_is_refused(run: EngineRun, folder: str):
    async def go(engine: Engine):
        with pytest.raises(InputError, match="import folder"):
            await engine.worldinfo.plan_import(book_of(HARBOUR), vault=VAULT, folder=folder, collision="rename")

    run.run(go)
    assert files_under(run.vault) == []


def test_unknown_vault_and_collision_choice_are_refused(run: EngineRun):
    async def go(engine: Engine):
        with pytest.raises(NotFound, match="no vault is named"):
            await engine.worldinfo.plan_import(book_of(HARBOUR), vault="other", folder="", collision="rename")
        with pytest.raises(InputError, match="collision"):
            await engine.worldinfo.plan_import(book_of(HARBOUR), vault=VAULT, folder="", collision="merge")  # type: ignore[arg-type]  # a bad value on purpose

    run.run(go)


def test_the_bundled_sample_vault_is_not_imported_into(tmp_path: Path):
    import asyncio

    from dle_desktop.engine.engine import SAMPLE_VAULT_NAME
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings

    engine = Engine(AppPaths(tmp_path, tmp_path).ensure(), Settings(), SecretStore(use_keyring=False), use_cache=False)
    with pytest.raises(WriteRefused, match="read-only"):
        asyncio.run(engine.worldinfo.plan_import(book_of(HARBOUR), vault=SAMPLE_VAULT_NAME, collision="rename"))
