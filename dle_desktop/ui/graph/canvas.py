"""The Graph view's picture: one QWidget painting every node and edge with QPainter.

Why not QGraphicsScene: 10,000 node items plus 30,000 edge items cost seconds to build and tens
of ms per frame in Python-side bookkeeping. Here the static layer (graph_render.py: edge paths
and node point sets in world coordinates, built once per data change) is painted into an image,
in slices when it is big; a frame blits that image (moved and scaled while the view changes)
and draws on top, in screen coordinates, what depends on the mouse: the hovered neighbourhood,
the selection, a finding, and labels. Picking uses a uniform grid over world coordinates,
neighbourhoods a CSR adjacency (graph_index.py)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, QVariantAnimation, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QTransform
from PySide6.QtWidgets import QWidget

from dle_desktop.ui.graph.index import Adjacency, PointGrid
from dle_desktop.ui.graph.overlay import LABEL_CROWD, label_text, paint_overlay
from dle_desktop.ui.graph.render import (
    EDGE_PIXEL_BUDGET,
    SYNC_LIMIT,
    Geometry,
    StaticRender,
    build_geometry,
    paint_all,
    steps,
)
from dle_desktop.ui.graph.style import BACKGROUND, EDGE_STYLES, OTHER

#: A slice of static-layer painting on the GUI thread; the pause before a sharp re-render starts
SLICE_S = 0.012
SETTLE_MS = 90


class GraphCanvas(QWidget):
    hoveredChanged = Signal(int)
    selectedChanged = Signal(int)
    nodeActivated = Signal(int)  # double-click
    nodePinned = Signal(int)  # dragged to a new place (and pinned there)
    userMoved = Signal()  # the user pressed on the canvas or zoomed: the view is theirs now
    #: a slice of the sharp picture is about to be painted: the window's background work should
    #: give way (numpy on this thread waits for the interpreter lock at every large array while a
    #: background thread runs Python: a 20 ms slice took 50-120 ms beside a health check)
    rendering = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(200, 200)
        self.titles: list[str] = []
        self.xy = np.zeros((0, 2))
        self.edges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.kinds_on = set(EDGE_STYLES)
        self.visible = np.zeros(0, dtype=bool)
        self.bins = np.zeros(0, dtype=np.int64)
        self.palette: list[QColor] = [OTHER]  # type: ignore[assignment]  # the node colours; shadows QWidget.palette(), unused here
        self.node_size = np.zeros(0)
        self.importance = np.zeros(0)
        self.pinned = np.zeros(0, dtype=bool)
        self.adj = Adjacency.empty()
        self._grid: PointGrid | None = None
        self._adjacency_all: Adjacency | None = None
        self._adjacency_kinds: frozenset[str] | None = None
        self.hovered = -1
        self.selected = -1
        self.focus: np.ndarray = np.zeros(0, dtype=np.int64)
        self.scale = 1.0
        self.centre = np.zeros(2)
        self.label_font = QFont(self.font())
        self.label_font.setPointSizeF(max(7.5, self.label_font.pointSizeF() * 0.9))
        self.rank: dict[str, np.ndarray] = {}
        self._geo: Geometry | None = None
        self._version = 0  # bumped whenever what the static layer shows changes
        self._static: StaticRender | None = None  # the last finished image (for its key and version)
        self._job: StaticRender | None = None  # the one being painted
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._start_render)
        self._slicer = QTimer(self)
        self._slicer.setInterval(0)
        self._slicer.timeout.connect(self._render_slice)
        self._press: tuple[QPointF, int] | None = None
        self._panning = False
        self._drag = -1
        self._anim: QVariantAnimation | None = None
        self._size_override: tuple[float, float] | None = None
        self._vector = False

    # -- data ---------------------------------------------------------------------------------
    def set_graph(
        self,
        titles: list[str],
        pos: np.ndarray,
        edges: dict[str, tuple[np.ndarray, np.ndarray]],
        rank: dict[str, np.ndarray] | None = None,
        adjacency: Adjacency | None = None,
    ) -> None:
        """`rank`: per edge kind, the order to draw its edges in (most telling first: zoomed
        out, only the first links are drawn). `adjacency`: over every kind in `edges`, if it
        was built already (off the GUI thread)."""
        n = len(titles)
        self.titles = list(titles)
        self.xy = np.asarray(pos, dtype=np.float64).reshape(n, 2).copy()
        self.edges = edges
        self.rank = rank or {}
        self.visible = np.ones(n, dtype=bool)
        self.pinned = np.zeros(n, dtype=bool)
        if len(self.bins) != n:
            self.bins = np.zeros(n, dtype=np.int64)
            self.node_size = np.full(n, 7.0)
            self.importance = np.zeros(n)
        self.hovered = self.selected = -1
        self.focus = np.zeros(0, dtype=np.int64)
        self._adjacency_all = adjacency
        self._adjacency_kinds = None
        self._rebuild_adjacency()
        self._positions_changed()

    def set_positions(self, pos: np.ndarray) -> None:
        self.xy = np.asarray(pos, dtype=np.float64).copy()
        self._positions_changed()

    def set_style(self, bins: np.ndarray, palette: list[QColor], size: np.ndarray, importance: np.ndarray) -> None:
        self.bins, self.palette, self.node_size, self.importance = bins, palette, size, importance
        self._content_changed()

    def set_kinds(self, kinds: set[str]) -> None:
        self.kinds_on = set(kinds)
        self._rebuild_adjacency()
        self._content_changed()

    def set_visible(self, mask: np.ndarray) -> None:
        self.visible = np.asarray(mask, dtype=bool)
        if self.hovered >= 0 and not self.visible[self.hovered]:
            self.hovered = -1
        self._grid = None
        self._content_changed()

    @property
    def grid(self) -> PointGrid:
        """Where the nodes are, for picking: made when a pick first needs it, not at each frame
        of a layout that settles."""
        if self._grid is None:
            self._grid = PointGrid(self.xy, self.visible)
        return self._grid

    def _rebuild_adjacency(self) -> None:
        kinds = frozenset(k for k in self.kinds_on if k in self.edges)
        if kinds == self._adjacency_kinds:
            return
        self._adjacency_kinds = kinds
        if self._adjacency_all is not None and kinds == frozenset(self.edges):
            self.adj = self._adjacency_all
            return
        parts = [self.edges[k] for k in self.kinds_on if k in self.edges]
        a = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        b = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
        self.adj = Adjacency(len(self.titles), a, b)

    def _positions_changed(self) -> None:
        self._grid = None
        self._content_changed()

    def _content_changed(self) -> None:
        self._geo = None
        self._version += 1
        self.update()

    def _invalidate(self) -> None:
        """The view moved: frames reuse the last image until a sharp one is painted."""
        self.update()

    # -- the view transform ----------------------------------------------------------------------
    def _wh(self) -> tuple[float, float]:
        """The painted area: the widget, or an export's size while one is painted."""
        return self._size_override or (float(self.width()), float(self.height()))

    def world_to_screen(self, xy: np.ndarray) -> np.ndarray:
        w, h = self._wh()
        return (np.asarray(xy) - self.centre) * self.scale + np.array([w / 2, h / 2])

    def screen_to_world(self, x: float, y: float) -> np.ndarray:
        w, h = self._wh()
        return (np.array([x, y]) - np.array([w / 2, h / 2])) / self.scale + self.centre

    def _transform(self) -> QTransform:
        s = self.scale
        w, h = self._wh()
        return QTransform(s, 0, 0, s, w / 2 - self.centre[0] * s, h / 2 - self.centre[1] * s)

    def fit(self, indices: np.ndarray | None = None, animate: bool = False, margin: float = 0.08) -> None:
        """Show `indices` (all visible nodes by default), filling the widget less `margin`, and
        with room for the labels of the nodes at the edges (when there are few enough to be labelled)."""
        idx = np.flatnonzero(self.visible) if indices is None else np.asarray(indices, dtype=np.int64)
        if not len(idx):
            return
        pts = self.xy[idx]
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        span = np.maximum(hi - lo, 1e-9)
        w, h = max(self.width(), 50), max(self.height(), 50)
        scale = min(w * (1 - 2 * margin) / span[0], h * (1 - 2 * margin) / span[1])
        if len(idx) < 3:  # one or two nodes: not a fill-the-screen zoom, a comfortable one
            overall = np.ptp(self.xy[self.visible], axis=0).max() if self.visible.any() else 1.0
            scale = min(scale, min(w, h) / max(overall * 0.08, 1e-9))
        centre = (lo + hi) / 2
        if 3 <= len(idx) <= LABEL_CROWD:  # one or two: flown to, centred on the node itself
            scale, centre = self._fit_labels(idx, scale, (w, h))
        self.fly_to(centre, scale, animate)

    def _fit_labels(self, idx: np.ndarray, scale: float, size: tuple[int, int]) -> tuple[float, np.ndarray]:
        """The largest scale up to `scale` at which every node of `idx` and the label under it
        (drawn at a fixed size in pixels, so it does not shrink with the zoom) are inside the
        widget, and the centre that puts them there evenly."""
        fm = QFontMetricsF(self.label_font)
        radius = np.maximum(2.0, self.node_size[idx] * 1.8) / 2  # the largest a node is drawn
        half = np.array([fm.horizontalAdvance(label_text(self.titles[i])) / 2 + 2 for i in idx])
        # how far each node's drawing reaches from its centre: (left, right) and (up, down), px
        reach = ((np.maximum(half, radius),) * 2, (radius, radius + 1 + fm.height()))
        gap = 6.0
        centre = np.zeros(2)
        for axis in (0, 1):
            coords, (before, after) = self.xy[idx, axis], reach[axis]

            def extent(s: float, coords=coords, before=before, after=after) -> tuple[float, float]:
                return float((coords * s - before).min()), float((coords * s + after).max())

            room = size[axis] - 2 * gap
            first, last = extent(scale)
            if last - first > room:  # shrink until it fits (the extent grows with the scale)
                low, high = 0.0, scale
                for _ in range(40):
                    mid = (low + high) / 2
                    a, b = extent(mid)
                    low, high = (mid, high) if b - a <= room else (low, mid)
                scale = max(low, scale * 0.05)
        for axis in (0, 1):
            coords, (before, after) = self.xy[idx, axis], reach[axis]
            first, last = float((coords * scale - before).min()), float((coords * scale + after).max())
            centre[axis] = (first + last) / 2 / scale
        return scale, centre

    def fly_to(self, centre, scale: float | None = None, animate: bool = True) -> None:
        scale = self.scale if scale is None else float(scale)
        if self._anim is not None:
            self._anim.stop()
            self._anim = None
        if not animate:
            self.centre, self.scale = np.asarray(centre, dtype=np.float64), scale
            self._invalidate()
            return
        c0, s0, c1 = self.centre.copy(), self.scale, np.asarray(centre, dtype=np.float64)
        anim = QVariantAnimation(self, startValue=0.0, endValue=1.0, duration=350)

        def step(t: float) -> None:
            t = float(t)
            self.centre = c0 + (c1 - c0) * t
            self.scale = float(np.exp(np.log(s0) + (np.log(scale) - np.log(s0)) * t))
            self._invalidate()

        anim.valueChanged.connect(step)
        anim.start()
        self._anim = anim

    def zoom_at(self, factor: float, x: float, y: float) -> None:
        before = self.screen_to_world(x, y)
        self.scale = float(np.clip(self.scale * factor, 1e-6, 1e6))
        after = self.screen_to_world(x, y)
        self.centre = self.centre + (before - after)
        self._invalidate()

    def pan_by(self, dx: float, dy: float) -> None:
        self.centre = self.centre - np.array([dx, dy]) / self.scale
        self._invalidate()

    # -- state set by the view --------------------------------------------------------------------
    def set_hovered(self, i: int) -> None:
        if i != self.hovered:
            self.hovered = i
            self.update()
            self.hoveredChanged.emit(i)

    def set_selected(self, i: int) -> None:
        if i != self.selected:
            self.selected = i
            self.update()
            self.selectedChanged.emit(i)

    def set_focus(self, indices) -> None:
        self.focus = np.asarray(indices, dtype=np.int64)
        self.update()

    def highlighted(self) -> np.ndarray:
        """The nodes drawn undimmed: the hovered node's neighbourhood, else the selection's, else
        the focused finding's nodes; empty when nothing stands out."""
        if self.hovered >= 0:
            return self.adj.around(self.hovered)
        if len(self.focus):
            return self.focus
        if self.selected >= 0:
            return self.adj.around(self.selected)
        return np.zeros(0, dtype=np.int64)

    # -- the static layer --------------------------------------------------------------------------
    def geometry_now(self) -> Geometry:
        if self._geo is None:
            self._geo = build_geometry(
                self.xy,
                self.edges,
                self.rank,
                self.visible,
                self.bins,
                self.palette,
                self.node_size,
                self.pinned,
                exclude=self._drag,
            )
        return self._geo

    def _small(self) -> bool:
        """Few enough edges and nodes to paint the sharp picture at once (the sample vault)."""
        if len(self.xy) + sum(len(a) for a, _b in self.edges.values()) <= SYNC_LIMIT:
            return True
        if self._geo is None and self.visible.all():  # everything shows: too many, known without the geometry
            return False
        return self.geometry_now().count <= SYNC_LIMIT

    def _steps_for(self, w: float, h: float, vector: bool = False, everything: bool = False):
        # the geometry is made in the render's first slice (a few ms at 10,000 nodes, more beside busy threads)
        geo, tf, px = self.geometry_now, self._transform(), self.node_px()
        kinds, xy, size = set(self.kinds_on), self.xy, self.node_size
        budget = None if everything else EDGE_PIXEL_BUDGET
        return lambda p: steps(p, geo, kinds, tf, px, xy, size, w, h, vector, budget)

    def _view_key(self, w: float, h: float) -> tuple:
        return (w, h, self.scale, float(self.centre[0]), float(self.centre[1]))

    def _start_render(self) -> None:
        if self._job is not None:
            self._job.abort()
        w, h = self.width(), self.height()
        self._job = StaticRender(
            w, h, self.devicePixelRatioF(), self._view_key(w, h), self._version, self._steps_for(w, h)
        )
        self._slicer.start()

    def _render_slice(self) -> None:
        job = self._job
        if job is None:
            self._slicer.stop()
            return
        if job.key != self._view_key(self.width(), self.height()) or job.version != self._version:
            job.abort()  # the view or the data moved on: start afresh once it rests
            self._job = None
            self._slicer.stop()
            self._settle.start()
            return
        self.rendering.emit()
        if job.run(SLICE_S):
            self._static, self._job = job, None
            self._slicer.stop()
            self.update()

    def render_now(self) -> StaticRender:
        """Paint the sharp static layer for the current view at once (tests, the benchmark)."""
        self._settle.stop()
        self._slicer.stop()
        if self._job is not None:
            self._job.abort()
            self._job = None
        w, h = self.width(), self.height()
        job = StaticRender(w, h, self.devicePixelRatioF(), self._view_key(w, h), self._version, self._steps_for(w, h))
        while not job.run(SLICE_S):
            pass
        self._static = job
        self.update()
        return job

    def node_px(self) -> float:
        """How node diameters follow the zoom: in proportion to the typical distance between
        nodes on screen (1 where that is 14 px), but never below 0.3 (a node stays a visible dot
        when zoomed out) nor above 1.8 (zoomed in, nodes do not become discs over their labels)."""
        return float(np.clip(self.scale * self._natural, 0.3, 1.8))

    @property
    def _natural(self) -> float:
        """The typical distance between nodes in world units, over 14 (px)."""
        cache = getattr(self, "_natural_cache", None)
        if cache is not None and cache[0] is self.xy:
            return cache[1]
        n = len(self.xy)
        val = 1.0
        if n > 1:
            # the central 96 %: the ring of islands around a big graph would inflate the area
            lo, hi = np.quantile(self.xy, 0.02, axis=0), np.quantile(self.xy, 0.98, axis=0)
            area = float(np.prod(np.maximum(hi - lo, 1e-9)))
            val = float(np.sqrt(area / n)) / 14.0
        self._natural_cache = (self.xy, val)
        return val

    # -- painting ------------------------------------------------------------------------------
    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        self.paint(p, self.width(), self.height())
        p.end()

    def paint(self, p: QPainter, w: int, h: int, cached: bool = True, vector: bool = False) -> None:
        """Paint the picture into `p` at size w x h. Another size than the widget's (an export)
        keeps the view's centre and widens or narrows what is seen around it. `vector` (SVG):
        geometry is mapped to screen coordinates here and nodes are discs, as SVG viewers handle
        neither Qt's cosmetic pens nor wide zero-length lines reliably."""
        own = (w, h) == (self.width(), self.height())
        self._size_override = None if own else (float(w), float(h))
        try:
            self._vector = vector
            self._paint(p, w, h, cached and own and not vector)
        finally:
            self._size_override = None
            self._vector = False

    def _paint(self, p: QPainter, w: int, h: int, cached: bool) -> None:
        if not len(self.xy):
            p.fillRect(QRectF(0, 0, w, h), BACKGROUND)
        elif not cached:
            paint_all(p, w, h, self._steps_for(w, h, self._vector, everything=True))
        else:
            self._paint_cached(p, w, h)
        self._paint_overlay(p, w, h)

    def _paint_cached(self, p: QPainter, w: int, h: int) -> None:
        key = self._view_key(w, h)
        last = self._static
        if last is not None and last.key == key and last.version == self._version:
            p.drawImage(0, 0, last.img)
            return
        if self._small():  # paint it sharp right away
            p.drawImage(0, 0, self.render_now().img)
            return
        p.fillRect(QRectF(0, 0, w, h), BACKGROUND)
        if last is not None:  # the last image, moved and scaled to where the view is now
            s0, c0 = last.key[2], np.array(last.key[3:5])
            k = self.scale / s0
            off = (c0 - self.centre) * self.scale + np.array([w / 2, h / 2]) * (1 - k)
            p.save()
            p.setTransform(QTransform(k, 0, 0, k, float(off[0]), float(off[1])))
            p.drawImage(0, 0, last.img)
            p.restore()
        if self._job is None or self._job.key != key or self._job.version != self._version:
            self._settle.start()  # (re)starts the pause: the sharp image waits for the view to rest

    def _paint_overlay(self, p: QPainter, w: int, h: int) -> None:
        paint_overlay(self, p, w, h)

    # -- mouse and keys -----------------------------------------------------------------------------
    def node_at(self, x: float, y: float) -> int:
        world = self.screen_to_world(x, y)
        radius_px = max(6.0, float(self.node_size.max() if len(self.node_size) else 7.0) * self.node_px() / 2 + 2)
        return self.grid.nearest(world, radius_px / self.scale)

    def mousePressEvent(self, ev) -> None:
        self.userMoved.emit()
        if ev.button() == Qt.MouseButton.LeftButton:
            i = self.node_at(ev.position().x(), ev.position().y())
            self._press = (ev.position(), i)
            self._panning = i < 0
            if i >= 0:
                self.set_selected(i)
        super().mousePressEvent(ev)

    def mouseMoveEvent(self, ev) -> None:
        x, y = ev.position().x(), ev.position().y()
        if self._press is not None and ev.buttons() & Qt.MouseButton.LeftButton:
            start, i = self._press
            if self._panning:
                d = ev.position() - start
                self._press = (ev.position(), i)
                self.pan_by(d.x(), d.y())
                return
            if self._drag < 0 and (ev.position() - start).manhattanLength() > 4:
                self._drag = i
                self._content_changed()  # the static layer without it, once
            if self._drag >= 0:
                self.xy[self._drag] = self.screen_to_world(x, y)
                self.update()
            return
        self.set_hovered(self.node_at(x, y))

    def mouseReleaseEvent(self, ev) -> None:
        if self._drag >= 0:
            i, self._drag = self._drag, -1
            self.pinned[i] = True
            self._positions_changed()
            self.nodePinned.emit(i)
        elif self._press is not None and self._panning and (ev.position() - self._press[0]).manhattanLength() < 2:
            pass
        self._press = None
        self._panning = False
        super().mouseReleaseEvent(ev)

    def mouseDoubleClickEvent(self, ev) -> None:
        i = self.node_at(ev.position().x(), ev.position().y())
        if i >= 0:
            self.nodeActivated.emit(i)

    def wheelEvent(self, ev) -> None:
        steps = ev.angleDelta().y() / 120.0
        if steps:
            self.userMoved.emit()
            self.zoom_at(1.2**steps, ev.position().x(), ev.position().y())

    def leaveEvent(self, _ev) -> None:
        self.set_hovered(-1)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self.update()

    def hideEvent(self, ev) -> None:
        """A hidden canvas paints nothing: the image under way is dropped (at 100,000 entries it
        takes seconds of slices), and the next paint after showing starts one afresh."""
        super().hideEvent(ev)
        self._settle.stop()
        self._slicer.stop()
        if self._job is not None:
            self._job.abort()
            self._job = None
