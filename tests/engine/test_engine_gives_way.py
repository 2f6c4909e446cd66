"""The engine's long background work gives way to the window's user between its pieces
(`core.user_activity`): a reconcile's listing (per folder) and publishing, the health check (per
500 entries, on a thread of its own), the work after an index. Real folders, a real engine; an
activity that records where it was asked to give way."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback

import pytest

from dle_desktop.core.health import GIVE_WAY_EVERY
from dle_desktop.core.user_activity import UserActivity
from dle_desktop.engine.engine import Engine
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource


class RecordingActivity(UserActivity):
    """Gives way at once, noting who asked and on which thread."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str]] = []

    def _note(self) -> None:
        caller = traceback.extract_stack(limit=3)[0]
        self.asked.append((caller.name, threading.current_thread().name))

    def give_way(self) -> float:
        self._note()
        return super().give_way()

    async def give_way_async(self) -> float:
        self._note()
        return await super().give_way_async()

    def callers(self) -> list[str]:
        return [name for name, _thread in self.asked]


@pytest.fixture
def paths(tmp_path) -> AppPaths:
    return AppPaths(tmp_path / "data", tmp_path / "data").ensure()


def big_vault(make_vault, lore, folders: int = 3, per_folder: int = 400):
    return make_vault(
        {
            f"F{f}/Note {f}-{i}.md": lore(f"Note {f}-{i}", keys=[f"k{f}x{i}"])
            for f in range(folders)
            for i in range(per_folder)
        }
    )


def engine_with(paths, root, activity: UserActivity) -> Engine:
    engine = Engine(paths, Settings(), SecretStore(use_keyring=False), vault_override=[FolderSource("v", root)])
    engine.activity = engine.indexer.activity = activity
    return engine


def test_a_listing_gives_way_once_per_folder(make_vault, lore):
    root = make_vault({"A.md": lore("A"), "B/C.md": lore("C"), "B/D/E.md": lore("E"), "F/G.md": lore("G")})
    asked: list[int] = []
    listing = FolderSource("v", root).list_sync(lambda: asked.append(1) or 0.0)
    assert len(listing.stamps) == 4
    assert len(asked) == 4, "the vault folder and its three folders"


def test_a_sync_gives_way_while_listing_and_before_it_publishes(paths, make_vault, lore):
    root = big_vault(make_vault, lore, folders=2, per_folder=3)
    activity = RecordingActivity()
    engine = engine_with(paths, root, activity)
    result = asyncio.run(engine.indexer.sync_all())
    assert len(result.snapshot.entries) == 6
    callers = activity.callers()
    assert callers.count("walk") == 3, "the vault folder and its two folders"
    assert "sync_all" in callers, "before the new snapshot is built"


def test_the_health_check_gives_way_every_few_hundred_entries_on_a_thread_of_its_own(paths, make_vault, lore):
    root = big_vault(make_vault, lore)
    activity = RecordingActivity()
    engine = engine_with(paths, root, activity)

    async def scenario():
        await engine.indexer.sync_all()
        activity.asked.clear()
        loop_thread = threading.current_thread().name
        report = await engine.health_in_background()
        return loop_thread, report

    loop_thread, report = asyncio.run(scenario())
    checks = [thread for name, thread in activity.asked if name == "_entry_checks"]
    assert len(checks) == -(-1200 // GIVE_WAY_EVERY)
    assert all(thread != loop_thread for thread in checks), "the engine loop serves requests meanwhile"
    same = engine.health()
    assert [f.code for f in report.errors + report.warnings + report.info] == [
        f.code for f in same.errors + same.warnings + same.info
    ]


def test_the_work_after_a_new_index_gives_way_between_its_pieces(paths, make_vault, lore):
    root = big_vault(make_vault, lore, folders=1, per_folder=5)
    activity = RecordingActivity()
    engine = engine_with(paths, root, activity)

    async def scenario() -> None:
        await engine.start(initial_sync=False, watch=False)
        await engine.sync_now()
        for _ in range(200):  # the after-index task runs behind the sync
            if activity.callers().count("_after_index") >= 3:
                break
            await asyncio.sleep(0.01)
        await engine.stop()

    asyncio.run(scenario())
    assert activity.callers().count("_after_index") == 3, "backlinks, the keyword automaton, the cache"


def test_a_user_acting_holds_a_sync_back_and_it_finishes_once_they_stop(paths, make_vault, lore):
    root = big_vault(make_vault, lore, folders=2, per_folder=2)
    activity = UserActivity(quiet_s=0.2, longest_wait_s=5.0)
    engine = engine_with(paths, root, activity)
    activity.user_acted()
    result = asyncio.run(engine.indexer.sync_all())
    assert len(result.snapshot.entries) == 4
    assert activity.waited_s > 0


def test_the_watcher_and_the_reconcile_after_a_start_wait_for_a_quiet_moment(paths, make_vault, lore):
    """Watching walks every folder (Python on the engine loop): it starts once the window's user
    is still, before the reconcile lists the notes, so no change falls between the two; the
    writer the first chosen entry needs is made in a quiet moment after."""
    root = big_vault(make_vault, lore, folders=2, per_folder=2)
    seen: list[tuple[str, bool, bool]] = []

    class Watching(UserActivity):
        async def give_way_async(self) -> float:
            caller = sys._getframe(1).f_code.co_name
            seen.append((caller, engine.watcher is None, engine._writer is None))
            return await super().give_way_async()

    engine = engine_with(paths, root, Watching())

    async def scenario() -> None:
        await engine.start(watch=True)
        await engine.wait_ready()
        assert engine.watcher is not None and engine._writer is not None
        await engine.stop()

    asyncio.run(scenario())
    ours = [
        (watcher_missing, writer_missing)
        for caller, watcher_missing, writer_missing in seen
        if caller == "_watch_and_reconcile"
    ]
    assert ours == [(True, True), (False, True)], "before watching, then before making the writer"


def test_a_writer_that_cannot_be_made_ahead_does_not_fail_the_start(paths, make_vault, lore, monkeypatch):
    """Made ahead only to spare the first click: if its history cannot be opened, the start
    goes on and the first real use reports it."""
    from dle_desktop.vault.write_history import WriteHistory

    def refuse(_data_dir):
        raise OSError("the write history cannot be opened (a test)")

    monkeypatch.setattr(WriteHistory, "in_data_dir", staticmethod(refuse))
    root = big_vault(make_vault, lore, folders=1, per_folder=2)
    engine = engine_with(paths, root, UserActivity())

    async def scenario() -> None:
        await engine.start(watch=False)
        snapshot = await engine.wait_ready()
        assert len(snapshot.entries) == 2 and engine._writer is None
        with pytest.raises(OSError, match="cannot be opened"):
            engine.writer  # noqa: B018 - the first real use
        await engine.stop()

    asyncio.run(scenario())
