"""Issue 21.9, the last two leftovers, measured on the real widgets (offscreen):
- at a 1000x650 window every channel's status can be read: its cell's text fits its column, and
  the selected channel's whole status (what is wrong and what to do) is in its detail ("In effect");
- the settings dialog at its own size: no page scrolls sideways, and every explanation wraps
  inside what the user sees."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import QPoint, QSize
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QScrollArea, QWidget

from dle_desktop.ai.channels import LABELS, resolve_channel
from dle_desktop.state.settings import CHANNELS, Settings
from dle_desktop.ui.channels.table import COLUMNS
from tests.ui.conftest import wait_for

#: the cell's own margins and the frame of the focus rectangle: what a column gives its text
CELL_PADDING = 8
SIZES = ((1000, 650), (1200, 760), (1920, 1080))


async def _settle(seconds: float = 0.15) -> None:
    """The qasync loop runs Qt's events (layouts, resizes) while this sleeps."""
    await asyncio.sleep(seconds)


def _every_status_kind() -> Settings:
    """One channel in each state the Status column can show."""
    profile = {"id": "p1", "name": "OpenRouter main account", "provider": "openai", "flavor": "openrouter"}
    return Settings().replace(
        connection_profiles=[{**profile, "model": "anthropic/claude-3.5-sonnet-20241022"}],
        ai_search_profile_id="p1",  # ready, but AI search itself is off
        auto_suggest_connection_mode="st",  # ready with a warning: 'st' mode uses AI search's connection
        librarian_connection_mode="proxy",  # a proxy with no model name
        scribe_connection_mode="profile",
        scribe_profile_id="gone",  # a profile that is not there any more
        ai_notepad_connection_mode="profile",  # no profile chosen
        optimize_keys_connection_mode="proxy",
        optimize_keys_proxy_url="localhost:8080",  # no http://
        optimize_keys_model="m",
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_channel_status_is_readable(make_desktop, vault_copy, qloop, size):
    settings = _every_status_kind()
    desk = make_desktop(vault_copy, settings=settings)
    window = desk.window
    panel = window.channels_view.channel_panel
    table = panel.table
    status = COLUMNS.index("Status")

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        window.show()
        window.resize(*size)
        window.tabs.setCurrentWidget(window.channels_view)
        await _settle()
        assert window.size() == QSize(*size)
        kinds = set()
        for row, channel in enumerate(CHANNELS):
            item = table.item(row, status)
            text = item.text()
            kinds.add(text)
            room = table.columnWidth(status) - CELL_PADDING
            needs = QFontMetrics(table.font()).horizontalAdvance(text)
            assert needs <= room, f"{LABELS[channel]}: {text!r} needs {needs} px, its column gives {room}"
            assert panel.tips.cut_text(table, table.model().index(row, status)) is None, text
            # the whole status, advice included, is the tooltip and, once selected, in the detail
            whole = " ".join(item.toolTip().split())
            problem = resolve_channel(settings, channel).problem
            assert whole and (problem is None or problem.split(":")[0].split(" (")[0] in whole), (whole, problem)
            table.selectRow(row)
            await _settle(0.05)
            assert panel.detail.title() == LABELS[channel]
            if not text.startswith("✓"):  # "ready" says it all; anything else is explained
                assert whole in " ".join(panel.resolved.text().split()), (whole, panel.resolved.text())
            assert panel.resolved.isVisible() and panel.resolved.wordWrap()
        assert len(kinds) >= 5, kinds  # the states differ in the column itself, not only in the detail
        # and the table's columns are all on screen: none pushed past the right edge
        header = table.horizontalHeader()
        right = max(header.sectionViewportPosition(c) + header.sectionSize(c) for c in range(len(COLUMNS)))
        assert right <= table.viewport().width() + 1

    qloop.run_until_complete(scenario())


def _clipped_labels(dialog) -> list[str]:
    """Every wrapped label on the shown page whose right edge lies past what the user sees: its
    scroll area's viewport, or else the page itself."""
    page = dialog.tabs.currentWidget()
    problems = []
    for label in page.findChildren(QLabel):
        if not (label.isVisible() and label.wordWrap() and label.text()):
            continue
        clip: QWidget = page
        parent = label.parentWidget()
        while parent is not None and parent is not page:
            if isinstance(parent, QScrollArea):
                clip = parent.viewport()
                break
            parent = parent.parentWidget()
        right = label.mapTo(clip, QPoint(label.width(), 0)).x()
        if right > clip.width():
            problems.append(f"{label.text()[:50]!r}: right edge at {right}, visible up to {clip.width()}")
    return problems


@pytest.mark.parametrize("page", ["vaults", "general", "retrieval", "embeddings"])
def test_settings_pages_follow_the_dialogs_width(make_desktop, vault_copy, qloop, page):
    desk = make_desktop(vault_copy)
    window = desk.window

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        window.show()
        window.resize(1000, 650)
        dialog = desk.open_settings(page=page)
        try:
            hint = dialog.size().expandedTo(dialog.minimumSizeHint())
            dialog.resize(min(hint.width(), 1000), min(hint.height(), 650))  # as on a 1000x650 screen
            await _settle(0.3)
            assert dialog.width() <= 800, f"the dialog's default size grew to {dialog.width()} px"
            problems = []
            for scroll in dialog.tabs.currentWidget().findChildren(QScrollArea) + (
                [dialog.tabs.currentWidget()] if isinstance(dialog.tabs.currentWidget(), QScrollArea) else []
            ):
                if scroll.isVisible() and scroll.horizontalScrollBar().isVisible():
                    body = scroll.widget()
                    wide = sorted(
                        (w.minimumSizeHint().width(), type(w).__name__, getattr(w, "text", lambda: "")()[:40])
                        for w in body.findChildren(QWidget)
                        if w.isVisible()
                    )[-3:]
                    problems.append(
                        f"scrolls sideways: {body.minimumSizeHint().width()} px of content in a "
                        f"{scroll.viewport().width()} px viewport; the widest: {wide}"
                    )
            problems += _clipped_labels(dialog)
            assert not problems, "\n".join(problems)
        finally:
            dialog.reject()
            await _settle(0.1)

    qloop.run_until_complete(scenario())
