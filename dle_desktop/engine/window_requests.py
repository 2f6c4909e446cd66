"""Requests to show a view of the app's window, from a client of the server (SillyTavern's
`/dle-graph`, `/dle-librarian`). The window attaches a handler when it runs; `serve` has none, so
the request is refused in words instead of being lost."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dle_desktop.errors import NotAvailableHere

WindowHandler = Callable[[dict[str, Any]], None]

NO_WINDOW = (
    "DLE Desktop's window is not running here (`dle-desktop serve` has none); start the app with "
    "`dle-desktop` to open its views from SillyTavern"
)


class WindowRequests:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handler: WindowHandler | None = None

    def attach(self, handler: WindowHandler) -> Callable[[], None]:
        """The window's handler, called on the engine's thread (the window marshals it to its
        own). Returns the detach function."""
        with self._lock:
            self._handler = handler

        def detach() -> None:
            with self._lock:
                if self._handler is handler:
                    self._handler = None

        return detach

    @property
    def attached(self) -> bool:
        return self._handler is not None

    def show(self, view: str, **where: Any) -> None:
        with self._lock:
            handler = self._handler
        if handler is None:
            raise NotAvailableHere(NO_WINDOW)
        handler({"view": view, **{k: v for k, v in where.items() if v is not None}})
