"""The Graph view's job (`run_graph_job`, issue 24) between its steps: a cancelled job stops
before the minute-long weighing or analysis of a large vault instead of holding up the next job,
and a saved layout that misses the notes added since still gives a first picture at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from dle_desktop.desktop.graph_process import ChildMemo, GraphJobSpec, run_graph_job
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"


@pytest.fixture(scope="module")
def entries():
    snapshot = asyncio.run(VaultIndexer([FolderSource("vault", SAMPLE)]).sync_all()).snapshot
    return tuple(snapshot.entries)


def run(spec: GraphJobSpec, entries, memo: ChildMemo, cancel_when=lambda sent: False) -> list[tuple]:
    """The job's messages; `cancel_when(messages so far)` answers each of its cancel polls."""
    sent: list[tuple] = []
    run_graph_job(spec, entries, memo, sent.append, lambda: cancel_when(sent))
    return sent


def kinds(sent: list[tuple]) -> list[str]:
    return [m[0] for m in sent if m[0] != "progress"]


def test_a_job_cancelled_while_its_graph_is_built_stops_before_weighing(entries):
    memo = ChildMemo()
    sent = run(GraphJobSpec(1, ("vault",), sketch=True), entries, memo, lambda sent: any(m[0] == "graph" for m in sent))
    assert kinds(sent) == ["graph", "edges", "cancelled"]  # the links were shown; nothing was weighed
    assert sent[-1] == ("cancelled", 1)
    assert "Weighing the links" not in [m[4] for m in sent if m[0] == "progress"]
    assert memo.graph is None and memo.analysis is None


def test_a_job_cancelled_while_weighing_keeps_the_weights_for_the_next_job(entries):
    memo = ChildMemo()

    def after_weighing(sent: list[tuple]) -> bool:
        return any(m[0] == "progress" and m[4] == "Weighing the links" for m in sent)

    sent = run(GraphJobSpec(1, ("vault",)), entries, memo, after_weighing)
    assert kinds(sent)[-1] == "cancelled" and "analysis" not in kinds(sent)
    assert memo.graph is not None and memo.analysis is None
    weighed = [(e.a, e.b, e.kind, e.weight) for e in memo.graph.edges]

    again = run(GraphJobSpec(2, ("vault",)), entries, memo)  # the next job finishes, analysis and all
    assert kinds(again)[-1] == "done" and "analysis" in kinds(again)
    fresh = ChildMemo()
    run(GraphJobSpec(3, ("vault",)), entries, fresh)
    assert [(e.a, e.b, e.kind, e.weight) for e in memo.graph.edges] == weighed
    assert weighed == [(e.a, e.b, e.kind, e.weight) for e in fresh.graph.edges]


def test_a_saved_layout_missing_new_notes_is_shown_before_the_analysis(entries, tmp_path):
    store = LayoutStore(tmp_path / "layouts")
    spec = GraphJobSpec(1, ("vault",), store_dir=str(store.folder))
    run(spec, entries, ChildMemo())
    saved = store.load(("vault",))
    assert saved is not None
    added = next(e.uid for e in entries if e.graph and e.resolved_links)  # a note "added since", with links
    del saved.positions[added]
    store.save(("vault",), saved.positions)

    sent = run(GraphJobSpec(2, ("vault",), sketch=True, store_dir=str(store.folder)), entries, ChildMemo())
    order = kinds(sent)
    assert order.index("positions") < order.index("analysis")  # the first picture before the clusters
    first = next(m for m in sent if m[0] == "positions")
    assert first[3] == "saved"
    uids = next(m for m in sent if m[0] == "graph")[2].uids
    pos = first[2]
    assert pos.shape == (len(uids), 2) and np.isfinite(pos).all()
    for i, uid in enumerate(uids):
        if uid != added:
            assert tuple(pos[i]) == saved.positions[uid]  # the known notes exactly where they were
    done = sent[-1]
    assert done[0] == "done" and done[2].mode == "incremental"
