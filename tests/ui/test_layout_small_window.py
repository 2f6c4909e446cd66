"""Issue 21.9: at the smallest window size every view keeps its controls whole. Measured on the
real window (offscreen), at 1000x650 and at the default 1200x760: the window really gets that size,
every view fits its page, buttons get their size hint (no elided "Fi…"), wrapped lines get their
height, no two neighbours in a layout overlap, and the Keys column stays readable."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from PySide6.QtCore import QRect, QRectF, QSize
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter
from PySide6.QtWidgets import QAbstractButton, QLabel, QLineEdit, QTabBar, QWidget

from dle_desktop.ui.graph.canvas import GraphCanvas
from dle_desktop.ui.graph.style import EDGE_STYLES
from tests.ui.conftest import wait_for

SIZES = ((1000, 650), (1200, 760))
KEYS_MIN = 110  # "Drowned Archive, …": a key and a half, not "…"


def _views(window) -> list[QWidget]:
    """Every view, each made now if it was not yet (the window makes them when first shown)."""
    views = [window.vault_view, window.channels_view, window.graph_view, window.librarian_view, window.sillytavern_view]
    assert [window.tabs.indexOf(v) for v in views] == list(range(window.tabs.count()))
    return views


async def _settle(seconds: float = 0.15) -> None:
    """The qasync loop runs Qt's events (layouts, resizes) while this sleeps."""
    await asyncio.sleep(seconds)


async def _view_done(window, view: QWidget) -> None:
    """A view whose content arrives later (the Graph's result fills its panel) is judged once it has
    arrived: a label's new text gets its height on the layout pass after it is set, so a check on a
    loaded machine could otherwise land in between."""
    if view is window.graph_view:
        await wait_for(
            lambda: view.result is not None and not view.result.preview and view._running is None,
            what="the graph's result",
        )


async def _settled_problems(view: QWidget, patience: float = 5.0) -> list[str]:
    """What is crushed in `view` once its layout has settled. A view fills some of its text after it
    is first shown (statistics, a result); on a loaded machine the check can land between a new
    text and the layout pass that gives it room, so a problem must last `patience` seconds to count."""
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        await _settle()
        problems = []
        hint = view.minimumSizeHint()
        if view.width() < hint.width() or view.height() < hint.height():
            problems.append(f"{type(view).__name__} is {view.size().toTuple()}, needs {hint.toTuple()}")
        problems += [f"{type(view).__name__}: {p}" for p in _crushed(view)]
        if not problems or asyncio.get_running_loop().time() > deadline:
            return problems


async def _at_size(desk, size: tuple[int, int]) -> None:
    window = desk.window
    window.show()
    window.resize(*size)
    await _settle()


def _in_layouts(view: QWidget):
    """Every visible widget placed by a layout, with its visible layout-placed siblings."""
    for parent in [view, *view.findChildren(QWidget)]:
        layout = parent.layout()
        if layout is None or not parent.isVisible():
            continue
        kids = [
            w
            for w in parent.findChildren(QWidget)
            if w.parentWidget() is parent and w.isVisible() and not w.isWindow() and _placed_by(layout, w)
        ]
        yield parent, kids


def _placed_by(layout, widget: QWidget) -> bool:
    if layout.indexOf(widget) >= 0:
        return True
    for i in range(layout.count()):
        item = layout.itemAt(i)
        inner = item.layout() if item is not None else None
        if inner is not None and _placed_by(inner, widget):
            return True
    return False


def _crushed(view: QWidget) -> list[str]:
    """What a user would call crushed in this view, in words."""
    problems = []
    for parent, kids in _in_layouts(view):
        for w in kids:
            name = f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} in {type(parent).__name__}"
            button_cut = w.width() < w.sizeHint().width() or w.height() < w.minimumSizeHint().height()
            if isinstance(w, QAbstractButton) and w.text() and button_cut:
                problems.append(f"{name}: {w.width()}x{w.height()} < hint {w.sizeHint().toTuple()}")
            wraps = isinstance(w, QLabel) and w.wordWrap() and w.text() and w.width() > 0
            if wraps and w.height() < w.heightForWidth(w.width()) - 1:
                problems.append(f"{name}: {w.height()} px high, its text needs {w.heightForWidth(w.width())}")
            if isinstance(w, QLineEdit) and w.placeholderText():
                wanted = QFontMetrics(w.font()).horizontalAdvance(w.placeholderText()) + 16
                if w.width() < min(wanted, 160):
                    problems.append(f"{name}: {w.width()} px wide, its placeholder {w.placeholderText()!r} is cut")
        boxes = [(w, QRect(w.geometry())) for w in kids]
        for i, (a, ra) in enumerate(boxes):
            for b, rb in boxes[i + 1 :]:
                overlap = ra.intersected(rb)
                if overlap.width() > 2 and overlap.height() > 2:
                    problems.append(f"{type(a).__name__} and {type(b).__name__} overlap in {type(parent).__name__}")
    for bar in view.findChildren(QTabBar):
        tabs_width = sum(bar.tabRect(i).width() for i in range(bar.count()))
        if bar.isVisible() and bar.width() < tabs_width:
            texts = [bar.tabText(i) for i in range(bar.count())]
            problems.append(f"the tabs {texts} need scrolling: {bar.width()} px for {tabs_width}")
    return problems


def test_the_window_has_a_minimum_size_it_can_really_take(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        assert window.minimumSize() == QSize(1000, 650)
        # every view's minimum fits, so the layout does not hold the window bigger than that
        hint = window.minimumSizeHint()
        assert hint.width() <= 1000 and hint.height() <= 650, hint
        await _at_size(desk, (800, 500))  # smaller than the minimum: held at the minimum
        assert window.size() == QSize(1000, 650)

    qloop.run_until_complete(scenario())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_view_fits_and_nothing_is_crushed(make_desktop, vault_copy, qloop, size):
    desk = make_desktop(vault_copy)
    window = desk.window

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        await _at_size(desk, size)
        assert window.size() == QSize(*size)
        problems = []
        for view in _views(window):
            window.tabs.setCurrentWidget(view)
            await _view_done(window, view)
            problems += await _settled_problems(view)
        assert not problems, "\n".join(problems)

    qloop.run_until_complete(scenario())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_keys_column_stays_readable(make_desktop, vault_copy, qloop, size):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await _at_size(desk, size)
        assert view.table.columnWidth(2) >= KEYS_MIN
        # every column that is shown is on screen: Keys is not pushed right of the viewport
        header = view.table.horizontalHeader()
        right = max(header.sectionViewportPosition(c) + header.sectionSize(c) for c in range(5))
        assert right <= view.table.viewport().width() + 1

    qloop.run_until_complete(scenario())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_graph_toolbar_shows_every_label_whole(make_desktop, vault_copy, qloop, size):
    desk = make_desktop(vault_copy)
    window = desk.window
    graph = window.graph_view

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        await _at_size(desk, size)
        window.tabs.setCurrentWidget(graph)
        await wait_for(lambda: graph.result is not None, timeout=60, what="the graph")
        await _settle()
        buttons = [*graph.kind_buttons.values(), graph.relayout_button, graph.fit_button, graph.export_button]
        for b in buttons:
            text_width = QFontMetrics(b.font()).horizontalAdvance(b.text())
            assert b.width() >= b.sizeHint().width(), (b.text(), b.width(), b.sizeHint().width())
            assert b.width() > text_width, b.text()
        for combo in (graph.colour, graph.size_mode, graph.preset):
            assert combo.width() >= combo.minimumSizeHint().width()
        assert graph.search.width() >= 160
        canvas = graph.canvas
        assert canvas.width() >= 400 and canvas.height() >= 300

    qloop.run_until_complete(scenario())


class LabelRecorder(QPainter):
    """A real painter on a real image that also notes where each label's text went."""

    def __init__(self, image: QImage) -> None:
        super().__init__(image)
        self.texts: list[tuple[QRectF, str]] = []

    def drawText(self, rect, flags, text) -> None:  # type: ignore[override]  # the overload the labels use
        self.texts.append((QRectF(rect), text))
        super().drawText(rect, flags, text)


def test_fit_keeps_the_labels_of_the_outermost_entries_inside_the_canvas(qapp):
    """Fit used to fill the canvas with the nodes alone, so a long title at the edge was cut."""
    canvas = GraphCanvas()
    canvas.resize(520, 320)
    titles = [
        "The Sealing of the Seventh Mouth",  # leftmost
        "Writing Guide — Names and Dialects",  # rightmost
        "Arrival at Lantern Quay",  # lowest: its label hangs below it
        "Silt-Ink",
        "The Drowned Choir",  # highest
    ]
    xy = np.array([[0.0, 0.0], [100.0, 5.0], [48.0, 30.0], [50.0, 10.0], [52.0, -28.0]])
    none = np.zeros(0, dtype=np.int64)
    canvas.set_graph(titles, xy, dict.fromkeys(EDGE_STYLES, (none, none)))
    canvas.set_style(np.zeros(5, dtype=np.int64), [QColor("#4477aa")], np.full(5, 12.0), np.arange(5.0))
    canvas.fit()
    image = QImage(canvas.width(), canvas.height(), QImage.Format.Format_ARGB32)
    painter = LabelRecorder(image)
    canvas.paint(painter, canvas.width(), canvas.height(), cached=False)
    painter.end()
    drawn = {text: rect for rect, text in painter.texts}
    assert set(drawn) == set(titles), "every title gets its label"
    inside = QRectF(0, 0, canvas.width(), canvas.height())
    for text, rect in drawn.items():
        assert inside.contains(rect), (text, rect.getCoords())
    # and the graph still fills most of the canvas: the margin is what the labels need, not more
    xs = [canvas.world_to_screen(p)[0] for p in xy]
    assert max(xs) - min(xs) > canvas.width() * 0.4


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_failed_channel_test_says_why_below_its_button(make_desktop, vault_copy, qloop, size):
    """The AI-search channel's Test with no connection: the error wraps below the button, never over it."""
    desk = make_desktop(vault_copy)
    window = desk.window
    channels = window.channels_view

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="61 entries")
        await _at_size(desk, size)
        window.tabs.setCurrentWidget(channels)
        strip = channels.channel_panel.strips["ai_search"]
        strip.button.click()
        await wait_for(lambda: strip.result.text().startswith("✗"), what="the test's answer")
        await _settle(0.3)
        assert strip.button.height() >= strip.button.sizeHint().height()
        assert strip.result.geometry().top() >= strip.button.geometry().bottom()
        problems = _crushed(channels)
        assert not problems, "\n".join(problems)

    qloop.run_until_complete(scenario())
