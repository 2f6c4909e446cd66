"""The Graph view (issue 13) on the bundled sample vault, offscreen: what it shows, every colour
and size mode, edge toggles, filters, search, findings, export, the off-thread layout (cancel,
persistence, incremental) and, in the real window, Ctrl+3 and double-click to the Vault view."""

from __future__ import annotations

import asyncio
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QMouseEvent
from PySide6.QtWidgets import QApplication

from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.state.chat_store import ChatStore
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.ui.graph.style import COLOUR_MODES, EDGE_STYLES, SIZE_MODES
from dle_desktop.ui.graph.view import GraphView
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource
from tests.ui.conftest import SAMPLE, wait_for


def index(folder: Path):
    loop = asyncio.SelectorEventLoop()  # not the Qt loop a qasync policy would hand out
    try:
        return loop.run_until_complete(VaultIndexer([FolderSource("vault", folder)]).sync_all()).snapshot
    finally:
        loop.close()


@pytest.fixture(scope="module")
def sample_snapshot():
    return index(SAMPLE)


def shown(qtbot, view: GraphView, snapshot, relayout: bool = False):
    with qtbot.waitSignal(view.resultShown, timeout=30000) as got:
        if relayout:
            view.relayout()
        else:
            view.set_snapshot(snapshot)
    return got.args[0]


@pytest.fixture
def make_view(qtbot, tmp_path):
    def make(snapshot, store_dir: Path | None = None) -> GraphView:
        view = GraphView(LayoutStore(store_dir or tmp_path / "graph-layouts"), tmp_path / "state.sqlite")
        qtbot.addWidget(view)
        view.resize(1100, 700)
        view.show()
        qtbot.waitExposed(view)
        shown(qtbot, view, snapshot)
        return view

    made: list[GraphView] = []
    yield lambda *a, **k: made.append(make(*a, **k)) or made[-1]
    for v in made:
        v.stop()


def grab(view: GraphView) -> QImage:
    return view.canvas.grab().toImage()


def distinct_colours(img: QImage, step: int = 3) -> int:
    w, h = img.width(), img.height()
    return len({img.pixel(x, y) for x in range(0, w, step) for y in range(0, h, step)})


def idx_of(view: GraphView, title: str) -> int:
    return next(i for i, e in enumerate(view.graph.entries) if e.title == title)


def screen_of(view: GraphView, i: int) -> QPoint:
    x, y = view.canvas.world_to_screen(view.canvas.xy[i])
    return QPoint(round(x), round(y))


def test_shows_the_sample_vault_without_graph_false_entries(make_view, sample_snapshot):
    view = make_view(sample_snapshot)
    g = view.graph
    wanted = [e for e in sample_snapshot.entries if e.graph]
    assert len(wanted) < len(sample_snapshot.entries)  # the sample has a graph: false note
    assert [e.uid for e in g.entries] == [e.uid for e in wanted]
    assert "Tides and the Calendar" not in {e.title for e in g.entries}
    assert view.result.mode == "full"
    assert np.isfinite(view.canvas.xy).all() and view.canvas.xy.shape == (g.n, 2)
    assert {e.kind for e in g.edges} == set(EDGE_STYLES)  # links, requires, excludes, cascades
    assert view.canvas.visible.all()
    assert distinct_colours(grab(view)) > 10  # a picture, not a blank canvas
    assert "entries" in view.status.text() and view.progress.isHidden()


def test_every_colour_and_size_mode(make_view, sample_snapshot):
    view = make_view(sample_snapshot)
    n = view.graph.n
    seen = {}
    for mode in COLOUR_MODES:
        if mode == "field":
            assert view.field.count() > 0  # the sample has custom fields (era, location, ...)
            view.set_colour_mode(mode, view.field.itemText(0))
            assert not view.field.isHidden()
        else:
            view.set_colour_mode(mode)
        c = view.colouring
        assert len(c.bins) == n and c.bins.max() < len(c.palette)
        assert view.panel.legend.text()
        seen[mode] = c
        assert distinct_colours(grab(view)) > 3
    assert len(set(seen["type"].bins.tolist())) >= 3
    assert len(set(seen["community"].bins.tolist())) == len(view.result.analysis.communities.groups)
    assert len(set(seen["centrality"].bins.tolist())) > 3
    # no chats yet: the frequency mode says so rather than showing a meaningless ramp
    assert "No injection counts yet" in seen["frequency"].note
    for mode in SIZE_MODES:
        view.set_size_mode(mode)
        assert len(view.canvas.node_size) == n
        if mode == "uniform":
            assert len(set(view.canvas.node_size.tolist())) == 1
        else:
            assert len(set(view.canvas.node_size.tolist())) > 1


def test_injection_frequency_from_the_chats_analytics(make_view, sample_snapshot, tmp_path, qtbot):
    wick = next(e for e in sample_snapshot.entries if e.title == "Brother Wick")
    store = ChatStore(tmp_path / "state.sqlite")
    store.save("c1", ChatState(analytics={wick.tracker_key: {"matched": 9, "injected": 7, "last_triggered": 3}}))
    store.close()
    view = make_view(sample_snapshot)
    assert view.result.frequency == {wick.tracker_key: 7}
    view.set_colour_mode("frequency")
    c = view.colouring
    i = idx_of(view, "Brother Wick")
    assert c.bins[i] == len(c.palette) - 1 and (np.delete(c.bins, i) == 0).all()
    assert "1 of" in c.note


def test_edge_kinds_toggle(make_view, sample_snapshot):
    view = make_view(sample_snapshot)
    before = view.canvas.adj.indices.size
    img_all = grab(view)
    view.set_kind_visible("link", False)
    assert "link" not in view.canvas.kinds_on
    assert view.canvas.adj.indices.size < before  # neighbourhoods follow the toggles
    assert grab(view) != img_all
    for kind in EDGE_STYLES:
        view.set_kind_visible(kind, False)
    assert view.canvas.kinds_on == set() and view.canvas.adj.indices.size == 0
    view.set_kind_visible("requires", True)
    want = 2 * sum(1 for e in view.graph.edges if e.kind == "requires")
    assert view.canvas.adj.indices.size == want


def test_filters_by_type_tag_folder(make_view, sample_snapshot):
    view = make_view(sample_snapshot)
    g, p = view.graph, view.panel
    p.tag.setCurrentText("character")
    assert view.canvas.visible.sum() == sum("character" in e.tags for e in g.entries) > 0
    p.tag.setCurrentIndex(0)
    p.folder.setCurrentText("Places")
    assert view.canvas.visible.tolist() == [(e.folder or "").startswith("Places") for e in g.entries]
    p.folder.setCurrentIndex(0)
    p.type_boxes["regular"].setChecked(False)
    assert view.canvas.visible.tolist() == [t != "regular" for t in g.types]
    view.reset_filters()
    assert view.canvas.visible.all()


def test_search_flies_to_the_node(make_view, sample_snapshot):
    view = make_view(sample_snapshot)
    assert view.find("ashby")
    i = idx_of(view, "Ashby Grell")
    assert view.canvas.selected == i
    view.canvas._anim and view.canvas._anim.setCurrentTime(10_000)  # end the flight
    pt = screen_of(view, i)
    assert abs(pt.x() - view.canvas.width() / 2) < 3 and abs(pt.y() - view.canvas.height() / 2) < 3
    assert not view.find("zzz no such entry") and "No entry" in view.status.text()


def test_finding_click_focuses_its_nodes(make_view, sample_snapshot, qtbot):
    view = make_view(sample_snapshot)
    tree = view.panel.findings
    counts = view.panel.group_counts()
    assert counts and sum(counts.values()) == len(view.result.analysis.findings)
    top = tree.topLevelItem(0)
    assert top.text(0).endswith(f"({top.childCount()})")
    item = top.child(0)
    f = item.data(0, Qt.UserRole + 1)
    tree.itemClicked.emit(item, 0)
    want = sorted(view.graph.index[u] for u in f.entries)
    assert sorted(view.canvas.focus.tolist()) == want
    assert set(view.canvas.highlighted().tolist()) == set(want)
    view.canvas._anim.setCurrentTime(10_000)
    for i in want:
        pt = screen_of(view, i)
        assert 0 <= pt.x() <= view.canvas.width() and 0 <= pt.y() <= view.canvas.height()
    assert view.status.text() == f.message
    view.clear_focus()
    assert not len(view.canvas.focus)


def test_hover_dims_all_but_the_neighbourhood_and_ego_view(make_view, sample_snapshot, qtbot):
    view = make_view(sample_snapshot)
    c = view.canvas
    i = int(np.argmax(view.graph.degree))
    pt = QPointF(screen_of(view, i))
    # a real move event through Qt (qtbot.mouseMove skips a move to where an earlier test left the cursor)
    QApplication.sendEvent(
        c, QMouseEvent(QEvent.MouseMove, pt, c.mapToGlobal(pt), Qt.NoButton, Qt.NoButton, Qt.NoModifier)
    )
    assert c.hovered == i
    assert set(c.highlighted().tolist()) == {i, *c.adj.neighbours(i).tolist()}
    c.set_hovered(-1)
    c.set_selected(i)
    view.panel.hops.setValue(1)
    view.panel.ego.setChecked(True)
    assert set(np.flatnonzero(c.visible).tolist()) == {i, *c.adj.neighbours(i).tolist()}
    view.panel.hops.setValue(2)
    assert c.visible.sum() >= len(c.adj.neighbours(i)) + 1
    view.clear_focus()
    assert c.visible.all()


def test_export_png_and_svg(make_view, sample_snapshot, tmp_path):
    view = make_view(sample_snapshot)
    png = view.export_image(tmp_path / "g.png")
    img = QImage(str(png))
    assert not img.isNull() and img.width() == 2 * view.canvas.width()
    assert distinct_colours(img, 5) > 10
    svg = view.export_image(tmp_path / "g.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) > 0
    from PySide6.QtSvg import QSvgRenderer

    assert QSvgRenderer(str(svg)).isValid()


def test_layout_cancel_keeps_what_is_drawn(make_view, sample_snapshot, qtbot):
    view = make_view(sample_snapshot)
    with qtbot.waitSignal(view.resultShown, timeout=30000) as got:
        view.relayout(iterations=10**7)  # would run for hours
        qtbot.waitUntil(lambda: view.progress.maximum() == 10**7 and view.progress.value() > 0, timeout=30000)
        assert view.cancel_button.isVisible()
        view.cancel_button.click()
    res = got.args[0]
    assert res.cancelled and 0 < res.iterations < 10**7
    assert np.isfinite(view.canvas.xy).all()
    assert "cancelled" in view.status.text()


def test_persisted_layout_reloads_identical(make_view, sample_snapshot, tmp_path):
    first = make_view(sample_snapshot)
    want = first.canvas.xy.copy()
    first.stop()  # the save has happened once the worker is done
    again = make_view(sample_snapshot)
    assert again.result.mode == "saved"
    assert np.array_equal(again.canvas.xy, want)


def test_drag_pins_a_node_and_relayout_keeps_it(make_view, sample_snapshot, qtbot, tmp_path):
    view = make_view(sample_snapshot)
    c = view.canvas
    i = idx_of(view, "Brother Wick")
    start = screen_of(view, i)
    qtbot.mousePress(c, Qt.LeftButton, pos=start)
    for k in range(1, 6):
        qtbot.mouseMove(c, start + QPoint(12 * k, 8 * k))
    qtbot.mouseRelease(c, Qt.LeftButton, pos=start + QPoint(60, 40))
    assert c.pinned[i] and view.graph.uids[i] in view.pinned
    moved = c.xy[i].copy()
    assert np.allclose(c.world_to_screen(moved), [start.x() + 60, start.y() + 40], atol=1.5)
    shown(qtbot, view, None, relayout=True)
    assert np.array_equal(view.canvas.xy[i], moved)
    view.stop()
    saved = LayoutStore(tmp_path / "graph-layouts").load(["vault"])
    assert view.graph.uids[i] in saved.pinned and saved.positions[view.graph.uids[i]] == tuple(moved)


def test_incremental_after_a_change_keeps_old_nodes_in_place(make_view, tmp_path, qtbot):
    folder = tmp_path / "v"
    shutil.copytree(SAMPLE, folder)
    view = make_view(index(folder))
    old = dict(zip(view.graph.uids, view.canvas.xy.tolist()))
    span = float(np.ptp(view.canvas.xy, axis=0).max())
    (folder / "Places" / "Wick's Lamp Shop.md").write_text(
        "---\ntags: [lorebook]\nkeys: [lamp shop]\n---\n# Wick's Lamp Shop\nRun by [[Brother Wick]].\n",
        encoding="utf-8",
    )
    res = shown(qtbot, view, index(folder))
    assert res.mode == "incremental" and view.graph.n == len(old) + 1
    new = dict(zip(view.graph.uids, view.canvas.xy.tolist()))
    moved = max(np.hypot(new[u][0] - x, new[u][1] - y) for u, (x, y) in old.items())
    assert moved <= 0.02 * span + 1e-9  # the preset's inertia: the rest does not jump
    shop = np.array(new["vault\x00Places/Wick's Lamp Shop.md"])
    wick = np.array(new[next(u for u in old if u.endswith("Brother Wick.md"))])
    dists = np.hypot(*(view.canvas.xy - shop).T)
    assert np.hypot(*(shop - wick)) < np.median(dists)  # landed near its neighbour


def test_main_window_graph_tab_ctrl3_and_double_click_to_vault(make_desktop, vault_copy, qloop, qtbot):
    desk = make_desktop(vault_copy)
    win = desk.window
    tabs = [win.tabs.tabText(i) for i in range(win.tabs.count())]
    assert tabs.index("Graph") == tabs.index("Channels") + 1 < tabs.index("SillyTavern")
    assert win.graph_view_action.shortcut().toString() == "Ctrl+3"
    view = win.graph_view

    async def scenario():
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="index")
        win.graph_view_action.trigger()
        assert win.tabs.currentWidget() is view
        await wait_for(lambda: view.graph is not None, what="graph shown")
        win.resize(1200, 760)
        await asyncio.sleep(0.1)
        i = idx_of(view, "Brother Wick")
        view.select_index(i, fly=False)
        view.canvas.fit(np.array([i]))
        qtbot.mouseDClick(view.canvas, Qt.LeftButton, pos=screen_of(view, i))
        assert win.tabs.currentWidget() is win.vault_view
        assert win.vault_view.current_uid() == view.graph.uids[i]
        assert "Brother Wick" in win.vault_view.detail.toHtml()

    qloop.run_until_complete(scenario())


def test_while_the_user_waits_for_a_first_picture_background_work_is_asked_to_wait(qtbot, tmp_path, sample_snapshot):
    import threading

    view = GraphView(LayoutStore(tmp_path / "graph-layouts"), tmp_path / "state.sqlite")
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    asked: list[int] = []
    view.busy.connect(lambda: asked.append(1))
    held = threading.Event()
    view.worker._pool.submit(held.wait, 30)  # the job waits behind this: no progress, no picture yet
    try:
        view.set_snapshot(sample_snapshot)
        qtbot.wait(900)
        assert len(asked) >= 3  # the job's start, then the timer: nothing else was said meanwhile
        view.hide()
        hidden = len(asked)
        qtbot.wait(600)
        assert len(asked) == hidden  # nobody waits for a picture they cannot see
        view.show()
        qtbot.wait(600)
        assert len(asked) >= hidden + 2  # back to the view: the wait goes on
    finally:
        held.set()
    qtbot.waitUntil(lambda: view.result is not None and not view.result.preview, timeout=30000)
    settled = len(asked)
    qtbot.wait(700)
    assert len(asked) == settled  # a picture is up: nobody is waiting any more
    view.hide()
    view.stop()
