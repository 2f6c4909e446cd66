"""The Graph view's engine (issue 13), pure: the vault as a graph (`build_graph`), its
ForceAtlas2 layout (`layout`, presets, incremental, progress and cancel) and its analysis
(`analyse`: communities, backbone, circular requires, gap findings, each with a severity and
ranked, the real problems first)."""

from dle_desktop.core.graph.analysis import (
    Analysis,
    Backbone,
    Communities,
    analyse,
    backbone,
    communities,
    gap_analysis,
    requires_cycles,
)
from dle_desktop.core.graph.findings import SEVERITIES, SEVERITY_OF_KIND, GraphFinding, rank_findings, severity_of
from dle_desktop.core.graph.forceatlas2 import (
    EXACT_MAX_NODES,
    PRESETS,
    Layout,
    LayoutParams,
    layout,
    starting_positions,
    with_params,
)
from dle_desktop.core.graph.model import (
    EDGE_KINDS,
    NODE_TYPES,
    Edge,
    LoreGraph,
    build_graph,
    graph_structure,
    node_type,
    weigh,
)
from dle_desktop.core.graph.suggestions import (
    MAX_PARTNERS_SHOWN,
    common_value_limit,
    common_values,
    missing_connections,
)

__all__ = [
    "EDGE_KINDS",
    "EXACT_MAX_NODES",
    "MAX_PARTNERS_SHOWN",
    "NODE_TYPES",
    "PRESETS",
    "SEVERITIES",
    "SEVERITY_OF_KIND",
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
    "common_value_limit",
    "common_values",
    "communities",
    "gap_analysis",
    "graph_structure",
    "layout",
    "missing_connections",
    "node_type",
    "rank_findings",
    "requires_cycles",
    "severity_of",
    "starting_positions",
    "weigh",
    "with_params",
]
