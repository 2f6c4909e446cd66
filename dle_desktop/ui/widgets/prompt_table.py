"""A table view whose paints get the interpreter lock back promptly."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QTableView

#: while a view paints: it takes the lock back for every cell, in bursts of a few microseconds
PAINT_SWITCH_INTERVAL_S = 0.00005


@contextmanager
def prompt_lock_handoff() -> Iterator[None]:
    """While a view paints, a busy thread hands the lock back after 50 µs instead of 1 ms. A
    table's paint calls into Python three times per cell, each a burst of microseconds; at 1 ms a
    wait for each, a 10,000-entry table painted while the engine worked took up to a second.
    Only around paints: for a long burst of Python on the GUI thread (a sort), switching that
    often would cost more than it saves."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, PAINT_SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


class PromptPaintTable(QTableView):
    def paintEvent(self, event: QPaintEvent) -> None:
        with prompt_lock_handoff():
            super().paintEvent(event)
