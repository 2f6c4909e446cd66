"""Pausing the cycle collector while an index is built or loaded (vault/collector.py)."""

from __future__ import annotations

import gc
import weakref

from dle_desktop.vault.collector import collector_is_paused, collector_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_pauses_nest_and_the_collector_resumes_only_as_it_was():
    was = gc.isenabled()
    try:
        gc.enable()
        with collector_paused():
            assert not gc.isenabled() and collector_is_paused()
            with collector_paused():
                assert not gc.isenabled()
            assert not gc.isenabled() and collector_is_paused()
        assert gc.isenabled() and not collector_is_paused()
        gc.disable()  # as the window's own collector keeps it
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


def test_what_a_pause_made_goes_to_the_oldest_generation_and_stays_collectable():
    was = gc.isenabled()
    try:
        gc.enable()
        gc.collect()
        with collector_paused():
            kept = [[i] for i in range(50_000)]
            a, b = _Node(), _Node()
            a.other, b.other = b, a  # garbage in a cycle once dropped below
            probe = weakref.ref(a)
        # Not 50,000 young objects waiting to be walked by the next young collection.
        assert gc.get_count()[0] < 1_000
        assert gc.get_freeze_count() == 0
        del a, b
        gc.collect()
        assert probe() is None and len(kept) == 50_000
    finally:
        if not was:
            gc.disable()
