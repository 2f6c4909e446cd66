"""How the Graph view looks: edge styles per kind, node colours per colour mode and node sizes.

Colours are handed to the canvas as a small palette plus one palette index per node (a *bin*):
the canvas draws each (colour, size) bin with one `drawPoints` call, so a continuous measure
(priority, centrality, frequency) is cut into a few steps rather than 10,000 distinct colours."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from dle_desktop.core.graph import NODE_TYPES, Analysis, LoreGraph

BACKGROUND = QColor(250, 250, 252)
LABEL = QColor(30, 34, 44)
MUTED = QColor(178, 182, 190)

#: kind → (label, colour, width in px, pen style). Links are the bulk: thin, light and
#: translucent so they read as texture; the rule edges are few and must stand out.
EDGE_STYLES: dict[str, tuple[str, QColor, float, Qt.PenStyle]] = {
    "link": ("Wiki links", QColor(110, 120, 140, 70), 0.0, Qt.PenStyle.SolidLine),
    "requires": ("Requires", QColor(40, 110, 210, 190), 1.4, Qt.PenStyle.SolidLine),
    "excludes": ("Excludes", QColor(205, 45, 45, 200), 1.4, Qt.PenStyle.DashLine),
    "cascade": ("Cascade links", QColor(20, 150, 90, 190), 1.4, Qt.PenStyle.DotLine),
}

TYPE_COLOURS = {
    "constant": QColor(230, 140, 20),
    "seed": QColor(150, 70, 200),
    "bootstrap": QColor(0, 150, 160),
    "regular": QColor(60, 110, 190),
}

#: Categorical colours (Tableau 20, reordered so neighbours in the list differ strongly).
CATEGORICAL = [
    QColor(h)
    for h in (
        "#4e79a7",
        "#f28e2b",
        "#59a14f",
        "#e15759",
        "#b07aa1",
        "#76b7b2",
        "#edc948",
        "#ff9da7",
        "#9c755f",
        "#499894",
        "#d37295",
        "#86bcb6",
        "#f1ce63",
        "#a0cbe8",
        "#8cd17d",
        "#ffbe7d",
        "#bab0ac",
        "#d4a6c8",
        "#79706e",
        "#fabfd2",
    )
]
OTHER = QColor(190, 190, 196)

#: A sequential ramp (viridis-like stops, low → high) cut into `STEPS` bins.
_RAMP = np.array(
    [(68, 1, 84), (65, 68, 135), (42, 120, 142), (34, 168, 132), (122, 209, 81), (253, 231, 37)], dtype=np.float64
)
STEPS = 10

COLOUR_MODES = {
    "type": "Type",
    "priority": "Priority",
    "centrality": "Centrality",
    "frequency": "Injection frequency",
    "community": "Community",
    "field": "Custom field",
}
SIZE_MODES = {"centrality": "Size: centrality", "priority": "Size: priority", "uniform": "Size: uniform"}


def ramp(t: float) -> QColor:
    t = min(1.0, max(0.0, float(t))) * (len(_RAMP) - 1)
    i = min(int(t), len(_RAMP) - 2)
    c = _RAMP[i] + (_RAMP[i + 1] - _RAMP[i]) * (t - i)
    return QColor(int(c[0]), int(c[1]), int(c[2]))


RAMP_PALETTE = [ramp(k / (STEPS - 1)) for k in range(STEPS)]


@dataclass
class Colouring:
    bins: np.ndarray  # per node: index into palette
    palette: list[QColor]
    legend: list[tuple[str, QColor]] = field(default_factory=list)
    note: str = ""  # said under the legend (e.g. why every node is grey)


def _binned(values: np.ndarray, low_label: str, high_label: str, log: bool = False) -> Colouring:
    v = np.asarray(values, dtype=np.float64)
    if log:
        v = np.log1p(np.maximum(v, 0))
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 0.0)
    t = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    bins = np.minimum((t * STEPS).astype(np.int64), STEPS - 1)
    return Colouring(bins, list(RAMP_PALETTE), [(low_label, RAMP_PALETTE[0]), (high_label, RAMP_PALETTE[-1])])


def _categorical(
    labels: list[str],
    order: list[str] | None = None,
    colours: dict[str, QColor] | None = None,
    missing: str = "(none)",
    cycle: bool = False,
) -> Colouring:
    """`cycle`: more categories than colours reuse the palette instead of going grey (for
    communities, which lie apart in the layout, so a repeated colour is not mistaken)."""
    counts: dict[str, int] = {}
    for x in labels:
        counts[x] = counts.get(x, 0) + 1
    ranked = order or sorted((k for k in counts if k != missing), key=lambda k: (-counts[k], k))
    ranked = [k for k in ranked if k in counts and k != missing]
    shown = ranked if cycle else ranked[: len(CATEGORICAL)]
    palette = [
        colours.get(k, CATEGORICAL[i % len(CATEGORICAL)]) if colours else CATEGORICAL[i % len(CATEGORICAL)]
        for i, k in enumerate(shown)
    ]
    where = {k: i for i, k in enumerate(shown)}
    other = len(palette)
    palette.append(OTHER)
    bins = np.array([where.get(x, other) for x in labels], dtype=np.int64)
    legend = [(f"{k} ({counts[k]})", palette[where[k]]) for k in shown]
    rest = sum(c for k, c in counts.items() if k not in where)
    if rest:
        legend.append((f"{'other' if len(ranked) > len(shown) else missing} ({rest})", OTHER))
    return Colouring(bins, palette, legend)


def custom_fields(graph: LoreGraph) -> list[str]:
    """Custom field names used by at least one entry, sorted."""
    return sorted({k for e in graph.entries for k in e.custom_fields})


def _field_label(value) -> str:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if value is None or (isinstance(value, str) and not value.strip()):
        return "(none)"
    return str(value).strip()


def colouring(
    mode: str,
    graph: LoreGraph,
    analysis: Analysis | None,
    field_name: str | None = None,
    frequency: dict[str, int] | None = None,
) -> Colouring:
    n = graph.n
    if mode == "type":
        return _categorical(list(graph.types), list(NODE_TYPES), TYPE_COLOURS)
    if mode == "priority":
        # DLE: a lower number wins, so the ramp's bright end is the lowest number
        pr = np.array([float(e.priority) for e in graph.entries]) if n else np.zeros(0)
        c = _binned(-pr, "", "")
        if n:
            c.legend = [
                (f"priority {pr.max():g} (last)", RAMP_PALETTE[0]),
                (f"priority {pr.min():g} (first)", RAMP_PALETTE[-1]),
            ]
        return c
    if mode == "centrality":
        deg = graph.degree if n else np.zeros(0)
        c = _binned(deg, "", "", log=True)
        if n:
            c.legend = [
                (f"{int(deg.min())} connections", RAMP_PALETTE[0]),
                (f"{int(deg.max())} connections", RAMP_PALETTE[-1]),
            ]
        return c
    if mode == "frequency":
        counts = np.array([float((frequency or {}).get(e.tracker_key, 0)) for e in graph.entries])
        if not frequency or not counts.any():
            return Colouring(
                np.zeros(n, dtype=np.int64),
                [OTHER],
                [("no injections recorded", OTHER)],
                "No injection counts yet: they come from the chats SillyTavern runs through DLE Desktop "
                "(each chat's analytics). Chat a little, then look again.",
            )
        c = _binned(counts, "", "", log=True)
        c.legend = [("never injected", RAMP_PALETTE[0]), (f"{int(counts.max())} injections", RAMP_PALETTE[-1])]
        c.note = f"{int((counts > 0).sum())} of {n} entries injected at least once, over all chats"
        return c
    if mode == "community":
        if analysis is None:
            return Colouring(np.zeros(n, dtype=np.int64), [OTHER], [], "Communities are still being computed")
        labels = [f"community {c + 1}" for c in analysis.communities.membership]
        order = [f"community {c + 1}" for c in range(len(analysis.communities.groups))]
        got = _categorical(labels, order, cycle=True)
        got.note = (
            f"{len(analysis.communities.groups)} communities (Leiden, modularity {analysis.communities.modularity:.2f})"
        )
        return got
    if mode == "field":
        if not field_name:
            return Colouring(np.zeros(n, dtype=np.int64), [OTHER], [], "No custom fields in this vault")
        labels = [_field_label(e.custom_fields.get(field_name)) for e in graph.entries]
        return _categorical(labels)
    raise ValueError(f"unknown colour mode {mode!r}")


MIN_SIZE, MAX_SIZE = 4.0, 16.0
SIZE_STEPS = 6


def sizes(mode: str, graph: LoreGraph) -> np.ndarray:
    """Node diameters in px at zoom 1, in `SIZE_STEPS` steps (so bins stay few)."""
    n = graph.n
    if mode == "uniform" or n == 0:
        return np.full(n, 7.0)
    if mode == "centrality":
        v = np.log1p(graph.degree.astype(np.float64))
    elif mode == "priority":
        v = -np.array([float(e.priority) for e in graph.entries])
    else:
        raise ValueError(f"unknown size mode {mode!r}")
    lo, hi = float(v.min()), float(v.max())
    t = (v - lo) / (hi - lo) if hi > lo else np.full(n, 0.5)
    step = np.minimum((t * SIZE_STEPS).astype(np.int64), SIZE_STEPS - 1) / (SIZE_STEPS - 1)
    return MIN_SIZE + (MAX_SIZE - MIN_SIZE) * step
