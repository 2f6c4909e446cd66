"""System tray: the app keeps syncing with its window closed. Notifications are batched and
rate-limited so a burst of edits is one short message, never one per file."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from dle_desktop.core.changes import ChangeSet
from dle_desktop.ui.widgets.icons import app_icon

#: At most one change notification per this many seconds; changes in between are added up.
NOTIFY_INTERVAL_S = 10.0


class ChangeNotifier(QObject):
    """Adds up vault changes and emits one summary at a time (testable without a tray)."""

    notify = Signal(str, str)  # title, message

    def __init__(self, interval_s: float = NOTIFY_INTERVAL_S, parent=None) -> None:
        super().__init__(parent)
        self.interval_s = interval_s
        self.enabled = True
        self._counts = {"added": 0, "removed": 0, "modified": 0}
        self._last = 0.0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._flush)

    def add(self, changes: ChangeSet | None) -> None:
        if changes is None or changes.first_build or not changes.has_changes or not self.enabled:
            return
        self._counts["added"] += len(changes.added)
        self._counts["removed"] += len(changes.removed)
        self._counts["modified"] += len(changes.modified)
        wait = self.interval_s - (time.monotonic() - self._last)
        if wait <= 0:
            self._flush()
        elif not self._timer.isActive():
            self._timer.start(int(wait * 1000))

    def _flush(self) -> None:
        parts = [f"{n} {label}" for label, n in self._counts.items() if n]
        self._counts = dict.fromkeys(self._counts, 0)
        if not parts:
            return
        self._last = time.monotonic()
        self.notify.emit("Vault updated", ", ".join(parts))


class TrayController(QObject):
    openRequested = Signal()
    syncRequested = Signal()
    pauseToggled = Signal(bool)
    quitRequested = Signal()

    def __init__(self, parent=None, available: bool | None = None) -> None:
        super().__init__(parent)
        self.available = QSystemTrayIcon.isSystemTrayAvailable() if available is None else available
        self.menu = QMenu()
        self.open_action = QAction("Open DLE Desktop", self.menu)
        self.open_action.triggered.connect(lambda *_: self.openRequested.emit())
        self.sync_action = QAction("Sync now", self.menu)
        self.sync_action.triggered.connect(lambda *_: self.syncRequested.emit())
        self.pause_action = QAction("Pause sync", self.menu)
        self.pause_action.setCheckable(True)
        self.pause_action.toggled.connect(self.pauseToggled.emit)
        self.quit_action = QAction("Quit", self.menu)
        self.quit_action.triggered.connect(lambda *_: self.quitRequested.emit())
        for a in (self.open_action, self.sync_action, self.pause_action):
            self.menu.addAction(a)
        self.menu.addSeparator()
        self.menu.addAction(self.quit_action)
        self.icon: QSystemTrayIcon | None = None
        if self.available:
            self.icon = QSystemTrayIcon(app_icon(), self)
            self.icon.setContextMenu(self.menu)
            self.icon.setToolTip("DLE Desktop")
            self.icon.activated.connect(self._activated)
            self.icon.show()

    def _activated(self, reason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.openRequested.emit()

    def set_paused(self, paused: bool) -> None:
        self.pause_action.blockSignals(True)
        self.pause_action.setChecked(paused)
        self.pause_action.blockSignals(False)

    def set_tooltip(self, text: str) -> None:
        if self.icon:
            self.icon.setToolTip(text)

    def show_message(self, title: str, message: str) -> bool:
        if self.icon is None:
            return False
        self.icon.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 4000)
        return True

    def hide(self) -> None:
        if self.icon:
            self.icon.hide()
