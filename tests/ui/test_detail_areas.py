"""Issue 21.10: at the default 1200x760 the text that matters is on screen, not only in tooltips.
Selecting a health problem or a verdict shows its whole text in a read-only, wrapped, selectable
area below the list, and the verdict list gets the room of the Test a chat panel."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit, QTextBrowser, QTextEdit

from tests.ui.conftest import wait_for

VERDICT_ROWS_MIN = 9  # it was 7 at 1200x760, with no room for the full text


async def _at_default_size(desk) -> None:
    window = desk.window
    window.show()
    window.resize(1200, 760)
    await asyncio.sleep(0.2)


def _readable(area) -> None:
    """Read-only, word-wrapped, selectable, and showing the whole text (no scrolling needed)."""
    assert isinstance(area, QTextEdit | QPlainTextEdit | QTextBrowser)
    assert area.isVisible() and area.isReadOnly()
    assert area.lineWrapMode() != QTextEdit.LineWrapMode.NoWrap
    assert area.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    assert area.verticalScrollBar().maximum() == 0, "the selected row's text fits without scrolling"


def test_a_selected_health_problem_is_shown_in_full_below_the_list(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    health = view.health

    async def scenario():
        await wait_for(lambda: health.topLevelItemCount() == 4, what="health groups")
        await _at_default_size(desk)
        warnings = health.topLevelItem(1)
        warnings.setExpanded(True)
        longest = max((warnings.child(i) for i in range(warnings.childCount())), key=lambda it: len(it.text(1)))
        message = longest.text(1)
        # the column cuts it: that is why it needs the area
        assert health.tips.shown_text(health, health.indexFromItem(longest, 1)) != message
        health.setCurrentItem(longest)
        await asyncio.sleep(0.1)
        area = health.detail
        text = area.toPlainText()
        assert message in text and longest.text(0) in text and longest.text(2) in text
        _readable(area)
        # a not-indexed note says its reason there too
        skipped = health.topLevelItem(3)
        skipped.setExpanded(True)
        health.setCurrentItem(skipped.child(0))
        assert skipped.child(0).text(1) in area.toPlainText()
        # a group row: what to do, not the last problem's text
        health.setCurrentItem(warnings)
        assert message not in area.toPlainText()

    qloop.run_until_complete(scenario())


def test_a_selected_verdict_is_shown_in_full_and_the_list_has_the_room(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    panel = view.test_panel

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await _at_default_size(desk)
        view.right_tabs.setCurrentWidget(panel)
        assert await panel.run_async(), panel.status.text()
        await asyncio.sleep(0.2)
        rows = panel.proxy.rowCount()
        row = max(range(rows), key=lambda r: len(panel.proxy.index(r, 3).data()))
        reason = panel.proxy.index(row, 3).data()
        assert panel.tips.shown_text(panel.verdicts, panel.proxy.index(row, 3)) != reason
        panel.verdicts.selectRow(row)
        await asyncio.sleep(0.1)
        area = panel.verdict_detail
        text = area.toPlainText()
        title, stage, outcome = (panel.proxy.index(row, c).data() for c in range(3))
        assert reason in text and title in text and stage in text and outcome in text
        _readable(area)
        table = panel.verdicts
        shown = table.viewport().height() // table.verticalHeader().defaultSectionSize()
        assert shown >= VERDICT_ROWS_MIN, f"{shown} verdict rows on screen"

    qloop.run_until_complete(scenario())


def test_the_selected_problem_stays_selected_and_shown_when_the_health_check_runs_again(
    make_desktop, vault_copy, qloop
):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    health = view.health

    async def scenario():
        await wait_for(lambda: health.topLevelItemCount() == 4, what="health groups")
        warnings = health.topLevelItem(1)
        chosen = warnings.child(1)
        entry, message = chosen.text(0), chosen.text(1)
        health.setCurrentItem(chosen)
        first_list = health.topLevelItem(1)
        # an edit on disk: a sync, then a new health report replaces the list
        (vault_copy / "Brand New Place.md").write_text(
            "---\ntags: [lorebook]\nkeys: [brand new]\n---\n# Brand New Place\nFresh lore.\n", encoding="utf-8"
        )
        await wait_for(lambda: view.model.rowCount() == 62, what="the new entry")
        await wait_for(lambda: health.topLevelItem(1) is not first_list, what="a new health report")
        current = health.currentItem()
        assert current is not None and (current.text(0), current.text(1)) == (entry, message)
        assert message in health.detail.toPlainText()

    qloop.run_until_complete(scenario())
