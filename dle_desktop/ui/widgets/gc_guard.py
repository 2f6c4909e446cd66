"""Garbage collection on the GUI thread only.

Python's cyclic collector runs on whichever thread happens to allocate when a threshold is
crossed: with an engine thread busy parsing notes, that is often not the GUI thread. A Qt object
caught in a reference cycle (a widget whose slot is a lambda holding the widget, say) is then
deleted from the wrong thread, and Qt crashes. So, as qutebrowser does, the automatic collector is
switched off while the GUI runs, and a timer on the GUI thread collects whenever the collector's
own thresholds say it is due."""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class GuiThreadCollector(QObject):
    INTERVAL_MS = 500

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self.collect_if_due)

    def start(self) -> GuiThreadCollector:
        gc.disable()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def collect_if_due(self) -> int:
        """Collect the oldest generation whose count passed its threshold (what the automatic
        collector would have done); returns the generation collected, or -1."""
        counts = gc.get_count()
        thresholds = gc.get_threshold()
        for generation in (2, 1, 0):
            if thresholds[generation] and counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return generation
        return -1
