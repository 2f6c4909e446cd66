"""The Graph view's engine (issue 13), pure: the vault as a graph (`build_graph`), its
ForceAtlas2 layout (`layout`, presets, incremental, progress and cancel) and its analysis
(`analyse`: communities, backbone, circular requires, gap findings)."""

from dle_desktop.core.graph.analysis import (
    Analysis,
    Backbone,
    Communities,
    GraphFinding,
    analyse,
    backbone,
    communities,
    gap_analysis,
    missing_connections,
    requires_cycles,
)
from dle_desktop.core.graph.forceatlas2 import EXACT_MAX_NODES, PRESETS, Layout, LayoutParams, layout, with_params
from dle_desktop.core.graph.model import EDGE_KINDS, NODE_TYPES, Edge, LoreGraph, build_graph, node_type

__all__ = [
    "EDGE_KINDS",
    "EXACT_MAX_NODES",
    "NODE_TYPES",
    "PRESETS",
    "Analysis",
    "Backbone",
    "Communities",
    "Edge",
    "GraphFinding",
    "Layout",
    "LayoutParams",
    "LoreGraph",
    "analyse",
    "backbone",
    "build_graph",
    "communities",
    "gap_analysis",
    "layout",
    "missing_connections",
    "node_type",
    "requires_cycles",
    "with_params",
]
