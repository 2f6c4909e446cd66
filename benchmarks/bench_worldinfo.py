#!/usr/bin/env python3
"""World Info import and export (issue 25): "an import of 1,000 entries takes under 5 s".

    python benchmarks/bench_worldinfo.py [--sizes 1000,10000] [--runs 3] [--no-save]

For each size, a World Info book of that many entries (SillyTavern's export format; ~120-word
contents, two keys, secondary keys on a third, a few ST-only fields kept for the round trip) is
imported by the real engine into an empty vault folder, with the real SQLite write history in a
data folder on the same disk:

- read: the book's bytes → WiBook (core reader);
- preview: `plan_import` (mapping, note texts in house style, file names, collision checks);
- import: `run_import` — every note written atomically (fsynced, folder fsynced) through the note
  writer, recorded in the write history under one batch id, then the one re-index of the new
  notes; the import has returned when the index holds them;
- total: read + preview + import (what a user waits for after choosing the book);
- export: `export` of the whole indexed vault as a World Info book (after the import).

Each run starts from a fresh vault and data folder; the figure is the median. Results are printed
and written to benchmarks/results/worldinfo.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dle_desktop.engine.engine import Engine  # noqa: E402 - after the sys.path setup
from dle_desktop.state.paths import AppPaths  # noqa: E402 - after the sys.path setup
from dle_desktop.state.secrets import SecretStore  # noqa: E402 - after the sys.path setup
from dle_desktop.state.settings import Settings  # noqa: E402 - after the sys.path setup
from dle_desktop.vault.sources import FolderSource  # noqa: E402 - after the sys.path setup
from dle_desktop.worldinfo import WorldInfoService  # noqa: E402 - after the sys.path setup

RESULTS = REPO / "benchmarks" / "results" / "worldinfo.txt"
TARGET_1K_S = 5.0
SEED = 20250225
WORDS = (
    "harbour lantern guild river salt tide archive warden bell tower market quay smuggler fog gate "
    "ledger court ember cliff ferry weaver granary oath chapel banner ward relic crown pilgrim"
).split()


def make_book(n: int) -> bytes:
    rng = random.Random(SEED)
    entries = {}
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(120))
        entry = {
            "uid": i,
            "key": [f"place{i}", rng.choice(WORDS)],
            "keysecondary": [rng.choice(WORDS)] if i % 3 == 0 else [],
            "comment": f"Place {i:05d}",
            "content": f"Place {i} is known for its {words}.",
            "constant": i % 50 == 0,
            "selective": True,
            "selectiveLogic": 0,
            "order": rng.randint(0, 300),
            "position": rng.choice((0, 1, 4)),
            "depth": 4,
            "role": 0,
            "probability": 100 if i % 7 else 60,
            "useProbability": True,
            "disable": False,
            "sticky": 2 if i % 11 == 0 else 0,
            "group": "weather" if i % 13 == 0 else "",
            "groupWeight": 100,
        }
        entries[str(i)] = entry
    return json.dumps({"entries": entries}, indent=4).encode("utf-8")


async def one_run(book_bytes: bytes, base: Path, export: bool) -> dict[str, float]:
    vault = base / "vault"
    vault.mkdir()
    paths = AppPaths(base / "data", base / "data").ensure()
    engine = Engine(
        paths,
        Settings(),
        SecretStore(use_keyring=False),
        vault_override=[FolderSource("bench", vault)],
        use_cache=False,
    )
    await engine.start(watch=False)
    try:
        await engine.wait_ready()
        t0 = time.perf_counter()
        book = await asyncio.to_thread(WorldInfoService.read_book, book_bytes, "Bench")
        t1 = time.perf_counter()
        plan = await engine.worldinfo.plan_import(book, vault="bench", folder="Imported", collision="rename")
        t2 = time.perf_counter()
        result = await engine.worldinfo.run_import(plan)
        t3 = time.perf_counter()
        assert len(result.written) == len(book.entries) and len(engine.snapshot) == len(book.entries)
        out = {"read": t1 - t0, "preview": t2 - t1, "import": t3 - t2, "total": t3 - t0}
        if export:
            t4 = time.perf_counter()
            exported, report = await engine.worldinfo.export()
            out["export"] = time.perf_counter() - t4
            assert report.entries == len(book.entries) == len(exported["entries"])
        return out
    finally:
        await engine.stop()


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000", help="book sizes (entries), comma-separated")
    p.add_argument("--runs", type=int, default=3, help="runs per size below 10,000 (10,000 and up: one)")
    p.add_argument("--no-save", action="store_true", help="print only; do not write benchmarks/results")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_start = load()
    rows: list[tuple[str, list[float], str]] = []
    for n in sizes:
        book_bytes = make_book(n)
        runs = args.runs if n < 10_000 else 1
        figures: dict[str, list[float]] = {}
        for _ in range(runs):
            base = Path(tempfile.mkdtemp(prefix="dle-bench-wi-"))
            try:
                one = asyncio.run(one_run(book_bytes, base, export=n >= 10_000))
            finally:
                shutil.rmtree(base, ignore_errors=True)
            for k, v in one.items():
                figures.setdefault(k, []).append(v)
        size_mb = len(book_bytes) / (1024 * 1024)
        for k in ("read", "preview", "import", "total", "export"):
            if k in figures:
                target = ""
                if n == 1000 and k == "total":
                    ok = statistics.median(figures[k]) < TARGET_1K_S
                    target = f"< {TARGET_1K_S:.2f} s  {'PASS' if ok else 'FAIL'}"
                rows.append((f"{n:>6,} entries ({size_mb:.1f} MB): {k}", figures[k], target))
    lines = [
        f"DLE Desktop World Info benchmark, {started}",
        f"command: python benchmarks/bench_worldinfo.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip(),
        f"machine: {os.cpu_count()} CPUs; Python {platform.python_version()}; {platform.platform()}",
        f"load:    1/5/15-min load average {load_start} at start, {load()} at end",
        "",
        f"{'measurement':<44} {'min':>9} {'median':>9} {'max':>9}   target",
        "-" * 90,
    ]
    for name, values, target in rows:
        lines.append(
            f"{name:<44} {min(values):>8.2f}s {statistics.median(values):>8.2f}s {max(values):>8.2f}s   {target}".rstrip()
        )
    lines += [
        "",
        "import = every note written atomically (file and folder fsynced) through the note writer, recorded",
        "in the SQLite write history under one batch id, then one re-index; it returns once the index holds",
        "the notes. total = read + preview + import. 10,000 entries: one run; export of the whole vault.",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if not args.no_save:
        RESULTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
