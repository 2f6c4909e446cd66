#!/usr/bin/env python3
"""World Info sync (issue 25): "the book is rewritten atomically within 2 s of a vault change".

    python benchmarks/bench_wi_sync.py [--sizes 100,1000,10000] [--edits 5] [--no-save]

For each size, a generated vault (bench_index.generate_vault) is opened by the real engine with
its folder watcher, and one folder of it is synced into a World Info book in a SillyTavern user
folder under a temporary directory. Each edit rewrites one note of that folder (a new key) as an
editor's save does; the figure is the time from the save until the book on disk holds the new key:
the watcher's debounce, the re-index, the sync's settle time, the export and the atomic write.
Results are printed and written to benchmarks/results/wi_sync.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO, REPO / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bench_index import generate_vault  # noqa: E402 - after the sys.path setup

from dle_desktop.engine.engine import Engine  # noqa: E402 - after the sys.path setup
from dle_desktop.state.paths import AppPaths  # noqa: E402 - after the sys.path setup
from dle_desktop.state.secrets import SecretStore  # noqa: E402 - after the sys.path setup
from dle_desktop.state.settings.model import settings_from_mapping  # noqa: E402 - after the sys.path setup
from dle_desktop.vault.sources import FolderSource  # noqa: E402 - after the sys.path setup

RESULTS = REPO / "benchmarks" / "results" / "wi_sync.txt"
TARGET_S = 2.0
VAULT = "bench"
BOOK = "Bench"


def _book_keys(path: Path) -> set[str]:
    try:
        book = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {k for e in book.get("entries", {}).values() for k in e.get("key", ())}


async def _until(condition, timeout: float, what: str) -> None:
    """Poll (every 10 ms, off the loop) until `condition()` holds: the book is a file another
    process could write, so there is no event to wait on."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def _measure(root: Path, size: int, edits: int) -> tuple[list[float], int]:
    vault = root / "vault"
    generate_vault(vault, size)
    folder = sorted(p.name for p in vault.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    # Notes with an inline key list (what the generator writes): the edit adds a key to it.
    notes = [n for n in sorted((vault / folder).rglob("*.md")) if "\nkeys: [" in n.read_text(encoding="utf-8")]
    st_root = root / "st"
    (st_root / "data" / "default-user").mkdir(parents=True)
    book = st_root / "data" / "default-user" / "worlds" / f"{BOOK}.json"
    settings = settings_from_mapping(
        {"wi_syncs": [{"book": BOOK, "vault": VAULT, "folder": folder, "st_root": str(st_root), "enabled": True}]}
    )
    paths = AppPaths(root / "data", root / "data").ensure()
    engine = Engine(paths, settings, SecretStore(use_keyring=False), vault_override=[FolderSource(VAULT, vault)])
    await engine.start(watch=True)
    try:
        await engine.wait_ready(timeout=600)
        await _until(book.exists, 120, "the first book")
        in_book = len(json.loads(book.read_text(encoding="utf-8"))["entries"])
        times: list[float] = []
        for i in range(edits):
            note = notes[i % len(notes)]
            key = f"benchkey{i}x{os.getpid()}"
            text = note.read_text(encoding="utf-8").replace("\nkeys: [", f"\nkeys: [{key}, ", 1)
            start = time.monotonic()
            note.write_text(text, encoding="utf-8")
            await _until(lambda key=key: key in _book_keys(book), 30, f"the book with {key}")
            times.append(time.monotonic() - start)
            await asyncio.sleep(0.5)  # the next edit is a new change, not part of this one
        return times, in_book
    finally:
        await engine.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    lines = [
        f"DLE Desktop World Info sync benchmark, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"command: python benchmarks/bench_wi_sync.py --sizes {args.sizes} --edits {args.edits}",
        f"machine: {os.cpu_count()} CPUs; Python {platform.python_version()}; {platform.platform()}",
        "",
        f"{'vault':>8} {'in the book':>12} {'save → book, median':>20} {'max':>8}   target",
        "-" * 66,
    ]
    for size in (int(s) for s in args.sizes.split(",") if s):
        with tempfile.TemporaryDirectory(prefix="dle-wi-sync-") as tmp:
            times, in_book = asyncio.run(_measure(Path(tmp), size, args.edits))
        worst = max(times)
        lines.append(
            f"{size:>8,} {in_book:>12,} {statistics.median(times):>19.2f}s {worst:>7.2f}s   "
            f"< {TARGET_S:.1f} s  {'PASS' if worst < TARGET_S else 'FAIL'}"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        f"load: 1/5/15-min load average {[round(x, 2) for x in load_start]} at start, "
        f"{[round(x, 2) for x in os.getloadavg()]} at end",
        "save → book: from a note's save in the synced folder until the book on disk holds its new key",
        "(watcher debounce, re-index, the sync's settle time, export, atomic write).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        RESULTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
