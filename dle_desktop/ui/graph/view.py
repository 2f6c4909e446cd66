"""The Graph view (Ctrl+3): the current index as a graph, its clusters and its holes.

The view holds no engine state: it gets each new snapshot from the main window, hands the heavy
work to `GraphWorker` (build, layout, analysis, off the GUI thread) and draws the result on a
`GraphCanvas`. Work starts only once the tab has been shown, so a user who never opens it pays
nothing per sync."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import cast

import numpy as np
from PySide6.QtCore import QRectF, QSize, QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QKeySequence, QPainter, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.graph import GraphFinding, LoreGraph
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.ui.graph.canvas import GraphCanvas
from dle_desktop.ui.graph.panel import GraphPanel
from dle_desktop.ui.graph.style import COLOUR_MODES, EDGE_STYLES, SIZE_MODES, colouring, custom_fields, sizes
from dle_desktop.ui.graph.toolbar import control_group, edge_icon
from dle_desktop.ui.graph.worker import GraphJob, GraphResult, GraphWorker, edge_arrays
from dle_desktop.ui.widgets.flow_layout import FlowLayout
from dle_desktop.ui.widgets.gc_guard import freeze_long_lived

log = logging.getLogger(__name__)

PRESET_NAMES = {"compact": "Compact", "balanced": "Balanced", "spacious": "Spacious"}


#: how often the view, waiting for a first picture, tells the window's background work to wait
WAITING_BUSY_MS = 250


def vault_names(snapshot) -> tuple[str, ...]:
    names = tuple(s.name for s in getattr(snapshot, "slices", ()))
    return names or tuple(sorted({e.vault for e in snapshot.entries}))


class GraphView(QWidget):
    openEntryRequested = Signal(str)  # uid
    resultShown = Signal(object)  # GraphResult, once it is on screen (tests, the benchmark)
    pictureShown = Signal(object)  # a preview GraphResult on screen before the whole result
    #: the view works on a picture the user waits for, or the user moves it: background work gives way
    busy = Signal()

    def __init__(self, store: LayoutStore | None = None, db_path: Path | None = None, parent=None) -> None:
        super().__init__(parent)
        self.snapshot: IndexSnapshot | None = None
        self.graph: LoreGraph | None = None
        self.result: GraphResult | None = None
        self.pinned: set[str] = set()
        self._pending = False
        self._following = False  # fitting each frame of a first picture to the view
        self._job = 0
        #: the entries and vault names of the job under way (None once its result is in)
        self._running: tuple[tuple, tuple[str, ...]] | None = None
        self.worker = GraphWorker(store, db_path, self)
        self.worker.progress.connect(self._on_progress)
        self.worker.sketch.connect(self._on_sketch)
        self.worker.frame.connect(self._on_frame)
        self.worker.finished.connect(self._on_result)
        self.worker.failed.connect(self._on_failed)
        self.worker.abandoned.connect(self._on_abandoned)
        # While the user waits for a first picture, the window's background work (health check,
        # cache save, code loading) gives way: beside it, the picture's own work on this thread
        # (taking the results in, the first sharp image) took turns at the interpreter lock with
        # three other threads, and a 30 ms step stalled the window for 150 ms.
        self._waiting = QTimer(self)
        self._waiting.setInterval(WAITING_BUSY_MS)
        self._waiting.timeout.connect(self.busy)

        self.canvas = GraphCanvas()
        self.canvas.nodeActivated.connect(self._activated)
        self.canvas.nodePinned.connect(self._pinned)
        self.canvas.userMoved.connect(self._stop_following)
        self.canvas.userMoved.connect(self.busy)
        self.canvas.rendering.connect(self.busy)
        self.canvas.selectedChanged.connect(self._selected)
        self.canvas.hoveredChanged.connect(self._hovered)
        self.panel = GraphPanel()
        self.panel.findingActivated.connect(self.focus_finding)
        self.panel.filtersChanged.connect(self._apply_mask)
        self.panel.egoChanged.connect(self._apply_mask)

        self.search = QLineEdit(placeholderText="Find an entry…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(200)
        self.search.setMaximumWidth(240)
        self.search.returnPressed.connect(lambda: self.find(self.search.text()))
        self.completer = QCompleter([], self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.completer.activated.connect(self.find)
        self.search.setCompleter(self.completer)
        self.colour = QComboBox()
        for key, label in COLOUR_MODES.items():
            self.colour.addItem(f"Colour: {label}", key)
        self.field = QComboBox()
        self.field.setToolTip("The custom field to colour by")
        self.field.setVisible(False)
        self.size_mode = QComboBox()
        for key, label in SIZE_MODES.items():
            self.size_mode.addItem(label, key)
        self.colour.currentIndexChanged.connect(self._restyle)
        self.field.currentIndexChanged.connect(self._restyle)
        self.size_mode.currentIndexChanged.connect(self._restyle)
        self.kind_buttons: dict[str, QToolButton] = {}
        kinds: list[QWidget] = []
        for kind, (label, _colour, _w, _s) in EDGE_STYLES.items():
            b = QToolButton()
            b.setText(label)
            b.setCheckable(True)
            b.setChecked(True)
            b.setIcon(edge_icon(kind))
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            b.setToolTip(f"Show {label.lower()}")
            b.toggled.connect(self._kinds_changed)
            self.kind_buttons[kind] = b
            kinds.append(b)
        self.preset = QComboBox()
        self.preset.setToolTip("How tight the layout is (applies on Re-layout)")
        for key, label in PRESET_NAMES.items():
            self.preset.addItem(label, key)
        self.preset.setCurrentIndex(1)
        self.relayout_button = QPushButton("Re-layout")
        self.relayout_button.setToolTip("Lay the whole graph out afresh with this preset (pinned entries stay)")
        self.relayout_button.clicked.connect(lambda: self.relayout())
        self.fit_button = QPushButton("Fit")
        self.fit_button.setToolTip("Show the whole graph")
        self.fit_button.clicked.connect(lambda: self.canvas.fit(animate=True))
        self.export_button = QPushButton("Export image")
        menu = QMenu(self.export_button)
        menu.addAction("PNG…", lambda: self._export_dialog("png"))
        menu.addAction("SVG…", lambda: self._export_dialog("svg"))
        self.export_button.setMenu(menu)
        # what is being worked out, in words beside the bar (a bar's own text is cut short)
        self.progress_label = QLabel()
        self.progress_label.hide()
        self.progress = QProgressBar(textVisible=False)
        self.progress.setFixedWidth(160)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the layout; what is drawn so far stays")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        self.status = QLabel()
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        # Groups of controls that wrap to a second row at a narrow window, each keeping its labels
        self.toolbar = QWidget()
        bar = FlowLayout(self.toolbar)
        bar.addWidget(self.search)
        bar.addWidget(control_group(self.colour, self.field, self.size_mode))
        bar.addWidget(control_group(*kinds, spacing=2))
        bar.addWidget(control_group(self.preset, self.relayout_button, self.fit_button, self.export_button))
        foot = QHBoxLayout()
        foot.setContentsMargins(0, 0, 0, 0)
        foot.addWidget(self.status, 1)
        foot.addWidget(self.progress_label)
        foot.addWidget(self.progress)
        foot.addWidget(self.cancel_button)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.canvas)
        self.split.addWidget(self.panel)
        self.split.setStretchFactor(0, 4)
        self.split.setStretchFactor(1, 1)
        self.split.setSizes([900, 300])
        column = QVBoxLayout(self)
        column.setContentsMargins(4, 4, 4, 4)
        column.addWidget(self.toolbar)
        column.addWidget(self.split, 1)
        column.addLayout(foot)
        # on the canvas only: E and Esc type into the search box as usual
        ego_key = QShortcut(QKeySequence("E"), self.canvas)
        ego_key.setContext(Qt.ShortcutContext.WidgetShortcut)
        ego_key.activated.connect(lambda: self.panel.ego.toggle())
        escape_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.canvas)
        escape_key.setContext(Qt.ShortcutContext.WidgetShortcut)
        escape_key.activated.connect(self.clear_focus)

    @classmethod
    def for_paths(cls, paths, parent=None) -> GraphView:
        """Positions in the private data folder; injection counts from the chats' state."""
        return cls(LayoutStore(paths.data_dir / "graph-layouts"), paths.state_db, parent)

    # -- data in ---------------------------------------------------------------------------------
    def set_snapshot(self, snapshot) -> None:
        if self._working_on(snapshot):
            # The very notes of the job under way (after a restart the first sync publishes the
            # cached index's own entries again): that job draws them already. A new one would
            # drop its first picture and, at 100,000 entries, wait a minute for it to end.
            self.snapshot = snapshot
            return
        self.snapshot = snapshot
        self._pending = True
        # Only while on screen: a hidden Graph view that followed every sync cost the window
        # ~0.2 s of work per sync at 10,000 entries (the results' lookups, the picture, the saved
        # layout), for a picture nobody looked at. It catches up when shown (`showEvent`).
        if self.isVisible():
            self._start()

    def showEvent(self, ev) -> None:
        super().showEvent(ev)
        if self._pending:
            self._start()
        elif self._running is not None and self.graph is None:
            self._waiting.start()  # back to a first picture still being worked out

    def hideEvent(self, ev) -> None:
        super().hideEvent(ev)
        self._waiting.stop()  # nobody waits for a picture they cannot see

    def _job_for(self, relayout: bool = False, iterations: int | None = None) -> GraphJob:
        assert self.snapshot is not None  # _start() checks
        known: dict[str, tuple[float, float]] | None = None
        if self.graph is not None and len(self.canvas.xy) == self.graph.n:
            known = {uid: (x, y) for uid, (x, y) in zip(self.graph.uids, self.canvas.xy.tolist(), strict=False)}
        return GraphJob(
            self.snapshot,
            vault_names(self.snapshot),
            self.preset.currentData(),
            0,
            self.graph,
            known,
            frozenset(self.pinned),
            relayout,
            iterations,
        )

    def _working_on(self, snapshot) -> bool:
        running = self._running
        if running is None or snapshot is None or running[1] != vault_names(snapshot):
            return False
        entries = snapshot.entries
        return len(entries) == len(running[0]) and all(a is b for a, b in zip(entries, running[0], strict=True))

    def _start(self, relayout: bool = False, iterations: int | None = None) -> None:
        if self.snapshot is None:
            return
        self._pending = False
        self._running = (tuple(self.snapshot.entries), vault_names(self.snapshot))
        self._job = self.worker.start(self._job_for(relayout, iterations))
        self.busy.emit()
        if self.graph is None:
            self._waiting.start()
        self._show_progress("Building the graph", 0, 0)
        self.cancel_button.show()

    def relayout(self, iterations: int | None = None) -> None:
        """Lay the whole graph out afresh with the chosen preset (pinned entries stay put)."""
        self._start(relayout=True, iterations=iterations)

    def cancel(self) -> None:
        self.worker.cancel()

    def stop(self) -> None:
        self._waiting.stop()
        self.worker.stop()

    def _on_progress(self, job: int, done: int, total: int, what: str) -> None:
        if job == self._job:
            self.busy.emit()
            self._show_progress(what, done, total)

    def _show_progress(self, what: str, done: int, total: int) -> None:
        self.progress.setMaximum(max(total, 0))
        self.progress.setValue(done)
        self.progress_label.setText(f"{what}… {100 * done // total} %" if total else f"{what}…")
        self.progress_label.show()
        self.progress.show()

    def _hide_progress(self) -> None:
        self.progress.hide()
        self.progress_label.hide()
        self.cancel_button.hide()

    def _on_failed(self, job: int, message: str) -> None:
        if job == self._job:
            self._running = None
            self._waiting.stop()
            self._hide_progress()
            self.status.setText(f"The graph could not be built: {message}")

    def _on_abandoned(self, job: int) -> None:
        """Cancelled before its layout: what is on screen stays (a first picture, or the last graph)."""
        if job == self._job:
            self._running = None
            self._waiting.stop()
            self._hide_progress()
            self._following = False
            self.status.setText("Cancelled before the layout; the picture stays as it was")

    def _on_result(self, res: GraphResult) -> None:
        if not self.worker.is_current(res.job_id):
            return  # a newer job is on its way
        self._running = None
        self.show_result(res)

    def _on_sketch(self, res: GraphResult) -> None:
        if self.worker.is_current(res.job_id):
            self.busy.emit()
            self.show_result(res)

    def _on_frame(self, job: int, positions: np.ndarray) -> None:
        """A layout still settling: the nodes move, the rest stays."""
        if job == self._job and self.graph is not None and len(positions) == self.graph.n:
            self.canvas.set_positions(positions)
            if self._following:
                self.canvas.fit()

    def _stop_following(self) -> None:
        self._following = False

    def show_result(self, res: GraphResult) -> None:
        """Put a worker's result on screen (the benchmark also hands in graphs built by hand). A
        preview (`res.preview`) is shown the same way, with the work still going on below it."""
        self._waiting.stop()  # a picture is up
        if not res.preview:
            self._hide_progress()
        first = self.graph is None or self._following
        keep_selected = (
            self.graph.uids[self.canvas.selected] if self.graph is not None and self.canvas.selected >= 0 else None
        )
        self.result, self.graph, self.pinned = res, res.graph, set(res.pinned)
        g = res.graph
        edges, rank = res.edges if res.edges is not None else edge_arrays(g, res.analysis)
        prepared = res.prepared
        titles = prepared.titles if prepared else [e.title for e in g.entries]
        self.canvas.set_graph(titles, res.positions, edges, rank, prepared.adjacency if prepared else None)
        self.canvas.pinned = np.array([u in self.pinned for u in g.uids], dtype=bool)
        self.canvas.set_kinds({k for k, b in self.kind_buttons.items() if b.isChecked()})
        cast(QStringListModel, self.completer.model()).setStringList(
            prepared.completions if prepared else sorted(set(titles), key=str.lower)
        )
        fields = prepared.fields if prepared else custom_fields(g)
        keep_field = self.field.currentText()
        self.field.blockSignals(True)
        self.field.clear()
        self.field.addItems(fields)
        self.field.setCurrentIndex(max(0, self.field.findText(keep_field)))
        self.field.blockSignals(False)
        self.panel.set_choices(g, prepared.choices if prepared else None)
        if res.preview and res.analysis is None:
            self.panel.findings_pending()
        else:
            self.panel.set_findings(
                res.analysis.findings if res.analysis else (),
                len(res.analysis.communities.groups) if res.analysis else None,
            )
        self._restyle()
        if keep_selected is not None and keep_selected in g.index:
            self.canvas.set_selected(g.index[keep_selected])
        self._apply_mask()
        if first or res.mode == "full":
            self.canvas.fit()
        # while a first picture settles the view keeps the whole graph in sight; a user who pans
        # or zooms takes over (`GraphCanvas.userMoved`)
        self._following = res.preview and res.mode in ("sketch", "layout")
        if res.preview:
            self.pictureShown.emit(res)
            if res.mode == "nodes":
                self.status.setText(f"{g.n} entries at their saved places · finding the links…")
            else:
                self.status.setText(f"{g.n} entries · a first picture; the layout is still being worked out")
            return
        pairs = len(g.simple_edges()[0])
        what = {"saved": "saved layout", "incremental": "new entries placed near their neighbours", "full": "laid out"}[
            res.mode
        ]
        if res.cancelled:
            what = f"layout cancelled after {res.iterations} iterations"
        t = " · ".join(f"{k} {v:.2f} s" for k, v in res.seconds.items())
        self.status.setText(f"{g.n} entries, {pairs} connections · {what} · {t}")
        freeze_long_lived()  # the graph on screen stays until the next one
        self.resultShown.emit(res)

    # -- looks --------------------------------------------------------------------------------------
    def colour_mode(self) -> str:
        return self.colour.currentData()

    def set_colour_mode(self, mode: str, field_name: str | None = None) -> None:
        self.colour.setCurrentIndex(self.colour.findData(mode))
        if field_name is not None:
            self.field.setCurrentIndex(self.field.findText(field_name))
        self._restyle()

    def set_size_mode(self, mode: str) -> None:
        self.size_mode.setCurrentIndex(self.size_mode.findData(mode))

    def _restyle(self) -> None:
        mode = self.colour.currentData()
        self.field.setVisible(mode == "field")
        if self.graph is None:
            return
        res = self.result
        self.colouring = colouring(
            mode,
            self.graph,
            res.analysis if res else None,
            self.field.currentText() or None,
            res.frequency if res else None,
        )
        size = sizes(self.size_mode.currentData(), self.graph)
        importance = self.graph.degree.astype(np.float64) + size / 100.0
        self.canvas.set_style(self.colouring.bins, self.colouring.palette, size, importance)
        self.panel.set_legend(self.colouring.legend, self.colouring.note)

    def _kinds_changed(self) -> None:
        self.canvas.set_kinds({k for k, b in self.kind_buttons.items() if b.isChecked()})
        self._apply_mask()

    def set_kind_visible(self, kind: str, on: bool) -> None:
        self.kind_buttons[kind].setChecked(on)

    # -- which nodes show -----------------------------------------------------------------------
    def node_mask(self) -> np.ndarray:
        g = self.graph
        if g is None:
            return np.zeros(0, dtype=bool)
        f = self.panel.filters()
        folder = f["folder"]
        mask = np.array(
            [
                t in f["types"]
                and (f["tag"] is None or f["tag"] in e.tags)
                and (
                    folder is None or (e.folder or "(top level)") == folder or (e.folder or "").startswith(folder + "/")
                )
                and (f["vault"] is None or e.vault == f["vault"])
                for e, t in zip(g.entries, g.types)
            ],
            dtype=bool,
        )
        sel = self.canvas.selected
        if self.panel.ego.isChecked() and sel >= 0:
            ego = np.zeros(g.n, dtype=bool)
            ego[self.canvas.adj.hops(sel, self.panel.hops.value(), allowed=mask | (np.arange(g.n) == sel))] = True
            mask &= ego
            mask[sel] = True
        return mask

    def _apply_mask(self) -> None:
        if self.graph is None:
            return
        mask = self.node_mask()
        self.canvas.set_visible(mask)
        if self.panel.ego.isChecked() and self.canvas.selected >= 0:
            self.canvas.fit(animate=self.isVisible())

    # -- finding, focusing, opening ---------------------------------------------------------------
    def find(self, text: str) -> bool:  # type: ignore[override]  # the view's search, not QWidget.find(window id)
        """Fly to the entry whose title best matches `text` (exact, then prefix, then contained)."""
        g, q = self.graph, text.strip().lower()
        if g is None or not q:
            return False
        titles = [e.title.lower() for e in g.entries]
        for test in (lambda t: t == q, lambda t: t.startswith(q), lambda t: q in t):
            hits = [i for i, t in enumerate(titles) if test(t)]
            if hits:
                i = min(hits, key=lambda k: (-int(g.degree[k]), titles[k]))
                self.select_index(i, fly=True)
                return True
        self.status.setText(f"No entry in the graph matches “{text}”")
        return False

    def select_index(self, i: int, fly: bool = False) -> None:
        if not self.canvas.visible[i]:  # hidden by a filter: show everything again so it can be seen
            self.reset_filters()
        self.canvas.set_selected(i)
        if fly:
            self.canvas.fit(np.array([i]), animate=self.isVisible())

    def focus_finding(self, f: GraphFinding) -> None:
        g = self.graph
        if g is None:
            return
        idx = np.array([g.index[u] for u in f.entries if u in g.index], dtype=np.int64)
        if not len(idx):
            return
        if not self.canvas.visible[idx].all():
            self.reset_filters()
        self.canvas.set_focus(idx)
        self.canvas.fit(idx, animate=self.isVisible())
        self.status.setText(f.message)

    def clear_focus(self) -> None:
        if self.panel.ego.isChecked():
            self.panel.ego.setChecked(False)
        self.canvas.set_focus([])
        self.canvas.set_selected(-1)

    def reset_filters(self) -> None:
        p = self.panel
        for w in (*p.type_boxes.values(), p.tag, p.folder, p.vault, p.ego):
            w.blockSignals(True)
        for b in p.type_boxes.values():
            b.setChecked(True)
        for c in (p.tag, p.folder, p.vault):
            c.setCurrentIndex(0)
        p.ego.setChecked(False)
        for w in (*p.type_boxes.values(), p.tag, p.folder, p.vault, p.ego):
            w.blockSignals(False)
        self._apply_mask()

    def _activated(self, i: int) -> None:
        if self.graph is not None:
            self.openEntryRequested.emit(self.graph.uids[i])

    def _selected(self, i: int) -> None:
        if self.graph is not None and i >= 0:
            e = self.graph.entries[i]
            self.status.setText(
                f"{e.title} · {self.graph.types[i]} · priority {e.priority:g} · "
                f"{int(self.graph.degree[i])} connections · double-click opens it in the Vault view"
            )
        if self.panel.ego.isChecked():
            self._apply_mask()

    def _hovered(self, i: int) -> None:
        if self.graph is not None and i >= 0:
            self.canvas.setToolTip(self.graph.entries[i].title)

    def _pinned(self, i: int) -> None:
        if self.graph is None:
            return
        self.pinned.add(self.graph.uids[i])
        self.save_positions()

    def save_positions(self) -> None:
        if self.graph is None or self.snapshot is None:
            return
        positions = {uid: (x, y) for uid, (x, y) in zip(self.graph.uids, self.canvas.xy.tolist(), strict=False)}
        self.worker.save(vault_names(self.snapshot), positions, self.pinned, self.preset.currentData(), 0)

    # -- export ------------------------------------------------------------------------------------
    def _export_dialog(self, fmt: str) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export the graph", f"graph.{fmt}", "PNG image (*.png)" if fmt == "png" else "SVG drawing (*.svg)"
        )
        if path:
            self.export_image(path)

    def export_image(self, path: str | Path, size: QSize | None = None) -> Path:
        """The graph as it is on screen (same view, colours and filters), as PNG or SVG by suffix."""
        path = Path(path)
        size = size or self.canvas.size()
        w, h = max(size.width(), 200), max(size.height(), 200)
        if path.suffix.lower() == ".svg":
            from PySide6.QtSvg import QSvgGenerator

            gen = QSvgGenerator()
            gen.setFileName(str(path))
            gen.setSize(QSize(w, h))
            gen.setViewBox(QRectF(0, 0, w, h))
            gen.setTitle("DLE Desktop graph")
            p = QPainter(gen)
            self.canvas.paint(p, w, h, cached=False, vector=True)
            p.end()
        else:
            img = QImage(w * 2, h * 2, QImage.Format.Format_ARGB32_Premultiplied)
            img.setDevicePixelRatio(2.0)
            p = QPainter(img)
            self.canvas.paint(p, w, h, cached=False)
            p.end()
            if not img.save(str(path), "PNG"):  # type: ignore[call-overload]  # the stub wants bytes; PySide6 takes only str
                raise OSError(f"could not write {path}")
        return path
