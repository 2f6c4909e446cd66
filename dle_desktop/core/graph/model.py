"""The vault as a graph (DLE's `/dle-graph`, dle-behaviour.md §5.6): a node per entry whose
`graph` is not false, undirected edges deduplicated per type (wiki link, requires, excludes,
cascade), each weighted `max(1, mentions a→b, mentions b→a)`, where a mention is an occurrence
of the other entry's title or one of its keys in the entry's content (case-insensitive; whole
words only for names of ≤ 3 characters, as DLE's `mentionWeights`).

Pure: built from an `IndexSnapshot` (or any sequence of entries), no I/O, no Qt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dle_desktop.core.entry import Entry

if TYPE_CHECKING:
    from dle_desktop.core.index import IndexSnapshot

EDGE_KINDS = ("link", "requires", "excludes", "cascade")
NODE_TYPES = ("constant", "seed", "bootstrap", "regular")


def node_type(e: Entry) -> str:
    """DLE's node type: constant, seed, bootstrap, or regular (guide entries included)."""
    if e.constant:
        return "constant"
    if e.seed:
        return "seed"
    if e.bootstrap:
        return "bootstrap"
    return "regular"


@dataclass(frozen=True)
class Edge:
    """One undirected edge of one kind between nodes `a` < `b` (indices into `LoreGraph.uids`)."""

    a: int
    b: int
    kind: str
    weight: float

    def to_json(self, graph: LoreGraph | None = None) -> dict[str, Any]:
        out = {"a": self.a, "b": self.b, "kind": self.kind, "weight": self.weight}
        if graph is not None:
            out["a"], out["b"] = graph.uids[self.a], graph.uids[self.b]
        return out


@dataclass(frozen=True, eq=False)
class LoreGraph:
    """Nodes are entries (by uid, in snapshot order); `edges` hold every typed edge;
    `requires` the directed requires arcs (i requires j) for cycle detection."""

    entries: tuple[Entry, ...]
    edges: tuple[Edge, ...]
    requires: tuple[tuple[int, int], ...] = ()
    index: dict[str, int] = field(default_factory=dict)

    @cached_property
    def uids(self) -> tuple[str, ...]:
        return tuple(e.uid for e in self.entries)

    @property
    def n(self) -> int:
        return len(self.entries)

    @cached_property
    def types(self) -> tuple[str, ...]:
        return tuple(node_type(e) for e in self.entries)

    def edges_of(self, kinds: Iterable[str] | None = None) -> tuple[Edge, ...]:
        if kinds is None:
            return self.edges
        wanted = set(kinds)
        return tuple(e for e in self.edges if e.kind in wanted)

    def simple_edges(self, kinds: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Typed edges collapsed into one undirected edge per pair: (m×2 int array with
        a < b, sorted; weights summed over the kinds kept)."""
        key = None if kinds is None else tuple(sorted(set(kinds)))
        cache = self.__dict__.setdefault("_simple", {})
        if key not in cache:
            acc: dict[tuple[int, int], float] = {}
            for e in self.edges_of(key):
                acc[(e.a, e.b)] = acc.get((e.a, e.b), 0.0) + e.weight
            pairs = sorted(acc)
            arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
            w = np.array([acc[p] for p in pairs], dtype=np.float64)
            cache[key] = (arr, w)
        arrays: tuple[np.ndarray, np.ndarray] = cache[key]
        return arrays

    @cached_property
    def degree(self) -> np.ndarray:
        """Neighbours per node over all edge kinds (pairs counted once)."""
        pairs, _ = self.simple_edges()
        return np.bincount(pairs.ravel(), minlength=self.n) if len(pairs) else np.zeros(self.n, dtype=np.int64)

    def neighbours(self) -> list[list[int]]:
        pairs, _ = self.simple_edges()
        out: list[list[int]] = [[] for _ in range(self.n)]
        for a, b in pairs.tolist():
            out[a].append(b)
            out[b].append(a)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [
                {"uid": e.uid, "title": e.title, "vault": e.vault, "type": t} for e, t in zip(self.entries, self.types)
            ],
            "edges": [e.to_json(self) for e in self.edges],
        }


class _Mentions:
    """DLE's mention counts, computed only for pairs that have an edge."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self._entries = entries
        self._lower: dict[int, str] = {}
        self._names: dict[int, tuple[tuple[str, re.Pattern[str] | None], ...]] = {}

    def _text(self, i: int) -> str:
        t = self._lower.get(i)
        if t is None:
            t = self._lower[i] = self._entries[i].content.lower()
        return t

    def _name_list(self, i: int) -> tuple[tuple[str, re.Pattern[str] | None], ...]:
        got = self._names.get(i)
        if got is None:
            e = self._entries[i]
            names = dict.fromkeys(n.lower() for n in (e.title, *e.keys) if n.strip())
            got = self._names[i] = tuple(
                (n, re.compile(r"\b" + re.escape(n) + r"\b") if len(n) <= 3 else None) for n in names
            )
        return got

    def count(self, src: int, dst: int) -> int:
        text = self._text(src)
        total = 0
        for name, rx in self._name_list(dst):
            total += len(rx.findall(text)) if rx is not None else text.count(name)
        return total


def build_graph(
    source: IndexSnapshot | Sequence[Entry], mention_weights: bool = True, previous: LoreGraph | None = None
) -> LoreGraph:
    """The graph of an `IndexSnapshot` (or a sequence of entries). Entries with `graph: false`
    are left out, and so are edges to them. Titles resolve case-insensitively; where several
    entries share a title (conflict mode `all`), a reference goes to the copies in the same
    vault, or to every copy when none is there.

    Counting mentions is most of the cost (about 2 s at 10,000 entries and 70,000 edges). With
    `previous` (the graph of an earlier snapshot), a pair whose two entries are the very same
    objects there (a sync re-uses every unchanged `Entry`) keeps its weight without a recount.
    Without `mention_weights` every edge weighs 1: `graph_structure`, which `weigh` completes."""
    structure = graph_structure(source)
    return weigh(structure, previous) if mention_weights else structure


def graph_structure(source: IndexSnapshot | Sequence[Entry]) -> LoreGraph:
    """Who links to whom, every edge weighing 1: the quick part of `build_graph` (a view can draw
    it while `weigh` counts the mentions)."""
    all_entries = cast("Sequence[Entry]", getattr(source, "entries", source))
    entries = tuple(e for e in all_entries if e.graph)
    index = {e.uid: i for i, e in enumerate(entries)}
    by_title: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        by_title.setdefault(e.title.lower(), []).append(i)

    def targets(src: Entry, title: str) -> list[int]:
        hits = by_title.get(title.lower())
        if not hits:
            return []
        same = [j for j in hits if entries[j].vault == src.vault]
        return same or hits

    typed: dict[tuple[int, int, str], None] = {}
    arcs: dict[tuple[int, int], None] = {}
    for i, e in enumerate(entries):
        for kind, titles in (
            ("link", e.resolved_links),
            ("requires", e.requires),
            ("excludes", e.excludes),
            ("cascade", e.cascade_links),
        ):
            for t in titles:
                for j in targets(e, t):
                    if kind == "requires":
                        arcs[(i, j)] = None
                    if j != i:
                        typed[(min(i, j), max(i, j), kind)] = None
    order = {k: n for n, k in enumerate(EDGE_KINDS)}
    edges = tuple(Edge(a, b, kind, 1.0) for a, b, kind in sorted(typed, key=lambda t: (t[0], t[1], order[t[2]])))
    return LoreGraph(entries=entries, edges=edges, requires=tuple(arcs), index=index)


def weigh(structure: LoreGraph, previous: LoreGraph | None = None) -> LoreGraph:
    """`structure` with DLE's mention weights: each pair weighs the larger of its two mention
    counts (at least 1). A pair `previous` holds between the very same entry objects keeps its
    weight there."""
    entries = structure.entries
    mentions = _Mentions(entries)
    known: dict[tuple[str, str], tuple[Entry, Entry, float]] = {}
    if previous is not None:
        pe = previous.entries
        for edge in previous.edges:
            ea, eb = pe[edge.a], pe[edge.b]
            known[(ea.uid, eb.uid) if ea.uid < eb.uid else (eb.uid, ea.uid)] = (ea, eb, edge.weight)
    pair_weight: dict[tuple[int, int], float] = {}
    edges = []
    for edge in structure.edges:
        a, b = edge.a, edge.b
        w = pair_weight.get((a, b))
        if w is None:
            ea, eb = entries[a], entries[b]
            hit = known.get((ea.uid, eb.uid) if ea.uid < eb.uid else (eb.uid, ea.uid)) if known else None
            if hit is not None and {id(hit[0]), id(hit[1])} == {id(ea), id(eb)}:
                w = hit[2]
            else:
                w = float(max(1, mentions.count(a, b), mentions.count(b, a)))
            pair_weight[(a, b)] = w
        edges.append(Edge(a, b, edge.kind, w))
    return LoreGraph(entries=entries, edges=tuple(edges), requires=structure.requires, index=structure.index)
