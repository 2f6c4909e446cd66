"""The Librarian view's Suggestions tab: Auto Lorebook's proposed entries from every chat, newest
first, waiting for review. The selected one is previewed; Accept… opens it in an editor and writes
it through the note writer (where it went, or why not, is said under the list), Reject drops it,
and Open in a session hands it to a Librarian session as its draft. The queue is re-read when the
tab is shown, on Refresh and after each action (the engine announces no change of it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.writers.suggest import TYPES
from dle_desktop.errors import DleError
from dle_desktop.ui.widgets.async_util import soon

log = logging.getLogger(__name__)

MUTED_STYLE = "color: palette(placeholder-text)"
OK_STYLE = "color: #1a7f37"
ERROR_STYLE = "color: #b3261e"
#: Why the queue is empty, by what the settings say.
EMPTY_OFF = (
    "Auto Lorebook is off, so nothing is suggested. Turn it on in Settings → Writers (Auto Lorebook: "
    "“Suggest new entries”): every few AI messages it proposes the entries your chat mentions and the "
    "vault lacks, and they wait here for review. In SillyTavern, /dle-newlore asks at once."
)
EMPTY_ON = (
    "No suggestions waiting. Auto Lorebook proposes entries every {interval} AI messages (and when "
    "SillyTavern's /dle-newlore asks); they wait here for review."
)
EMPTY_NO_REVIEW = (
    "No suggestions waiting: “Write without review” is on (Settings → Writers), so Auto Lorebook "
    "writes its suggestions to the vault at once."
)

OPEN_TIP = (
    "Start a Librarian session with this suggestion as its draft, to refine it with the librarian. "
    "It stays here until you accept or reject it."
)


def split_keys(text: str) -> list[str]:
    return [k.strip() for k in text.split(",") if k.strip()]


def when_text(stamp: float, now: float | None = None) -> str:
    now = time.time() if now is None else now
    local = time.localtime(stamp)
    if time.localtime(now)[:3] == local[:3]:
        return time.strftime("today %H:%M", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


def preview_html(item: dict[str, Any]) -> str:
    s = item["suggestion"]
    keys = ", ".join(s.get("keys") or ()) or "none"
    paragraphs = "".join(f"<p>{escape(p)}</p>" for p in str(s.get("content", "")).split("\n\n") if p.strip())
    return (
        f"<h3 style='margin:0'>{escape(str(s.get('title', '')))}</h3>"
        f"<p style='color:#777; margin-top:2px'>{escape(str(s.get('type', 'lore')))} · from chat "
        f"“{escape(str(item.get('chat_id', '')))}” · {escape(when_text(float(item.get('created_at') or 0)))}</p>"
        f"<p><b>Keys:</b> {escape(keys)}</p>"
        f"<p><b>Summary:</b> {escape(str(s.get('summary', '')))}</p>"
        f"{paragraphs}"
    )


class SuggestionDialog(QDialog):
    """Accept…: the suggestion's fields, editable, before it is written."""

    def __init__(self, suggestion: dict[str, Any], parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Accept suggestion")
        self.resize(620, 520)
        self.title = QLineEdit(str(suggestion.get("title", "")))
        self.type = QComboBox()
        self.type.addItems(TYPES)
        kind = str(suggestion.get("type", "lore"))
        self.type.setCurrentText(kind if kind in TYPES else "lore")
        self.keys = QLineEdit(", ".join(suggestion.get("keys") or ()))
        self.keys.setPlaceholderText("comma-separated keys (2 to 5)")
        self.summary = QPlainTextEdit(str(suggestion.get("summary", "")))
        self.summary.setFixedHeight(self.summary.fontMetrics().lineSpacing() * 3 + 12)
        self.content = QPlainTextEdit(str(suggestion.get("content", "")))
        form = QFormLayout()
        form.addRow("Title", self.title)
        form.addRow("Type", self.type)
        form.addRow("Keys", self.keys)
        form.addRow("Summary", self.summary)
        form.addRow("Content", self.content)
        note = QLabel("OK writes the entry into the vault (Settings → Writers names the folder).")
        note.setWordWrap(True)
        note.setStyleSheet(MUTED_STYLE)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.write_button = buttons.addButton("Write to vault", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)

    def edits(self) -> dict[str, Any]:
        return {
            "title": self.title.text().strip(),
            "type": self.type.currentText(),
            "keys": split_keys(self.keys.text()),
            "summary": self.summary.toPlainText().strip(),
            "content": self.content.toPlainText(),
        }


class SuggestionsPanel(QWidget):
    """The queue. `open_in_session(suggestion)` (set by the view) starts a Librarian session with
    it as the draft and answers why it could not, or None."""

    countChanged = Signal(int)

    def __init__(self, bridge, parent=None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.items: list[dict[str, Any]] = []
        #: how a dialog is confirmed (tests answer it without a modal loop)
        self.confirm: Callable[[QDialog], bool] = lambda dialog: dialog.exec() == QDialog.DialogCode.Accepted
        self.open_in_session: Callable[[dict[str, Any]], str | None] = lambda _s: "no Librarian session to open"
        self._can_open = True  # a session needs the Librarian's connection (`set_can_open`)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet(MUTED_STYLE + "; padding: 4px")
        self.list = QListWidget()
        self.list.currentItemChanged.connect(lambda *_: self._show_selected())
        self.list.itemDoubleClicked.connect(lambda *_: self._start(self.accept_selected))
        self.preview = QTextBrowser()
        self.preview.setOpenLinks(False)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.accept_button = QPushButton("Accept…")
        self.accept_button.setToolTip("Edit it if you like, then write it into the vault")
        self.reject_button = QPushButton("Reject")
        self.reject_button.setToolTip("Drop this suggestion; nothing is written")
        self.open_button = QPushButton("Open in a session")
        self.refresh_button = QPushButton("Refresh")
        self.accept_button.clicked.connect(lambda *_: self._start(self.accept_selected))
        self.reject_button.clicked.connect(lambda *_: self._start(self.reject_selected))
        self.open_button.clicked.connect(lambda *_: self.open_selected())
        self.refresh_button.clicked.connect(lambda *_: self._start(self.refresh))
        buttons = QGridLayout()
        buttons.addWidget(self.accept_button, 0, 0)
        buttons.addWidget(self.reject_button, 0, 1)
        buttons.addWidget(self.open_button, 1, 0)
        buttons.addWidget(self.refresh_button, 1, 1)
        top = QWidget()
        column = QVBoxLayout(top)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.hint)
        column.addWidget(self.list, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(top)
        split.addWidget(self.preview)
        split.setSizes([260, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(split, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self._buttons()
        self._show_selected()

    def _start(self, make: Callable[[], Any]) -> None:
        soon(make)

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    # -- the queue --------------------------------------------------------------------------------
    async def refresh(self) -> None:
        """Re-read the queue (on the engine thread); the selected suggestion stays selected."""
        try:
            pending = await self.bridge.pending_suggestions()
        except DleError as exc:
            self.say(f"The suggestions could not be read: {exc}", ERROR_STYLE)
            return
        self.show_items(pending)

    def show_items(self, pending: list[dict[str, Any]]) -> None:
        chosen = self.selected()
        keep = chosen["id"] if chosen else None
        self.items = sorted(pending, key=lambda p: float(p.get("created_at") or 0), reverse=True)
        self.list.blockSignals(True)
        self.list.clear()
        for entry in self.items:
            s = entry["suggestion"]
            when = when_text(float(entry.get("created_at") or 0))
            item = QListWidgetItem(f"{s.get('title', '')}\n{s.get('type', 'lore')} · {when}")
            item.setData(Qt.ItemDataRole.UserRole, entry["id"])
            item.setToolTip(f"{s.get('summary', '')}\nFrom chat “{entry.get('chat_id', '')}”")
            self.list.addItem(item)
            if entry["id"] == keep:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.items:
            self.list.setCurrentRow(0)
        self.list.blockSignals(False)
        self.hint.setText(self.empty_text())
        self.hint.setVisible(not self.items)
        self._show_selected()
        self.countChanged.emit(len(self.items))

    def empty_text(self) -> str:
        s = self.bridge.settings
        if not s.auto_suggest_enabled:
            return EMPTY_OFF
        if s.auto_suggest_skip_review:
            return EMPTY_NO_REVIEW
        return EMPTY_ON.format(interval=s.auto_suggest_interval)

    def selected(self) -> dict[str, Any] | None:
        item = self.list.currentItem()
        if item is None:
            return None
        chosen = item.data(Qt.ItemDataRole.UserRole)
        return next((p for p in self.items if p["id"] == chosen), None)

    def select(self, suggestion_id: str) -> bool:
        for row in range(self.list.count()):
            if self.list.item(row).data(Qt.ItemDataRole.UserRole) == suggestion_id:
                self.list.setCurrentRow(row)
                return True
        return False

    def _show_selected(self) -> None:
        chosen = self.selected()
        if chosen is None:
            self.preview.setHtml("<p style='color:#777'>Select a suggestion to read it here.</p>" if self.items else "")
        else:
            self.preview.setHtml(preview_html(chosen))
        self._buttons()

    def set_can_open(self, can: bool) -> None:
        """Whether Open in a session can start one (the Librarian's AI connection is there)."""
        self._can_open = can
        self._buttons()

    def _buttons(self) -> None:
        chosen = self.selected() is not None
        self.accept_button.setEnabled(chosen)
        self.reject_button.setEnabled(chosen)
        self.open_button.setEnabled(chosen and self._can_open)
        self.open_button.setToolTip(
            OPEN_TIP if self._can_open else "A Librarian session needs an AI connection (see above); Accept… needs none"
        )

    # -- acting on the selected one -------------------------------------------------------------
    async def accept_selected(self) -> bool:
        chosen = self.selected()
        if chosen is None:
            return False
        dialog = SuggestionDialog(chosen["suggestion"], self)
        if not self.confirm(dialog):
            return False
        edits = dialog.edits()
        try:
            answer = await self.bridge.accept_suggestion(chosen["id"], edits)
        except DleError as exc:  # the engine's words; the suggestion keeps waiting
            self.say(f"“{edits['title'] or chosen['suggestion'].get('title')}” not written: {exc}", ERROR_STYLE)
            await self.refresh()
            return False
        written = answer["written"]
        self.say(
            f"Wrote “{written['title']}” to {written['path']} in {written['vault']} "
            "(undo it from the Vault view's entry history).",
            OK_STYLE,
        )
        await self.refresh()
        return True

    async def reject_selected(self) -> bool:
        chosen = self.selected()
        if chosen is None:
            return False
        try:
            await self.bridge.reject_suggestion(chosen["id"])
        except DleError as exc:
            self.say(f"Not rejected: {exc}", ERROR_STYLE)
        else:
            self.say(f"Rejected “{chosen['suggestion'].get('title', '')}”; nothing was written.", MUTED_STYLE)
        await self.refresh()
        return True

    def open_selected(self) -> bool:
        chosen = self.selected()
        if chosen is None:
            return False
        problem = self.open_in_session(chosen["suggestion"])
        if problem:
            self.say(problem, ERROR_STYLE)
            return False
        self.say(
            f"“{chosen['suggestion'].get('title', '')}” is the draft of a new session; it stays here until "
            "you accept or reject it.",
            MUTED_STYLE,
        )
        return True
