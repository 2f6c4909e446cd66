"""The Graph canvas's lookups, numpy only (no Qt, so they are quick to test and to time):
a CSR adjacency for neighbourhoods and N-hop ego sets, and a uniform grid over world
coordinates for "which node is under the mouse" without scanning 10,000 nodes per move."""

from __future__ import annotations

import numpy as np


class Adjacency:
    """Undirected CSR adjacency of `n` nodes from edge endpoint arrays (duplicates are fine)."""

    def __init__(self, n: int, a: np.ndarray, b: np.ndarray) -> None:
        self.n = n
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        order = np.argsort(src, kind="stable")
        self.indices = dst[order]
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        if n:
            np.cumsum(np.bincount(src, minlength=n), out=self.indptr[1:])

    @classmethod
    def empty(cls) -> Adjacency:
        return cls(0, np.zeros(0, np.int64), np.zeros(0, np.int64))

    def neighbours(self, i: int) -> np.ndarray:
        return np.unique(self.indices[self.indptr[i] : self.indptr[i + 1]])

    def around(self, i: int) -> np.ndarray:
        """`i` and its neighbours."""
        return np.union1d(self.neighbours(i), [i]).astype(np.int64)

    def hops(self, start, n_hops: int, allowed: np.ndarray | None = None) -> np.ndarray:
        """Every node within `n_hops` of `start` (an index or several), walking only through
        `allowed` nodes (a mask) when given. Frontier by frontier, each one vectorised."""
        seen = np.zeros(self.n, dtype=bool)
        frontier = np.unique(np.atleast_1d(np.asarray(start, dtype=np.int64)))
        seen[frontier] = True
        for _ in range(max(0, int(n_hops))):
            if not len(frontier):
                break
            starts, ends = self.indptr[frontier], self.indptr[frontier + 1]
            counts = ends - starts
            if not counts.sum():
                break
            offs = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
            nxt = self.indices[np.arange(counts.sum()) + offs]
            nxt = nxt[~seen[nxt]]
            if allowed is not None:
                nxt = nxt[allowed[nxt]]
            frontier = np.unique(nxt)
            seen[frontier] = True
        return np.flatnonzero(seen)


class PointGrid:
    """Nodes bucketed into square cells; `nearest` looks at the 3×3 cells around a point, so a
    query costs the nodes near it, not all of them. Cells are sized so that about two nodes
    share one on average; rebuilt when positions change (a few ms at 10,000 nodes)."""

    def __init__(self, pos: np.ndarray, mask: np.ndarray | None = None) -> None:
        pos = np.asarray(pos, dtype=np.float64).reshape(-1, 2)
        idx = np.arange(len(pos)) if mask is None else np.flatnonzero(mask)
        self.pos = pos
        self.idx = idx
        if not len(idx):
            self.lo, self.cell, self.cols = np.zeros(2), 1.0, 1
            self.order, self.keys, self.cells = idx, np.zeros(0, np.int64), np.zeros(0, np.int64)
            return
        pts = pos[idx]
        self.lo = pts.min(axis=0)
        span = np.maximum(pts.max(axis=0) - self.lo, 1e-9)
        self.cell = float(max(np.sqrt(span[0] * span[1] * 2.0 / len(idx)), 1e-9))
        self.cols = int(span[0] // self.cell) + 1
        cx, cy = self._cell_of(pts)
        keys = cy * self.cols + cx
        order = np.argsort(keys, kind="stable")
        self.order = idx[order]
        self.keys = keys[order]

    def _cell_of(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = np.floor((pts - self.lo) / self.cell).astype(np.int64)
        return c[:, 0], c[:, 1]

    def nearest(self, world: np.ndarray, radius: float) -> int:
        """The node closest to `world` within `radius` (world units), or -1."""
        if not len(self.idx):
            return -1
        reach = int(np.ceil(radius / self.cell))
        cx, cy = (int(v) for v in np.floor((np.asarray(world) - self.lo) / self.cell))
        rows = self.cols  # cells are keyed row-major; x outside [0, cols) would wrap into the next row
        xs = np.arange(max(cx - reach, 0), min(cx + reach, rows - 1) + 1)
        if not len(xs):
            return -1
        cand = []
        for y in range(cy - reach, cy + reach + 1):
            if y < 0:
                continue
            lo = np.searchsorted(self.keys, y * rows + xs[0], "left")
            hi = np.searchsorted(self.keys, y * rows + xs[-1], "right")
            if hi > lo:
                cand.append(self.order[lo:hi])
        if not cand:
            return -1
        c = np.concatenate(cand)
        d2 = ((self.pos[c] - world) ** 2).sum(axis=1)
        k = int(np.argmin(d2))
        return int(c[k]) if d2[k] <= radius * radius else -1

    def within(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Nodes inside the world rectangle [lo, hi] (for tests and rubber bands)."""
        if not len(self.idx):
            return self.idx
        pts = self.pos[self.idx]
        inside = ((pts >= lo) & (pts <= hi)).all(axis=1)
        return self.idx[inside]
