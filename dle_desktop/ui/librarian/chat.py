"""The librarian's chat pane: the conversation with the tool activity as it happens, the input,
Send and Cancel."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from dle_desktop.librarian.sessions import Session

_STYLE = {"user": ("You", "#2a5d9f"), "assistant": ("Emma", "#5a3d8a"), "error": ("", "#a33"), "activity": ("", "#777")}


def message_html(role: str, text: str) -> str:
    who, colour = _STYLE.get(role, ("", "#777"))
    body = escape(text).replace("\n", "<br>")
    if role in ("activity", "tool_call", "tool_result", "status", "repair", "draft"):
        return f"<div style='color:{colour}; font-size:small; margin-left:12px'>{body}</div>"
    if role == "error":
        return f"<p style='color:{colour}'>{body}</p>"
    return f"<p><b style='color:{colour}'>{who}</b><br>{body}</p>"


class ChatPane(QWidget):
    sendRequested = Signal(str)
    cancelRequested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.heading = QLabel("<b>Librarian</b>")
        self.transcript = QTextBrowser()
        self.transcript.setOpenLinks(False)
        self.input = QPlainTextEdit(placeholderText="Ask the librarian… (Ctrl+Enter sends)")
        self.input.setFixedHeight(70)
        self.send_button = QPushButton("Send")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self._busy = False
        self._available = True  # False while the librarian has no usable AI connection
        self._showing_session = False
        self.status = QLabel()
        self.status.setStyleSheet("color: palette(placeholder-text)")
        self.send_button.clicked.connect(self._send)
        self.cancel_button.clicked.connect(self.cancelRequested)
        QShortcut(QKeySequence("Ctrl+Return"), self.input).activated.connect(self._send)
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.heading)
        layout.addWidget(self.transcript, 1)
        layout.addWidget(self.input)
        layout.addLayout(buttons)

    def _send(self) -> None:
        text = self.input.toPlainText().strip()
        if text and self.send_button.isEnabled():
            self.input.clear()
            self.sendRequested.emit(text)

    def show_session(self, session: Session | None) -> None:
        self.transcript.clear()
        self._showing_session = session is not None
        if session is None:
            self.heading.setText(
                "<b>Librarian</b> — start a session on the left"
                if self._available
                else "<b>Librarian</b> — waiting for an AI connection (see above)"
            )
            return
        self.heading.setText(f"<b>{escape(session.title)}</b>")
        self.transcript.setHtml("".join(message_html(m.role, m.text) for m in session.messages))
        self.transcript.moveCursor(QTextCursor.MoveOperation.End)

    def append(self, role: str, text: str) -> None:
        self.transcript.append(message_html(role, text))
        self.transcript.moveCursor(QTextCursor.MoveOperation.End)

    def set_available(self, available: bool) -> None:
        """Without an AI connection there is nothing to send to: the input and Send are off."""
        was, self._available = self._available, available
        self.input.setEnabled(available)
        self.send_button.setEnabled(available and not self._busy)
        if was != available and not self._showing_session:
            self.show_session(None)  # its heading says what the pane waits for

    def set_busy(self, busy: bool, status: str = "") -> None:
        self._busy = busy
        self.send_button.setEnabled(not busy and self._available)
        self.cancel_button.setEnabled(busy)
        self.status.setText(status)
        self.input.setFocus(Qt.FocusReason.OtherFocusReason) if not busy else None
