"""A large index's table rows are made off the GUI thread (issue 24): the table keeps the
previous rows until the new ones are ready, the rows match what the model makes itself, and an
index overtaken by a newer one while its rows are made is never shown."""

from __future__ import annotations

import asyncio

from dle_desktop.core.index import VaultSlice, build_snapshot
from dle_desktop.ui import main_window
from dle_desktop.ui.vault.entries_model import PreparedRows
from tests.ui.conftest import wait_for


def test_prepared_rows_are_the_models_own(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="index")
        entries = view.snapshot.entries
        prepared = PreparedRows.of(entries, sort_column=0)
        own = view.model
        assert prepared.search == own.search_texts()
        assert prepared.rows == {e.uid: i for i, e in enumerate(entries)}
        assert prepared.sort_keys[0] == own.sort_keys(0)
        assert PreparedRows.of(entries, sort_column=8).sort_keys == {}  # usage: read on the GUI thread

    qloop.run_until_complete(scenario())


def test_a_large_index_shows_after_its_rows_are_made_and_only_the_last(make_desktop, vault_copy, qloop, monkeypatch):
    monkeypatch.setattr(main_window, "ROWS_OFF_THREAD", 10)  # the sample vault counts as large here
    desk = make_desktop(vault_copy)
    win = desk.window
    view = win.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="index")
        full = view.snapshot
        fewer = build_snapshot([VaultSlice("vault", tuple(full.entries[:40]))])
        fewest = build_snapshot([VaultSlice("vault", tuple(full.entries[:30]))])
        win.on_index(fewer, None, "sync")
        assert view.model.rowCount() == 61  # the old rows stay while the new ones are made
        win.on_index(fewest, None, "sync")  # overtakes the first before its rows are shown
        await wait_for(lambda: view.model.rowCount() == 30, what="the last index")
        await asyncio.sleep(0.2)
        assert view.model.rowCount() == 30 and view.snapshot is fewest
        assert view.count_label.text() == "30 entries"

    qloop.run_until_complete(scenario())
