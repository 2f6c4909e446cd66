"""Pausing Python's cycle collector while an index is built or loaded.

Building or loading 10,000 entries creates about a million objects that all stay alive; the
collector would walk the growing heap again and again for nothing (a tenth of a cold index, a
third of a warm start). Pauses nest and may overlap across threads: the collector runs again
when the last one ends, and only if it was running when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False
_ended = 0  # how many times the last pause ended


@contextmanager
def collector_paused() -> Iterator[None]:
    global _depth, _resume, _ended
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _ended += 1
            if _depth == 0 and _resume:
                if gc.get_freeze_count() == 0:
                    # What was made meanwhile lives long: straight into the oldest generation
                    # (freeze, then unfreeze), or the first young collection would walk all of it
                    # (a tenth of a second at 10,000 entries). Only where nothing else freezes:
                    # the window keeps its own frozen set (ui/widgets/gc_guard.py).
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


def collector_is_paused() -> bool:
    """An index is being built or loaded somewhere: a collection now would walk it for nothing."""
    return _depth > 0


def pauses_ended() -> int:
    """How many times a pause (the last of overlapping ones) has ended: a window's collector that
    sees it change knows an index was made meanwhile, and freezes it rather than walk it."""
    return _ended
