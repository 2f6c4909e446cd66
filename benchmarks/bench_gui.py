#!/usr/bin/env python3
"""The window at scale (issue 24): how soon the window and its entries appear, what the Vault
view's filter, sort and selection cost, how soon the Graph view shows something, and the longest
stall of the GUI event loop meanwhile, on the bundled sample vault (the baseline) and on generated
1,000 / 10,000 (and, with --stress, 100,000) entry vaults (bench_index.generate_vault), all in one
run.

Each measurement is a fresh process (`--child`), offscreen, built as `dle-desktop` builds the app
(engine thread, watcher, the HTTP server on a free port; the window first, as `run_gui` does): a first start on an empty data folder, then a restart on
the same folder (the cached index). A watchdog timer on the GUI loop (every 5 ms) records how late
it fires: that lateness is the stall a user would feel.

    python benchmarks/bench_gui.py [--sizes 1000,10000] [--stress] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

SAMPLE = REPO / "resources" / "sample_vault"
TICK_MS = 5
TARGETS = {
    "window_s": ("window shown after launch", 1.0, "s"),
    "entries_s": ("entries shown", None, "s"),
    "filter_key_ms": ("a filter keystroke (median)", 50, "ms"),
    "filter_key_max_ms": ("a filter keystroke (slowest)", 50, "ms"),
    "filter_clear_ms": ("clearing the filter", 50, "ms"),
    "sort_ms": ("a sort click (slowest of 4)", 100, "ms"),
    "select_ms": ("selecting an entry (slowest of 5)", 50, "ms"),
    "graph_s": ("Graph view: first picture", 2.0, "s"),
    "graph_whole_s": ("Graph view: laid out and analysed", None, "s"),
    "stall_ms": ("longest GUI stall, window up", 100, "ms"),
    "stall_loading_ms": ("  … while the entries load", 100, "ms"),
    "stall_vault_ms": ("  … filtering, sorting, selecting", 100, "ms"),
    "stall_graph_ms": ("  … while the Graph draws", 100, "ms"),
    "stall_before_window_ms": ("GUI loop blocked before the window", None, "ms"),
    "rss_mb": ("memory (RSS) at the end", None, "MB"),
    "graph_child_rss_mb": ("  … of the Graph view's process", None, "MB"),
}


# ---------------------------------------------------------------------------------------- child


def trace_graph(spawned: float) -> None:
    """--trace: when each step towards the Graph view's first picture happens (stderr), so the
    time from Ctrl+3 to the picture can be taken apart."""
    import importlib.abc
    import importlib.util
    import threading

    def say(what: str) -> None:
        print(f"{time.time() - spawned:7.2f} s  graph: {what} [{threading.current_thread().name}]", file=sys.stderr)

    def wrap(owner, name: str, label) -> None:
        original = getattr(owner, name)

        def call(*a, **k):
            say(f"{label(*a, **k)} begins")
            try:
                return original(*a, **k)
            finally:
                say(f"{label(*a, **k)} ends")

        setattr(owner, name, call)

    def graph_process(m) -> None:
        wrap(m.GraphProcess, "run", lambda *a: "job sent and run")
        wrap(m, "prestart_process", lambda *a, **k: f"process started ahead ({len(a[0]) if a else 0} entries)")
        wrap(m, "take_spare", lambda: "the spare taken")

    def worker(m) -> None:
        wrap(m._Assembly, "deliver", lambda _self, msg: f"message {msg[0]}")

    def view(m) -> None:
        wrap(m.GraphView, "_on_sketch", lambda *a: "a sketch shown")

    patches = {
        "dle_desktop.desktop.graph_process": graph_process,
        "dle_desktop.ui.graph.worker": worker,
        "dle_desktop.ui.graph.view": view,
    }

    class Patcher(importlib.abc.MetaPathFinder):
        """Wraps the graph's modules as they are imported: importing them here would take the
        code load out of the measurement."""

        def find_spec(self, name, path, target=None):
            if name not in patches:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            say(f"import {name} begins")
            load = spec.loader.exec_module

            def exec_module(module, load=load, name=name):
                load(module)
                patches[name](module)
                say(f"import {name} ends")

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Patcher())
    from dle_desktop.ui import lazy_tabs

    wrap(lazy_tabs.LazyTabs, "_code_loaded", lambda _self, key: f"{key} code loaded, view made")


def start_app(qapp, vault: Path, data: Path):
    """The app as `dle-desktop` builds it (engine thread, watcher, the HTTP server on a free
    port, the window first, as `run_gui` does), on `vault` with its state in `data`; call with
    the qasync loop set. Returns (the DesktopApp, its GuiInterpreter, the task running it)."""
    import asyncio

    from PySide6.QtCore import QSettings

    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore
    from dle_desktop.ui.interpreter import GuiInterpreter
    from dle_desktop.ui.launch import DesktopApp
    from dle_desktop.vault.sources import FolderSource

    paths = resolve_paths(data).ensure()
    settings = Settings()
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("vault", vault)])
    runtime = Runtime(ctx, engine, port=0)  # the HTTP server on a free port, as the app runs it
    ui_state = QSettings(str(paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
    interpreter = GuiInterpreter(qapp).start()  # as run_gui does
    desktop = DesktopApp(qapp, runtime, ui_state, tray_available=False)
    running = asyncio.ensure_future(desktop.run())  # as `dle-desktop` starts: the window first
    return desktop, interpreter, running


async def until(check, timeout: float, step: float = 0.002) -> bool:
    """Wait on the running loop until `check()` holds (True) or `timeout` seconds pass (False)."""
    import asyncio

    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(step)
    return True


def rss_mb(pid: int | None = None) -> float:
    status = Path(f"/proc/{pid or 'self'}/status").read_text(encoding="ascii")
    rss = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(rss.split()[1]) / 1024


class StallTracer:
    """--trace: where the GUI loop's stalls come from. A sampler thread wakes every 5 ms and keeps
    the GUI thread's stack and the other running threads'; `stall` prints what they were doing
    during a stall; a wake-up late by over 40 ms (the interpreter lock held in one go) and a
    collection over 20 ms are printed as they happen (stderr)."""

    def __init__(self, spawned: float, lock_ms: float = 40.0) -> None:
        from collections import deque

        self.spawned, self.lock_ms = spawned, lock_ms
        self.main_stacks: deque[tuple[float, str]] = deque(maxlen=400)  # (when, the GUI thread's stack)
        self.other_stacks: deque[tuple[float, str]] = deque(maxlen=2000)  # (when, another running thread's stack)

    def say(self, text: str) -> None:
        print(f"{time.time() - self.spawned:7.2f} s  {text}", file=sys.stderr, flush=True)

    def stall(self, now: float, late: float) -> None:
        from collections import Counter

        self.say(f"GUI loop {late:.0f} ms late")
        seen = Counter(stack for at, stack in list(self.main_stacks) if at >= now - late / 1000)
        for stack, count in seen.most_common(3):
            print(f"           {count} × GUI thread in {stack}", file=sys.stderr, flush=True)
        busy = Counter(stack for at, stack in list(self.other_stacks) if at >= now - late / 1000)
        for stack, count in busy.most_common(3):
            print(f"           {count} × meanwhile {stack}", file=sys.stderr, flush=True)

    def start(self) -> StallTracer:
        import gc
        import threading

        began: dict[str, float] = {}

        def collection(phase: str, info: dict) -> None:
            if phase == "start":
                began["t"] = time.perf_counter()
            elif (took := time.perf_counter() - began.get("t", time.perf_counter())) > 0.02:
                who = threading.current_thread().name
                self.say(f"collection of generation {info['generation']}: {took * 1000:.0f} ms on {who}")

        gc.callbacks.append(collection)
        threading.Thread(target=self._sample, args=(threading.get_ident(),), name="stall-sampler", daemon=True).start()
        return self

    def _sample(self, main_ident: int) -> None:
        """When this thread wakes late, something held the interpreter lock; the other threads'
        stacks right then show what had it."""
        import threading
        import traceback

        me = threading.get_ident()
        names: dict[int | None, str] = {}
        last = time.perf_counter()
        while True:
            time.sleep(0.005)
            now = time.perf_counter()
            late, last = (now - last) * 1000 - 5, now
            main = sys._current_frames().get(main_ident)
            if main is not None:
                stack = traceback.extract_stack(main)[-12:]
                self.main_stacks.append(
                    (now, " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack)))
                )
            names.update({t.ident: t.name for t in threading.enumerate()} if len(names) < 8 else {})
            for ident, frame in sys._current_frames().items():
                code = frame.f_code.co_name
                if ident in (me, main_ident) or code in ("wait", "select", "_wait_for_tstate_lock", "poll"):
                    continue
                stack = traceback.extract_stack(frame)[-6:]
                where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
                self.other_stacks.append((now, f"{names.get(ident, str(ident))}: {where}"))
            if late <= self.lock_ms:
                continue
            names.update({t.ident: t.name for t in threading.enumerate()})
            lines = [f"{time.time() - self.spawned:7.2f} s  the interpreter lock was held {late:.0f} ms; then:"]
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    stack = traceback.extract_stack(frame)[-4:]
                    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
                    lines.append(f"           {names.get(ident, str(ident))}: {where}")
            print("\n".join(lines), file=sys.stderr, flush=True)


def child(args) -> int:
    """One measured run of the app; prints one JSON line of figures."""
    spawned = args.spawned
    from PySide6.QtCore import QPoint, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    import dle_desktop.ui  # noqa: F401 - first, as in the app: it sets up PySide6 for a quick import of the rest

    qapp = QApplication([])
    import qasync

    loop = qasync.QEventLoop(qapp)
    import asyncio

    asyncio.set_event_loop(loop)

    class Watchdog:
        def __init__(self) -> None:
            self.last = time.perf_counter()
            self.worst = 0.0
            self.phase_worst = 0.0
            self.timer = QTimer()
            self.timer.setInterval(TICK_MS)
            self.timer.timeout.connect(self.tick)
            self.timer.start()

        def tick(self) -> None:
            now = time.perf_counter()
            late = (now - self.last) * 1000 - TICK_MS
            self.last = now
            if tracer is not None and late > 40:
                tracer.stall(now, late)
            self.worst = max(self.worst, late)
            self.phase_worst = max(self.phase_worst, late)

    tracer = StallTracer(spawned).start() if args.trace else None
    dog = Watchdog()
    desktop, interpreter, running = start_app(qapp, Path(args.vault), Path(args.data))
    window = desktop.window
    vault = window.vault_view
    if args.trace:  # what the window does with each index, when it takes long
        import cProfile
        import io
        import pstats

        def profiled(fn, name: str):
            """`fn`, profiled: its profile is printed when a call takes over 40 ms."""

            def call(*a, **k):
                prof = cProfile.Profile()
                began = time.perf_counter()
                prof.enable()
                try:
                    return fn(*a, **k)
                finally:
                    prof.disable()
                    took = (time.perf_counter() - began) * 1000
                    if took > 40:
                        out = io.StringIO()
                        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(16)
                        print(
                            f"{time.time() - spawned:7.2f} s  {name} took {took:.0f} ms:\n{out.getvalue()}",
                            file=sys.stderr,
                        )

            return call

        def on_index_traced(snapshot, changes, source: str) -> None:
            print(f"{time.time() - spawned:7.2f} s  index ({source})", file=sys.stderr)
            profiled(window.on_index, "on_index")(snapshot, changes, source)

        window.bridge.indexChanged.disconnect(window.on_index)
        window.bridge.indexChanged.connect(on_index_traced)
        window._show_index = profiled(window._show_index, "showing the index")
        window.bridge.indexPartial.connect(
            lambda entries: print(
                f"{time.time() - spawned:7.2f} s  partial index: {len(entries)} entries", file=sys.stderr
            )
        )
        window.bridge.progress.connect(
            lambda done, total, what: (
                print(f"{time.time() - spawned:7.2f} s  progress {done}/{total} {what}", file=sys.stderr)
                if done in (0, total) or done % 2000 == 0
                else None
            )
        )
        trace_graph(spawned)
    out: dict[str, float] = {}

    async def timed(action) -> float:
        """The action and the loop's next turn (the repaint it asked for), in ms."""
        started = time.perf_counter()
        action()
        await asyncio.sleep(0)
        return (time.perf_counter() - started) * 1000

    async def scenario() -> None:
        await until(window.isVisible, 60)
        out["window_s"] = time.time() - spawned
        out["stall_before_window_ms"] = dog.worst
        dog.worst = dog.phase_worst = 0.0  # a stall the user sees is one after the window is up
        await until(lambda: vault.model.rowCount() >= args.expect, 600)
        out["entries_s"] = time.time() - spawned
        out["rows"] = vault.model.rowCount()
        await asyncio.sleep(args.settle)
        out["stall_loading_ms"], dog.phase_worst = dog.phase_worst, 0.0
        window.tabs.setCurrentWidget(vault)
        vault.filter.setFocus()
        keys = [await timed(lambda ch=ch: QTest.keyClick(vault.filter, ch)) for ch in "entry 1"]
        out["filter_key_ms"] = statistics.median(keys)
        out["filter_key_max_ms"] = max(keys)
        out["filter_clear_ms"] = await timed(lambda: QTest.keyClick(vault.filter, Qt.Key.Key_Escape))
        header = vault.table.horizontalHeader()
        sorts = []
        for column in (3, 0, 4, 0):
            x = header.sectionViewportPosition(column) + 5
            sorts.append(
                await timed(
                    lambda x=x: QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))
                )
            )
        out["sort_ms"] = max(sorts)
        rows = vault.proxy.rowCount()
        picks = [await timed(lambda r=r: vault.table.selectRow(r)) for r in (0, rows // 3, rows // 2, rows - 1, 1)]
        out["select_ms"] = max(picks)
        if args.trace:
            print(f"{time.time() - spawned:7.2f} s  selections: {[round(p, 1) for p in picks]} ms", file=sys.stderr)
        out["stall_vault_ms"], dog.phase_worst = dog.phase_worst, 0.0
        shown: list[float] = []
        pictured: list[float] = []

        def graph_made(key: str, view) -> None:
            if key == "graph":
                view.resultShown.connect(lambda _res: shown.append(time.perf_counter()))
                view.pictureShown.connect(lambda _res: pictured.append(time.perf_counter()))

        window.lazy.made.connect(graph_made)
        started = time.perf_counter()
        if args.trace:
            print(f"{time.time() - spawned:7.2f} s  graph: Ctrl+3", file=sys.stderr)
        window.graph_view_action.trigger()  # Ctrl+3, as a user opens it: its code may load first
        if await until(lambda: bool(shown or pictured), 300):
            out["graph_s"] = min(pictured + shown) - started  # a preview, or the whole result
        if await until(lambda: bool(shown), 900):
            out["graph_whole_s"] = shown[0] - started
        await asyncio.sleep(0.5)
        out["stall_graph_ms"] = dog.phase_worst
        child = window.graph_view.worker._process
        if child is not None and child.alive:  # the Graph view's own process (large vaults)
            out["graph_child_rss_mb"] = rss_mb(child.pid)
        window.tabs.setCurrentWidget(vault)  # the restart opens where this run started
        out["stall_ms"] = dog.worst
        out["rss_mb"] = rss_mb()

    try:
        with loop:
            loop.run_until_complete(scenario())
            print("BENCH-GUI " + json.dumps(out), flush=True)
            desktop.quit()
            loop.run_until_complete(running)
            interpreter.stop()
    finally:
        if not desktop.done.is_set():
            print("BENCH-GUI " + json.dumps(out), flush=True)
            desktop.quit()
    return 0


# --------------------------------------------------------------------------------------- parent


def compile_app() -> None:
    """An installed app starts from bytecode (scripts/run compiles it too); a checkout under
    PYTHONDONTWRITEBYTECODE=1 would compile every module from source in every measured run:
    a second, some of it while the window paints."""
    compileall.compile_dir(REPO / "dle_desktop", quiet=1)


def run_child(vault: Path, data: Path, expect: int) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    spawned = time.time()
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--vault",
            str(vault),
            "--data",
            str(data),
            "--expect",
            str(expect),
            "--spawned",
            repr(spawned),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("BENCH-GUI ")), None)
    if line is None:
        raise RuntimeError(f"the measured run printed nothing (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(line[len("BENCH-GUI ") :])


def count_entries(vault: Path) -> int:
    import asyncio

    from dle_desktop.vault.indexer import VaultIndexer
    from dle_desktop.vault.sources import FolderSource

    indexer = VaultIndexer([FolderSource("vault", vault)])
    asyncio.run(indexer.sync_all())
    return len(indexer.snapshot.entries) if indexer.snapshot is not None else 0


def fmt(key: str, value: float | None) -> str:
    if value is None:
        return "—"
    unit = TARGETS[key][2]
    return f"{value:.2f} s" if unit == "s" else f"{value:.0f} MB" if unit == "MB" else f"{value:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--vault", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--expect", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--spawned", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1000,10000", help="generated vault sizes (default 1000,10000)")
    ap.add_argument("--stress", action="store_true", help="add a 100,000-entry vault")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--settle", type=float, default=0.3, help="--child: seconds between the entries and the first keystroke"
    )
    ap.add_argument("--trace", action="store_true", help="--child: print GUI stalls over 40 ms and long collections")
    ap.add_argument("--out", help="also write the table here (e.g. benchmarks/results/gui.txt)")
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    from bench_index import generate_vault, machine_info

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] + ([100_000] if args.stress else [])
    compile_app()
    work = Path(tempfile.mkdtemp(prefix="bench-gui-"))
    results: dict[str, dict[str, dict]] = {}
    try:
        vaults: list[tuple[str, Path]] = [("sample", SAMPLE)]
        for n in sizes:
            vaults.append((f"{n // 1000}k", generate_vault(work / f"vault-{n}", n).root))
        for name, vault in vaults:
            expect = count_entries(vault)
            data = work / f"data-{name}"
            first = run_child(vault, data, expect)
            restart = run_child(vault, data, expect)
            results[name] = {"first": first, "restart": restart, "entries": {"n": expect}}
            print(
                f"{name}: {expect} entries, first start {fmt('entries_s', first.get('entries_s'))}, "
                f"restart {fmt('entries_s', restart.get('entries_s'))}",
                file=sys.stderr,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps({"machine": machine_info(), "results": results}, indent=2))
        return 0
    names = list(results)
    lines = [
        "GUI at scale (benchmarks/bench_gui.py): offscreen, one process per run, a 5 ms watchdog on the GUI loop.",
        f"Machine: {json.dumps(machine_info())}",
        "Each cell: first start / restart (cached index). Entries per vault: "
        + ", ".join(f"{n} {results[n]['entries']['n']}" for n in names),
        "",
        f"{'measurement':38} {'target':>10}  " + "  ".join(f"{n:>23}" for n in names),
    ]
    for key, (label, target, unit) in TARGETS.items():
        goal = "—" if target is None else f"< {target:g} {unit}"
        cells = []
        for n in names:
            a, b = results[n]["first"].get(key), results[n]["restart"].get(key)
            cells.append(f"{fmt(key, a):>11} / {fmt(key, b):<9}")
        lines.append(f"{label:38} {goal:>10}  " + "  ".join(f"{c:>23}" for c in cells))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
