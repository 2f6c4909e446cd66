"""The Graph view's heavy work, off the GUI thread and, for a large vault, out of the window's
process (`dle_desktop.desktop.graph_process`): build the graph from a snapshot, weigh it, lay
it out (afresh, incrementally after a sync, or not at all when the saved positions cover it),
analyse it, read the injection counts, and save positions.

One worker thread talks to the runner, so jobs never race and a save never interleaves with a
layout. What the runner sends comes back as Qt signals (queued onto the GUI thread, since this
object lives there): `sketch` for a first picture while the rest is worked out, `frame` for the
positions of a layout still settling, `finished` for the whole result (`abandoned` instead for
a job cancelled before its layout). A newer job makes an older one's messages stale: they are
dropped, not shown."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal

from dle_desktop.core.entry import Entry
from dle_desktop.core.graph import Analysis, LoreGraph
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.desktop.graph_process import (
    GraphArrays,
    GraphJobSpec,
    GraphProcess,
    JobSummary,
    ThreadRunner,
    edge_arrays,
    prestart_process,
    take_spare,
)
from dle_desktop.desktop.graph_size import PROCESS_MIN_ENTRIES
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.ui.graph.index import Adjacency
from dle_desktop.ui.graph.panel import filter_choices
from dle_desktop.ui.graph.style import custom_fields

log = logging.getLogger(__name__)

__all__ = [
    "PROCESS_MIN_ENTRIES",
    "GraphJob",
    "GraphResult",
    "GraphWorker",
    "ViewData",
    "edge_arrays",
    "prestart_process",
]


@dataclass
class GraphJob:
    snapshot: IndexSnapshot | Sequence[Entry]
    vaults: tuple[str, ...]
    preset: str = "balanced"
    seed: int = 0
    previous_graph: LoreGraph | None = None  # what is on screen (None: nothing yet)
    #: uid → (x, y) known before this job (what is on screen, or None to read the saved file)
    positions: dict[str, tuple[float, float]] | None = None
    pinned: frozenset[str] = frozenset()
    relayout: bool = False  # lay everything out afresh (pinned nodes stay)
    iterations: int | None = None  # tests: a run long enough to cancel


@dataclass
class GraphResult:
    job_id: int
    graph: LoreGraph
    positions: np.ndarray  # n × 2, aligned with graph.entries
    pinned: frozenset[str]
    analysis: Analysis | None
    frequency: dict[str, int]
    frequency_chats: int
    mode: str  # "saved" (no layout run), "incremental", "full"; a preview: "nodes", "sketch" or "layout"
    cancelled: bool = False
    iterations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: per kind: edge endpoint arrays, and the order to draw them in (`edge_arrays`)
    edges: tuple[dict, dict] | None = None
    #: a first picture shown while the rest is worked out (no analysis yet, or a layout settling)
    preview: bool = False
    #: what the view derives from the graph, worked out on the worker thread (None: the view does it)
    prepared: ViewData | None = None


@dataclass(frozen=True)
class ViewData:
    """The graph's lookups the view needs, made off the GUI thread (at 10,000 entries they took
    a few hundred ms there)."""

    titles: list[str]
    completions: list[str]  # the titles, unique, sorted without regard to case
    choices: tuple[list[str], list[str], list[str]]  # the filters' tags, folders, vaults
    fields: list[str]  # custom field names
    adjacency: Adjacency  # over every edge kind

    @classmethod
    def of(cls, graph: LoreGraph, edges: dict[str, tuple[np.ndarray, np.ndarray]]) -> ViewData:
        graph.types, graph.degree  # noqa: B018 - fills the graph's own caches here, not on the GUI thread
        titles = [e.title for e in graph.entries]
        a = np.concatenate([p[0] for p in edges.values()]) if edges else np.zeros(0, np.int64)
        b = np.concatenate([p[1] for p in edges.values()]) if edges else np.zeros(0, np.int64)
        return cls(
            titles,
            sorted(set(titles), key=str.lower),
            filter_choices(graph),
            custom_fields(graph),
            Adjacency(graph.n, a, b),
        )


class _Assembly:
    """One job's messages put together on the worker thread."""

    def __init__(self, worker: GraphWorker, job_id: int, entries: Sequence[Entry], previews: bool) -> None:
        self.worker, self.job_id, self.entries = worker, job_id, entries
        self.previews = previews  # nothing is on screen: show what there is as it comes
        self.graph: LoreGraph | None = None
        self.analysis: Analysis | None = None
        self.edges: tuple[dict, dict] | None = None
        self.positions: np.ndarray | None = None
        self.shown: str | None = None  # what the last preview showed: None, "nodes", "sketch", "layout"
        self._prepared: tuple[int, int, ViewData] | None = None  # (id(graph), id(edges), …)

    def deliver(self, msg: tuple) -> None:
        w, kind = self.worker, msg[0]
        if kind == "progress":
            w.progress.emit(self.job_id, msg[2], msg[3], msg[4])
        elif kind == "graph":
            arrays: GraphArrays = msg[2]
            self.graph = arrays.graph(self.entries)
        elif kind == "edges":
            self.edges = (msg[2], msg[3])
        elif kind == "analysis":
            self.analysis = msg[2]
        elif kind == "positions":
            self._positions(msg[2], msg[3])
        elif kind == "done":
            self._done(msg[2])
        elif kind == "failed":
            w.failed.emit(self.job_id, msg[2])
        elif kind == "cancelled":
            w.abandoned.emit(self.job_id)

    def _positions(self, pos: np.ndarray, phase: str) -> None:
        if phase == "final":
            self.positions = pos
            return
        if not self.previews or self.graph is None or not self.worker.is_current(self.job_id):
            return
        # a new picture when there is something new to see (the first one, or the communities'
        # colours with the real layout's start); otherwise only the positions move
        if self.shown in (None, "nodes") or (
            phase == "layout" and self.shown != "layout" and self.analysis is not None
        ):
            self.shown = phase
            self.worker.sketch.emit(self._result(pos, phase, preview=True))
        else:
            self.worker.frame.emit(self.job_id, pos)

    def show_saved_nodes(self, store: LayoutStore, vaults: tuple[str, ...]) -> None:
        """Nothing on screen yet and a saved layout places every node: the nodes at their saved
        places at once, before the child has found the links (on a restart at 10,000 entries
        they follow about a second later and are drawn in then)."""
        saved = store.load(vaults)
        nodes = tuple(e for e in self.entries if e.graph)
        if saved is None or not nodes or any(e.uid not in saved.positions for e in nodes):
            return
        graph = LoreGraph(entries=nodes, edges=(), index={e.uid: i for i, e in enumerate(nodes)})
        positions = np.array([saved.positions[e.uid] for e in nodes], dtype=np.float64)
        edges: tuple[dict, dict] = ({}, {})
        self.shown = "nodes"
        self.worker.sketch.emit(
            GraphResult(
                self.job_id,
                graph,
                positions,
                frozenset(saved.pinned),
                None,
                {},
                0,
                "nodes",
                edges=edges,
                preview=True,
                prepared=ViewData.of(graph, edges[0]),
            )
        )

    def _done(self, summary: JobSummary) -> None:
        assert self.graph is not None and self.positions is not None  # sent before "done"
        res = self._result(self.positions, summary.mode, preview=False)
        res.pinned, res.frequency, res.frequency_chats = summary.pinned, summary.frequency, summary.frequency_chats
        res.cancelled, res.iterations, res.seconds = summary.cancelled, summary.iterations, summary.seconds
        self.worker.finished.emit(res)

    def _result(self, pos: np.ndarray, mode: str, preview: bool) -> GraphResult:
        assert self.graph is not None and self.edges is not None  # the child sends both first
        key = (id(self.graph), id(self.edges))
        if self._prepared is None or self._prepared[:2] != key:
            self._prepared = (*key, ViewData.of(self.graph, self.edges[0]))
        return GraphResult(
            self.job_id,
            self.graph,
            pos,
            frozenset(),
            self.analysis,
            {},
            0,
            mode,
            edges=self.edges,
            preview=preview,
            prepared=self._prepared[2],
        )


class GraphWorker(QObject):
    progress = Signal(int, int, int, str)  # job id, done, total, what
    sketch = Signal(object)  # GraphResult with preview=True
    frame = Signal(int, object)  # job id, n × 2 positions of a layout still settling
    finished = Signal(object)  # GraphResult
    failed = Signal(int, str)
    abandoned = Signal(int)  # job id: cancelled before its layout, so no whole result comes

    def __init__(
        self,
        store: LayoutStore | None,
        db_path: Path | None,
        parent: QObject | None = None,
        process_min_entries: int = PROCESS_MIN_ENTRIES,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.db_path = db_path
        self.process_min_entries = process_min_entries
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graph")
        self._cancel = threading.Event()
        self._job_id = 0
        self._process: GraphProcess | None = None
        self._thread_runner = ThreadRunner()
        self.busy = False
        self._stopped = False
        #: "process" or "thread": where the last job ran (tests, the benchmark)
        self.ran_in = ""

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
        """Cancel the job, end the child process and the worker thread (twice is harmless)."""
        self._cancel.set()
        if self._stopped:
            return
        self._stopped = True
        self._pool.submit(self._close_runners)
        self._pool.shutdown(wait=True, cancel_futures=False)

    def is_current(self, job_id: int) -> bool:
        return job_id == self._job_id

    # -- on the worker thread -------------------------------------------------------------------
    def _start_process(self) -> GraphProcess | None:
        if self._process is None:
            self._process = take_spare() or GraphProcess()
        try:
            self._process.start()
        except (OSError, RuntimeError, ValueError) as exc:  # no child possible here: stay in a thread
            log.warning("the graph runs in the window's process: no child process could start (%s)", exc)
            self._process = None
            self.process_min_entries = 1 << 62
        return self._process

    def _close_runners(self) -> None:
        if self._process is not None:
            self._process.close()
        self._thread_runner.close()

    def _save_safely(self, vaults, positions, pinned, preset, seed) -> None:
        assert self.store is not None  # callers save only with a store
        try:
            self.store.save(vaults, positions, pinned, preset, seed)
        except OSError as exc:
            log.warning("could not save the graph layout: %s", exc)

    def _run_safely(self, job_id: int, job: GraphJob, cancel: threading.Event) -> None:
        source = job.snapshot
        entries = tuple(source.entries if isinstance(source, IndexSnapshot) else source)
        spec = GraphJobSpec(
            job_id,
            job.vaults,
            job.preset,
            job.seed,
            job.positions,
            job.pinned,
            job.relayout,
            job.iterations,
            sketch=job.previous_graph is None,
            store_dir=str(self.store.folder) if self.store is not None else None,
            db_path=str(self.db_path) if self.db_path is not None else None,
        )
        assembly = _Assembly(self, job_id, entries, spec.sketch)
        try:
            process = self._start_process() if len(entries) >= self.process_min_entries else None
            if process is not None:
                self.ran_in = "process"
                if spec.sketch and spec.positions is None and not spec.relayout and self.store is not None:
                    assembly.show_saved_nodes(self.store, spec.vaults)
                process.run(spec, entries, cancel, assembly.deliver)
            else:
                self.ran_in = "thread"
                self._thread_runner.run(spec, entries, cancel, assembly.deliver)
        except Exception as exc:
            log.exception("graph job failed")
            self.failed.emit(job_id, str(exc))
