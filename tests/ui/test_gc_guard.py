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
