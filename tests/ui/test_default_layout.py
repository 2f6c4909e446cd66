"""The window at its default size (1200×760) on the sample vault: the entries table shows its
columns, the semantic strip and the Channels status are not cut, and text that a column does cut
is readable in its tooltip."""

from __future__ import annotations

import asyncio
import re

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QToolTip

from dle_desktop.state.settings import Settings
from dle_desktop.ui.channels.table import COLUMNS
from tests.ui.conftest import wait_for

ENTRY_COLUMNS = ("Title", "Folder", "Keys", "Priority", "Tokens", "Flags")


def shown(desk):
    window = desk.window
    window.show()
    QApplication.processEvents()
    assert (window.width(), window.height()) == (1200, 760)
    return window


async def settle():
    await asyncio.sleep(0.05)  # layouts and resizes run on the (qasync) event loop


def tooltip_of(view, index) -> str:
    """The tooltip a user sees when hovering the cell (a real tooltip event to the view)."""
    QToolTip.hideText()
    pos = view.visualRect(index).center()
    QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.ToolTip, pos, view.viewport().mapToGlobal(pos)))
    return QToolTip.text() if QToolTip.isVisible() else ""


def test_the_entries_table_shows_its_columns_and_the_strip_its_text(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, settings=Settings().replace(semantic_enabled=True))
    window = shown(desk)
    view = window.vault_view
    table, strip = view.table, view.semantic_strip

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: strip.state == "error", what="the strip's first news (no model here)")
        await settle()
        room = table.viewport().width()
        header = table.horizontalHeader()
        for col, name in enumerate(ENTRY_COLUMNS):
            assert view.model.headerData(col, Qt.Horizontal) == name
            assert not table.isColumnHidden(col)
            left = header.sectionViewportPosition(col)
            assert left >= 0 and left + header.sectionSize(col) <= room, f"{name} is out of view"
        for col in (0, 1):  # titles and folders are whole
            assert header.sectionSize(col) >= table.sizeHintForColumn(col), ENTRY_COLUMNS[col]
        # The strip's usual line is not squeezed to "Sem…"
        strip.set_status(
            {
                "state": "ready",
                "embedded": 61,
                "entries": 61,
                "done": 0,
                "total": 0,
                "model": "bge-small-en-v1.5-q8_0.gguf",
            }
        )
        await settle()
        assert strip.label.text() == strip.label.full_text
        assert strip.label.full_text.startswith("Semantic index: ready, 61 of 61 entries embedded")
        # Test a chat's controls no longer widen the right side
        view.right_tabs.setCurrentWidget(view.test_panel)
        await settle()
        assert view.main_split.sizes()[0] >= 680

    qloop.run_until_complete(scenario())


def test_cut_cells_show_their_whole_text_as_a_tooltip(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = shown(desk)
    view = window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await settle()
        rows = {view.proxy.index(r, 0).data(): r for r in range(view.proxy.rowCount())}
        folder = view.proxy.index(rows["Ashby Grell"], ENTRY_COLUMNS.index("Folder"))
        assert view.tips.cut_text(view.table, folder) is None  # whole: no tooltip needed
        assert tooltip_of(view.table, folder) == ""
        flags = view.proxy.index(rows["Fog of the Delta"], ENTRY_COLUMNS.index("Flags"))
        assert flags.data().startswith("outlet:") and view.tips.cut_text(view.table, flags) == flags.data()
        assert tooltip_of(view.table, flags) == flags.data()

    qloop.run_until_complete(scenario())


def test_notes_not_indexed_keep_their_line_number_in_view(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = shown(desk)
    health = window.vault_view.health

    async def scenario():
        await wait_for(lambda: health.topLevelItemCount() == 4, what="health groups")
        group = health.topLevelItem(3)
        assert group.text(0).startswith("Not indexed")
        group.setExpanded(True)
        with_lines = [
            group.child(i) for i in range(group.childCount()) if re.search(r"\(line \d+\)$", group.child(i).text(0))
        ]
        assert with_lines
        for item in with_lines:
            health.scrollToItem(item)
            await settle()
            index = health.indexFromItem(item, 0)
            line = re.search(r"\(line \d+\)$", item.text(0)).group(0)
            assert health.tips.shown_text(health, index).endswith(line), item.text(0)

    qloop.run_until_complete(scenario())


def test_the_channels_status_column_is_not_cut(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = shown(desk)
    window.tabs.setCurrentWidget(window.channels_view)
    panel = window.channels_view.channel_panel
    table = panel.table

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        await settle()
        status = COLUMNS.index("Status")
        for row in range(table.rowCount()):
            index = table.model().index(row, status)
            assert index.data() == "✗ no profile"
            assert panel.tips.cut_text(table, index) is None, index.data()
            assert "add one" in table.item(row, status).toolTip()  # the whole problem, advice included

    qloop.run_until_complete(scenario())


def test_a_split_squeezed_by_the_old_layout_is_not_restored(make_desktop, vault_copy, tmp_path, qloop):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QSplitter, QWidget

    from dle_desktop.state.paths import resolve_paths

    # What earlier versions saved: the entries side squeezed to 240 px by Test a chat's minimum width
    old = QSplitter()
    old.addWidget(QWidget())
    old.addWidget(QWidget())
    old.resize(1190, 600)
    old.setSizes([240, 940])
    data = tmp_path / "data"
    store = QSettings(str(resolve_paths(data).ensure().config_dir / "ui-state.ini"), QSettings.IniFormat)
    store.setValue("vault/main_split", old.saveState())
    store.sync()

    desk = make_desktop(vault_copy, data_dir=data)
    window = shown(desk)
    assert window.vault_view.main_split.sizes()[0] >= 680
    qloop.run_until_complete(wait_for(lambda: window.vault_view.model.rowCount() == 61))


def test_long_profile_and_model_names_leave_the_status_its_room(make_desktop, vault_copy, qloop):
    settings = Settings().replace(
        connection_profiles=[
            {
                "id": "p1",
                "name": "OpenRouter main account",
                "provider": "openai",
                "flavor": "openrouter",
                "model": "anthropic/claude-3.5-sonnet-20241022",
            }
        ],
        ai_search_profile_id="p1",
        librarian_connection_mode="proxy",
    )
    desk = make_desktop(vault_copy, settings=settings)
    window = shown(desk)
    window.tabs.setCurrentWidget(window.channels_view)
    panel = window.channels_view.channel_panel
    table = panel.table

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        await settle()
        status = COLUMNS.index("Status")
        texts = [table.item(r, status).text() for r in range(table.rowCount())]
        assert "✗ no model" in texts and "✓ ready" in texts
        for row in range(table.rowCount()):
            assert panel.tips.cut_text(table, table.model().index(row, status)) is None, texts[row]
        model = table.model().index(0, COLUMNS.index("Model"))
        assert model.data() == "anthropic/claude-3.5-sonnet-20241022"
        assert table.item(0, COLUMNS.index("Model")).toolTip() == model.data()  # cut or not, readable

    qloop.run_until_complete(scenario())
