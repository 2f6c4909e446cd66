"""Helper of the crash test (test_store_crash.py): writes to a vector store in a loop until killed.

    python crash_writer.py ROOT LOG FIRST_BATCH SEED

Each operation is announced in LOG before it starts ("begin ...") and confirmed after it returns
("done ..."), through an O_APPEND descriptor with no user-space buffer, so a SIGKILL loses nothing
that was written. Operations (all on batches; a batch is identified by its id `b`):

- insert a batch of n items into the main scope: item i has hash b*10000 + i//2 (so items come in
  pairs of chunks sharing hash and index), index i//2, text "b=<b>;n=<n>;i=<i>", and row i of
  `batch_vectors(b, n)` as vector;
- delete every hash of a stored batch (one call);
- insert a batch into the side collection, purge the side collection;
- compact the main scope, query it (which queues background index work: the store's threshold is
  low), or build and save its hnswlib index at once.

The batches present at start are read back from the store, so runs continue where a killed one
stopped.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dle_desktop.vectors.contracts import StoredItem  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vectors.store import VectorStore  # noqa: E402 - needs the sys.path setup above

DIM = 32
ANN_THRESHOLD = 150
MAIN = ("chat", "llamacpp", "model=m")
SIDE = ("side", "llamacpp", "model=m")
MAX_LIVE = 2_500


def batch_vectors(b: int, n: int) -> np.ndarray:
    return np.random.default_rng(b).standard_normal((n, DIM)).astype(np.float32)


def batch_items(b: int, n: int) -> list[StoredItem]:
    return [StoredItem(hash=b * 10_000 + i // 2, index=i // 2, text=f"b={b};n={n};i={i}") for i in range(n)]


def batch_hashes(b: int, n: int) -> list[int]:
    return sorted({b * 10_000 + i // 2 for i in range(n)})


def main() -> None:
    root, log_path, first, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    store = VectorStore(root, ann_threshold=ANN_THRESHOLD)
    present: dict[int, int] = {}  # batch id -> size (list_hashes repeats a hash per item)
    for h in store.list_hashes(*MAIN):
        present[h // 10_000] = present.get(h // 10_000, 0) + 1
    live = sum(present.values())
    print("ready", flush=True)
    b = first
    while True:
        r = rng.random()
        if r < 0.55 or not present:
            n = rng.choice([1, 2, 7, 30, 64, 150, 300])
            note(f"begin insert {b} {n}")
            store.insert(*MAIN, batch_items(b, n), batch_vectors(b, n))
            note(f"done insert {b} {n}")
            present[b] = n
            live += n
            b += 1
        elif r < 0.75 or live > MAX_LIVE:
            victim = rng.choice(sorted(present))
            n = present.pop(victim)
            note(f"begin delete {victim}")
            store.delete(*MAIN, list(range(victim * 10_000, victim * 10_000 + n)))
            note(f"done delete {victim}")
            live -= n
        elif r < 0.82:
            n = rng.choice([3, 40, 200])
            note(f"begin side {b} {n}")
            store.insert(*SIDE, batch_items(b, n), batch_vectors(b, n))
            note(f"done side {b} {n}")
            b += 1
        elif r < 0.86:
            note("begin purge")
            store.purge(SIDE[0])
            note("done purge")
        elif r < 0.90:
            note("begin compact")
            store.compact(*MAIN)
            note("done compact")
        elif r < 0.97:
            q = np.random.default_rng(b + 7).standard_normal(DIM)
            store.query(*MAIN, q, 5)
        else:
            note("begin build")
            store.build_index(*MAIN, num_threads=1)
            note("done build")


if __name__ == "__main__":
    main()
