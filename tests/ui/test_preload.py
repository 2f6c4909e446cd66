"""The views not opened yet are imported on a worker thread once the first index is shown, so the
first opening of a view does not import on the GUI thread."""

from __future__ import annotations

import sys
import threading

from dle_desktop.ui import preload
from tests.ui.conftest import wait_for


def test_the_window_preloads_the_unopened_views_after_the_first_index(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    qloop.run_until_complete(wait_for(lambda: window.preload_thread is not None, what="the preload to start"))
    thread = window.preload_thread
    assert thread.name == "dle-preload-views" and thread is not threading.main_thread()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert all(name in sys.modules for name in preload.VIEW_MODULES)
    assert window.lazy.made_view("graph") is None  # imported, not made: the view itself waits for its tab


def test_a_module_that_fails_to_import_is_logged_and_the_rest_still_load(caplog):
    thread = preload.preload(("dle_desktop.ui.no_such_view", "colorsys"))
    thread.join(timeout=30)
    assert "colorsys" in sys.modules
    assert any("dle_desktop.ui.no_such_view" in r.getMessage() for r in caplog.records)
