"""Tabs whose views are made the first time they are shown or asked for. The window comes up with
the view in front only; the others (and their imports: the AI client, the graph code) cost
nothing until the user goes there. A placeholder holds each tab's place and is swapped for the
real view at the same index, so `tabs.currentWidget() is window.graph_view` holds as before."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QTabWidget, QWidget

log = logging.getLogger(__name__)


def _import_all(modules: list[str], give_way: Callable[[], object]) -> None:
    for name in modules:
        give_way()  # an import holds the interpreter lock: not while the user acts
        try:
            importlib.import_module(name)
        except Exception:  # the view's own import reports it when the view is made
            log.debug("preloading %s failed", name, exc_info=True)


class LazyTabs(QObject):
    #: (key, view): a view was made (to wire it, or give it what it missed)
    made = Signal(str, QWidget)

    def __init__(self, tabs: QTabWidget) -> None:
        super().__init__(tabs)
        self.tabs = tabs
        self._makers: dict[str, tuple[str, Callable[[], QWidget]]] = {}
        self._modules: dict[str, str] = {}
        self._preloading: threading.Thread | None = None
        self._holders: dict[str, QWidget] = {}
        self._views: dict[str, QWidget] = {}
        tabs.currentChanged.connect(self._shown)

    def add(self, key: str, label: str, make: Callable[[], QWidget], module: str | None = None) -> None:
        """`module`: what `make` imports, for `preload`."""
        if module:
            self._modules[key] = module
        holder = QWidget()
        holder.setObjectName(f"{key}-not-made-yet")
        self._makers[key] = (label, make)
        self._holders[key] = holder
        self.tabs.addTab(holder, label)

    def view(self, key: str) -> QWidget:
        """The view, made now if it was not yet."""
        made = self._views.get(key)
        if made is not None:
            return made
        label, make = self._makers[key]
        view = make()
        holder = self._holders.pop(key)
        index = self.tabs.indexOf(holder)
        was_current = self.tabs.currentIndex() == index
        # Swapping pages moves the current tab for a moment: no view is made for that blink.
        blocked = self.tabs.blockSignals(True)
        try:
            self.tabs.removeTab(index)
            self.tabs.insertTab(index, view, label)
            if was_current:
                self.tabs.setCurrentIndex(index)
        finally:
            self.tabs.blockSignals(blocked)
        holder.deleteLater()
        self._views[key] = view
        self.made.emit(key, view)
        if was_current:
            self.tabs.currentChanged.emit(index)  # listeners other than this one see the real view
        return view

    def preload(self, give_way: Callable[[], object] = lambda: None) -> threading.Thread | None:
        """Import the modules of the views not made yet, in a background thread: the first
        showing of a view then only makes its widgets (importing the Graph view's modules held
        the GUI thread ~0.1-0.3 s). Modules only: no widget is made off the GUI thread."""
        if self._preloading is not None:
            return None
        modules = [m for key, m in self._modules.items() if key not in self._views]
        self._preloading = threading.Thread(
            target=_import_all, args=(modules, give_way), name="dle-preload-views", daemon=True
        )
        self._preloading.start()
        return self._preloading

    def made_view(self, key: str) -> QWidget | None:
        """The view if it was made, without making it."""
        return self._views.get(key)

    def made_views(self) -> dict[str, QWidget]:
        return dict(self._views)

    def _shown(self, index: int) -> None:
        page = self.tabs.widget(index)
        for key, holder in list(self._holders.items()):
            if holder is page:
                self.view(key)
                return
