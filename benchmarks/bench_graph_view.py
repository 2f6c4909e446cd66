#!/usr/bin/env python3
"""Graph view benchmark (issue 13, "Speed", the Qt half): frame times of the real GraphView's
canvas while panning and zooming, the longest the GUI thread is held by hover, selection and
finding focus, and the layout as the view runs it (its worker thread), with how long the GUI
thread stalls meanwhile. On the 10,000-entry vault of `bench_index.generate_vault`, as written
(~70,000 edges) and thinned to the issue's 30,000 (`bench_graph.thinned`).

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_graph_view.py [--entries 10000] [--frames 120]
        [--screenshot docs/screenshots/graph-10k.png]

A frame is `canvas.repaint()` (a synchronous paintEvent into the offscreen backing store) after
moving the view; pan frames move 9 px, zoom frames zoom 6 % around the cursor and back out.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import numpy as np  # noqa: E402 - kept with the imports after the sys.path setup
from bench_graph import TARGET_PAIRS, snapshot_of, thinned  # noqa: E402 - needs the sys.path setup above
from bench_index import generate_vault, load_average, machine_info  # noqa: E402 - needs the sys.path setup above
from PySide6.QtCore import QElapsedTimer, QEventLoop, QPointF, Qt, QTimer  # noqa: E402 - after QT_QPA_PLATFORM is set above
from PySide6.QtGui import QMouseEvent  # noqa: E402 - after QT_QPA_PLATFORM is set above
from PySide6.QtWidgets import QApplication  # noqa: E402 - after QT_QPA_PLATFORM is set above

from dle_desktop.core.graph import analyse, layout  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ui.graph.view import GraphView  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ui.graph.worker import GraphResult  # noqa: E402 - needs the sys.path setup above

FRAME_TARGET_MS = 33.0
BLOCK_TARGET_MS = 50.0
WORK = REPO / "benchmarks" / "_work" / "graph_view"


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples), q)) if samples else float("nan")


def timed_ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def frames(view: GraphView, n: int) -> dict[str, list[float]]:
    c = view.canvas
    c.fit()
    QApplication.processEvents()
    out: dict[str, list[float]] = {"pan": [], "zoom": [], "pan_zoomed_in": []}
    for k in range(n):
        dx = 9 if (k // 20) % 2 == 0 else -9
        out["pan"].append(timed_ms(lambda dx=dx, k=k: (c.pan_by(dx, 4 if k % 2 else -4), c.repaint())))
    w, h = c.width(), c.height()
    for k in range(n):
        f = 1.06 if (k // 30) % 2 == 0 else 1 / 1.06
        out["zoom"].append(timed_ms(lambda f=f: (c.zoom_at(f, w * 0.4, h * 0.6), c.repaint())))
    c.fit()
    c.zoom_at(6.0, w / 2, h / 2)  # labels on, the level of detail a reader works at
    c.repaint()
    for k in range(n):
        dx = 9 if (k // 20) % 2 == 0 else -9
        out["pan_zoomed_in"].append(timed_ms(lambda dx=dx: (c.pan_by(dx, 3), c.repaint())))
    c.fit()
    c.repaint()
    return out


def move_event(x: float, y: float, button=Qt.NoButton) -> QMouseEvent:
    p = QPointF(x, y)
    return QMouseEvent(QMouseEvent.MouseMove, p, p, p, Qt.NoButton, button, Qt.NoModifier)


def interaction(view: GraphView, rng: random.Random, n: int) -> dict[str, list[float]]:
    """Each sample: the event handled and the frame it asks for painted, on the GUI thread."""
    c = view.canvas
    c.fit()
    c.repaint()
    out: dict[str, list[float]] = {"hover": [], "select": [], "focus_finding": [], "search": []}
    scr = c.world_to_screen(c.xy)
    nodes = [i for i in range(len(c.xy)) if 0 < scr[i, 0] < c.width() and 0 < scr[i, 1] < c.height()]
    for _ in range(n):
        i = rng.choice(nodes)
        x, y = scr[i]
        # a node under the mouse, then empty space next to it: both picks and repaints
        out["hover"].append(timed_ms(lambda x=x, y=y: (c.mouseMoveEvent(move_event(x, y)), c.repaint())))
        out["hover"].append(timed_ms(lambda x=x, y=y: (c.mouseMoveEvent(move_event(x + 0.5, y + 0.5)), c.repaint())))
    c.set_hovered(-1)
    for _ in range(n):
        i = rng.choice(nodes)
        out["select"].append(timed_ms(lambda i=i: (c.set_selected(i), c.repaint())))
    findings = list(view.result.analysis.findings) if view.result.analysis else []
    for f in findings[:n]:

        def focus(f=f):
            view.focus_finding(f)
            if c._anim is not None:
                c._anim.setCurrentTime(10_000)
            c.repaint()

        out["focus_finding"].append(timed_ms(focus))
    titles = [e.title for e in view.graph.entries]
    for _ in range(min(n, 40)):
        t = rng.choice(titles)
        out["search"].append(timed_ms(lambda t=t: (view.find(t[: max(3, len(t) // 2)]), c.repaint())))
    view.clear_focus()
    return out


def worker_layout(view: GraphView, snapshot, app) -> tuple[float, GraphResult, float, int]:
    """The view's own path: set_snapshot → worker → resultShown; meanwhile a 5 ms timer on the
    GUI thread records the longest gap between its ticks (how long the GUI was held)."""
    loop = QEventLoop()
    got: list[GraphResult] = []
    view.resultShown.connect(lambda r: (got.append(r), loop.quit()))
    clock = QElapsedTimer()
    gaps: list[float] = []
    last = [0.0]
    tick = QTimer(interval=5)

    def on_tick():
        now = clock.nsecsElapsed() / 1e6
        gaps.append(now - last[0])
        last[0] = now

    tick.timeout.connect(on_tick)
    clock.start()
    tick.start()
    t = time.perf_counter()
    view.set_snapshot(snapshot)
    loop.exec()
    wall = time.perf_counter() - t
    tick.stop()
    return wall, got[0], max(gaps) if gaps else float("nan"), len(gaps)


def row(label: str, samples: list[float], target: float | None) -> str:
    p50, p95, mx = pct(samples, 50), pct(samples, 95), max(samples) if samples else float("nan")
    verdict = "" if target is None else ("PASS" if (p95 if "frame" in label else mx) < target else "MISS")
    t = f"< {target:.0f} ms" if target else ""
    return f"{label:<58} {len(samples):>5} {p50:>8.1f} {p95:>8.1f} {mx:>8.1f}  {t:>9}  {verdict}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--screenshot", default="")
    ap.add_argument(
        "--shot-only", action="store_true", help="only lay out the 30,000-edge variant and take the picture"
    )
    args = ap.parse_args(argv)

    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    app = QApplication.instance() or QApplication([])
    machine = machine_info()
    load0 = load_average()
    log(f"generating and parsing {args.entries} notes ...")
    generate_vault(WORK / "vault", args.entries)
    snap = snapshot_of(WORK / "vault")
    store_dir = WORK / "layouts"
    if store_dir.exists():
        import shutil

        shutil.rmtree(store_dir)
    from dle_desktop.state.graph_layout import LayoutStore

    view = GraphView(LayoutStore(store_dir), None)
    view.resize(args.width, args.height)
    view.show()
    app.processEvents()
    if args.shot_only:
        from dle_desktop.core.graph import build_graph

        g = thinned(build_graph(snap), TARGET_PAIRS)
        r = GraphResult(
            view.worker._job_id, g, layout(g, "balanced", seed=0).positions, frozenset(), analyse(g), {}, 0, "full"
        )
        view.show_result(r)
        view.set_colour_mode("community")
        view.canvas.fit()
        view.canvas.render_now()
        app.processEvents()
        view.grab().save(args.screenshot)
        view.stop()
        return 0
    log("the view's worker: build + layout + analysis ...")
    wall, res, stall, ticks = worker_layout(view, snap, app)
    lines = []
    g = res.graph
    pairs = len(g.simple_edges()[0])
    lines.append(
        f"worker, as generated ({g.n} entries, {pairs} edges): set_snapshot → on screen {wall:.2f} s "
        f"(" + ", ".join(f"{k} {v:.2f} s" for k, v in res.seconds.items()) + f"); the GUI thread's "
        f"longest stall meanwhile {stall:.0f} ms over {ticks} timer ticks"
    )
    log(lines[-1])
    view2 = GraphView(LayoutStore(store_dir), None)
    view2.resize(args.width, args.height)
    view2.show()
    app.processEvents()
    t = time.perf_counter()
    wall2, res2, stall2, _ = worker_layout(view2, snap, app)
    lines.append(
        f"worker, restart with the saved layout: on screen {wall2:.2f} s (mode {res2.mode}: no layout run; "
        f"GUI stall {stall2:.0f} ms)"
    )
    log(lines[-1])
    view2.stop()
    view2.close()

    table: list[str] = []
    rng = random.Random(7)
    variants = [("as generated", g, res.positions, res.analysis)]
    thin = thinned(g, TARGET_PAIRS)
    log("laying out the 30,000-edge variant ...")
    t = time.perf_counter()
    lay = layout(thin, "balanced", seed=0)
    an = analyse(thin, seed=0)
    log(f"  {time.perf_counter() - t:.1f} s")
    variants.insert(0, ("links thinned", thin, lay.positions, an))
    for name, graph, pos, analysis in variants:
        r = GraphResult(view.worker._job_id, graph, pos, frozenset(), analysis, {}, 0, "full")
        tag = f"{graph.n} entries, {len(graph.simple_edges()[0])} edges ({name})"
        shown_ms = timed_ms(lambda r=r: view.show_result(r))
        table.append(row(f"GUI block: a worker's result put on screen, {tag}", [shown_ms], None))
        app.processEvents()
        log(f"frames: {tag}")
        f = frames(view, args.frames)
        table.append(row(f"pan frame, whole graph in view, {tag}", f["pan"], FRAME_TARGET_MS))
        table.append(row(f"zoom frame (wheel steps), {tag}", f["zoom"], FRAME_TARGET_MS))
        table.append(row(f"pan frame, zoomed in 6x (labels), {tag}", f["pan_zoomed_in"], FRAME_TARGET_MS))
        for label, zoom in (("whole graph", 1.0), ("zoomed in 6x", 6.0)):
            c = view.canvas
            c.fit()
            c.zoom_at(zoom, c.width() / 2, c.height() / 2)
            sharp = [c.render_now() for _ in range(3)]
            total = [sum(j.slices) * 1000 for j in sharp]
            table.append(row(f"sharp re-render after the view rests, {label}, {tag}", total, None))
            table.append(
                row(
                    f"GUI block: one slice of that re-render, {label}, {tag}",
                    [x * 1000 for j in sharp for x in j.slices],
                    BLOCK_TARGET_MS,
                )
            )
        it = interaction(view, rng, 60)
        for k, v in it.items():
            if v:
                table.append(row(f"GUI block: {k.replace('_', ' ')}, {tag}", v, BLOCK_TARGET_MS))
        if name == "links thinned" and args.screenshot:
            view.clear_focus()
            view.set_colour_mode("community")
            view.canvas.fit()
            view.canvas.render_now()
            app.processEvents()
            view.grab().save(args.screenshot)
            log(f"screenshot: {args.screenshot}")
    view.stop()
    load1 = load_average()

    print(f"DLE Desktop Graph view benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(
        f"command: QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM')} python benchmarks/bench_graph_view.py "
        f"--entries {args.entries} --frames {args.frames} (canvas {view.canvas.width()}x{view.canvas.height()})"
    )
    print(
        f"machine: {machine['cpu_count']} CPUs ({machine['cpus_usable']} usable), {machine['cpu_model']}; "
        f"Python {machine['python']}; load {load0} at start, {load1} at end"
    )
    for line in lines:
        print(line)
    print()
    head = f"{'measurement (ms)':<58} {'n':>5} {'p50':>8} {'p95':>8} {'max':>8}  {'target':>9}  verdict"
    print(head)
    print("-" * len(head))
    for line in table:
        print(line)
    print()
    print("Frame verdicts compare p95 with 33 ms; GUI-block verdicts compare the max with 50 ms.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
