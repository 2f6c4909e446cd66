"""A large index's table rows are made off the GUI thread (issue 24): the table keeps the
previous rows until the new ones are ready, the rows match what the model makes itself, and an
index overtaken by a newer one while its rows are made is never shown."""

from __future__ import annotations

import asyncio
import dataclasses

from PySide6.QtCore import Qt

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
        prepared = PreparedRows.of(entries)
        own = view.model
        assert prepared.search == own.search_texts()
        assert prepared.rows == {e.uid: i for i, e in enumerate(entries)}
        assert prepared.sort_keys[0] == own.sort_keys(0)
        assert all(prepared.sort_keys[c] == own.sort_keys(c) for c in range(7))  # every column ahead
        assert 8 not in prepared.sort_keys  # usage: read on the GUI thread when sorted by

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


def test_a_large_index_is_shown_with_its_sorted_columns_keys_only(make_desktop, vault_copy, qloop, monkeypatch):
    """The rows come with the sorted column's keys only (the others held a restart's entries
    back); a click on another header makes that column's keys, the same as made ahead."""
    monkeypatch.setattr(main_window, "ROWS_OFF_THREAD", 10)  # the sample vault counts as large here
    made: list[tuple[int, ...] | None] = []
    prepare = main_window._prepare_rows

    def recording(snapshot, columns=None):
        made.append(tuple(columns) if columns is not None else None)
        return prepare(snapshot, columns)

    monkeypatch.setattr(main_window, "_prepare_rows", recording)
    desk = make_desktop(vault_copy)
    win = desk.window
    view = win.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="index")
        view.table.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # Keys
        fewer = build_snapshot([VaultSlice("vault", tuple(view.snapshot.entries[:50]))])
        made.clear()
        win.on_index(fewer, None, "sync")
        await wait_for(lambda: view.model.rowCount() == 50, what="the new index")
        assert made == [(2,)] and set(view.model._sort_keys) == {2}
        whole = PreparedRows.of(fewer.entries)
        view.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # Title: its keys made on the click
        assert view.model._sort_keys[0] == whole.sort_keys[0]
        order = sorted(range(50), key=whole.sort_keys[0].__getitem__)
        assert [view.proxy.index(r, 0).data() for r in range(3)] == [fewer.entries[i].title for i in order[:3]]

    qloop.run_until_complete(scenario())


def test_a_first_index_fills_the_table_as_it_reads(make_desktop, tmp_path, qloop, monkeypatch):
    import time

    from dle_desktop.vault import indexer as indexer_module
    from dle_desktop.vault.sources import FolderSource
    from tests.vault.test_partial_index import write_vault

    monkeypatch.setattr(indexer_module, "BATCH", 10)
    monkeypatch.setattr(indexer_module, "PARTIAL_EVERY_S", 0.0)
    read = FolderSource.read_sync

    def slow_read(self, *args, **kwargs):  # a slow disk: the window has time to show each batch
        time.sleep(0.01)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(FolderSource, "read_sync", slow_read)
    vault = tmp_path / "fresh"
    vault.mkdir()
    write_vault(vault, 60)
    desk = make_desktop(vault, data_dir=tmp_path / "fresh-data")  # no cache: a first index
    win = desk.window
    view = win.vault_view
    counts: list[int] = []
    labels: list[str] = []
    view.model.modelReset.connect(lambda: counts.append(view.model.rowCount()))
    view.model.modelReset.connect(lambda: labels.append(win.index_label.text()))

    async def scenario():
        await wait_for(lambda: counts and counts[-1] == 60 and win._snapshot is not None, what="the whole index")

    qloop.run_until_complete(scenario())
    assert any(0 < c < 60 for c in counts), counts  # notes shown before the index was done
    assert any(label.startswith("Indexing…") for label in labels)
    assert "60 entries" in win.index_label.text()


def test_the_same_index_again_keeps_the_table_as_it_is(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win = desk.window
    view = win.vault_view
    resets: list[int] = []

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="index")
        view.model.modelReset.connect(lambda: resets.append(1))
        view.filter.setText("lamp")
        shown = view.proxy.rowCount()
        win.on_index(view.snapshot, None, "start")  # a sync that found nothing new sends it again
        await asyncio.sleep(0.1)
        assert resets == [] and view.proxy.rowCount() == shown and view.filter.text() == "lamp"
        assert "(from cache" not in win.index_label.text() and "61 entries" in win.index_label.text()

    qloop.run_until_complete(scenario())


def test_a_new_snapshot_of_the_very_same_entries_keeps_the_table_as_it_is(make_desktop, vault_copy, qloop):
    """The reconcile after a restart publishes a new snapshot of the cached entries (its cache
    warning gone): the table must not reset under the user. A snapshot with one entry changed
    does reset it."""
    desk = make_desktop(vault_copy)
    win = desk.window
    view = win.vault_view
    resets: list[int] = []

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="index")
        shown = view.snapshot
        view.model.modelReset.connect(lambda: resets.append(1))
        view.filter.setText("lamp")
        again = build_snapshot(shown.slices, shown.field_definitions, shown.conflict_mode, previous=shown)
        assert again is not shown and all(a is b for a, b in zip(again.entries, shown.entries, strict=True))
        win.on_index(again, None, "start")
        await asyncio.sleep(0.1)
        await wait_for(lambda: view.snapshot is again, what="the same entries' snapshot adopted")
        assert resets == [] and view.filter.text() == "lamp"
        assert "61 entries" in win.index_label.text()
        first = shown.slices[0]
        changed = dataclasses.replace(first.entries[0], priority=first.entries[0].priority + 1)
        edited = dataclasses.replace(first, entries=(changed, *first.entries[1:]))
        other = build_snapshot(
            (edited, *shown.slices[1:]), shown.field_definitions, shown.conflict_mode, previous=shown
        )
        win.on_index(other, None, "file change")
        await wait_for(lambda: view.snapshot is other, what="the changed index shown")
        assert resets == [1]

    qloop.run_until_complete(scenario())
