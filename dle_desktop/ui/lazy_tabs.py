"""Tabs whose views are made the first time they are shown or asked for. The window comes up with
the view in front only; the others (and their imports: the AI client, the graph code) cost
nothing until the user goes there. A placeholder holds each tab's place and is swapped for the
real view at the same index, so `tabs.currentWidget() is window.graph_view` holds as before."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QTabWidget, QWidget


class LazyTabs(QObject):
    #: (key, view): a view was made (to wire it, or give it what it missed)
    made = Signal(str, QWidget)

    def __init__(self, tabs: QTabWidget) -> None:
        super().__init__(tabs)
        self.tabs = tabs
        self._makers: dict[str, tuple[str, Callable[[], QWidget]]] = {}
        self._holders: dict[str, QWidget] = {}
        self._views: dict[str, QWidget] = {}
        tabs.currentChanged.connect(self._shown)

    def add(self, key: str, label: str, make: Callable[[], QWidget]) -> None:
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
