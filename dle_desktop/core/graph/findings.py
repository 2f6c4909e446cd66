"""A Graph view finding, its severity and the order findings are read in (issue 21.13): the real
problems first, then what deserves a look, then suggestions and notes, so a few hundred "these
two share a field value" lines never bury a circular `requires`.

Severity is a property of the kind, declared here once; the panel and the JSON read it from
here. Within a kind, `rank_findings` puts the most telling finding first (see `_WITHIN_KIND`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.graph.model import LoreGraph

SEVERITIES = ("problem", "warning", "suggestion", "note")

# kind → severity, in the order the kinds are listed within a severity
SEVERITY_OF_KIND: dict[str, str] = {
    # none of the entries in the circle can ever be injected through `requires`
    "requires_cycle": "problem",
    # the structure is fragile or an entry is unreachable by links: worth a look
    "orphan": "warning",
    "bridge": "warning",
    "cut_entry": "warning",
    # could be better, nothing is broken
    "missing_connection": "suggestion",
    "type_imbalance": "suggestion",
    # for information: why some shared values are not suggested
    "common_value": "note",
}
KIND_ORDER = tuple(SEVERITY_OF_KIND)


def severity_of(kind: str) -> str:
    """Unknown kinds (a newer analysis than this reader) are notes: never above a real problem."""
    return SEVERITY_OF_KIND.get(kind, "note")


@dataclass(frozen=True)
class GraphFinding:
    kind: str  # a key of SEVERITY_OF_KIND
    entries: tuple[str, ...]  # uids
    message: str
    titles: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        return severity_of(self.kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "entries": list(self.entries),
            "titles": list(self.titles),
            "message": self.message,
            "data": self.data,
        }


def make_finding(graph: LoreGraph, kind: str, nodes: Iterable[int], message: str, **data: Any) -> GraphFinding:
    nodes = list(nodes)
    return GraphFinding(
        kind, tuple(graph.uids[i] for i in nodes), message, tuple(graph.entries[i].title for i in nodes), data
    )


def _titles(f: GraphFinding) -> tuple[str, ...]:
    return tuple(t.lower() for t in f.titles)


_WITHIN_KIND: dict[str, Callable[[GraphFinding], tuple[Any, ...]]] = {
    "requires_cycle": lambda f: (len(f.entries), _titles(f)),  # the tightest circles first
    "orphan": lambda f: _titles(f),
    # the bridge holding the larger communities together first
    "bridge": lambda f: (-int(f.data.get("smaller_side", 0)), _titles(f)),
    "cut_entry": lambda f: (-int(f.data.get("cut_off", 0)), _titles(f)),
    # the strongest evidence (most values shared with one partner), then the most unlinked partners
    "missing_connection": lambda f: (-int(f.data.get("best", 0)), -int(f.data.get("unlinked", 0)), _titles(f)),
    "type_imbalance": lambda f: (-len(f.entries), int(f.data.get("community", 0))),
    "common_value": lambda f: (-len(f.entries), str(f.data.get("field", "")), str(f.data.get("value", ""))),
}


def rank_findings(findings: Iterable[GraphFinding]) -> list[GraphFinding]:
    """Severity first, then kind (KIND_ORDER), then the kind's own order; ties by the entries'
    uids, so the order depends only on the findings, never on how they came in."""

    def key(f: GraphFinding) -> tuple[Any, ...]:
        kind = KIND_ORDER.index(f.kind) if f.kind in SEVERITY_OF_KIND else len(KIND_ORDER)
        within = _WITHIN_KIND.get(f.kind, _titles)
        return (SEVERITIES.index(f.severity), kind, f.kind, within(f), f.entries, f.message)

    return sorted(findings, key=key)
