"""Crash safety of the vector store: a real writer process (crash_writer.py) is killed with SIGKILL
at random moments, dozens of times; after every kill the store must open cleanly and hold each
batch entirely or not at all, exactly as the writer's log allows, with files matching metadata and
queries (exact and through the hnswlib graph the writer was building) still right."""

from __future__ import annotations

import logging
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from dle_desktop.vectors.store import VectorStore

from .crash_writer import ANN_THRESHOLD, MAIN, SIDE, batch_vectors

WRITER = Path(__file__).with_name("crash_writer.py")
MIN_KILLS = 30
MAX_KILLS = 45
TIME_BUDGET_S = 45.0


def _read_log(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


class Expectations:
    """What the log allows for every batch: 'in' (must be there whole), 'out' (must be absent),
    'maybe' (the operation was cut off: whole or absent). Re-based on what is observed after each
    kill, since the next writer continues from that state."""

    def __init__(self) -> None:
        self.main: dict[int, list] = {}  # batch -> [size, state]
        self.side: dict[int, list] = {}
        self.seen_lines = 0

    def apply(self, lines: list[list[str]]) -> str | None:
        """Apply the new log lines; return the operation cut off by the kill (None if between ops)."""
        cut = None
        for parts in lines[self.seen_lines :]:
            phase, op, args = parts[0], parts[1], [int(x) for x in parts[2:]]
            if op == "insert":
                self.main[args[0]] = [args[1], "in" if phase == "done" else "maybe"]
            elif op == "delete":
                self.main[args[0]][1] = "out" if phase == "done" else "maybe"
            elif op == "side":
                self.side[args[0]] = [args[1], "in" if phase == "done" else "maybe"]
            elif op == "purge":
                for entry in self.side.values():
                    if entry[1] != "out":
                        entry[1] = "out" if phase == "done" else "maybe"
            cut = op if phase == "begin" else None
        self.seen_lines = len(lines)
        return cut


def _check_batches(expected: dict[int, list], hashes: list[int], what: str) -> dict[int, int]:
    """Every batch whole or absent, as allowed; returns the batches present with their sizes."""
    found = Counter(h // 10_000 for h in hashes)
    unknown = set(found) - set(expected)
    assert not unknown, f"{what}: batches never written are present: {sorted(unknown)}"
    present = {}
    for b, (n, state) in expected.items():
        got = [h for h in hashes if h // 10_000 == b]
        if got:
            assert Counter(got) == Counter(b * 10_000 + i // 2 for i in range(n)), (
                f"{what}: batch {b} is torn: {len(got)} of {n} items"
            )
            assert state != "out", f"{what}: batch {b} was deleted but is back"
            present[b] = n
        else:
            assert state != "in", f"{what}: committed batch {b} is missing"
    return present


def _check_files(root: Path) -> None:
    """Independently of the store's code: each scope's file sizes match its metadata, and nothing
    but the named files is left in the folder."""
    for scope in root.glob("c-*/s-*"):
        db = sqlite3.connect(scope / "meta.sqlite")
        try:
            dim, gen, rows, ann_file = db.execute("SELECT dim, gen, rows, ann_file FROM info").fetchone()
            n_items, top = db.execute("SELECT COUNT(*), MAX(row) FROM items").fetchone()
        finally:
            db.close()
        assert (scope / f"vectors.{gen}.f32").stat().st_size == rows * dim * 4
        assert top is None or top < rows
        assert n_items <= rows
        allowed = {"meta.sqlite", "meta.sqlite-wal", "meta.sqlite-shm", f"vectors.{gen}.f32", ann_file}
        assert {p.name for p in scope.iterdir()} <= allowed
    assert not list(root.glob(".trash-*")) and not list(root.glob("c-*/.tmp-*"))


class _Recoveries(logging.Handler):
    """Counts the store's reports of uncommitted rows truncated away when a scope is opened."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.truncations = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "uncommitted rows" in record.getMessage():
            self.truncations += 1


def _verify(root: Path, exp: Expectations, rng: random.Random) -> None:
    store = VectorStore(root, ann_threshold=ANN_THRESHOLD, ann_background=False)
    try:
        assert store.check() == []
        present = _check_batches(exp.main, store.list_hashes(*MAIN), "main")
        side = _check_batches(exp.side, store.list_hashes(*SIDE), "side")
        for b in exp.main:  # the next writer starts from what is here now
            exp.main[b][1] = "in" if b in present else "out"
        for b in exp.side:
            exp.side[b][1] = "in" if b in side else "out"
        live = sum(present.values())
        samples = rng.sample(sorted(present), min(3, len(present)))
        if live >= ANN_THRESHOLD:
            # load the graph the killed writer saved (if its record is trusted), extend, query it
            assert store.build_index(*MAIN)["covered"] > 0
        for b in samples:
            n = present[b]
            i = rng.randrange(n)
            top = store.query(*MAIN, batch_vectors(b, n)[i], 3)[0]
            assert top.item.text == f"b={b};n={n};i={i}" and top.score > 0.9999
    finally:
        store.close()
    _check_files(root)


@pytest.mark.slow
def test_killing_the_writer_at_random_moments_never_tears_the_store(tmp_path):
    root = tmp_path / "vectors"
    log = tmp_path / "writer.log"
    rng = random.Random(20240613)
    exp = Expectations()
    kills = 0
    cut_ops: Counter[str] = Counter()
    recoveries = _Recoveries()
    scope_log = logging.getLogger("dle_desktop.vectors.store_scope")
    old_level = scope_log.level
    scope_log.addHandler(recoveries)
    scope_log.setLevel(logging.INFO)
    started = time.monotonic()
    try:
        while kills < MAX_KILLS and (kills < MIN_KILLS or time.monotonic() - started < TIME_BUDGET_S):
            stderr = tmp_path / f"writer-{kills}.err"
            with open(stderr, "wb") as err:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        str(WRITER),
                        str(root),
                        str(log),
                        str((kills + 1) * 1_000),
                        str(rng.randrange(2**31)),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=err,
                )
            try:
                assert proc.stdout is not None
                ready = proc.stdout.readline()
                assert ready.strip() == b"ready", stderr.read_text()
                time.sleep(rng.uniform(0.01, 0.5))
                assert proc.poll() is None, f"the writer stopped by itself:\n{stderr.read_text()}"
            finally:
                proc.kill()  # SIGKILL on POSIX
                proc.wait()
                proc.stdout.close()
            kills += 1
            cut = exp.apply(_read_log(log))
            cut_ops[cut or "between operations"] += 1
            _verify(root, exp, rng)
    finally:
        scope_log.removeHandler(recoveries)
        scope_log.setLevel(old_level)
    elapsed = time.monotonic() - started
    print(
        f"\n{kills} kills in {elapsed:.1f} s; cut off: {dict(cut_ops)}; batches written: "
        f"{len(exp.main) + len(exp.side)}; opens that truncated uncommitted rows: {recoveries.truncations}"
    )
    assert kills >= MIN_KILLS
    assert cut_ops["insert"] >= kills // 3, cut_ops  # most kills land inside an insert
