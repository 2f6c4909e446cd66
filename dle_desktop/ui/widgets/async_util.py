"""Starting asyncio work from Qt callbacks safely."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

#: Tasks started here and not finished: asyncio keeps only weak references to tasks, and a
#: fire-and-forget task nobody holds could be collected before it ends.
_running: set[asyncio.Future[Any]] = set()


def soon(make: Callable[[], Coroutine[Any, Any, Any]]) -> asyncio.Future[Any] | None:
    """Run `make()` on the GUI's asyncio loop, if there still is one. An engine event can reach
    the window while the app (or a test) is shutting its loop down; then nothing is started."""
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:
        return None
    if loop.is_closed():
        return None
    task = asyncio.ensure_future(make(), loop=loop)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
