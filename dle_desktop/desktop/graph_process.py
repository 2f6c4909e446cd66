"""The Graph view's heavy work, in a process of its own.

At 10,000 entries building, weighing, analysing and laying out the graph takes several seconds
of Python and of C calls (igraph's Leiden) that hold the interpreter lock; run on a thread of
the window's process they froze the window for up to a second at a time. Here they run in a
child process started with `spawn` (no Qt, no inherited threads), and what comes back is arrays:
the window only has to put them on screen.

Protocol, over one `multiprocessing` pipe (the parent's side is used by one thread only):
  parent → child: ("entries", [(uid, Entry | None), …]) chunks, then ("job", GraphJobSpec);
                  ("cancel", job id) while it runs; ("stop",) to end; ("remember", [(uid, Entry), …])
                  any time between jobs: entries sent ahead, so the next job sends their uids only;
                  ("prepare",) after them: the child finds their links before a job asks.
  child → parent: ("progress", job, done, total, what), ("graph", job, GraphArrays),
                  ("edges", job, edges, rank), ("positions", job, array, phase),
                  ("analysis", job, Analysis), then ("done", job, JobSummary) or ("failed", job, text),
                  or ("cancelled", job) for a job cancelled before its layout (no whole result).
An entry the child already holds from the previous job (the same object on the parent's side: a
sync re-uses every unchanged Entry) travels as its uid alone, so after a sync only the changed
notes cross, and the child's graph of the previous job still recognises the unchanged ones.

`run_graph_job` is the whole computation and takes the sending function as an argument, so the
same code runs in the thread of a process that could not start a child (see `ThreadRunner`)."""

from __future__ import annotations

import gc
import logging
import multiprocessing
import operator
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dle_desktop.core.entry import Entry
from dle_desktop.core.graph import (
    EDGE_KINDS,
    PRESETS,
    Analysis,
    Edge,
    LoreGraph,
    analyse,
    graph_structure,
    layout,
    starting_positions,
    weigh,
)
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.state.injection_stats import injection_totals

log = logging.getLogger(__name__)

#: entries per message: one message's pickling holds the interpreter lock for a few ms only
CHUNK = 250
#: below this many entries a first sketch is not worth it: the real layout is there within a second
SKETCH_MIN_ENTRIES = 1500
#: iterations of the first sketch (an unweighted layout shown while the mentions are counted)
SKETCH_ITERATIONS = 30
#: the least time between two layout frames sent to the window
FRAME_INTERVAL_S = 0.25

Send = Callable[[tuple], None]


@dataclass(frozen=True)
class GraphJobSpec:
    """What a job needs besides its entries (all picklable)."""

    job_id: int
    vaults: tuple[str, ...]
    preset: str = "balanced"
    seed: int = 0
    #: uid → (x, y) known before this job (what is on screen), or None to read the saved layout
    positions: dict[str, tuple[float, float]] | None = None
    pinned: frozenset[str] = frozenset()
    relayout: bool = False  # lay everything out afresh (pinned nodes stay)
    iterations: int | None = None  # tests: a run long enough to cancel
    sketch: bool = False  # nothing is on screen yet: send a first picture as soon as there is one
    store_dir: str | None = None
    db_path: str | None = None


@dataclass(frozen=True)
class GraphArrays:
    """A `LoreGraph` without its entries: the parent pairs it with its own Entry objects."""

    uids: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    kind: np.ndarray  # index into EDGE_KINDS
    weight: np.ndarray
    requires: np.ndarray  # m × 2 directed requires arcs
    weighted: bool
    simple: tuple[np.ndarray, np.ndarray]  # `LoreGraph.simple_edges()`, worked out here

    @classmethod
    def of(cls, g: LoreGraph, weighted: bool) -> GraphArrays:
        code = {k: i for i, k in enumerate(EDGE_KINDS)}
        return cls(
            g.uids,
            np.fromiter((e.a for e in g.edges), np.int64, len(g.edges)),
            np.fromiter((e.b for e in g.edges), np.int64, len(g.edges)),
            np.fromiter((code[e.kind] for e in g.edges), np.int8, len(g.edges)),
            np.fromiter((e.weight for e in g.edges), np.float64, len(g.edges)),
            np.array(g.requires, dtype=np.int64).reshape(-1, 2),
            weighted,
            g.simple_edges(),
        )

    def graph(self, entries: Sequence[Entry]) -> LoreGraph:
        """The graph over `entries` (the snapshot's, in the order the child had them)."""
        by_uid = {e.uid: e for e in entries}
        chosen = tuple(by_uid[u] for u in self.uids)
        kinds = EDGE_KINDS
        named = [kinds[k] for k in self.kind.tolist()]
        edges = tuple(map(Edge, self.a.tolist(), self.b.tolist(), named, self.weight.tolist()))
        arcs = tuple(map(tuple, self.requires.tolist()))
        graph = LoreGraph(entries=chosen, edges=edges, requires=arcs, index={u: i for i, u in enumerate(self.uids)})
        graph.__dict__["_simple"] = {None: self.simple}  # `simple_edges`' own cache: not counted twice
        return graph


@dataclass(frozen=True)
class JobSummary:
    mode: str  # "saved" (no layout run), "incremental", "full"
    cancelled: bool
    iterations: int
    pinned: frozenset[str]
    frequency: dict[str, int]
    frequency_chats: int
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class ChildMemo:
    """What a child keeps between jobs: the last graph (weights of unchanged pairs are reused)
    and its analysis (reused when the structure did not change)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    graph: LoreGraph | None = None
    analysis: Analysis | None = None
    #: the links of the entries sent ahead, found before any job asked (`prepare`)
    prepared: tuple[tuple[Entry, ...], LoreGraph] | None = None

    def prepare(self) -> None:
        """Find the links of the entries held now: the first job over exactly these entries
        then draws its first picture without that step (~0.3 s at 10,000 entries)."""
        held = tuple(self.entries.values())
        self.prepared = (held, graph_structure(held))

    def structure_of(self, entries: Sequence[Entry]) -> LoreGraph:
        """`graph_structure(entries)`, the one prepared ahead when it was made of these very objects."""
        ready, self.prepared = self.prepared, None
        if ready is not None and len(ready[0]) == len(entries) and all(map(operator.is_, ready[0], entries)):
            return ready[1]
        return graph_structure(entries)


def same_structure(a: LoreGraph, b: LoreGraph) -> bool:
    """The very same entries (a sync re-uses every unchanged Entry) and edges: the analysis holds."""
    return (
        a.n == b.n
        and all(x is y for x, y in zip(a.entries, b.entries, strict=True))
        and [(e.a, e.b, e.kind, e.weight) for e in a.edges] == [(e.a, e.b, e.kind, e.weight) for e in b.edges]
    )


def edge_arrays(g: LoreGraph, analysis: Analysis | None) -> tuple[dict, dict]:
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
        core = np.array([(x, y) in backbone for x, y in zip(a, b, strict=True)], dtype=bool)
        rank[kind] = (
            np.lexsort((rng.random(len(a)), -np.array(w, dtype=np.float64), ~core)) if a else np.zeros(0, np.int64)
        )
    return edges, rank


class _Frames:
    """Sends layout frames no more often than FRAME_INTERVAL_S (the first one at once)."""

    def __init__(self, send: Send, job_id: int, phase: str) -> None:
        self.send, self.job_id, self.phase = send, job_id, phase
        self.last = 0.0

    def __call__(self, pos: np.ndarray) -> None:
        now = time.monotonic()
        if now - self.last >= FRAME_INTERVAL_S:
            self.last = now
            self.send(("positions", self.job_id, np.array(pos, dtype=np.float64), self.phase))


def run_graph_job(
    spec: GraphJobSpec, entries: Sequence[Entry], memo: ChildMemo, send: Send, cancelled: Callable[[], bool]
) -> None:
    """Build, weigh, analyse and lay out the graph of `entries`, sending what the view needs as
    it comes (see the module's protocol), and keep the graph in `memo` for the next job."""
    job = spec.job_id
    times: dict[str, float] = {}
    store = LayoutStore(spec.store_dir) if spec.store_dir else None

    def progress(what: str, done: int = 0, total: int = 0) -> None:
        send(("progress", job, done, total, what))

    t = time.perf_counter()
    progress("Building the graph")
    structure = memo.structure_of(entries)
    times["build"] = time.perf_counter() - t

    known = spec.positions
    pinned = set(spec.pinned)
    if known is None and store is not None:
        saved = store.load(spec.vaults)
        if saved is not None:
            known, pinned = saved.positions, set(saved.pinned)
    known = {u: p for u, p in (known or {}).items() if u in structure.index}
    pinned = {u for u in pinned if u in known}
    full = spec.relayout or not known

    if spec.sketch:  # nothing on screen yet: the links and, where there is one, a first picture
        send(("graph", job, GraphArrays.of(structure, weighted=False)))
        send(("edges", job, *edge_arrays(structure, None)))
        if len(known) == structure.n and not spec.relayout:
            send(("positions", job, _positions_of(structure, known), "saved"))
        elif known and not spec.relayout:  # notes added since: beside their neighbours, as the layout starts
            send(("positions", job, starting_positions(structure, known, spec.seed), "saved"))
        elif not known and structure.n >= SKETCH_MIN_ENTRIES:
            t = time.perf_counter()
            progress("Sketching a first picture")
            rough = replace(PRESETS.get(spec.preset, PRESETS["balanced"]), community_start=False, tidy_islands=False)
            lay = layout(
                structure,
                rough,
                seed=spec.seed,
                cancel=cancelled,
                iterations=SKETCH_ITERATIONS,
                frame=_Frames(send, job, "sketch"),
            )
            send(("positions", job, lay.positions, "sketch"))
            times["sketch"] = time.perf_counter() - t

    # A cancelled job (the user's Cancel, or a newer index on its way) stops between the steps:
    # weighing and analysing 100,000 entries take a minute, and a newer job waits for this one.
    if cancelled():
        send(("cancelled", job))
        return
    t = time.perf_counter()
    progress("Weighing the links")
    graph = weigh(structure, memo.graph)
    times["weights"] = time.perf_counter() - t
    if cancelled():
        memo.graph, memo.analysis = graph, None  # its weights still spare the next job a recount
        send(("cancelled", job))
        return

    analysis = memo.analysis
    if analysis is None or memo.graph is None or not same_structure(graph, memo.graph):
        t = time.perf_counter()
        progress("Finding clusters and gaps")
        analysis = analyse(graph, seed=spec.seed)
        times["analysis"] = time.perf_counter() - t
    send(("graph", job, GraphArrays.of(graph, weighted=True)))
    send(("analysis", job, analysis))
    send(("edges", job, *edge_arrays(graph, analysis)))

    params = PRESETS.get(spec.preset, PRESETS["balanced"])
    membership = analysis.communities.membership if params.kinds is None else None
    total = spec.iterations or (params.iterations if full else params.incremental_iterations)
    every = max(1, min(total // 100, 20))  # a long run still reports (and shows it is alive) often

    def report(done: int, of: int) -> None:
        progress("Laying out", done, of)

    t = time.perf_counter()
    cancelled_layout, iterations = False, 0
    if full or len(known) < graph.n:
        lay = layout(
            graph,
            params,
            seed=spec.seed,
            previous=({u: known[u] for u in pinned} or None) if full else known,
            fixed=pinned or None,
            progress=report,
            cancel=cancelled,
            iterations=total,
            progress_every=every,
            membership=membership if full else None,
            frame=_Frames(send, job, "layout"),
        )
        positions, cancelled_layout, iterations = lay.positions, lay.cancelled, lay.iterations
        mode = "full" if full else "incremental"
        if cancelled_layout and not full:  # the old nodes stay exactly where they were
            for i, uid in enumerate(graph.uids):
                if uid in known:
                    positions[i] = known[uid]
    else:
        positions, mode = _positions_of(graph, known), "saved"
    times["layout"] = time.perf_counter() - t

    frequency, chats = injection_totals(spec.db_path) if spec.db_path else ({}, 0)
    if mode != "saved" and not cancelled_layout and store is not None:
        try:
            store.save(
                spec.vaults,
                dict(zip(graph.uids, map(tuple, positions.tolist()), strict=True)),
                pinned,
                spec.preset,
                spec.seed,
            )
        except OSError as exc:
            log.warning("could not save the graph layout: %s", exc)
    memo.graph, memo.analysis = graph, analysis
    send(("positions", job, positions, "final"))
    send(("done", job, JobSummary(mode, cancelled_layout, iterations, frozenset(pinned), frequency, chats, times)))


def _positions_of(g: LoreGraph, known: dict[str, tuple[float, float]]) -> np.ndarray:
    return np.array([known[u] for u in g.uids], dtype=np.float64).reshape(-1, 2)


# -- the child's side -------------------------------------------------------------------------------
def child_main(conn: Any) -> None:
    """The child process: jobs one after another until ("stop",) or the parent goes away.

    The collector runs only between jobs: while 10,000 entries arrive and their graph is built,
    each young collection walked everything made so far (unpickling took 3x as long)."""
    gc.disable()
    memo = ChildMemo()
    incoming: list[tuple[str, Entry | None]] = []
    waiting: list[tuple] = []
    while True:
        try:
            msg = waiting.pop(0) if waiting else conn.recv()
        except (EOFError, OSError):
            return
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "entries":
            incoming.extend(msg[1])
        elif kind == "remember":
            memo.entries.update(msg[1])
        elif kind == "prepare":
            memo.prepare()
        elif kind == "job":
            spec: GraphJobSpec = msg[1]
            entries = _entries_from(incoming, memo)
            incoming = []
            stop = threading.Event()

            def cancelled(spec: GraphJobSpec = spec, stop: threading.Event = stop) -> bool:
                while not stop.is_set() and conn.poll():
                    got = conn.recv()
                    if got[0] == "cancel" and got[1] == spec.job_id:
                        stop.set()
                    elif got[0] != "cancel":
                        waiting.append(got)
                        stop.set()  # a newer job (or stop) is waiting: this one's result is stale
                return stop.is_set()

            try:
                run_graph_job(spec, entries, memo, conn.send, cancelled)
            except Exception as exc:  # reported to the window, which says the graph could not be built
                log.exception("graph job failed")
                conn.send(("failed", spec.job_id, f"{type(exc).__name__}: {exc}"))
                memo.graph = memo.analysis = None
            gc.collect()


def _entries_from(items: list[tuple[str, Entry | None]], memo: ChildMemo) -> list[Entry]:
    entries: list[Entry] = []
    for uid, entry in items:
        got = entry if entry is not None else memo.entries.get(uid)
        if got is None:  # the parent thought we had it: cannot happen unless a child was replaced
            raise RuntimeError(f"the graph process lost the entry {uid}")
        entries.append(got)
    memo.entries = {e.uid: e for e in entries}
    return entries


# -- the parent's side -------------------------------------------------------------------------------
class GraphProcess:
    """The window's handle on its graph child. Used by one thread at a time (the view's worker
    thread). `run` sends a job and hands each of the child's messages for it to `deliver`, until
    the last one ("done" or "failed")."""

    def __init__(self) -> None:
        self._process: Any = None
        self._conn: Any = None
        self._sent: dict[str, Entry] = {}
        #: entries the last job sent whole (the rest went as their uid: the child had them)
        self.sent_in_full = 0

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the child if it is not running (a spawned interpreter: about a second, off
        the GUI thread)."""
        if self.alive:
            return
        self.close()
        ctx = multiprocessing.get_context("spawn")
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        process = ctx.Process(target=child_main, args=(child_conn,), name="dle-desktop-graph", daemon=True)
        process.start()
        child_conn.close()
        self._process, self._conn, self._sent = process, parent_conn, {}

    def send_ahead(self, entries: Sequence[Entry], chunk: int = CHUNK) -> int:
        """Send up to `chunk` of `entries` the child does not hold yet, before any job wants them
        (a process started ahead, in a quiet moment): the first job then sends their uids only.
        Returns how many it sent; 0 when the child holds them all."""
        self.start()
        items = [(e.uid, e) for e in entries if self._sent.get(e.uid) is not e][:chunk]
        if items:
            self._conn.send(("remember", items))
            self._sent.update(items)
        return len(items)

    def prepare(self) -> None:
        """The entries sent ahead are all there: the child finds their links while it waits."""
        self._conn.send(("prepare",))

    def run(self, spec: GraphJobSpec, entries: Sequence[Entry], cancel: threading.Event, deliver: Send) -> None:
        self.start()
        conn = self._conn
        items = [(e.uid, None if self._sent.get(e.uid) is e else e) for e in entries]
        self.sent_in_full = sum(1 for _uid, e in items if e is not None)
        self._sent = {}  # until the job is under way the child's copy is uncertain
        for i in range(0, len(items), CHUNK):
            conn.send(("entries", items[i : i + CHUNK]))
            time.sleep(0)  # let the GUI thread take the interpreter lock between chunks
        conn.send(("job", spec))
        self._sent = {e.uid: e for e in entries}
        told = False
        while True:
            if cancel.is_set() and not told:
                conn.send(("cancel", spec.job_id))
                told = True
            if not conn.poll(0.05):
                if not self.alive:
                    self._sent = {}
                    raise RuntimeError("the graph process stopped")
                continue
            try:
                msg = conn.recv()
            except (EOFError, OSError) as exc:
                self._sent = {}
                raise RuntimeError("the graph process stopped") from exc
            if msg[1] != spec.job_id:
                continue  # the tail of a job given up on
            deliver(msg)
            if msg[0] in ("done", "failed", "cancelled"):
                if msg[0] == "failed":
                    self._sent = {}  # the child dropped its memo
                return

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(("stop",))
            except (OSError, ValueError):
                pass
            self._conn.close()
        if self._process is not None:
            self._process.join(2.0)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(1.0)
        self._process = self._conn = None
        self._sent = {}


class ThreadRunner:
    """The same jobs on the calling thread (small vaults, or where no child can be started)."""

    def __init__(self) -> None:
        self.memo = ChildMemo()

    def run(self, spec: GraphJobSpec, entries: Sequence[Entry], cancel: threading.Event, deliver: Send) -> None:
        try:
            run_graph_job(spec, entries, self.memo, deliver, cancel.is_set)
        except Exception as exc:
            log.exception("graph job failed")
            self.memo.graph = self.memo.analysis = None
            deliver(("failed", spec.job_id, f"{type(exc).__name__}: {exc}"))

    def close(self) -> None:
        self.memo = ChildMemo()


# -- a process started ahead ---------------------------------------------------------------------
_spare: GraphProcess | None = None
_spare_lock = threading.Lock()


def prestart_process(entries: Sequence[Entry] = (), give_way: Callable[[], object] = lambda: None) -> bool:
    """Start a graph child before any Graph view wants one (call it off the GUI thread): the
    first opening of the Graph view on a large vault then does not wait for an interpreter to
    start and import the graph code. `entries` are sent to it ahead, a chunk at a time with
    `give_way` between chunks (pickling 10,000 entries holds the interpreter lock ~0.2 s), so
    the first job sends their uids only, and once all are there the child finds their links.
    The first worker to need a child takes it, also half-way through the sending: the job sends
    the rest. True if one is (now) waiting."""
    global _spare
    with _spare_lock:
        if _spare is not None and _spare.alive:  # started earlier (a click on the Graph tab): hand it the entries
            process = _spare
        else:
            process = GraphProcess()
            try:
                process.start()
            except (OSError, RuntimeError, ValueError) as exc:
                log.info("no graph process started ahead (%s); the Graph view starts one when opened", exc)
                return False
            _spare = process
    while entries:
        give_way()
        with _spare_lock:  # a worker takes the spare under this lock: never while a chunk is on its way
            if _spare is not process:
                break
            try:
                if not process.send_ahead(entries):
                    process.prepare()  # all there: the child finds the links while it waits
                    break
            except (OSError, ValueError) as exc:  # the child went away: the first job starts a new one
                log.info("the graph process started ahead stopped (%s)", exc)
                break
    return True


def take_spare() -> GraphProcess | None:
    """The process started ahead, for the first worker that needs one (None: none, or it died)."""
    global _spare
    with _spare_lock:
        process, _spare = _spare, None
    return process if process is not None and process.alive else None
