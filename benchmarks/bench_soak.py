#!/usr/bin/env python3
"""A working session on a 10,000-entry vault, compressed (issue 24: "a 10k vault can be used for
a day without a frozen window").

The app runs as `dle-desktop` runs it (offscreen; engine thread, watcher, HTTP server, the window
first) on a generated vault it may edit, and a scripted user works it for `--minutes` without
pause: types filter words key by key and clears them, sorts by a column, picks entries, opens the
Graph view now and then (waiting for its picture, zooming), while notes change on disk under the
app: one note edited every cycle, a note created every 4th cycle and one of those deleted every
6th, each change synced by the file watcher and published as a new index, as when the user edits
in Obsidian beside the app. A day's work has fewer events per minute; this packs them.

A watchdog timer on the GUI loop (every 5 ms) records every stall. Printed: the longest stall
overall and per minute, how many stalls passed 100 ms, 250 ms (the UI suite's limit) and 1 s (a
frozen window), the indexes published, the Graph openings, and memory at the start and end of
the session (RSS of the window's process and of the Graph's).

    python benchmarks/bench_soak.py [--minutes 10] [--entries 10000] [--out FILE] [--trace]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

TICK_MS = 5
TRACE_MS = 150  # --trace: stalls (and the interpreter lock held in one go) longer than this are explained


def soak(vault: Path, data: Path, minutes: float, expect: int, seed: int = 1, trace: bool = False) -> dict:
    import asyncio

    from bench_gui import StallTracer, rss_mb, start_app, until
    from PySide6.QtCore import QPoint, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    import dle_desktop.ui  # noqa: F401 - first, as in the app

    qapp = QApplication([])
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    stalls: list[tuple[float, float]] = []  # (seconds into the session, ms late)
    last = [time.perf_counter()]

    tracer = StallTracer(time.time(), lock_ms=TRACE_MS).start() if trace else None

    def tick() -> None:
        now = time.perf_counter()
        late = (now - last[0]) * 1000 - TICK_MS
        last[0] = now
        if late > 20:
            stalls.append((now, late))
        if tracer is not None and late > TRACE_MS:
            tracer.stall(now, late)

    dog = QTimer()
    dog.setInterval(TICK_MS)
    dog.timeout.connect(tick)
    dog.start()
    desktop, interpreter, running = start_app(qapp, vault, data)
    window = desktop.window
    view = window.vault_view
    rng = random.Random(seed)
    out: dict = {"indexes": 0, "graph_openings": 0, "graph_pictures": 0, "edits": 0, "created": 0, "deleted": 0}
    window.bridge.indexChanged.connect(lambda *_: out.__setitem__("indexes", out["indexes"] + 1))
    notes = sorted(vault.rglob("*.md"))
    words = sorted({w.lower() for p in notes[:400] for w in p.stem.split() if len(w) > 3}) or ["gate"]
    created: list[Path] = []
    pictures: list[float] = []  # when the Graph view showed a picture or a whole result

    def graph_made(key: str, made) -> None:
        if key == "graph":
            made.pictureShown.connect(lambda _r: pictures.append(time.perf_counter()))
            made.resultShown.connect(lambda _r: pictures.append(time.perf_counter()))

    window.lazy.made.connect(graph_made)

    def change_notes(cycle: int) -> None:
        note = rng.choice(notes)
        with open(note, "a", encoding="utf-8") as fh:  # as an editor saves an added sentence
            fh.write(f"\nA line added in cycle {cycle}: the {rng.choice(words)} remembers.\n")
        out["edits"] += 1
        if cycle % 4 == 0:
            new = vault / "Soak" / f"Soak note {cycle}.md"
            new.parent.mkdir(exist_ok=True)
            new.write_text(f"---\nkeys: [soak{cycle}]\n---\nA note made during the session, cycle {cycle}.\n")
            created.append(new)
            out["created"] += 1
        if cycle % 6 == 0 and created:
            created.pop(0).unlink()
            out["deleted"] += 1

    async def session() -> None:
        await until(window.isVisible, 60)
        if not await until(lambda: view.model.rowCount() >= expect, 600):
            raise RuntimeError(f"the entries did not appear ({view.model.rowCount()} of {expect})")
        await asyncio.sleep(3)
        started = time.perf_counter()
        stalls.clear()
        out["rss_start_mb"] = rss_mb()
        header = view.table.horizontalHeader()
        cycle = 0
        rss_per_minute: list[float] = []  # at the end of each minute: does memory level off?
        while time.perf_counter() - started < minutes * 60:
            cycle += 1
            if time.perf_counter() - started >= 60 * (len(rss_per_minute) + 1):
                rss_per_minute.append(round(rss_mb()))
            window.tabs.setCurrentWidget(view)
            view.filter.setFocus()
            for ch in rng.choice(words)[: rng.randint(3, 6)]:
                QTest.keyClick(view.filter, ch)
                await asyncio.sleep(rng.uniform(0.06, 0.18))  # a typist's pace
            await asyncio.sleep(0.5)
            QTest.keyClick(view.filter, Qt.Key.Key_Escape)
            await asyncio.sleep(0.3)
            column = rng.choice((0, 1, 3, 4, 0))
            x = header.sectionViewportPosition(column) + 5
            QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))
            await asyncio.sleep(0.4)
            for _ in range(3):
                rows = view.proxy.rowCount()
                if rows:
                    view.table.selectRow(rng.randrange(rows))
                await asyncio.sleep(0.3)
            change_notes(cycle)
            if cycle % 3 == 0:
                before = len(pictures)
                window.graph_view_action.trigger()  # Ctrl+3
                if await until(lambda: window.lazy.made_view("graph") is not None, 30):
                    g = window.graph_view
                    if g.graph is not None or await until(lambda before=before: len(pictures) > before, 60):
                        out["graph_pictures"] += 1
                        for factor in (1.3, 1.3, 0.7):  # zoom in and out around the middle
                            g.canvas.zoom_at(factor, g.canvas.width() / 2, g.canvas.height() / 2)
                            await asyncio.sleep(0.3)
                out["graph_openings"] += 1
                await asyncio.sleep(1.0)
            await asyncio.sleep(rng.uniform(0.5, 1.5))  # reading
        out["cycles"] = cycle
        out["seconds"] = time.perf_counter() - started
        out["rss_end_mb"] = rss_mb()
        out["rss_per_minute_mb"] = rss_per_minute
        import gc

        # how much of the growth is garbage the collector can still free (frozen cycles)
        out["frozen_objects"] = gc.get_freeze_count()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        out["rss_after_full_collection_mb"] = rss_mb()
        child = window.graph_view.worker._process if window.lazy.made_view("graph") is not None else None
        if child is not None and child.alive:
            out["graph_child_rss_mb"] = rss_mb(child.pid)
        times = [(at - started, late) for at, late in stalls if at >= started]
        out["stall_max_ms"] = max((late for _at, late in times), default=0.0)
        out["stalls_over_100ms"] = sum(1 for _at, late in times if late > 100)
        out["stalls_over_250ms"] = sum(1 for _at, late in times if late > 250)
        out["stalls_over_1s"] = sum(1 for _at, late in times if late > 1000)
        per_minute: dict[int, float] = {}
        for at, late in times:
            per_minute[int(at // 60)] = max(per_minute.get(int(at // 60), 0.0), late)
        out["worst_per_minute_ms"] = [round(per_minute.get(m, 0.0), 1) for m in range(int(out["seconds"] // 60) + 1)]

    try:
        with loop:
            loop.run_until_complete(session())
            desktop.quit()
            loop.run_until_complete(running)
            interpreter.stop()
    finally:
        if not desktop.done.is_set():
            desktop.quit()
    return out


def report(res: dict, entries: int, minutes: float) -> str:
    verdict = "no frozen window" if res["stalls_over_1s"] == 0 else f"{res['stalls_over_1s']} freezes over 1 s"
    lines = [
        f"A compressed working session on a {entries:,}-entry vault ({minutes:g} min, {res['cycles']} cycles):",
        f"  indexes published {res['indexes']} (notes edited {res['edits']}, created {res['created']}, "
        f"deleted {res['deleted']}), Graph opened {res['graph_openings']} times ({res['graph_pictures']} with a picture)",
        f"  longest GUI stall {res['stall_max_ms']:.0f} ms; stalls over 100 ms: {res['stalls_over_100ms']}, "
        f"over 250 ms: {res['stalls_over_250ms']}, over 1 s: {res['stalls_over_1s']} -> {verdict}",
        f"  longest stall per minute (ms): {res['worst_per_minute_ms']}",
        f"  memory (RSS): {res['rss_start_mb']:.0f} MB at the start, {res['rss_end_mb']:.0f} MB at the end"
        + (f"; the Graph's process {res['graph_child_rss_mb']:.0f} MB" if "graph_child_rss_mb" in res else "")
        + f"; {res['rss_after_full_collection_mb']:.0f} MB after a full collection of the"
        f" {res['frozen_objects']:,} frozen objects",
        f"  memory (RSS) at the end of each minute (MB): {res['rss_per_minute_mb']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--trace", action="store_true", help=f"explain each stall over {TRACE_MS} ms (stderr)")
    ap.add_argument("--out", help="also write the report here (e.g. benchmarks/results/soak.txt)")
    args = ap.parse_args(argv)
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    from bench_index import generate_vault

    work = Path(tempfile.mkdtemp(prefix="dle-soak-"))
    try:
        vault = work / "vault"
        generate_vault(vault, args.entries)
        expect = sum(1 for _ in vault.rglob("*.md")) * 98 // 100  # about 1% of generated notes are malformed
        res = soak(vault, work / "data", args.minutes, expect, trace=args.trace)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = report(res, args.entries, args.minutes)
    print(json.dumps(res) if args.json else text)
    if args.out:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        Path(args.out).write_text(f"bench_soak.py, {stamp}\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
