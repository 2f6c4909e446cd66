"""What the Graph view's side panel lists: communities, the disparity-filter backbone, circular
`requires`, and DLE's gap analysis (dle-behaviour.md §5.6), as plain data.

Library work (igraph, C): Leiden / Louvain communities, simple cycles. By hand, because igraph
and networkx lack them: Serrano's disparity filter (vectorised numpy), DLE's gap rules, and the
articulation-point split sizes (one iterative DFS) that keep trivial cut points out of the list.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import igraph as ig
import numpy as np

from dle_desktop.core.graph.findings import GraphFinding, make_finding, rank_findings
from dle_desktop.core.graph.model import NODE_TYPES, LoreGraph
from dle_desktop.core.graph.suggestions import common_values, missing_connections

_RNG_LOCK = threading.Lock()  # igraph's random generator is process-wide


def _igraph(graph: LoreGraph, kinds: Iterable[str] | None = None) -> tuple[ig.Graph, np.ndarray, np.ndarray]:
    pairs, w = graph.simple_edges(kinds)
    g = ig.Graph(n=graph.n, edges=pairs.tolist())
    return g, pairs, w


# ----------------------------------------------------------------------------------------------
# Communities
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Communities:
    membership: tuple[int, ...]  # node index → community (0 is the largest)
    groups: tuple[tuple[int, ...], ...]  # community → node indices
    modularity: float
    method: str
    seed: int

    def to_json(self, graph: LoreGraph | None = None) -> dict[str, Any]:
        groups = [list(g) if graph is None else [graph.uids[i] for i in g] for g in self.groups]
        return {"groups": groups, "modularity": self.modularity, "method": self.method, "seed": self.seed}


def communities(
    graph: LoreGraph, seed: int = 0, method: str = "leiden", resolution: float = 1.0, kinds: Iterable[str] | None = None
) -> Communities:
    """Leiden (modularity, iterated until stable) or Louvain (`method="louvain"`) on the
    weighted graph; seeded, so the same graph and seed give the same communities. Numbered by
    size, largest first (ties: lowest node index)."""
    g, _, w = _igraph(graph, kinds)
    if graph.n == 0:
        return Communities((), (), 0.0, method, seed)
    weights = w.tolist() if len(w) else None
    with _RNG_LOCK:
        ig.set_random_number_generator(random.Random(seed))
        try:
            if method == "leiden":
                raw = g.community_leiden(
                    objective_function="modularity", weights=weights, resolution=resolution, n_iterations=-1
                ).membership
            elif method == "louvain":
                raw = g.community_multilevel(weights=weights, resolution=resolution).membership
            else:
                raise ValueError(f"unknown community method {method!r}")
        finally:
            ig.set_random_number_generator(random)
    buckets: dict[int, list[int]] = {}
    for i, c in enumerate(raw):
        buckets.setdefault(c, []).append(i)
    ordered = sorted(buckets.values(), key=lambda m: (-len(m), m[0]))
    membership = [0] * graph.n
    for c, members in enumerate(ordered):
        for i in members:
            membership[i] = c
    q = g.modularity(membership, weights=weights) if len(w) else 0.0
    return Communities(tuple(membership), tuple(tuple(m) for m in ordered), float(q), method, seed)


# ----------------------------------------------------------------------------------------------
# Backbone
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Backbone:
    alpha: float
    pairs: np.ndarray  # kept edges, m×2 node indices
    weights: np.ndarray
    significance: np.ndarray  # per kept edge: the smaller of its two endpoints' alpha values
    total: int  # edges before filtering

    def to_json(self, graph: LoreGraph | None = None) -> dict[str, Any]:
        ids = (lambda i: graph.uids[i]) if graph is not None else int
        return {
            "alpha": self.alpha,
            "total": self.total,
            "kept": len(self.pairs),
            "edges": [
                [ids(a), ids(b), float(w), float(s)]
                for (a, b), w, s in zip(self.pairs.tolist(), self.weights.tolist(), self.significance.tolist())
            ],
        }


def backbone(graph: LoreGraph, alpha: float = 0.05, kinds: Iterable[str] | None = None) -> Backbone:
    """Serrano, Boguñá & Vespignani's disparity filter (PNAS 2009), DLE's α = 0.05 by default.
    For an edge of weight w at a node of degree k and strength s, α_ij = (1 − w/s)^(k−1); the
    edge stays when α_ij < alpha at either end. An edge at a node of degree 1 is that node's
    only edge and always stays (the filter cannot judge it; dropping it would orphan the node)."""
    pairs, w = graph.simple_edges(kinds)
    if not len(pairs):
        return Backbone(alpha, pairs, w, np.zeros(0), 0)
    a, b = pairs[:, 0], pairs[:, 1]
    k = np.bincount(pairs.ravel(), minlength=graph.n).astype(np.float64)
    s = np.bincount(a, weights=w, minlength=graph.n) + np.bincount(b, weights=w, minlength=graph.n)

    def side(i: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.power(np.clip(1.0 - w / s[i], 0.0, 1.0), k[i] - 1.0)
        out[k[i] <= 1] = 0.0
        return out

    sig = np.minimum(side(a), side(b))
    keep = sig < alpha
    return Backbone(alpha, pairs[keep], w[keep], sig[keep], len(pairs))


# ----------------------------------------------------------------------------------------------
# Circular requires
# ----------------------------------------------------------------------------------------------


def requires_cycles(graph: LoreGraph, max_length: int = 12) -> list[GraphFinding]:
    """Every simple cycle of `requires` (A requires B … requires A), each reported once,
    starting at its alphabetically first title. Cycles longer than `max_length` entries are not
    enumerated (their number can explode); an entry that requires itself is a cycle of one."""
    if not graph.requires:
        return []
    g = ig.Graph(n=graph.n, edges=list(graph.requires), directed=True)
    out: list[GraphFinding] = []
    seen: set[tuple[int, ...]] = set()
    for cyc in g.simple_cycles(min=1, max=max_length):
        cyc = list(cyc)
        titles = [graph.entries[i].title.lower() for i in cyc]
        start = min(range(len(cyc)), key=lambda j: (titles[j], cyc[j]))
        cyc = cyc[start:] + cyc[:start]
        key = tuple(cyc)
        if key in seen:
            continue
        seen.add(key)
        names = [graph.entries[i].title for i in cyc]
        chain = " → ".join(names + [names[0]])
        message = (
            f"'{names[0]}' requires itself"
            if len(cyc) == 1
            else f"Circular requires: {chain}; none of them can ever be injected by requires alone"
        )
        out.append(make_finding(graph, "requires_cycle", cyc, message, length=len(cyc)))
    out.sort(key=lambda f: [t.lower() for t in f.titles])
    return out


# ----------------------------------------------------------------------------------------------
# Gap analysis
# ----------------------------------------------------------------------------------------------


def _cut_points(n: int, nbrs: list[list[int]]) -> dict[int, int]:
    """Articulation points → how many entries their removal cuts off: the entries of their
    component outside the largest piece left (iterative Tarjan with subtree sizes)."""
    disc = [-1] * n
    low = [0] * n
    size = [1] * n
    out: dict[int, int] = {}
    t = 0
    for root in range(n):
        if disc[root] != -1 or not nbrs[root]:
            continue
        first = t
        disc[root] = low[root] = t
        t += 1
        separated: dict[int, list[int]] = {}  # v → sizes of the child subtrees only v holds on
        stack = [(root, -1, iter(nbrs[root]))]
        while stack:
            v, parent, it = stack[-1]
            for u in it:
                if disc[u] == -1:
                    disc[u] = low[u] = t
                    t += 1
                    stack.append((u, v, iter(nbrs[u])))
                    break
                if u != parent and disc[u] < low[v]:
                    low[v] = disc[u]
            else:
                stack.pop()
                if parent != -1:
                    size[parent] += size[v]
                    if low[v] < low[parent]:
                        low[parent] = low[v]
                    if low[v] >= disc[parent]:
                        separated.setdefault(parent, []).append(size[v])
        comp = t - first
        for v, pieces in separated.items():
            if v == root and len(pieces) < 2:
                continue  # a DFS root is a cut point only with two or more children
            rest = comp - 1 - sum(pieces)
            out[v] = comp - 1 - max(max(pieces), rest)
    return out


def gap_analysis(
    graph: LoreGraph,
    comms: Communities | None = None,
    *,
    seed: int = 0,
    min_cut_piece: int = 2,
    imbalance_min_size: int = 5,
    imbalance_share: float = 0.5,
    imbalance_ratio: float = 3.0,
    max_shared_group: int | None = None,
    max_missing: int = 200,
) -> list[GraphFinding]:
    """DLE's gap analysis, plus cut entries:

    - `orphan`: an entry with no edge at all;
    - `bridge`: the sole edge between two communities (of ≥ 2 entries each);
    - `cut_entry`: an entry whose removal cuts ≥ `min_cut_piece` entries off the rest;
    - `type_imbalance`: a community of ≥ `imbalance_min_size` entries where one node type
      makes up ≥ `imbalance_share` of it and ≥ `imbalance_ratio` × its share of the vault;
    - `missing_connection`: per entry, the entries it shares a custom-field value with and has
      no edge to. DLE lists every such pair, and only up to 200 nodes; here, at any vault size,
      it is one suggestion per entry naming a few partners, at most `max_missing` of them, and
      a value more than `max_shared_group` entries share (by default `common_value_limit`) is a
      `common_value` note instead (see `suggestions.py`).

    Ranked by severity (`rank_findings`).
    """
    if comms is None:
        comms = communities(graph, seed=seed)
    n = graph.n
    out: list[GraphFinding] = []
    deg = graph.degree
    for i in np.flatnonzero(deg == 0).tolist():
        out.append(
            make_finding(
                graph,
                "orphan",
                [i],
                f"'{graph.entries[i].title}' has no links, requires, excludes or cascades to or from any other entry",
            )
        )

    # bridges: pairs of communities joined by exactly one edge
    pairs, _ = graph.simple_edges()
    member = np.array(comms.membership, dtype=np.int64) if n else np.zeros(0, np.int64)
    sizes = [len(g) for g in comms.groups]
    if len(pairs):
        ca, cb = member[pairs[:, 0]], member[pairs[:, 1]]
        cross = np.flatnonzero(ca != cb)
        lo, hi = np.minimum(ca[cross], cb[cross]), np.maximum(ca[cross], cb[cross])
        count: dict[tuple[int, int], list[int]] = {}
        for e, x, y in zip(cross.tolist(), lo.tolist(), hi.tolist()):
            count.setdefault((x, y), []).append(e)
        for (x, y), es in sorted(count.items()):
            if len(es) == 1 and sizes[x] >= 2 and sizes[y] >= 2:
                a, b = pairs[es[0]].tolist()
                ta, tb = graph.entries[a].title, graph.entries[b].title
                out.append(
                    make_finding(
                        graph,
                        "bridge",
                        [a, b],
                        f"'{ta}' – '{tb}' is the only connection between community {x + 1} "
                        f"({sizes[x]} entries) and community {y + 1} ({sizes[y]} entries)",
                        communities=[x, y],
                        smaller_side=min(sizes[x], sizes[y]),
                    )
                )

    # cut entries
    nbrs = graph.neighbours()
    for v, piece in sorted(_cut_points(n, nbrs).items()):
        if piece >= min_cut_piece:
            out.append(
                make_finding(
                    graph,
                    "cut_entry",
                    [v],
                    f"Removing '{graph.entries[v].title}' would cut {piece} entries off the rest of the graph",
                    cut_off=piece,
                )
            )

    # type imbalance
    types = graph.types
    vault_share = {t: (sum(1 for x in types if x == t) / n if n else 0.0) for t in NODE_TYPES}
    for c, group in enumerate(comms.groups):
        if len(group) < imbalance_min_size:
            continue
        for t in NODE_TYPES:
            share = sum(1 for i in group if types[i] == t) / len(group)
            if share >= imbalance_share and share >= imbalance_ratio * vault_share[t]:
                out.append(
                    make_finding(
                        graph,
                        "type_imbalance",
                        group,
                        f"Community {c + 1} ({len(group)} entries) is {share:.0%} {t} entries "
                        f"(the vault: {vault_share[t]:.0%})",
                        community=c,
                        type=t,
                        share=share,
                        vault_share=vault_share[t],
                    )
                )

    out.extend(missing_connections(graph, max_shared_group=max_shared_group, max_missing=max_missing))
    out.extend(common_values(graph, max_shared_group=max_shared_group))
    return rank_findings(out)


# ----------------------------------------------------------------------------------------------
# All of it
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Analysis:
    communities: Communities
    backbone: Backbone
    cycles: tuple[GraphFinding, ...]
    gaps: tuple[GraphFinding, ...]

    @property
    def findings(self) -> tuple[GraphFinding, ...]:
        """Every finding, the real problems first (`rank_findings`)."""
        return tuple(rank_findings(self.cycles + self.gaps))

    def to_json(self, graph: LoreGraph | None = None) -> dict[str, Any]:
        return {
            "communities": self.communities.to_json(graph),
            "backbone": self.backbone.to_json(graph),
            "findings": [f.to_json() for f in self.findings],
        }


def analyse(
    graph: LoreGraph, seed: int = 0, alpha: float = 0.05, method: str = "leiden", **gap_options: Any
) -> Analysis:
    comms = communities(graph, seed=seed, method=method)
    return Analysis(
        comms, backbone(graph, alpha), tuple(requires_cycles(graph)), tuple(gap_analysis(graph, comms, **gap_options))
    )
