"""The app's collector: automatic collection off while the GUI runs, collections on the GUI
thread when the collector's thresholds say one is due, and everything back as it was on stop."""

from __future__ import annotations

import gc
import threading

from dle_desktop.ui.widgets.gc_guard import GuiThreadCollector


class Cycle:
    def __init__(self) -> None:
        self.me = self
        self.finalized_on: list[str] = []


def test_collections_happen_on_the_thread_that_runs_the_timer(qapp):
    gc.enable()
    collector = GuiThreadCollector().start()
    try:
        assert not gc.isenabled()
        seen: list[str] = []

        class Tracked:
            def __init__(self) -> None:
                self.me = self

            def __del__(self) -> None:
                seen.append(threading.current_thread().name)

        def churn() -> None:  # another thread allocating past every threshold
            for _ in range(50):
                Tracked()
            for _ in range(gc.get_threshold()[0] * 3):
                [[]]  # noqa: B018 - a container allocated only to count towards the GC threshold

        worker = threading.Thread(target=churn, name="engine")
        worker.start()
        worker.join()
        assert seen == [], "nothing may be collected on the worker thread"
        while collector.collect_if_due() != -1:
            pass
        gc.collect()
        assert seen and set(seen) == {threading.current_thread().name}
    finally:
        collector.stop()
    assert gc.isenabled()


def test_nothing_is_collected_before_a_threshold_is_passed(qapp):
    collector = GuiThreadCollector().start()
    try:
        gc.collect()
        assert collector.collect_if_due() == -1
        for _ in range(gc.get_threshold()[0] + 10):
            Cycle()
        assert collector.collect_if_due() >= 0
    finally:
        collector.stop()


def test_the_apps_collector_freezes_what_survives_a_full_collection(qapp):
    gc.collect()
    gc.unfreeze()
    was_enabled = gc.isenabled()
    collector = GuiThreadCollector(freeze_survivors=True).start()
    try:
        keep = [Cycle() for _ in range(50)]
        assert any(o is keep[0] for o in gc.get_objects())
        t0, t1, t2 = gc.get_threshold()
        generations = set()
        for _ in range(2 * (t1 + 2) * (t2 + 2)):  # garbage cycles until a full collection is due
            for _ in range(t0 + 1):
                Cycle()
            generations.add(collector.collect_if_due())
            if 2 in generations:
                break
        assert 2 in generations
        assert gc.get_freeze_count() >= len(keep)
        # the survivors are out of every later collection (get_objects lists only the collected)
        assert not any(o is keep[0] for o in gc.get_objects())
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0 and gc.isenabled() == was_enabled  # stop() gives everything back


def test_freeze_long_lived_only_under_the_apps_collector(qapp):
    from dle_desktop.ui.widgets.gc_guard import freeze_long_lived

    gc.unfreeze()
    plain = GuiThreadCollector().start()
    try:
        freeze_long_lived()
        assert gc.get_freeze_count() == 0  # tests and embedders: nothing is frozen behind their back
    finally:
        plain.stop()
    app = GuiThreadCollector(freeze_survivors=True).start()
    try:
        kept = [Cycle() for _ in range(10)]
        freeze_long_lived()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        app.stop()
    assert gc.get_freeze_count() == 0


def test_no_collection_while_an_index_loads(qapp):
    from dle_desktop.vault.collector import collector_paused

    collector = GuiThreadCollector().start()
    try:
        for _ in range(gc.get_threshold()[0] * 2):
            Cycle()
        with collector_paused():
            assert collector.collect_if_due() == -1  # every object the load makes stays alive
        assert collector.collect_if_due() >= 0
    finally:
        collector.stop()


def test_what_an_index_load_made_is_frozen_not_walked_by_the_next_collection(qapp):
    """A first start at 10,000 entries: the index was built (collector paused) and a full
    collection came due before the window took it, and walked it for 320 ms."""
    from dle_desktop.vault.collector import collector_paused

    gc.collect()
    gc.unfreeze()
    collector = GuiThreadCollector(freeze_survivors=True).start()
    try:
        with collector_paused():
            index = [Cycle() for _ in range(2000)]
        for _ in range(gc.get_threshold()[0] * 2):
            Cycle()  # garbage enough for a collection to be due
        assert collector.collect_if_due() == -1  # frozen instead
        assert gc.get_freeze_count() >= len(index)
        assert not any(o is index[0] for o in gc.get_objects())  # out of every later collection
        for _ in range(gc.get_threshold()[0] * 2):
            Cycle()
        assert collector.collect_if_due() >= 0  # once: the collections go on as before
    finally:
        collector.stop()
    plain = GuiThreadCollector().start()  # tests and embedders: nothing is frozen behind their back
    try:
        with collector_paused():
            Cycle()
        for _ in range(gc.get_threshold()[0] * 2):
            Cycle()
        assert plain.collect_if_due() >= 0 and gc.get_freeze_count() == 0
    finally:
        plain.stop()


def test_the_deep_clean_waits_for_the_interval_and_for_the_app_to_be_in_the_background(qapp):
    collector = GuiThreadCollector(freeze_survivors=True).start()
    try:
        start = collector._last_deep_clean
        assert not collector.deep_clean_if_idle(now=start + 1)  # too soon
        import weakref

        kept = Cycle()
        gone = Cycle()
        gone_ref = weakref.ref(gone)
        gc.freeze()
        del gone  # a cycle that became garbage while frozen: only a deep clean frees it
        gc.collect()
        assert gone_ref() is not None
        due = start + GuiThreadCollector.DEEP_CLEAN_S + 1
        assert not collector.deep_clean_if_idle(now=due, in_background=False)  # the user is here
        assert gone_ref() is not None
        assert collector.deep_clean_if_idle(now=due, in_background=True)
        assert gone_ref() is None
        assert gc.get_freeze_count() >= 1 and not any(o is kept for o in gc.get_objects())
        assert not collector.deep_clean_if_idle(now=due + 1, in_background=True)  # not again so soon
    finally:
        collector.stop()
