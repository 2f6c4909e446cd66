"""The installed Qt binding itself: the app relays every engine event and every download report
through Python-emitted signals, so a binding that leaks on emit takes the whole app down."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    ping = Signal(object)


def test_emitting_signals_does_not_drop_references_to_true(qapp):
    # PySide6 6.12.0 returned True from SignalInstance.emit() without a reference of its own:
    # each emit dropped one, and once True's count reached zero CPython aborted (bool_dealloc).
    emitter = _Emitter()
    got: list[int] = []
    emitter.ping.connect(got.append)
    before = sys.getrefcount(True)
    for i in range(200):
        emitter.ping.emit(i)
    assert len(got) == 200
    assert sys.getrefcount(True) >= before
