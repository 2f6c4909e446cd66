"""The interpreter while the window runs: the lock changes hands every millisecond, collections
happen on the GUI thread and freeze their survivors, and stop() puts everything back."""

from __future__ import annotations

import gc
import sys

import pytest

from dle_desktop.ui import widgets
from dle_desktop.ui.interpreter import GUI_SWITCH_INTERVAL_S, GuiInterpreter


def test_start_and_stop(qapp):
    interval, enabled = sys.getswitchinterval(), gc.isenabled()
    interpreter = GuiInterpreter().start()
    try:
        assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S < interval
        assert not gc.isenabled() and interpreter.collector.freeze_survivors
        assert widgets.gc_guard._freezing is interpreter.collector
    finally:
        interpreter.stop()
    assert sys.getswitchinterval() == interval and gc.isenabled() == enabled
    assert widgets.gc_guard._freezing is None and gc.get_freeze_count() == 0


def test_pyside_reads_no_module_source_on_import(qapp):
    import importlib
    import inspect

    import dle_desktop.ui  # noqa: F401 - its import applies the patch under test

    read: list[str] = []
    real = inspect.getsource
    inspect.getsource = lambda obj: read.append(getattr(obj, "__name__", "?")) or real(obj)
    try:
        sys.modules.pop("colorsys", None)
        importlib.import_module("colorsys")  # a module nothing here imported before
    finally:
        inspect.getsource = real
    assert read == []


def test_the_vault_table_paints_with_a_prompt_lock_handoff_and_restores_the_interval(qapp):
    from PySide6.QtGui import QStandardItem, QStandardItemModel
    from PySide6.QtWidgets import QStyledItemDelegate

    from dle_desktop.ui.widgets.prompt_table import PAINT_SWITCH_INTERVAL_S, PromptPaintTable

    seen: list[float] = []

    class Recording(QStyledItemDelegate):
        def paint(self, painter, option, index) -> None:
            seen.append(sys.getswitchinterval())
            super().paint(painter, option, index)

    model = QStandardItemModel()
    for row in range(3):
        model.appendRow([QStandardItem(f"entry {row}"), QStandardItem("keys")])
    table = PromptPaintTable()
    delegate = Recording(table)
    table.setItemDelegate(delegate)
    table.setModel(model)
    table.resize(400, 200)
    interpreter = GuiInterpreter().start()
    try:
        table.show()
        table.grab()  # renders the table now: its viewport paints
        assert seen and all(x == pytest.approx(PAINT_SWITCH_INTERVAL_S) for x in seen)  # kept in whole µs
        assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S  # back after the paint
    finally:
        interpreter.stop()
        table.close()


_COUNT_HEAPS = """
import ctypes, sys, tempfile, threading
from dle_desktop.ui.interpreter import limit_malloc_arenas
limited = limit_malloc_arenas() if sys.argv[1] == "limit" else False
def work():
    keep = [bytearray(200_000) for _ in range(20)]  # malloc'd, not Python's small-object pool
    barrier.wait()
barrier = threading.Barrier(8)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    fp = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(limited, open(out.name).read().count("<heap nr="))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator only")
def test_the_window_process_keeps_at_most_two_malloc_heaps():
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}

    def heaps(mode: str, **extra: str) -> tuple[str, int]:
        run = subprocess.run(
            [sys.executable, "-c", _COUNT_HEAPS, mode], env={**env, **extra}, capture_output=True, text=True, check=True
        )
        limited, count = run.stdout.split()
        return limited, int(count)

    assert heaps("limit") == ("True", 2)  # eight threads that allocate, two heaps
    plain = heaps("plain")
    assert plain[0] == "False" and plain[1] > 2  # without it: a heap per thread
    assert heaps("limit", MALLOC_ARENA_MAX="4")[0] == "False"  # the user's own setting wins
