"""The views the user has not opened yet, imported ahead on a worker thread once the window is idle.

Opening the Graph, Librarian, Channels or SillyTavern view for the first time imported its code on
the GUI thread: 135–290 ms each (numpy and igraph glue, the AI client, pydantic models), a stall
the user feels as a frozen click. Imported on a thread the same work leaves the GUI loop late by
at most 25–40 ms at a time (measured with the benchmark's 5 ms watchdog, automatic collection off
as the app runs), because the interpreter lock changes hands every millisecond
(`ui/interpreter.py`). Python's per-module import locks make a view opened meanwhile simply wait
for the module being imported; the layers have no import circles (import-linter checks), so two
threads importing cannot deadlock.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence

log = logging.getLogger(__name__)

#: The views made on first use (`MainWindow._make_*`) and the dialogs most often opened, in the
#: order a user tends to reach them.
VIEW_MODULES = (
    "dle_desktop.ui.graph.view",
    "dle_desktop.ui.graph.worker",
    "dle_desktop.ui.librarian.view",
    "dle_desktop.ui.sillytavern.view",
    "dle_desktop.ui.channels.view",
    "dle_desktop.ui.worldinfo.import_dialog",
)


def preload(modules: Sequence[str] = VIEW_MODULES) -> threading.Thread:
    """Import `modules` on a daemon thread; what fails is logged and left to the view that needs
    it (which then reports the error itself, as before)."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:
                log.warning("preloading %s failed; it is imported when its view opens", name, exc_info=True)

    thread = threading.Thread(target=run, name="dle-preload-views", daemon=True)
    thread.start()
    return thread
