"""A notice across the top of the main window while the HTTP server for SillyTavern is not
running because of a problem (a busy port): readable, selectable, with Retry and Settings."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton


class ServerNotice(QFrame):
    retryRequested = Signal()
    settingsRequested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("server-notice")
        self.setStyleSheet(
            "#server-notice { background: #fff4e5; border: 1px solid #e0a84f; border-radius: 4px; }"
            "#server-notice QLabel { color: #5c3800; }"
        )
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Retry")
        self.retry_button.setToolTip("Try to start the server again, e.g. after closing the program that held the port")
        self.retry_button.clicked.connect(self.retryRequested.emit)
        self.settings_button = QPushButton("Change port…")
        self.settings_button.clicked.connect(self.settingsRequested.emit)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addWidget(self.retry_button)
        row.addWidget(self.settings_button)
        self.hide()

    def show_problem(self, error: str | None) -> None:
        """Shown while `error` is set; hidden when the server runs (or is off by choice)."""
        if error:
            self.label.setText(f"<b>SillyTavern cannot connect: the server is not running.</b><br>{error}")
            self.show()
        else:
            self.hide()
