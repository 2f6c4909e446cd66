"""Issue 21.13 in the Graph view's side panel, on the bundled sample vault: the one real problem
(circular requires) is the first row, each group says its severity in words and with an icon,
and the summary counts the findings per severity."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from PySide6.QtCore import Qt

from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.ui.graph.panel import FINDING_ROLE
from dle_desktop.ui.graph.view import GraphView
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource
from tests.ui.conftest import SAMPLE


@pytest.fixture(scope="module")
def sample_snapshot():
    loop = asyncio.SelectorEventLoop()  # not the Qt loop a qasync policy would hand out
    try:
        return loop.run_until_complete(VaultIndexer([FolderSource("vault", SAMPLE)]).sync_all()).snapshot
    finally:
        loop.close()


@pytest.fixture
def view(qtbot, tmp_path, sample_snapshot):
    v = GraphView(LayoutStore(tmp_path / "graph-layouts"), tmp_path / "state.sqlite")
    qtbot.addWidget(v)
    v.resize(1100, 700)
    v.show()
    qtbot.waitExposed(v)
    with qtbot.waitSignal(v.resultShown, timeout=30000):
        v.set_snapshot(sample_snapshot)
    yield v
    v.stop()


def test_first_row_is_the_circular_requires_problem(view):
    tree = view.panel.findings
    top = tree.topLevelItem(0)
    assert top.data(0, Qt.ItemDataRole.UserRole) == "requires_cycle"
    assert top.text(0) == "Problem · Circular requires (1)"
    assert not top.icon(0).isNull() and top.isExpanded()
    first = top.child(0)
    f = first.data(0, FINDING_ROLE)
    assert f.kind == "requires_cycle" and f.severity == "problem"
    assert first.text(0) == "The Lovers' Letters → The Secret Betrothal"
    assert "Problem" in first.toolTip(0)
    assert tree.itemBelow(top) is first  # the first thing read is the problem itself


def test_groups_follow_severity_and_suggestions_start_folded(view):
    tree = view.panel.findings
    tops = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    words = [t.text(0).split(" · ")[0] for t in tops]
    order = ["Problem", "Warning", "Suggestion", "Note"]
    assert words == sorted(words, key=order.index)
    assert "Suggestion" in words and "Note" in words
    for t in tops:
        assert t.isExpanded() == (t.text(0).split(" · ")[0] in ("Problem", "Warning"))
        assert not t.icon(0).isNull()


def test_summary_counts_per_severity(view):
    findings = view.result.analysis.findings
    per = Counter(f.severity for f in findings)
    assert per["problem"] == 1 and per["warning"] == 0
    assert 0 < per["suggestion"] < view.graph.n  # one per entry at most, not 191 pairs
    text = view.panel.summary.text()
    assert text.startswith(f"1 problem, 0 warnings, {per['suggestion']} suggestions, {per['note']} notes")
    counts = view.panel.group_counts()
    assert sum(counts.values()) == len(findings)
    assert counts["missing_connection"] == sum(f.kind == "missing_connection" for f in findings)
