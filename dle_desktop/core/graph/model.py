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
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from dle_desktop.core.entry import Entry

if TYPE_CHECKING:
    from dle_desktop.core.index import IndexSnapshot

EDGE_KINDS = ("link", "requires", "excludes", "cascade")
_REQUIRES = EDGE_KINDS.index("requires")
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


class Edge(NamedTuple):
    """One undirected edge of one kind between nodes `a` < `b` (indices into `LoreGraph.uids`).
    A named tuple: a 10,000-entry vault has some 70,000 of them, and a tuple is made several
    times quicker than a frozen dataclass (its first picture waits for them)."""

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
            kept = self.edges_of(key)
            m = len(kept)
            a = np.fromiter((e.a for e in kept), np.int64, m)
            b = np.fromiter((e.b for e in kept), np.int64, m)
            weight = np.fromiter((e.weight for e in kept), np.float64, m)
            # one code per pair (a < b < n), so the sorted unique codes are the pairs in order
            pair, where = np.unique(a * max(self.n, 1) + b, return_inverse=True)
            arr = np.stack((pair // max(self.n, 1), pair % max(self.n, 1)), axis=1).astype(np.int64).reshape(-1, 2)
            cache[key] = (arr, np.bincount(where, weights=weight, minlength=len(pair)).astype(np.float64))
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
    in_vault: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(entries):
        lowered = e.title.lower()
        by_title.setdefault(lowered, []).append(i)
        in_vault.setdefault((e.vault, lowered), []).append(i)

    def targets(src: Entry, title: str) -> list[int]:
        lowered = title.lower()
        return in_vault.get((src.vault, lowered)) or by_title.get(lowered) or []

    typed: dict[tuple[int, int, int], None] = {}  # (a, b, the kind's place in EDGE_KINDS)
    arcs: dict[tuple[int, int], None] = {}
    for i, e in enumerate(entries):
        for code, titles in enumerate((e.resolved_links, e.requires, e.excludes, e.cascade_links)):
            for t in titles:
                for j in targets(e, t):
                    if code == _REQUIRES:
                        arcs[(i, j)] = None
                    if j != i:
                        typed[(i, j, code) if i < j else (j, i, code)] = None
    kinds = EDGE_KINDS
    edges = tuple(Edge(a, b, kinds[code], 1.0) for a, b, code in sorted(typed))
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
