"""The Graph view's heavy work, off the GUI thread: build the graph from a snapshot, lay it out
(afresh, incrementally after a sync, or not at all when the saved positions cover it), analyse
it, read the injection counts, and save positions. One worker thread, so jobs never race and a
save never interleaves with a layout; results come back as Qt signals (queued onto the GUI
thread, since this object lives there). A newer job makes an older one's result stale: it is
dropped, not shown."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal

from dle_desktop.core.entry import Entry
from dle_desktop.core.graph import EDGE_KINDS, PRESETS, Analysis, LoreGraph, analyse, build_graph, layout
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.state.injection_stats import injection_totals

log = logging.getLogger(__name__)


@dataclass
class GraphJob:
    snapshot: IndexSnapshot | Sequence[Entry]
    vaults: tuple[str, ...]
    preset: str = "balanced"
    seed: int = 0
    previous_graph: LoreGraph | None = None
    #: uid → (x, y) known before this job (what is on screen, or None to read the saved file)
    positions: dict[str, tuple[float, float]] | None = None
    pinned: frozenset[str] = frozenset()
    relayout: bool = False  # lay everything out afresh (pinned nodes stay)
    iterations: int | None = None  # tests: a run long enough to cancel
    analysis: Analysis | None = None  # reused when the graph did not change


@dataclass
class GraphResult:
    job_id: int
    graph: LoreGraph
    positions: np.ndarray  # n × 2, aligned with graph.entries
    pinned: frozenset[str]
    analysis: Analysis | None
    frequency: dict[str, int]
    frequency_chats: int
    mode: str  # "saved" (no layout run), "incremental", "full"
    cancelled: bool = False
    iterations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: per kind: edge endpoint arrays, and the order to draw them in (`edge_arrays`)
    edges: tuple[dict, dict] | None = None


class GraphWorker(QObject):
    progress = Signal(int, int, int, str)  # job id, done, total, what
    finished = Signal(object)  # GraphResult
    failed = Signal(int, str)

    def __init__(self, store: LayoutStore | None, db_path: Path | None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.db_path = db_path
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graph")
        self._cancel = threading.Event()
        self._job_id = 0
        self.busy = False

    def start(self, job: GraphJob) -> int:
        """Start `job` (an older one still running is cancelled); returns its id."""
        self._cancel.set()
        self._cancel = cancel = threading.Event()
        self._job_id += 1
        job_id = self._job_id
        self.busy = True
        self._pool.submit(self._run_safely, job_id, job, cancel)
        return job_id

    def cancel(self) -> None:
        self._cancel.set()

    def save(self, vaults, positions: dict[str, tuple[float, float]], pinned, preset: str, seed: int) -> None:
        if self.store is not None:
            self._pool.submit(self._save_safely, tuple(vaults), dict(positions), set(pinned), preset, seed)

    def stop(self) -> None:
        self._cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=False)

    def is_current(self, job_id: int) -> bool:
        return job_id == self._job_id

    # -- on the worker thread -------------------------------------------------------------------
    def _save_safely(self, vaults, positions, pinned, preset, seed) -> None:
        assert self.store is not None  # callers save only with a store
        try:
            self.store.save(vaults, positions, pinned, preset, seed)
        except OSError as exc:
            log.warning("could not save the graph layout: %s", exc)

    def _run_safely(self, job_id: int, job: GraphJob, cancel: threading.Event) -> None:
        try:
            result = self._run(job_id, job, cancel)
        except Exception as exc:
            log.exception("graph job failed")
            self.failed.emit(job_id, str(exc))
            return
        self.finished.emit(result)

    def _run(self, job_id: int, job: GraphJob, cancel: threading.Event) -> GraphResult:
        times: dict[str, float] = {}
        t = time.perf_counter()
        self.progress.emit(job_id, 0, 0, "building the graph")
        graph = build_graph(job.snapshot, previous=job.previous_graph)
        times["build"] = time.perf_counter() - t

        known = job.positions
        pinned = set(job.pinned)
        preset, seed = job.preset, job.seed
        if known is None and self.store is not None:
            saved = self.store.load(job.vaults)
            if saved is not None:
                known, pinned = saved.positions, set(saved.pinned)
        known = {u: p for u, p in (known or {}).items() if u in graph.index}
        pinned = {u for u in pinned if u in known}

        def report(done: int, total: int) -> None:
            self.progress.emit(job_id, done, total, "laying out")

        # analysis first: a fresh layout starts from its communities (the colours the view shows)
        analysis = job.analysis
        if analysis is None or job.previous_graph is None or not _same_structure(graph, job.previous_graph):
            t = time.perf_counter()
            self.progress.emit(job_id, 0, 0, "finding clusters and gaps")
            analysis = analyse(graph, seed=seed)
            times["analysis"] = time.perf_counter() - t

        params = PRESETS.get(preset, PRESETS["balanced"])
        membership = analysis.communities.membership if analysis is not None and params.kinds is None else None
        t = time.perf_counter()
        cancelled, iterations = False, 0
        full = job.relayout or not known
        total = job.iterations or (params.iterations if full else params.incremental_iterations)
        every = max(1, min(total // 100, 20))  # a long run still reports (and shows it is alive) often
        if full:
            prev = {u: known[u] for u in pinned} or None
            lay = layout(
                graph,
                params,
                seed=seed,
                previous=prev,
                fixed=pinned or None,
                progress=report,
                cancel=cancel,
                iterations=total,
                progress_every=every,
                membership=membership,
            )
            positions, mode, cancelled, iterations = lay.positions, "full", lay.cancelled, lay.iterations
        elif len(known) < graph.n:
            lay = layout(
                graph,
                params,
                seed=seed,
                previous=known,
                fixed=pinned or None,
                progress=report,
                cancel=cancel,
                iterations=total,
                progress_every=every,
            )
            positions, mode, cancelled, iterations = lay.positions, "incremental", lay.cancelled, lay.iterations
            if cancelled:  # the old nodes stay exactly where they were
                for i, uid in enumerate(graph.uids):
                    if uid in known:
                        positions[i] = known[uid]
        else:
            positions = np.array([known[u] for u in graph.uids], dtype=np.float64).reshape(-1, 2)
            mode = "saved"
        times["layout"] = time.perf_counter() - t

        frequency, chats = injection_totals(self.db_path) if self.db_path is not None else ({}, 0)

        result = GraphResult(
            job_id,
            graph,
            positions,
            frozenset(pinned),
            analysis,
            frequency,
            chats,
            mode,
            cancelled,
            iterations,
            times,
            edge_arrays(graph, analysis),
        )
        if mode != "saved" and not cancelled and self.store is not None:
            self._save_safely(job.vaults, dict(zip(graph.uids, map(tuple, positions.tolist()))), pinned, preset, seed)
        return result


def edge_arrays(g: LoreGraph, analysis) -> tuple[dict, dict]:
    """Per kind: endpoint arrays, and the order to draw them in (zoomed out only the first links
    are drawn): the disparity backbone first, then by weight, then a seeded shuffle, so the few
    edges drawn are the telling ones and spread over the whole graph."""
    by_kind: dict[str, tuple[list[int], list[int], list[float]]] = {k: ([], [], []) for k in EDGE_KINDS}
    for e in g.edges:
        a, b, w = by_kind[e.kind]
        a.append(e.a)
        b.append(e.b)
        w.append(e.weight)
    backbone = set(map(tuple, analysis.backbone.pairs.tolist())) if analysis is not None else set()
    rng = np.random.default_rng(0)
    edges, rank = {}, {}
    for kind, (a, b, w) in by_kind.items():
        edges[kind] = (np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
        core = np.array([(x, y) in backbone for x, y in zip(a, b)], dtype=bool)
        rank[kind] = (
            np.lexsort((rng.random(len(a)), -np.array(w, dtype=np.float64), ~core)) if a else np.zeros(0, np.int64)
        )
    return edges, rank


def _same_structure(a: LoreGraph, b: LoreGraph) -> bool:
    """The very same entries (a sync re-uses every unchanged Entry) and edges: the analysis holds."""
    return (
        a.n == b.n
        and all(x is y for x, y in zip(a.entries, b.entries))
        and [(e.a, e.b, e.kind, e.weight) for e in a.edges] == [(e.a, e.b, e.kind, e.weight) for e in b.edges]
    )
