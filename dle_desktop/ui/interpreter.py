"""How the interpreter is set up while the window runs (`run_gui`, and the GUI benchmark, which
must measure the same app).

- Collections run on the GUI thread only, and what survives them is frozen (`gc_guard`).
- The interpreter lock changes hands every millisecond rather than every 5 ms. Qt calls into
  Python for every cell it paints and every event it delivers, and each call must take the lock
  back from a busy engine or worker thread; at 5 ms a wait per call, a table repaint during an
  index could take a quarter of a second. A shorter interval costs the busy thread a few per cent.
- While the Vault table paints, it is 50 µs (`widgets/prompt_table.py`): a paint takes the lock
  back for every cell.
- glibc's allocator keeps at most two arenas (`limit_malloc_arenas`). By default it gives each
  thread that allocates a heap of its own, up to eight per core, and keeps what each frees for
  that heap: with the engine, the Graph's worker, the server and the code loader each building
  and dropping 10,000-entry structures, a 3-minute soak (benchmarks/bench_soak.py) grew the
  window's process 280 -> 497 MB; with two arenas 264 -> 407 MB, its stalls unchanged. A
  MALLOC_ARENA_MAX set by the user wins.
"""

from __future__ import annotations

import ctypes
import os
import sys

from PySide6.QtCore import QObject

from dle_desktop.ui.widgets.gc_guard import GuiThreadCollector

GUI_SWITCH_INTERVAL_S = 0.001
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Ask glibc for at most `arenas` heaps (module docstring). False where there is nothing to
    set: another C library, another system, or MALLOC_ARENA_MAX already in the environment."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # musl and others: no such library or function
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, arenas) == 1


class GuiInterpreter:
    """The settings above while it runs; `stop` puts the interpreter back as it was."""

    def __init__(self, parent: QObject | None = None) -> None:
        self.collector = GuiThreadCollector(parent, freeze_survivors=True)
        self._interval = sys.getswitchinterval()

    def start(self) -> GuiInterpreter:
        limit_malloc_arenas()  # before the engine's threads make heaps of their own
        self.collector.start()
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
        return self

    def stop(self) -> None:
        sys.setswitchinterval(self._interval)
        self.collector.stop()
