"""A deterministic ForceAtlas2 layout (Jacomy et al. 2014), written for the Graph view.

Why by hand: networkx's `forceatlas2_layout` computes every pair of nodes each iteration (1.8 s
for 10 iterations of 1,500 nodes here, so about 13 minutes for 100 at 10,000) and has no
progress, cancel or incremental mode; igraph has no ForceAtlas2 at all. This one follows the
paper's forces and its adaptive speed (swinging / traction, jitter tolerance):

- attraction along edges, `w^edge_weight_influence · d` (or `log(1 + d)` with LinLog), divided by
  the node's mass with *dissuade hubs*;
- repulsion `scaling · m_i · m_j / d` with masses `degree + 1`, computed exactly for small graphs
  and, above `EXACT_MAX_NODES`, on a particle-mesh grid: masses spread onto a grid (cloud in
  cell), the field is the grid convolved with the softened 1/d kernel by FFT, read back at each
  node. O(n + G² log G) per iteration instead of O(n²); cloud-in-cell both ways keeps a node
  from pushing itself;
- gravity towards the origin (`gravity · m_i`, or `· d` with strong gravity).

A fresh layout starts from communities (seeded Leiden, or the worker's own): the graph of
communities is laid out first with the same forces, each community's members start in a disc
around its place, and edges between communities pull `inter_community_weight` (0.3) of their
weight. Without this a 10,000-entry vault whose Leiden modularity is 0.59 came out as one
uniformly mixed hairball (a node's 10 nearest nodes: 16 % from its community; now 93 %).

Repulsion flings orphans and small islands far out (the largest component outweighs their
gravity), which shrinks the real picture to a dot; with `tidy_islands` (the default) each island
is moved in, shape and direction kept, to a ring just outside the largest component.

Same graph, parameters and seed → the same positions (numpy only; no threads). Given previous
positions, known nodes start where they were and hold still for the first half of the run while
new ones (started at the centroid of their placed neighbours) settle; in the second half known
nodes move too, at most `inertia` × the picture's span in all.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from dle_desktop.core.graph.model import LoreGraph

EXACT_MAX_NODES = 600
MAX_FAR_NODES = 64  # nodes left off the repulsion grid (outliers), computed exactly


@dataclass(frozen=True)
class LayoutParams:
    scaling: float = 2.0  # repulsion strength (FA2's kr)
    gravity: float = 1.0
    strong_gravity: bool = False
    linlog: bool = False
    dissuade_hubs: bool = False
    edge_weight_influence: float = 1.0
    jitter_tolerance: float = 1.0
    iterations: int = 200
    #: Iterations of an incremental run, and the farthest a known node may move in it, as a share
    #: of the picture's span (they hold still in the first half; 0 pins them throughout).
    incremental_iterations: int = 60
    inertia: float = 0.02
    #: Edge kinds that pull (None: all of them).
    kinds: tuple[str, ...] | None = None
    #: Bring islands (orphans, components other than the largest) in from where repulsion flings
    #: them to a ring just outside the largest component, each keeping its shape and direction.
    tidy_islands: bool = True
    #: A fresh layout starts from its communities (seeded Leiden): the graph of communities is
    #: laid out first, each community's members start in a disc around its place.
    community_start: bool = True
    community_iterations: int = 300
    #: In a run started from communities, edges between two communities pull this much (a
    #: share of their weight): weak communities then stay visible as regions.
    inter_community_weight: float = 0.3

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["kinds"] = list(self.kinds) if self.kinds is not None else None
        return d


#: DLE's presets, all LinLog (as DLE's own simulation): it separates clusters far better than
#: linear attraction (on 100 planted clusters of 100, mean distance to the cluster centre over
#: mean distance to the picture's centre: 0.11–0.15 against 0.31).
PRESETS: dict[str, LayoutParams] = {
    "compact": LayoutParams(linlog=True, scaling=0.2, gravity=2.0),
    "balanced": LayoutParams(linlog=True, scaling=0.5, gravity=1.0),
    "spacious": LayoutParams(linlog=True, scaling=2.0, gravity=0.5),
}


class _Stop(Exception):
    pass


@dataclass(frozen=True, eq=False)
class Layout:
    uids: tuple[str, ...]
    positions: np.ndarray  # n × 2, float64
    iterations: int  # done
    total: int  # asked for
    cancelled: bool = False
    seed: int = 0
    params: LayoutParams = LayoutParams()

    def as_dict(self) -> dict[str, tuple[float, float]]:
        return {u: (float(x), float(y)) for u, (x, y) in zip(self.uids, self.positions.tolist())}

    def to_json(self) -> dict[str, Any]:
        return {
            "positions": {u: [x, y] for u, (x, y) in self.as_dict().items()},
            "iterations": self.iterations,
            "total": self.total,
            "cancelled": self.cancelled,
            "seed": self.seed,
            "params": self.params.to_json(),
        }


def _initial(
    graph: LoreGraph, rng: np.random.Generator, previous: Mapping[str, tuple[float, float]] | None, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Start positions, and which nodes are new."""
    n = graph.n
    pos = rng.uniform(-scale, scale, size=(n, 2))
    if not previous:
        return pos, np.ones(n, dtype=bool)
    known = np.zeros(n, dtype=bool)
    for i, uid in enumerate(graph.uids):
        p = previous.get(uid)
        if p is not None:
            pos[i] = p
            known[i] = True
    if not known.any():
        return pos, ~known
    placed = known.copy()
    spread = max(float(np.ptp(pos[known], axis=0).max()) if known.sum() > 1 else 1.0, 1e-6)
    jitter = spread * 0.01
    nbrs = graph.neighbours()
    todo = [i for i in range(n) if not placed[i]]
    while todo:  # breadth first: a new node next to new nodes waits for them to be placed
        later = []
        for i in todo:
            around = [j for j in nbrs[i] if placed[j]]
            if around:
                pos[i] = pos[around].mean(axis=0) + rng.uniform(-jitter, jitter, size=2)
                placed[i] = True
            else:
                later.append(i)
        if len(later) == len(todo):  # no placed neighbour at all: near the known nodes' centre
            centre = pos[known].mean(axis=0)
            for i in later:
                pos[i] = centre + rng.uniform(-spread / 4, spread / 4, size=2)
            break
        todo = later
    return pos, ~known


class _Mesh:
    """Repulsion field on a G×G grid by FFT (see the module docstring)."""

    def __init__(self, g: int, softening: float = 0.7) -> None:
        self.g = g
        size = 2 * g
        off = np.arange(size)
        off = np.where(off < g, off, off - size).astype(np.float64)  # wrapped offsets
        ux, uy = np.meshgrid(off, off, indexing="ij")
        r2 = ux * ux + uy * uy + softening * softening
        kx, ky = ux / r2, uy / r2
        kx[g, :] = ky[g, :] = 0.0  # the unused middle offset
        kx[:, g] = ky[:, g] = 0.0
        self.kx, self.ky = np.fft.rfft2(kx), np.fft.rfft2(ky)

    def field(self, pos: np.ndarray, mass: np.ndarray) -> np.ndarray:
        """Σ_j m_j (x_i − x_j) / d_ij² for every node. The grid spans the central 99.6 % of the
        nodes (padded), so a few far-flung ones (up to `MAX_FAR_NODES`) do not coarsen it; those
        outside push each other exactly and feel the grid's nodes as one mass at their centre."""
        g = self.g
        lo, hi = np.quantile(pos, 0.002, axis=0), np.quantile(pos, 0.998, axis=0)
        pad = (hi - lo).max() * 0.25 + 1e-9
        lo, hi = lo - pad, hi + pad
        inside = ((pos >= lo) & (pos <= hi)).all(axis=1)
        if (~inside).sum() > MAX_FAR_NODES:  # no clear outliers: the grid spans everything
            lo, hi = pos.min(axis=0), pos.max(axis=0)
            inside[:] = True
        out = np.zeros(pos.shape)
        pin, min_ = pos[inside], mass[inside]
        span = max(float((hi - lo).max()), 1e-9)
        h = span / (g - 3)
        u = (pin - lo) / h + 1.0
        i0 = np.floor(u).astype(np.int64)
        np.clip(i0, 0, g - 2, out=i0)
        f = u - i0
        fx, fy = f[:, 0], f[:, 1]
        w = ((1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy)
        base = i0[:, 0] * (2 * g) + i0[:, 1]
        idx = (base, base + 2 * g, base + 1, base + 2 * g + 1)
        rho = np.zeros(4 * g * g)
        for k in range(4):
            rho += np.bincount(idx[k], weights=min_ * w[k], minlength=4 * g * g)
        r = np.fft.rfft2(rho.reshape(2 * g, 2 * g))
        ex = np.fft.irfft2(r * self.kx, s=(2 * g, 2 * g)).ravel()
        ey = np.fft.irfft2(r * self.ky, s=(2 * g, 2 * g)).ravel()
        fin = np.zeros(pin.shape)
        for k in range(4):
            fin[:, 0] += w[k] * ex[idx[k]]
            fin[:, 1] += w[k] * ey[idx[k]]
        out[inside] = fin / h
        if not inside.all():
            far, mfar = pos[~inside], mass[~inside]
            # far nodes push each other exactly; their push on the grid's nodes is left out (a
            # few light nodes, far away: below the grid's own error)
            diff = far[:, None, :] - far[None, :, :]
            d2 = np.maximum((diff * diff).sum(axis=2), 1e-9)
            inv = mfar[None, :] / d2
            np.fill_diagonal(inv, 0.0)
            out[~inside] += (inv[:, :, None] * diff).sum(axis=1)
            # and feel the grid's nodes as one mass at their centre
            total = float(min_.sum())
            if total > 0:
                centre = (pin * min_[:, None]).sum(axis=0) / total
                dc = far - centre
                out[~inside] += total * dc / np.maximum((dc * dc).sum(axis=1), 1e-9)[:, None]
        return out


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Component label per node (union-find with path halving)."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a.tolist(), b.tolist()):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return np.array([find(x) for x in range(n)], dtype=np.int64)


def _tidy_islands(
    pos: np.ndarray, label: np.ndarray, margin: float = 1.1, keep: np.ndarray | None = None
) -> np.ndarray:
    """Move every component but the largest radially in to `margin` × the largest one's radius
    (98th percentile) plus its own radius, if it lies beyond that; shapes are kept. Components
    holding a node of `keep` (a mask: pinned nodes) stay where they are."""
    n = len(pos)
    sizes = np.bincount(label, minlength=n)
    giant = int(np.argmax(sizes))
    if sizes[giant] < 2 or sizes[giant] == n:
        return pos
    in_giant = label == giant
    centre = pos[in_giant].mean(axis=0)
    radius = float(np.quantile(np.sqrt(((pos[in_giant] - centre) ** 2).sum(axis=1)), 0.98))
    cnt = np.maximum(sizes, 1).astype(np.float64)
    cen = np.stack([np.bincount(label, weights=pos[:, k], minlength=n) / cnt for k in range(2)], axis=1)
    own = np.sqrt(((pos - cen[label]) ** 2).sum(axis=1))
    comp_r = np.zeros(n)
    np.maximum.at(comp_r, label, own)
    off = cen - centre
    dist = np.sqrt((off * off).sum(axis=1))
    target = margin * radius + comp_r
    movable = (np.arange(n) != giant) & (sizes > 0)
    if keep is not None and keep.any():
        movable[np.unique(label[keep])] = False
    shift = np.where((dist > target) & movable, target / np.maximum(dist, 1e-12), 1.0)
    moved = centre + off * shift[:, None]  # new centroid per component
    placed: np.ndarray = pos + (moved - cen)[label]
    return placed


def _grid_size(n: int) -> int:
    return 128 if n < 4000 else 256


def _simulate(
    pos: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    w: np.ndarray,
    mass: np.ndarray,
    p: LayoutParams,
    total: int,
    *,
    new: np.ndarray,
    hold: int = 0,
    incremental: bool = False,
    start_span: float = 1.0,
    pinned: np.ndarray | None = None,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
    every: int = 1,
    exact: bool | None = None,
    frame: Callable[[np.ndarray], None] | None = None,
) -> tuple[np.ndarray, int, bool]:
    """`total` ForceAtlas2 iterations from `pos`: (positions, iterations done, cancelled)."""
    n = len(pos)
    if pinned is None:
        pinned = np.zeros(n, dtype=bool)
    mesh = None if (exact if exact is not None else n <= EXACT_MAX_NODES) else _Mesh(_grid_size(n))
    old_force = np.zeros((n, 2))
    speed, speed_eff = 1.0, 1.0
    done = 0
    cancelled = False
    for it in range(total):
        if cancel is not None and cancel():
            cancelled = True
            break
        if hold and it == hold:  # everyone moves from here: the speed adapts afresh
            speed, speed_eff = 1.0, 1.0
        # repulsion
        if mesh is None:
            # Σ_j m_j (x_i − x_j) / d_ij² = x_i · Σ_j inv_ij − Σ_j inv_ij x_j, with inv = m_j / d²
            sq = (pos * pos).sum(axis=1)
            d2 = sq[:, None] + sq[None, :] - 2.0 * (pos @ pos.T)
            np.maximum(d2, 1e-9, out=d2)
            inv = mass[None, :] / d2
            np.fill_diagonal(inv, 0.0)
            force = p.scaling * mass[:, None] * (pos * inv.sum(axis=1)[:, None] - inv @ pos)
        else:
            force = p.scaling * mass[:, None] * mesh.field(pos, mass)
        # attraction
        if len(a):
            delta = pos[a] - pos[b]
            if p.linlog:
                dist = np.sqrt((delta * delta).sum(axis=1))
                coef = w * np.log1p(dist) / np.maximum(dist, 1e-9)
            else:
                coef = w
            pull = delta * coef[:, None]
            fa = np.empty((n, 2))
            for k in range(2):
                fa[:, k] = np.bincount(b, weights=pull[:, k], minlength=n) - np.bincount(
                    a, weights=pull[:, k], minlength=n
                )
            if p.dissuade_hubs:
                fa /= mass[:, None]
            force += fa
        # gravity
        dist0 = np.sqrt((pos * pos).sum(axis=1))
        if p.strong_gravity:
            force -= p.gravity * mass[:, None] * pos
        else:
            force -= (p.gravity * mass / np.maximum(dist0, 1e-9))[:, None] * pos
        # adaptive speed (Gephi's ForceAtlas2)
        swing = mass * np.sqrt(((force - old_force) ** 2).sum(axis=1))
        traction = 0.5 * mass * np.sqrt(((force + old_force) ** 2).sum(axis=1))
        total_swing, total_traction = float(swing.sum()), float(traction.sum())
        est_jt = 0.05 * math.sqrt(n)
        jt = p.jitter_tolerance * max(math.sqrt(est_jt), min(10.0, est_jt * total_traction / (n * n)))
        if total_traction > 0 and total_swing / total_traction > 2.0:
            if speed_eff > 0.05:
                speed_eff *= 0.5
            jt = max(jt, p.jitter_tolerance)
        target = jt * speed_eff * total_traction / total_swing if total_swing > 0 else speed * 2
        if total_swing > jt * total_traction:
            if speed_eff > 0.05:
                speed_eff *= 0.7
        elif speed < 1000:
            speed_eff *= 1.3
        speed = speed + min(target - speed, 0.5 * speed)
        factor = speed / (1.0 + np.sqrt(speed * swing))
        if it < hold:
            factor = np.where(new, factor, 0.0)
        if pinned.any():
            factor = np.where(pinned, 0.0, factor)
        step = force * factor[:, None]
        # no node jumps further than a tenth of the picture in one step, and known nodes in an
        # incremental run no further than their share of `inertia`
        span = max(float(np.ptp(pos, axis=0).max()), 1.0)
        cap = np.full(n, span * 0.1)
        if incremental:
            cap[~new] = p.inertia * start_span / max(1, total - hold)
        length = np.sqrt((step * step).sum(axis=1))
        too_far = length > cap
        if too_far.any():
            step[too_far] *= (cap[too_far] / length[too_far])[:, None]
        pos = pos + step
        old_force = force
        done = it + 1
        if done % every == 0 or done == total:
            if progress is not None:
                progress(done, total)
            if frame is not None:
                frame(pos)
    return pos, done, cancelled


def _community_start(
    membership: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    w: np.ndarray,
    mass: np.ndarray,
    p: LayoutParams,
    rng: np.random.Generator,
    scale: float,
) -> np.ndarray:
    """Start positions from communities: the graph of communities (masses summed, edges between
    communities summed into one weighted edge per pair) laid out with the same forces, then each
    community's members spread uniformly over a disc around its position, the discs sized by
    mass and kept apart by the distance to the nearest other community."""
    memb = np.asarray(membership, dtype=np.int64)
    n = len(memb)
    c = int(memb.max()) + 1
    cmass = np.bincount(memb, weights=mass, minlength=c)
    ca, cb = memb[a], memb[b]
    inter = ca != cb
    key = np.minimum(ca, cb)[inter] * c + np.maximum(ca, cb)[inter]
    uniq, inv = np.unique(key, return_inverse=True)
    cw = np.bincount(inv, weights=w[inter], minlength=len(uniq)) if len(uniq) else np.zeros(0)
    cpos = rng.uniform(-scale, scale, size=(c, 2))
    if c > 1:
        cpos, _, _ = _simulate(
            cpos, uniq // c, uniq % c, cw, cmass, p, p.community_iterations, new=np.ones(c, dtype=bool)
        )
    # disc radius ∝ √mass, scaled so that neighbouring discs about touch
    root = np.sqrt(cmass)
    if c > 1:
        big = np.argsort(-cmass)[: min(c, 400)]  # nearest neighbours among the larger communities
        d = np.sqrt(((cpos[big][:, None, :] - cpos[big][None, :, :]) ** 2).sum(axis=2))
        np.fill_diagonal(d, np.inf)
        nn = d.argmin(axis=1)
        k = float(np.median(d[np.arange(len(big)), nn] / (root[big] + root[big][nn])))
    else:
        k = scale / max(float(root[0]), 1.0)
    radius = k * root
    r = radius[memb] * np.sqrt(rng.random(n))
    t = rng.uniform(0.0, 2.0 * math.pi, size=n)
    return cpos[memb] + np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


def starting_positions(graph: LoreGraph, previous: Mapping[str, tuple[float, float]], seed: int = 0) -> np.ndarray:
    """Where an incremental `layout` from `previous` starts (the same seed gives the very same
    array): known nodes where they were, new ones beside their placed neighbours. A view shows it
    as a first picture while the layout is still to come."""
    pos, _new = _initial(graph, np.random.default_rng(seed), previous, scale=math.sqrt(max(graph.n, 1)) * 10.0)
    return pos


def layout(
    graph: LoreGraph,
    params: LayoutParams | str = "balanced",
    seed: int = 0,
    previous: Mapping[str, tuple[float, float]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | threading.Event | None = None,
    iterations: int | None = None,
    progress_every: int | None = None,
    fixed: Collection[str] | None = None,
    membership: Sequence[int] | None = None,
    frame: Callable[[np.ndarray], None] | None = None,
) -> Layout:
    """Lay `graph` out. `previous` (uid → (x, y)) makes it incremental. `progress(done, total)`
    is called every `progress_every` iterations (1 % of them by default) and at the end;
    `cancel` (a `threading.Event`, or any callable returning True to stop) is polled every
    iteration, and a cancelled run returns the positions so far with `cancelled=True`. Runs in
    the caller's thread (the view runs it in a worker). `fixed`: uids (with a position in
    `previous`) that never move, the nodes a user pinned by dragging; their islands stay put too.
    `frame(positions)` sees the positions as they are, first the starting ones and then with each
    progress report, so a view can draw the layout while it settles (it must not keep the array)."""
    p = PRESETS[params] if isinstance(params, str) else params
    if isinstance(cancel, threading.Event):
        cancel = cancel.is_set
    incremental = bool(previous)
    total = iterations if iterations is not None else (p.incremental_iterations if incremental else p.iterations)
    n = graph.n
    rng = np.random.default_rng(seed)
    if n == 0:
        if progress:
            progress(0, total)
        return Layout((), np.zeros((0, 2)), 0, total, False, seed, p)
    pos, new = _initial(graph, rng, previous, scale=math.sqrt(n) * 10.0)
    pinned = np.zeros(n, dtype=bool)
    if fixed and previous:
        where = graph.index or {u: i for i, u in enumerate(graph.uids)}
        for uid in fixed:
            i = where.get(uid)
            if i is not None and uid in previous:
                pinned[i] = True
    pairs, weights = graph.simple_edges(p.kinds)
    a, b = (pairs[:, 0], pairs[:, 1]) if len(pairs) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    w = weights**p.edge_weight_influence if p.edge_weight_influence != 1 else weights
    deg = np.bincount(pairs.ravel(), minlength=n) if len(pairs) else np.zeros(n, np.int64)
    mass = deg.astype(np.float64) + 1.0
    # a fresh layout (or a re-layout where the only known nodes are pinned ones) starts from
    # its communities; an incremental one from where the nodes were
    fresh = not incremental or bool(pinned[~new].all())
    if p.community_start and fresh and n > 2 and len(a):
        if membership is None or len(membership) != n:
            from dle_desktop.core.graph.analysis import communities

            membership = communities(graph, seed=seed, kinds=p.kinds).membership
        memb = np.asarray(membership, dtype=np.int64)
        start = _community_start(memb, a, b, w, mass, p, rng, scale=math.sqrt(n) * 10.0)
        if pinned.any():  # centred on the pins, which stay where the user put them
            start += pos[pinned].mean(axis=0) - start[pinned].mean(axis=0)
        pos = np.where(new[:, None], start, pos)
        if p.inter_community_weight != 1.0:
            w = np.where(memb[a] == memb[b], w, w * p.inter_community_weight)
    every = progress_every or max(1, total // 100)
    if frame is not None:
        frame(pos)
    hold = total // 2 if incremental and new.any() else 0  # known nodes still, new ones settle
    start_span = float(np.ptp(pos[~new], axis=0).max()) if incremental and (~new).sum() > 1 else 1.0
    pos, done, cancelled = _simulate(
        pos,
        a,
        b,
        w,
        mass,
        p,
        total,
        new=new,
        hold=hold,
        incremental=incremental,
        start_span=start_span,
        pinned=pinned,
        cancel=cancel,
        progress=progress,
        every=every,
        frame=frame,
    )
    if p.tidy_islands and n > 1:
        # in an incremental run only islands made wholly of new nodes are brought in: one that
        # was on screen before stays where the user saw it
        pos = _tidy_islands(pos, _components(n, a, b), keep=pinned | (~new if incremental else False))
    return Layout(graph.uids, pos, done, total, cancelled, seed, p)


def with_params(name: str, **changes: Any) -> LayoutParams:
    """A preset with some parameters changed."""
    return replace(PRESETS[name], **changes)
