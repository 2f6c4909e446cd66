"""The Graph canvas's static layer (every edge and node, without hover, labels or selection),
painted in slices.

Measured here (2 cores, loaded): Qt's raster engine needs ~36 ns per line pixel, so the 30,000
edges of the 10,000-entry layout at "fit" (3.6 M line pixels) take ~130 ms, 300+ ms translucent
and antialiased, and far more zoomed in (the edges of a force layout are long). PySide holds the
GIL through a `drawPath`, so painting in a worker thread would stall the GUI just the same.
So: (1) the layer is painted into an image, in slices of a few ms on the GUI thread, and frames
while panning or zooming reuse the last image, moved and scaled (a blit); (2) each render picks
its edges for the view in numpy: those touching the viewport, in order of worth (rule edges
first; zoomed out the disparity backbone and heavy links, zoomed in the shortest, i.e. the local
structure), until `EDGE_PIXEL_BUDGET` line pixels are spent. Below `SYNC_LIMIT` items (the sample
vault) everything is drawn, at once. Exports draw every edge."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen, QPolygonF, QTransform

from dle_desktop.ui.graph.style import BACKGROUND, EDGE_STYLES

CHUNK = 400  # edges per drawPath at most: a slice can stop between chunks...
CHUNK_PIXELS = 100_000  # ... and line pixels per drawPath at most (~4 ms here)
NODE_CHUNK = 2500
EDGE_PIXEL_BUDGET = 1_200_000
SYNC_LIMIT = 6000
DRAW_ORDER = ("link", "cascade", "requires", "excludes")


@dataclass
class Geometry:
    """What does not depend on the view: nodes as point sets in world coordinates."""

    nodes: list[tuple[QColor, float, QPolygonF]]  # small sizes first, so big nodes end on top
    pinned: np.ndarray  # indices of pinned, visible nodes
    count: int  # edges + nodes at full detail
    edges: dict[str, tuple[np.ndarray, np.ndarray]]  # per kind, ranked, visible endpoints only


#: its stub knows only VoidPtr(address); it also takes (a wrapped pointer, size in bytes, writable)
_VOID_PTR: Any = shiboken6.VoidPtr


def polygon_of(points: np.ndarray) -> QPolygonF:
    """An n × 2 array as a QPolygonF, copied straight into the polygon's memory: making 10,000
    QPointF objects one by one held the GUI thread ~50 ms whenever the Graph drew anew."""
    polygon = QPolygonF()
    n = len(points)
    if n:
        polygon.resize(n)
        # QPointF is two doubles, stored one after another in the polygon (the layout pyqtgraph relies on too)
        memory = memoryview(_VOID_PTR(polygon.data(), n * 16, True))
        np.frombuffer(memory, np.float64).reshape(n, 2)[:] = points
    return polygon


def build_geometry(
    xy: np.ndarray,
    edges: dict[str, tuple[np.ndarray, np.ndarray]],
    rank: dict[str, np.ndarray],
    visible: np.ndarray,
    bins: np.ndarray,
    palette: list[QColor],
    node_size: np.ndarray,
    pinned: np.ndarray,
    exclude: int = -1,
) -> Geometry:
    ranked: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    count = 0
    for kind, (a, b) in edges.items():
        order = rank.get(kind)
        if order is not None and len(order) == len(a):
            a, b = a[order], b[order]
        keep = visible[a] & visible[b]
        if exclude >= 0:  # a dragged node's edges are drawn live, on top
            keep &= (a != exclude) & (b != exclude)
        ranked[kind] = (a[keep], b[keep])
        count += int(keep.sum())
    keep = visible.copy()
    if exclude >= 0:
        keep[exclude] = False
    idx = np.flatnonzero(keep)
    count += len(idx)
    groups: list[tuple[float, QColor, QPolygonF]] = []
    if len(idx):
        sizes = np.round(node_size[idx], 1)
        key = bins[idx] * 1000 + (sizes * 10).astype(np.int64)
        order = np.argsort(key, kind="stable")
        uniq, start = np.unique(key[order], return_index=True)
        bounds = [*start.tolist(), len(order)]
        for g in range(len(uniq)):
            members = idx[order[bounds[g] : bounds[g + 1]]]
            colour = palette[int(bins[members[0]]) % len(palette)]
            for s in range(0, len(members), NODE_CHUNK):
                part = members[s : s + NODE_CHUNK]
                groups.append((float(node_size[members[0]]), colour, polygon_of(xy[part])))
        groups.sort(key=lambda t: t[0])
    return Geometry([(c, s, p) for s, c, p in groups], np.flatnonzero(pinned & keep), count, ranked)


def pick_edges(
    geo: Geometry, scr: np.ndarray, kinds_on: set[str], w: float, h: float, zoomed_out: bool, budget: float | None
) -> Generator[None, None, dict[str, np.ndarray]]:
    """Per kind, the edges (as (m, 4) screen segments) to draw in this view (module docstring).
    Yields between its passes (one per kind, then the choice): at 10,000 entries the whole
    took 15-30 ms, and 50-120 ms while a background thread ran Python, as one slice."""
    found = []  # (kind, edges near the view, their on-screen lengths)
    for kind in DRAW_ORDER:
        if kind not in kinds_on or kind not in geo.edges:
            continue
        a, b = geo.edges[kind]
        pa, pb = scr[a], scr[b]
        lo, hi = np.minimum(pa, pb), np.maximum(pa, pb)
        near = np.flatnonzero((hi[:, 0] >= 0) & (lo[:, 0] <= w) & (hi[:, 1] >= 0) & (lo[:, 1] <= h))
        length = np.minimum(np.hypot(*(pb[near] - pa[near]).T), np.hypot(w, h))
        found.append((kind, near, length))
        yield
    if budget is not None and found:
        kinds = np.concatenate([np.full(len(near), n) for n, (_k, near, _l) in enumerate(found)])
        pos = np.concatenate([np.arange(len(near)) for _k, near, _l in found])
        length = np.concatenate([f[2] for f in found])
        tier = np.concatenate([np.full(len(near), 0 if k != "link" else 1) for k, near, _l in found])
        order = np.lexsort((pos, tier)) if zoomed_out else np.lexsort((length, tier))
        chosen = order[np.cumsum(length[order]) <= budget]
        found = [(k, near[np.sort(pos[chosen[kinds[chosen] == n]])], _l) for n, (k, near, _l) in enumerate(found)]
        yield
    out = {}
    for kind, near, _l in found:  # segments only for the edges drawn
        a, b = geo.edges[kind]
        out[kind] = np.hstack([scr[a[near]], scr[b[near]]])
    return out


def _chunks(seg: np.ndarray, w: float, h: float) -> Iterator[np.ndarray]:
    """`seg` cut into runs of at most `CHUNK` edges and about `CHUNK_PIXELS` line pixels."""
    length = np.minimum(np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]), np.hypot(w, h)) + 1.0
    run = np.cumsum(length) // CHUNK_PIXELS
    cut = np.flatnonzero(np.diff(run)) + 1
    for part in np.split(seg, cut):
        for start in range(0, len(part), CHUNK):
            yield part[start : start + CHUNK]


def steps(
    p: QPainter,
    geometry: Geometry | Callable[[], Geometry],
    kinds_on: set[str],
    tf: QTransform,
    node_px: float,
    xy: np.ndarray,
    node_size: np.ndarray,
    w: float,
    h: float,
    vector: bool = False,
    budget: float | None = EDGE_PIXEL_BUDGET,
) -> Iterator[None]:
    """Paint into `p` (already filled with the background), yielding after each chunk. `vector`
    (SVG export): nodes are discs in screen coordinates, as SVG viewers handle neither Qt's
    cosmetic pens nor wide zero-length lines reliably. `geometry` may be a function that makes
    it: it is then made in the first slice, not before."""
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    if isinstance(geometry, Geometry):
        geo = geometry
    else:
        geo = geometry()
        yield
    zoomed_out = node_px < 0.6
    scr = xy * np.array([tf.m11(), tf.m22()]) + np.array([tf.dx(), tf.dy()])
    if geo.count <= SYNC_LIMIT:
        budget = None
    picked = yield from pick_edges(geo, scr, kinds_on, w, h, zoomed_out, budget)
    for kind in DRAW_ORDER:
        seg = picked.get(kind)
        if seg is None or not len(seg):
            continue
        _label, colour, width, style = EDGE_STYLES[kind]
        if zoomed_out and kind != "link":  # thousands of them: a tint over the clusters, not a web
            colour = QColor(colour)
            colour.setAlpha(70)
        pen = QPen(colour, min(width, 1.0) if zoomed_out else width)
        pen.setStyle(Qt.PenStyle.SolidLine if zoomed_out else style)  # dashes cost much and are invisible there
        for part in _chunks(seg, w, h):
            path = QPainterPath()
            move, line = path.moveTo, path.lineTo
            for x1, y1, x2, y2 in part.tolist():
                move(x1, y1)
                line(x2, y2)
            p.setPen(pen)
            p.drawPath(path)
            yield
    if not vector:
        p.setTransform(tf)
    for colour, size, pts in geo.nodes:
        d = max(2.0, size * node_px)
        if vector:
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(colour)
            for q in cast("Iterable[QPointF]", tf.map(pts)):  # a QPolygonF is a sequence; its stub lacks __iter__
                p.drawEllipse(q, d / 2, d / 2)
        else:
            pen = QPen(colour, d)
            pen.setCosmetic(True)
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            p.setPen(pen)
            p.drawPoints(pts)
        yield
    p.resetTransform()
    if len(geo.pinned):  # a ring marks what a drag pinned
        p.setPen(QPen(QColor(40, 40, 40), 1.2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        for (x, y), s in zip(scr[geo.pinned].tolist(), node_size[geo.pinned].tolist()):
            r = max(2.0, s * node_px) / 2 + 2
            p.drawEllipse(QPointF(x, y), r, r)


class StaticRender:
    """One static-layer image being painted, slice by slice (`run`), for one view and version."""

    def __init__(self, w: int, h: int, dpr: float, key, version: int, make_steps) -> None:
        self.key, self.version = key, version
        self.img = QImage(max(1, int(w * dpr)), max(1, int(h * dpr)), QImage.Format.Format_ARGB32_Premultiplied)
        self.img.setDevicePixelRatio(dpr)
        self.img.fill(BACKGROUND)
        self.painter = QPainter(self.img)
        self._steps = make_steps(self.painter)
        self.slices: list[float] = []  # seconds per run() (the benchmark reads them)

    def run(self, budget_s: float | None = None) -> bool:
        """Paint until done (True) or `budget_s` is spent (False: call again)."""
        t0 = time.perf_counter()
        try:
            for _ in self._steps:
                if budget_s is not None and time.perf_counter() - t0 >= budget_s:
                    self.slices.append(time.perf_counter() - t0)
                    return False
        except Exception:
            self.abort()
            raise
        self.painter.end()
        self.slices.append(time.perf_counter() - t0)
        return True

    def abort(self) -> None:
        if self.painter.isActive():
            self.painter.end()

    def __del__(self) -> None:
        # Dropped half-way (the app quitting mid-render): the painter must end while its image
        # still exists. Left to the collector, the image could go first, and Qt then crashed the
        # process ("Cannot destroy paint device that is being painted", then a segfault).
        self.abort()


def paint_all(p: QPainter, w: float, h: float, make_steps) -> None:
    p.fillRect(QRectF(0, 0, w, h), BACKGROUND)
    for _ in make_steps(p):
        pass
