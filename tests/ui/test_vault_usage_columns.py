"""Issue 22 in the app: the Vault view's Matched, Injected and Last injected columns (each entry's
use over every chat, what /analytics answers), read off the GUI thread after a sync, sortable, at
set widths that stay fast at 10,000 entries; the Graph view's frequency colours read the same
injection counts."""

from __future__ import annotations

import asyncio
import time

import httpx
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QHeaderView

from dle_desktop.core.entry import Entry
from dle_desktop.ui.vault.entries_model import COLUMNS, INJECTED, LAST_INJECTED, MATCHED, EntriesModel
from dle_desktop.ui.vault.entries_proxy import EntriesFilter
from dle_desktop.ui.vault.usage_columns import MIN_GAP, WIDTHS
from tests.ui.conftest import wait_for

API = "/api/dle/v1"


def _http(desk, method: str, path: str, **kw) -> httpx.Response:
    with httpx.Client(base_url=desk.runtime.server.url, timeout=30) as client:
        r = client.request(method, API + path, headers={"X-DLE-Token": desk.runtime.server_token()}, **kw)
    assert r.status_code == 200, r.text
    return r


def _messages(*texts: str) -> list[dict]:
    return [{"name": "User" if i % 2 == 0 else "N", "mes": t, "is_user": i % 2 == 0} for i, t in enumerate(texts)]


def _row(view, title: str) -> int:
    return next(r for r in range(view.proxy.rowCount()) if view.proxy.index(r, 0).data() == title)


def _place(row: dict) -> tuple[str, str]:
    return row["vault"], row["path"]


def _cell(view, title: str, column: int) -> str:
    return view.proxy.index(_row(view, title), column).data()


def test_the_counts_follow_the_generations_and_match_analytics_and_the_graph(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    view = win.vault_view

    async def scenario() -> None:
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: view.usage.reads >= 1, what="the first read")
        assert _cell(view, "Lantern Quay", INJECTED) == 0 and _cell(view, "Lantern Quay", LAST_INJECTED) == ""
        said = ("We reach Lantern Quay.", "Yes.", "Tamsin Reed waits on Lantern Quay.")
        for chat, upto in (("one", 1), ("one", 3), ("two", 1)):
            body = {"chat_id": chat, "messages": _messages(*said[:upto])}
            await asyncio.to_thread(_http, desk, "POST", "/retrieve", json=body)
        before = view.usage.reads
        win.sync_action.trigger()  # a sync reads the counts again
        await wait_for(lambda: view.usage.reads > before, what="a read after the sync")
        table = (await asyncio.to_thread(_http, desk, "GET", "/analytics")).json()["entries"]
        for row in table:  # every entry shows what /analytics answers
            r = view.model.row_of(f"{row['vault']}\x00{row['path']}")
            shown = [view.model.index(r, c).data(Qt.ItemDataRole.DisplayRole) for c in (MATCHED, INJECTED)]
            assert shown == [row["matched"], row["injected"]], row["title"]
        # what the view reads: the rows of the entries used at all, no row for the others
        used = (await win.bridge.entry_usage())["entries"]
        expected = [r for r in table if r["matched"] or r["injected"]]
        assert sorted(used, key=_place) == sorted(expected, key=_place) and len(used) < len(table)
        quay = next(r for r in table if r["title"] == "Lantern Quay")
        assert quay["injected"] >= 2 and _cell(view, "Lantern Quay", LAST_INJECTED).startswith("today ")

        view.table.sortByColumn(INJECTED, Qt.SortOrder.DescendingOrder)
        shown = [view.proxy.index(r, INJECTED).data() for r in range(view.proxy.rowCount())]
        assert shown == sorted(shown, reverse=True) and shown[0] == max(r["injected"] for r in table)
        view.table.sortByColumn(LAST_INJECTED, Qt.SortOrder.DescendingOrder)
        assert view.proxy.index(0, LAST_INJECTED).data().startswith("today ")

        # The Graph view's frequency colours: the same injection counts.
        win.tabs.setCurrentWidget(win.graph_view)
        graph = win.graph_view
        await wait_for(lambda: graph.result is not None and graph.result.frequency, timeout=60, what="the graph")
        for row in table:
            key = f"{row['vault']}:{row['title']}"
            assert graph.result.frequency.get(key, 0) == row["injected"], row["title"]
        assert graph.result.frequency_chats == 2

    qloop.run_until_complete(scenario())


def test_the_columns_have_set_widths_and_a_narrow_window_scrolls_to_them(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    header = view.table.horizontalHeader()
    assert [view.model.headerData(c, Qt.Orientation.Horizontal) for c in (MATCHED, INJECTED, LAST_INJECTED)] == [
        "Matched",
        "Injected",
        "Last injected",
    ]
    for column, width in WIDTHS.items():
        assert header.sectionResizeMode(column) != QHeaderView.ResizeMode.ResizeToContents
        assert header.sectionSize(column) == width
    assert "every chat" in view.model.headerData(INJECTED, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)

    async def scenario() -> None:
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        desk.window.resize(1920, 1080)
        await asyncio.sleep(0.3)
        right = header.sectionViewportPosition(LAST_INJECTED) + header.sectionSize(LAST_INJECTED)
        assert right <= view.table.viewport().width() + 1  # room for all: on screen
        assert header.sectionResizeMode(2) == QHeaderView.ResizeMode.Stretch
        desk.window.resize(1000, 650)
        await asyncio.sleep(0.3)
        assert header.sectionSize(2) >= 110  # Keys keeps its room; the counts are scrolled to
        assert view.table.horizontalScrollBar().maximum() > 0

    qloop.run_until_complete(scenario())


def test_a_header_saved_before_the_columns_existed_gives_them_their_widths(make_desktop, vault_copy, tmp_path, qloop):
    from PySide6.QtCore import QSettings

    data = tmp_path / "state-data"
    first = make_desktop(vault_copy, data_dir=data)
    first.window.vault_view.table.setColumnWidth(3, 75)
    first.window.vault_view.table.setColumnWidth(INJECTED, 100)  # a width the user chose: kept
    first.quit()
    second = make_desktop(vault_copy, data_dir=data)
    header = second.window.vault_view.table.horizontalHeader()
    assert header.sectionSize(3) == 75 and header.sectionSize(INJECTED) == 100
    second.quit()

    store = QSettings(str(second.runtime.ctx.paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
    store.setValue("vault/header_columns", 7)  # as a version without them saved it (Qt gives them 100 px)
    store.sync()
    third = make_desktop(vault_copy, data_dir=data)
    header = third.window.vault_view.table.horizontalHeader()
    assert header.sectionSize(3) == 75  # the widths the user chose stay
    assert [header.sectionSize(c) for c in WIDTHS] == list(WIDTHS.values())


def _entries(n: int) -> list[Entry]:
    return [
        Entry("v", f"F{i % 50}/E{i}.md", f"Entry {i:05d}", "x", f"h{i}", 10, keys=(f"k{i}",), priority=50)
        for i in range(n)
    ]


def test_ten_thousand_entries_take_their_counts_while_sorted_and_sort_by_them(qapp):
    """New counts arrive while another column sorts the table; sorting by them orders the 10,000
    rows by the counts. (How long that takes is measured by the benchmarks, not asserted here.)"""
    model = EntriesModel()
    proxy = EntriesFilter()
    proxy.setSourceModel(model)
    entries = _entries(10_000)
    model.set_entries(entries)
    proxy.sort(0, Qt.SortOrder.DescendingOrder)
    usage = {e.uid: (i % 7, i % 5, time.time() - i) for i, e in enumerate(entries) if i % 3}
    model.set_usage(usage)  # while another column sorts the table
    assert proxy.index(0, 0, QModelIndex()).data() == "Entry 09999"  # the title sort held
    proxy.sort(LAST_INJECTED, Qt.SortOrder.DescendingOrder)
    assert proxy.index(0, LAST_INJECTED).data().startswith("today ")
    assert proxy.index(0, 0, QModelIndex()).data() == "Entry 00001"  # the newest injection
    never = proxy.index(proxy.rowCount() - 1, 0, QModelIndex()).data()
    assert int(never.split()[-1]) % 3 == 0  # an entry never injected sorts last
    assert not str(proxy.index(proxy.rowCount() - 1, LAST_INJECTED).data() or "").startswith("today")
    assert model.columnCount() == len(COLUMNS)


def test_reads_are_at_most_every_few_seconds(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    usage = desk.window.vault_view.usage

    async def scenario() -> None:
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: usage.reads >= 1 and not usage._reading, what="the first read")
        first = usage.reads
        started = time.monotonic()
        for _ in range(5):  # a burst of syncs and shows: one read, put off until MIN_GAP has passed
            usage.request()
        await asyncio.sleep(0.3)
        assert usage.reads == first
        await wait_for(lambda: usage.reads == first + 1, timeout=10, what="the put-off read")
        await asyncio.sleep(0.5)
        assert usage.reads == first + 1
        assert time.monotonic() - started >= MIN_GAP - 1

    qloop.run_until_complete(scenario())


def test_hiding_columns_from_the_header_menu_makes_room_for_the_counts(make_desktop, vault_copy, tmp_path, qloop):
    data = tmp_path / "state-data"
    desk = make_desktop(vault_copy, data_dir=data)
    view = desk.window.vault_view
    header = view.table.horizontalHeader()

    def on_screen(column: int) -> bool:
        right = header.sectionViewportPosition(column) + header.sectionSize(column)
        return not header.isSectionHidden(column) and right <= view.table.viewport().width() + 1

    async def scenario() -> None:
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        desk.window.resize(1200, 760)
        await asyncio.sleep(0.3)
        assert not on_screen(LAST_INJECTED)
        menu = view.column_menu.build()
        names = [a.text() for a in menu.actions()]
        assert "Vault" not in names and names[0] == "Title" and not menu.actions()[0].isEnabled()
        for action in menu.actions():
            if action.text() in ("Folder", "Flags"):
                action.setChecked(False)
        await asyncio.sleep(0.3)
        assert header.isSectionHidden(1) and header.isSectionHidden(5)
        assert all(on_screen(c) for c in (0, 2, MATCHED, INJECTED, LAST_INJECTED))
        assert header.sectionSize(2) >= 110

    qloop.run_until_complete(scenario())
    desk.quit()
    again = make_desktop(vault_copy, data_dir=data)
    header = again.window.vault_view.table.horizontalHeader()
    assert header.isSectionHidden(1) and header.isSectionHidden(5)  # kept with the header's state
    assert not header.isSectionHidden(INJECTED)
