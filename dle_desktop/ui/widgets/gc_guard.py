"""Garbage collection on the GUI thread only.

Python's cyclic collector runs on whichever thread happens to allocate when a threshold is
crossed: with an engine thread busy parsing notes, that is often not the GUI thread. A Qt object
caught in a reference cycle (a widget whose slot is a lambda holding the widget, say) is then
deleted from the wrong thread, and Qt crashes. So, as qutebrowser does, the automatic collector is
switched off while the GUI runs, and a timer on the GUI thread collects whenever the collector's
own thresholds say it is due.

With `freeze_survivors` (the app) the objects that survive a full collection are frozen
(`gc.freeze`), and so is a new index as it arrives (`freeze_long_lived`): at 10,000 entries a
collection that walked them all held the interpreter, and so the window, for 100–250 ms, and it
came again and again for objects that live as long as the index. A frozen object is still freed
when nothing refers to it; only a cycle among frozen objects waits for the occasional deep clean,
done while the app is in the background."""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication

from dle_desktop.vault.collector import collector_is_paused, pauses_ended

_freezing: GuiThreadCollector | None = None


def freeze_long_lived() -> None:
    """What is alive now will live long (a new index, a graph on screen): keep it out of every
    later collection. Does nothing unless the app's collector freezes survivors."""
    if _freezing is not None:
        gc.freeze()


class GuiThreadCollector(QObject):
    INTERVAL_MS = 500
    #: how often frozen objects are looked at again (only while no window of the app is active)
    DEEP_CLEAN_S = 20 * 60

    def __init__(self, parent: QObject | None = None, freeze_survivors: bool = False) -> None:
        super().__init__(parent)
        self.freeze_survivors = freeze_survivors
        self._was_enabled = gc.isenabled()
        self._last_deep_clean = time.monotonic()
        self._pauses_seen = pauses_ended()
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self._tick)

    def start(self) -> GuiThreadCollector:
        global _freezing
        gc.disable()
        self._timer.start()
        if self.freeze_survivors:
            _freezing = self
        return self

    def stop(self) -> None:
        global _freezing
        self._timer.stop()
        if _freezing is self:
            _freezing = None
            gc.unfreeze()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def _tick(self) -> None:
        if not self.deep_clean_if_idle():
            self.collect_if_due()

    def collect_if_due(self) -> int:
        """Collect the oldest generation whose count passed its threshold (what the automatic
        collector would have done); returns the generation collected, or -1. Not while an index
        is being loaded: every object it makes stays alive."""
        if collector_is_paused():
            return -1
        if self.freeze_survivors and pauses_ended() != self._pauses_seen:
            # An index was built or loaded since the last look: its objects live as long as it,
            # and the window freezes them anyway when it takes the index (`freeze_long_lived`).
            # A full collection that came first walked all of them: 320 ms on a 10k first start.
            self._pauses_seen = pauses_ended()
            gc.freeze()
            return -1
        counts = gc.get_count()
        thresholds = gc.get_threshold()
        for generation in (2, 1, 0):
            if thresholds[generation] and counts[generation] > thresholds[generation]:
                gc.collect(generation)
                if generation == 2 and self.freeze_survivors:
                    gc.freeze()
                return generation
        return -1

    def deep_clean_if_idle(self, now: float | None = None, in_background: bool | None = None) -> bool:
        """Every DEEP_CLEAN_S, while the user is in another application (`in_background`: asked
        of Qt unless given): unfreeze, collect everything, freeze again. Returns whether it ran."""
        now = time.monotonic() if now is None else now
        if not self.freeze_survivors or now - self._last_deep_clean < self.DEEP_CLEAN_S:
            return False
        if in_background is None:
            in_background = QGuiApplication.applicationState() != Qt.ApplicationState.ApplicationActive
        if not in_background:
            return False
        self._last_deep_clean = now
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return True
