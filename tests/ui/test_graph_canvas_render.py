"""The Graph canvas's progressive image (issue 24): a large graph's static layer is painted in
slices. An image dropped half-way must end its painter before the image goes (the app quitting
mid-render at 100,000 entries segfaulted in the collector), and a hidden canvas stops painting."""

from __future__ import annotations

import gc

import numpy as np

from dle_desktop.ui.graph.canvas import GraphCanvas
from dle_desktop.ui.graph.render import SYNC_LIMIT, StaticRender, polygon_of


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
