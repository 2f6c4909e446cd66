"""DLE's "missing connections" (dle-behaviour.md §5.6: entries sharing a custom-field value with
no edge between them), grouped so they stay readable (issue 21.13):

- a value shared by more than `common_value_limit(n)` entries (more than 10 % of the vault, never
  fewer than 5, never more than 30) says little about any one pair: it suggests no links and
  becomes one `common_value` note instead ("era: Present Day: 13 entries share it, …");
- every other shared value counts, and each entry gets at most one `missing_connection`
  suggestion listing its unlinked partners, the strongest first (most values shared, then the
  rarest value, then title), naming at most `MAX_PARTNERS_SHOWN` of them.
"""

from __future__ import annotations

import math
from typing import Any

from dle_desktop.core.graph.findings import GraphFinding, make_finding
from dle_desktop.core.graph.model import LoreGraph

MAX_PARTNERS_SHOWN = 3
COMMON_SHARE = 0.10
COMMON_FLOOR = 5  # in a small vault, a handful of entries sharing a value is still a good hint
COMMON_CAP = 30  # beyond this, pairs grow quadratically and say nothing (DLE's own cut-off)

ValueKey = tuple[str, Any]  # (field, normalised value)


def common_value_limit(n: int) -> int:
    """The most entries that may share a value for it to still suggest links."""
    return min(COMMON_CAP, max(COMMON_FLOOR, math.floor(COMMON_SHARE * n)))


def _values(v: object) -> list[Any]:
    items = v if isinstance(v, (tuple, list, set, frozenset)) else (v,)
    out = []
    for x in items:
        if x is None or isinstance(x, bool) or (isinstance(x, str) and not x.strip()):
            continue
        if isinstance(x, (dict, list)):
            continue
        out.append(x.strip().lower() if isinstance(x, str) else x)
    return out


def value_groups(graph: LoreGraph) -> tuple[dict[ValueKey, list[int]], dict[ValueKey, str]]:
    """(field, value) → the entries holding it (in node order), and how the value is spelled
    where first seen. Values compare case-insensitively; list fields count each item."""
    groups: dict[ValueKey, list[int]] = {}
    display: dict[ValueKey, str] = {}
    for i, e in enumerate(graph.entries):
        for name, value in e.custom_fields.items():
            raw = value if isinstance(value, (tuple, list)) else (value,)
            for shown in raw:
                keys = _values(shown)
                if not keys or isinstance(shown, (dict, list, tuple)):
                    continue
                gk = (name, keys[0])
                members = groups.setdefault(gk, [])
                if not members or members[-1] != i:
                    members.append(i)
                display.setdefault(gk, str(shown))
    return groups, display


def _sorted_keys(groups: dict[ValueKey, list[int]]) -> list[ValueKey]:
    return sorted(groups, key=lambda k: (k[0], str(k[1])))


def common_values(graph: LoreGraph, max_shared_group: int | None = None) -> list[GraphFinding]:
    """One note per value too common to suggest links (see the module's docstring)."""
    limit = common_value_limit(graph.n) if max_shared_group is None else max_shared_group
    groups, display = value_groups(graph)
    out = []
    for gk in _sorted_keys(groups):
        members = groups[gk]
        if len(members) > limit:
            name, shown = gk[0], display[gk]
            out.append(
                make_finding(
                    graph,
                    "common_value",
                    members,
                    f"{name}: {shown}: {len(members)} entries share it, too common to suggest links "
                    f"(more than {limit} of the {graph.n} entries)",
                    field=name,
                    value=shown,
                    limit=limit,
                )
            )
    return out


def _names(titles: list[str], more: int) -> str:
    if more:
        return ", ".join(titles) + f" and {more} more"
    return titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + f" and {titles[-1]}"


def missing_connections(
    graph: LoreGraph, max_shared_group: int | None = None, max_missing: int = 200
) -> list[GraphFinding]:
    """One suggestion per entry that shares a (not too common) custom-field value with entries it
    has no edge to; at most `max_missing` of them, the strongest first."""
    limit = common_value_limit(graph.n) if max_shared_group is None else max_shared_group
    groups, display = value_groups(graph)
    pairs, _ = graph.simple_edges()
    linked = set(map(tuple, pairs.tolist()))
    shared: dict[int, dict[int, list[ValueKey]]] = {}  # entry → unlinked partner → values both hold
    for gk in _sorted_keys(groups):
        members = groups[gk]
        if len(members) < 2 or len(members) > limit:
            continue
        for x in members:
            for y in members:
                if x != y and (min(x, y), max(x, y)) not in linked:
                    shared.setdefault(x, {}).setdefault(y, []).append(gk)

    def text(keys: list[ValueKey]) -> str:
        by_field: dict[str, list[str]] = {}
        for name, v in keys:
            by_field.setdefault(name, []).append(display[(name, v)])
        return "; ".join(f"{name}: {', '.join(shown)}" for name, shown in by_field.items())

    found = []
    for x, partners in shared.items():
        ranked = sorted(
            partners,
            key=lambda y: (
                -len(partners[y]),
                min(len(groups[k]) for k in partners[y]),
                graph.entries[y].title.lower(),
                y,
            ),
        )
        shown = ranked[:MAX_PARTNERS_SHOWN]
        more = len(ranked) - len(shown)
        title = graph.entries[x].title
        count = f"{len(ranked)} entr{'ies' if len(ranked) != 1 else 'y'}"
        values = {tuple(partners[y]) for y in ranked}
        if len(values) == 1:
            names = _names([graph.entries[y].title for y in shown], more)
            message = f"'{title}' shares {text(partners[ranked[0]])} with {count} it has no link to: {names}"
        else:
            names = _names([f"{graph.entries[y].title} ({text(partners[y])})" for y in shown], more)
            message = f"'{title}' shares field values with {count} it has no link to: {names}"
        all_keys = sorted({k for y in ranked for k in partners[y]}, key=lambda k: (k[0], str(k[1])))
        found.append(
            make_finding(
                graph,
                "missing_connection",
                [x, *shown],
                message,
                unlinked=len(ranked),
                best=len(partners[ranked[0]]),
                shared=[[name, display[(name, v)]] for name, v in all_keys],
            )
        )
    found.sort(key=lambda f: (-f.data["best"], -f.data["unlinked"], f.titles[0].lower(), f.entries))
    return found[:max_missing]
