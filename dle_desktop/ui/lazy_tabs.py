"""Tabs whose views are made the first time they are shown or asked for. The window comes up with
the view in front only; the others (and their imports: the AI client, the graph code) cost
nothing until the user goes there. A placeholder holds each tab's place and is swapped for the
real view at the same index, so `tabs.currentWidget() is window.graph_view` holds as before.

A tab clicked while the window is up whose view's code is not loaded yet says "Loading…" and
imports that code on a thread (the Graph view's ~0.2 s of imports froze the window on the GUI
thread); the view is made on the GUI thread once its code is in. `view(key)` always makes the
view at once."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

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
    #: a clicked tab's view code started loading on a thread (key): its view is made after
    loading = Signal(str)
    #: a view's code was imported on a thread (key); delivered on the GUI thread
    _imported = Signal(str)

    def __init__(self, tabs: QTabWidget) -> None:
        super().__init__(tabs)
        self.tabs = tabs
        self._makers: dict[str, tuple[str, Callable[[], QWidget]]] = {}
        self._modules: dict[str, str] = {}
        self._preloading: threading.Thread | None = None
        self._holders: dict[str, QWidget] = {}
        self._views: dict[str, QWidget] = {}
        self._importing: set[str] = set()
        tabs.currentChanged.connect(self._shown)
        self._imported.connect(self._code_loaded, Qt.ConnectionType.QueuedConnection)

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

    def show(self, key: str) -> None:
        """Bring the view's tab to the front, as a click on it does."""
        self.tabs.setCurrentWidget(self._views.get(key) or self._holders[key])

    def _shown(self, index: int) -> None:
        page = self.tabs.widget(index)
        for key, holder in list(self._holders.items()):
            if holder is page:
                module = self._modules.get(key)
                if module is None or module in sys.modules or not self.tabs.isVisible():
                    self.view(key)  # its code is in (or the window is still being built): made now
                else:
                    self._load_then_make(key, module, holder)
                return

    def _load_then_make(self, key: str, module: str, holder: QWidget) -> None:
        if key in self._importing:
            return
        self._importing.add(key)
        label = QLabel(f"Loading the {self._makers[key][0]} view…")
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        label.setStyleSheet("color: palette(placeholder-text)")
        QVBoxLayout(holder).addWidget(label)

        def load() -> None:
            try:
                importlib.import_module(module)
            except Exception:  # made on the GUI thread anyway: the view's own import reports it there
                log.debug("loading %s failed", module, exc_info=True)
            self._imported.emit(key)

        threading.Thread(target=load, name=f"dle-load-{key}", daemon=True).start()
        self.loading.emit(key)

    def _code_loaded(self, key: str) -> None:
        self._importing.discard(key)
        if key in self._holders:  # made meanwhile when something asked for it (`view`)
            self.view(key)
