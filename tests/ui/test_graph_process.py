"""The Graph view's work in a child process (issue 24): the same result as in a thread, only the
changed notes cross after a sync, cancel reaches the child, a child that dies is reported and
replaced, and a first picture (the saved layout, or a sketch, then the communities) comes before
the whole result."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

from dle_desktop.desktop import graph_process, graph_size
from dle_desktop.state.graph_layout import LayoutStore
from dle_desktop.ui.graph.view import GraphView
from tests.ui.conftest import SAMPLE
from tests.ui.test_graph_view import index, shown


@pytest.fixture(scope="module")
def sample_snapshot():
    return index(SAMPLE)


@pytest.fixture
def make(qtbot, tmp_path):
    made: list[GraphView] = []

    def make_view(in_process: bool, store_dir=None) -> GraphView:
        view = GraphView(LayoutStore(store_dir or tmp_path / "layouts"), tmp_path / "state.sqlite")
        view.worker.process_min_entries = 1 if in_process else 10**9
        qtbot.addWidget(view)
        view.resize(900, 600)
        view.show()
        qtbot.waitExposed(view)
        made.append(view)
        return view

    yield make_view
    for v in made:
        v.stop()


def test_the_child_process_gives_the_threads_result(make, qtbot, sample_snapshot, tmp_path):
    in_thread = make(False, tmp_path / "a")
    in_child = make(True, tmp_path / "b")
    a = shown(qtbot, in_thread, sample_snapshot)
    b = shown(qtbot, in_child, sample_snapshot)
    assert (in_thread.worker.ran_in, in_child.worker.ran_in) == ("thread", "process")
    assert a.mode == b.mode == "full"
    assert [e.uid for e in a.graph.entries] == [e.uid for e in b.graph.entries]
    assert all(x is y for x, y in zip(b.graph.entries, sample_snapshot.entries, strict=False) if x.uid == y.uid)
    assert [(e.a, e.b, e.kind, e.weight) for e in a.graph.edges] == [
        (e.a, e.b, e.kind, e.weight) for e in b.graph.edges
    ]
    assert np.array_equal(a.positions, b.positions)
    assert a.analysis.communities.membership == b.analysis.communities.membership
    assert [f.message for f in a.analysis.findings] == [f.message for f in b.analysis.findings]
    for kind in a.edges[0]:
        assert np.array_equal(a.edges[1][kind], b.edges[1][kind])
    assert np.array_equal(in_thread.canvas.xy, in_child.canvas.xy)


def test_after_a_sync_only_the_changed_note_crosses(make, qtbot, tmp_path):
    folder = tmp_path / "v"
    shutil.copytree(SAMPLE, folder)
    view = make(True)
    first = shown(qtbot, view, index(folder))
    process = view.worker._process
    assert process is not None and process.sent_in_full == len(first.graph.entries) + 1  # + the graph: false note
    note = folder / "Places" / "Wick's Lamp Shop.md"
    note.write_text("---\ntags: [lorebook]\nkeys: [lamp shop]\n---\n# Wick's Lamp Shop\nRun by [[Brother Wick]].\n")
    previous = index(folder)
    second = shown(qtbot, view, previous)
    assert second.mode == "incremental" and second.graph.n == first.graph.n + 1
    # a fresh index re-reads every note, so every entry is a new object and crosses again; a sync
    # (an index built from the previous snapshot) re-uses the unchanged ones and only they stay home
    from dle_desktop.core.index import VaultSlice, build_snapshot

    reused = build_snapshot([VaultSlice("vault", tuple(previous.entries))])
    third = shown(qtbot, view, reused)
    assert process.sent_in_full == 0 and third.mode == "saved"
    assert [(e.a, e.b, e.weight) for e in third.graph.edges] == [(e.a, e.b, e.weight) for e in second.graph.edges]


def test_cancel_reaches_the_child(make, qtbot, sample_snapshot):
    view = make(True)
    shown(qtbot, view, sample_snapshot)
    with qtbot.waitSignal(view.resultShown, timeout=30000) as got:
        view.relayout(iterations=10**7)
        qtbot.waitUntil(lambda: view.progress.maximum() == 10**7 and view.progress.value() > 0, timeout=30000)
        view.cancel_button.click()
    assert got.args[0].cancelled and 0 < got.args[0].iterations < 10**7
    assert "cancelled" in view.status.text()


def test_a_child_that_dies_is_reported_and_replaced(make, qtbot, sample_snapshot):
    view = make(True)
    shown(qtbot, view, sample_snapshot)
    old = view.worker._process._process
    view.relayout(iterations=10**7)
    qtbot.waitUntil(lambda: view.progress.maximum() == 10**7 and view.progress.value() > 0, timeout=30000)
    old.kill()
    qtbot.waitUntil(lambda: "could not be built" in view.status.text(), timeout=30000)
    assert "graph process stopped" in view.status.text() and view.progress.isHidden()
    res = shown(qtbot, view, None, relayout=True)
    assert not res.cancelled and view.worker._process._process is not old
    assert np.isfinite(view.canvas.xy).all()


def test_a_restart_shows_the_saved_layout_before_the_analysis(make, qtbot, sample_snapshot, tmp_path):
    first = make(True, tmp_path / "same")
    want = shown(qtbot, first, sample_snapshot).positions
    first.stop()
    again = make(True, tmp_path / "same")
    seen: list[tuple[str, bool, int]] = []
    pictures: list = []
    again.pictureShown.connect(lambda r: seen.append((r.mode, r.analysis is None, len(r.graph.edges))))
    again.pictureShown.connect(pictures.append)
    summaries: list[str] = []
    again.pictureShown.connect(lambda _r: summaries.append(again.panel.summary.text()))
    final = shown(qtbot, again, sample_snapshot)
    # the nodes at their saved places at once, then with their links, both before the clusters
    assert seen == [("nodes", True, 0), ("saved", True, len(final.graph.edges))]
    assert np.array_equal(pictures[0].positions, want) and pictures[0].graph.uids == final.graph.uids
    assert all("once the graph is analysed" in t for t in summaries)  # not "no problems" before the analysis
    assert "analysed" not in again.panel.summary.text()  # the findings came with the whole result
    assert final.mode == "saved" and np.array_equal(final.positions, want)


def test_a_saved_layout_missing_a_note_shows_no_picture_before_the_links(make, qtbot, sample_snapshot, tmp_path):
    """A note added since the layout was saved has no place yet: the first picture waits for
    the child, which puts it beside its neighbours."""
    from dle_desktop.core.index import VaultSlice, build_snapshot

    first = make(True, tmp_path / "same")
    shown(qtbot, first, build_snapshot([VaultSlice("vault", tuple(sample_snapshot.entries[1:]))]))
    first.stop()
    again = make(True, tmp_path / "same")
    seen: list[str] = []
    again.pictureShown.connect(lambda r: seen.append(r.mode))
    final = shown(qtbot, again, sample_snapshot)
    assert "nodes" not in seen and final.graph.n == first.graph.n + 1


def test_a_first_start_sketches_then_shows_the_communities(make, qtbot, sample_snapshot, monkeypatch):
    monkeypatch.setattr(graph_process, "SKETCH_MIN_ENTRIES", 1)  # the sample vault is small (thread only)
    monkeypatch.setattr(graph_process, "FRAME_INTERVAL_S", 0.0)
    view = make(False)
    seen: list[tuple[str, bool]] = []
    frames: list[int] = []
    view.pictureShown.connect(lambda r: seen.append((r.mode, r.analysis is not None)))
    view.worker.frame.connect(lambda job, pos: frames.append(len(pos)))
    final = shown(qtbot, view, sample_snapshot)
    assert seen == [("sketch", False), ("layout", True)]  # a rough picture, then the clusters' colours
    assert frames and set(frames) == {final.graph.n}  # the layout settling on screen
    assert final.mode == "full" and not final.preview and view.progress.isHidden()
    assert view.progress_label.isHidden()


def test_the_same_notes_again_keep_the_job_under_way_and_its_saved_picture(make, qtbot, sample_snapshot, tmp_path):
    """After a restart the first sync publishes a new index of the cached index's very entries.
    At 100,000 entries restarting the job for it dropped the saved layout's picture and waited
    for the first job's whole analysis: the first picture came after 90-190 s instead of 20."""
    from dle_desktop.core.index import VaultSlice, build_snapshot

    first = make(True, tmp_path / "same")
    want = shown(qtbot, first, sample_snapshot).positions
    first.stop()
    again = make(True, tmp_path / "same")
    seen: list[tuple[int, str]] = []
    again.pictureShown.connect(lambda r: seen.append((r.job_id, r.mode)))
    synced = build_snapshot([VaultSlice("vault", tuple(sample_snapshot.entries))])
    assert synced is not sample_snapshot
    assert all(a is b for a, b in zip(synced.entries, sample_snapshot.entries, strict=True))
    with qtbot.waitSignal(again.resultShown, timeout=30000) as got:
        again.set_snapshot(sample_snapshot)  # the cached index
        again.set_snapshot(synced)  # the sync's, while the job for the cached one runs
    assert again.worker._job_id == 1 and got.args[0].job_id == 1
    assert seen == [(1, "nodes"), (1, "saved")]
    assert got.args[0].mode == "saved" and np.array_equal(got.args[0].positions, want)
    assert again.snapshot is synced


def test_changed_notes_still_restart_the_job_under_way(make, qtbot, sample_snapshot):
    from dle_desktop.core.index import VaultSlice, build_snapshot

    view = make(False)
    fewer = build_snapshot([VaultSlice("vault", tuple(sample_snapshot.entries[1:]))])  # a note deleted
    with qtbot.waitSignal(view.resultShown, timeout=30000) as got:
        view.set_snapshot(sample_snapshot)
        view.set_snapshot(fewer)
    assert view.worker._job_id == 2 and got.args[0].job_id == 2
    assert got.args[0].graph.n == len([e for e in fewer.entries if e.graph])


def test_cancel_while_weighing_stops_the_job_and_keeps_the_picture(make, qtbot, sample_snapshot, monkeypatch):
    view = make(False)
    weigh = graph_process.weigh

    def cancel_then_weigh(*args, **kwargs):
        view.worker.cancel()  # as the Cancel button does, while the links are being weighed
        return weigh(*args, **kwargs)

    monkeypatch.setattr(graph_process, "weigh", cancel_then_weigh)
    results: list[object] = []
    view.resultShown.connect(results.append)
    with qtbot.waitSignal(view.worker.abandoned, timeout=30000) as got:
        view.set_snapshot(sample_snapshot)
    assert got.args == [view._job]
    qtbot.waitUntil(lambda: view.progress.isHidden())
    assert view.cancel_button.isHidden() and "Cancelled before the layout" in view.status.text()
    assert results == []
    monkeypatch.setattr(graph_process, "weigh", weigh)
    assert shown(qtbot, view, None, relayout=True).mode == "full"  # the next job runs in full


@pytest.fixture
def no_spare():
    """No graph process started ahead is left for another test."""
    from dle_desktop.desktop import graph_process as process_module

    yield process_module
    spare = process_module.take_spare()
    if spare is not None:
        spare.close()


def test_a_process_started_ahead_is_the_one_the_first_large_job_uses(make, qtbot, sample_snapshot, no_spare):
    assert no_spare.prestart_process()
    assert no_spare.prestart_process()  # one waits already: no second one
    pid = no_spare._spare.pid
    view = make(True)
    shown(qtbot, view, sample_snapshot)
    assert view.worker.ran_in == "process" and view.worker._process.pid == pid
    assert no_spare._spare is None  # taken


def test_entries_sent_ahead_do_not_cross_again_and_a_changed_one_does(make, qtbot, sample_snapshot, no_spare):
    """A process started ahead is sent the vault's entries in a quiet moment (giving way between
    chunks): the first job sends their uids only, and an entry changed since crosses whole."""
    import copy

    from dle_desktop.core.index import VaultSlice, build_snapshot

    asked: list[int] = []
    assert no_spare.prestart_process(sample_snapshot.entries, lambda: asked.append(1) or 0.0)
    assert asked, "it gave way before sending"
    assert set(no_spare._spare._sent) == {e.uid for e in sample_snapshot.entries}
    entries = list(sample_snapshot.entries)
    entries[5] = copy.copy(entries[5])  # the same note, a new object: what a sync makes of an edit
    changed = build_snapshot([VaultSlice("vault", tuple(entries))])
    view = make(True)
    result = shown(qtbot, view, changed)
    assert view.worker.ran_in == "process" and result.mode == "full"
    assert view.worker._process.sent_in_full == 1
    assert result.graph.n == len(changed.entries) - 1  # all but the sample's graph: false note
    assert any(e is entries[5] for e in result.graph.entries), "the graph holds the changed entry"


def test_a_process_started_without_entries_is_handed_them_later(sample_snapshot, no_spare):
    """Started without entries (a click on the Graph tab while its code loads), the same process
    is handed the entries by the start ahead that follows: no second process."""
    assert no_spare.prestart_process()
    pid = no_spare._spare.pid
    assert no_spare.prestart_process(sample_snapshot.entries)
    assert no_spare._spare.pid == pid
    assert set(no_spare._spare._sent) == {e.uid for e in sample_snapshot.entries}


def test_the_first_job_over_entries_sent_ahead_gives_the_whole_graph(make, qtbot, sample_snapshot, no_spare):
    """Sent ahead, the entries' links are found before the job asks (`ChildMemo.prepare`): the
    job's graph is the one built from scratch."""
    from dle_desktop.core.graph import build_graph

    assert no_spare.prestart_process(sample_snapshot.entries)
    view = make(True)
    result = shown(qtbot, view, sample_snapshot)
    assert view.worker.ran_in == "process" and view.worker._process.sent_in_full == 0
    expected = build_graph(sample_snapshot)
    assert result.graph.uids == expected.uids
    assert result.graph.edges == expected.edges and result.graph.requires == expected.requires


def test_the_window_starts_the_graph_process_ahead_on_a_large_vault(
    make_desktop, vault_copy, qloop, monkeypatch, no_spare
):
    from dle_desktop.ui import main_window
    from tests.ui.conftest import wait_for

    monkeypatch.setattr(main_window, "PRELOAD_AFTER_MS", 0)
    monkeypatch.setattr(graph_size, "PROCESS_MIN_ENTRIES", 50)  # the sample vault's 61 count as large here
    desk = make_desktop(vault_copy)
    win = desk.window

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: no_spare._spare is not None and no_spare._spare.alive, what="the process", timeout=30)
        pid = no_spare._spare.pid
        graph = win.graph_view  # made, not shown yet: its job starts when it is
        graph.worker.process_min_entries = 50
        win.show()
        win.tabs.setCurrentWidget(graph)
        await wait_for(lambda: graph.graph is not None and graph._running is None, what="the graph", timeout=60)
        assert graph.worker.ran_in == "process" and graph.worker._process.pid == pid

    qloop.run_until_complete(scenario())


def test_a_click_on_the_graph_tab_starts_its_process_while_its_code_loads(
    make_desktop, vault_copy, qloop, monkeypatch, no_spare
):
    """Before the code loaded ahead: the click that loads the Graph view's code (`LazyTabs.loading`)
    starts its process at once, beside that load, without waiting for a quiet moment."""
    from dle_desktop.ui import main_window
    from tests.ui.conftest import wait_for

    monkeypatch.setattr(main_window, "PRELOAD_AFTER_MS", 600_000)  # nothing loads ahead in this test
    desk = make_desktop(vault_copy)
    win = desk.window

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        # the start once the entries were shown found the vault small and started nothing
        await wait_for(
            lambda: not any(t.name == "dle-graph-prestart" for t in threading.enumerate()), what="that start"
        )
        assert no_spare._spare is None
        monkeypatch.setattr(graph_size, "PROCESS_MIN_ENTRIES", 50)  # from now on the sample's 61 count as large
        activity = win.bridge.engine.activity
        activity.quiet_s = activity.longest_wait_s = 600.0  # a user busy for ten minutes
        win.bridge.user_acted()  # a process started ahead would wait for them; this one does not
        win.lazy.loading.emit("channels")
        win.lazy.loading.emit("graph")
        await wait_for(lambda: no_spare._spare is not None and no_spare._spare.alive, what="the process", timeout=30)

    qloop.run_until_complete(scenario())


def test_a_start_ahead_that_waited_while_the_graph_opened_starts_no_second_process(
    sample_snapshot, monkeypatch, no_spare
):
    """The start once the entries are shown gives way while the user acts; if the Graph view
    opened meanwhile, its worker has its own process, and one more would only idle."""
    from dle_desktop.ui import main_window

    asked: list[int] = []
    main_window._prestart_graph_process(sample_snapshot.entries, lambda: asked.append(1) or 0.0, True, lambda: False)
    assert asked and no_spare._spare is None
    main_window._prestart_graph_process(sample_snapshot.entries, lambda: 0.0, True, lambda: True)
    assert no_spare._spare is not None and no_spare._spare.alive


def test_links_found_ahead_serve_only_a_job_over_the_very_same_entries(sample_snapshot):
    """The child finds the links of the entries sent ahead before any job asks; a job over
    other objects (a sync changed a note since) finds them afresh."""
    import copy

    from dle_desktop.core.graph import graph_structure
    from dle_desktop.desktop.graph_process import ChildMemo

    entries = list(sample_snapshot.entries)
    memo = ChildMemo(entries={e.uid: e for e in entries})
    memo.prepare()
    assert memo.prepared is not None
    ahead = memo.prepared[1]
    assert memo.structure_of(entries) is ahead
    assert memo.prepared is None  # used once: a later job finds its own
    fresh = graph_structure(entries)
    assert ahead.edges == fresh.edges and ahead.uids == fresh.uids and ahead.requires == fresh.requires

    memo.prepare()
    changed = [*entries[:5], copy.copy(entries[5]), *entries[6:]]
    rebuilt = memo.structure_of(changed)
    assert rebuilt is not ahead and any(e is changed[5] for e in rebuilt.entries)
