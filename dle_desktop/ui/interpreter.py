"""How the interpreter is set up while the window runs (`run_gui`, and the GUI benchmark, which
must measure the same app).

- Collections run on the GUI thread only, and what survives them is frozen (`gc_guard`).
- The interpreter lock changes hands every millisecond rather than every 5 ms. Qt calls into
  Python for every cell it paints and every event it delivers, and each call must take the lock
  back from a busy engine or worker thread; at 5 ms a wait per call, a table repaint during an
  index could take a quarter of a second. A shorter interval costs the busy thread a few per cent.
- While the Vault table paints, it is 50 µs (`widgets/prompt_table.py`): a paint takes the lock
  back for every cell.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject

from dle_desktop.ui.widgets.gc_guard import GuiThreadCollector

GUI_SWITCH_INTERVAL_S = 0.001


class GuiInterpreter:
    """The settings above while it runs; `stop` puts the interpreter back as it was."""

    def __init__(self, parent: QObject | None = None) -> None:
        self.collector = GuiThreadCollector(parent, freeze_survivors=True)
        self._interval = sys.getswitchinterval()

    def start(self) -> GuiInterpreter:
        self.collector.start()
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
        return self

    def stop(self) -> None:
        sys.setswitchinterval(self._interval)
        self.collector.stop()
