"""The one door between Qt and the engine: engine events become Qt signals (delivered on the
GUI thread), and GUI code awaits engine coroutines without ever blocking the window."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import QObject, Signal

from dle_desktop.engine.engine import EngineEvent


class EngineBridge(QObject):
    indexChanged = Signal(object, object, str)  # snapshot, ChangeSet | None, source
    progress = Signal(int, int, str)
    syncState = Signal(dict)
    syncError = Signal(str)
    semantic = Signal(dict)  # SemanticStatus.to_json()
    aiBreaker = Signal(dict)  # CircuitBreaker.snapshot(), when a call moved it

    def __init__(self, runtime, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runtime = runtime
        self.engine = runtime.engine
        # Emitted on the engine thread; Qt queues them to this object's (GUI) thread.
        self._unsubscribe = self.engine.subscribe(self._on_event)

    def _on_event(self, event: EngineEvent) -> None:
        d = event.data
        if event.kind == "index":
            self.indexChanged.emit(d["snapshot"], d.get("changes"), d.get("source", ""))
        elif event.kind == "progress":
            self.progress.emit(int(d.get("done", 0)), int(d.get("total", 0)), str(d.get("message", "")))
        elif event.kind == "sync_state":
            self.syncState.emit(dict(d))
        elif event.kind == "sync_error":
            self.syncError.emit(str(d.get("message", "")))
        elif event.kind == "semantic":
            self.semantic.emit(dict(d))
        elif event.kind == "ai_breaker":
            self.aiBreaker.emit(dict(d))

    async def call(self, coro) -> Any:
        """Await a coroutine that runs on the engine loop."""
        try:
            future = self.runtime.thread.submit(coro)
        except BaseException:
            coro.close()  # the engine thread has stopped: the coroutine will never run
            raise
        return await asyncio.wrap_future(future)

    async def run(self, fn, *args) -> Any:
        """Run a plain engine method on the engine thread (engine state is only touched there)."""

        async def wrapper():
            return fn(*args)

        return await self.call(wrapper())

    def rebind(self, engine) -> None:
        """Listen to a new engine (call before it starts, so its first events are heard)."""
        self._unsubscribe()
        self.engine = engine
        self._unsubscribe = engine.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()
