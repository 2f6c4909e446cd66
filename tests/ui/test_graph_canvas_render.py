"""The Graph canvas's progressive image (issue 24): a large graph's static layer is painted in
slices. An image dropped half-way must end its painter before the image goes (the app quitting
mid-render at 100,000 entries segfaulted in the collector), and a hidden canvas stops painting.
Each slice is short: the geometry and each pass of the edge picking can end one, and while
slices are painted the window's background work gives way."""

from __future__ import annotations

import gc

import numpy as np
from PySide6.QtGui import QColor

from dle_desktop.ui.graph.canvas import GraphCanvas
from dle_desktop.ui.graph.render import SYNC_LIMIT, StaticRender, build_geometry, pick_edges, polygon_of


def test_a_render_dropped_half_way_ends_its_painter_first(qapp):
    def endless(p):
        while True:
            p.drawLine(0, 0, 40, 40)
            yield

    job = StaticRender(60, 40, 1.0, ("key",), 0, endless)
    assert not job.run(0.0)  # one slice, not the end: its painter is still at work
    painter = job.painter
    assert painter.isActive()
    del job
    gc.collect()
    assert not painter.isActive()


def test_a_hidden_canvas_drops_the_image_under_way_and_paints_afresh_when_shown(qtbot):
    n = SYNC_LIMIT + 2000  # over the limit: painted in slices
    rng = np.random.default_rng(0)
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(600, 400)
    a = rng.integers(0, n, 3 * n)
    b = rng.integers(0, n, 3 * n)
    canvas.set_graph([f"n{i}" for i in range(n)], rng.uniform(-500, 500, (n, 2)), {"link": (a, b)})
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas._start_render()
    under_way = canvas._job
    assert under_way is not None and under_way.painter.isActive()
    canvas.hide()
    assert canvas._job is None and not under_way.painter.isActive()
    assert not canvas._slicer.isActive() and not canvas._settle.isActive()
    canvas.show()
    canvas.repaint()
    qtbot.waitUntil(lambda: canvas._static is not None and canvas._static.version == canvas._version, timeout=30000)


def test_a_polygon_made_from_an_array_holds_its_points_in_order(qapp):
    rng = np.random.default_rng(1)
    points = rng.uniform(-1e4, 1e4, (5000, 2)).astype(np.float32)[::2]  # a strided view, not float64
    polygon = polygon_of(points)
    assert polygon.size() == len(points)
    got = np.array([(polygon.at(i).x(), polygon.at(i).y()) for i in range(polygon.size())])
    np.testing.assert_array_equal(got, points.astype(np.float64))
    assert polygon_of(np.zeros((0, 2))).isEmpty()


def _run_to_end(steps):
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def test_edges_are_picked_rules_first_within_the_budget_and_in_passes(qapp):
    rng = np.random.default_rng(2)
    n = 400
    xy = rng.uniform(0, 800, (n, 2))
    edges = {
        "link": (rng.integers(0, n, 3000), rng.integers(0, n, 3000)),
        "requires": (np.arange(20), np.arange(20, 40)),
    }
    geo = build_geometry(
        xy, edges, {}, np.ones(n, bool), np.zeros(n, np.int64), [QColor(0, 0, 0)], np.full(n, 7.0), np.zeros(n, bool)
    )
    budget = 60_000.0
    passes = pick_edges(geo, xy, {"link", "requires"}, 800, 800, False, budget)
    yields = 0
    while True:
        try:
            next(passes)
            yields += 1
        except StopIteration as done:
            picked = done.value
            break
    assert yields == 3  # one pass per kind, then the choice: each can end a slice
    assert len(picked["requires"]) == 20  # rule edges before any link
    lengths = {k: np.hypot(s[:, 2] - s[:, 0], s[:, 3] - s[:, 1]) for k, s in picked.items()}
    assert sum(v.sum() for v in lengths.values()) <= budget
    drawn = len(picked["link"])
    assert 0 < drawn < 3000
    every_link = np.hypot(*(xy[edges["link"][1]] - xy[edges["link"][0]]).T)
    # zoomed in, the shortest links are the ones drawn
    assert lengths["link"].max() <= np.sort(every_link)[drawn] + 1e-9
    everything = _run_to_end(pick_edges(geo, xy, {"link", "requires"}, 800, 800, False, None))
    assert len(everything["link"]) == 3000 and len(everything["requires"]) == 20


def test_a_large_graph_is_made_and_painted_slice_by_slice_while_background_work_waits(qtbot):
    from dle_desktop.ui.graph.view import GraphView

    n = SYNC_LIMIT + 2000
    rng = np.random.default_rng(3)
    view = GraphView()
    qtbot.addWidget(view)
    canvas = view.canvas
    canvas.resize(600, 400)
    canvas.set_graph(
        [f"n{i}" for i in range(n)],
        rng.uniform(-500, 500, (n, 2)),
        {"link": (rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n))},
    )
    asked: list[int] = []
    view.busy.connect(lambda: asked.append(1))
    canvas._start_render()
    job = canvas._job
    assert job is not None and canvas._geo is None  # the geometry waits for the first slice
    canvas._render_slice()
    assert canvas._geo is not None and len(asked) == 1
    while canvas._job is not None:
        canvas._render_slice()
    assert len(asked) == len(job.slices) > 3  # every slice asked the background work to wait
