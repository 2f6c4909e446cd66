"""The Chats panel's Writers tab: what the writers keep for the selected chat. Its AI Notepad (the
text the model's private notes came to, its size against the 64 KiB cap, Clear…) beside its
Session Scribe notes (newest first; Open shows one) and the last summary. Read through the
bridge, off the GUI thread, when the chat is chosen or its state moves."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, note
from dle_desktop.ui.sillytavern.common import confirm, plural

log = logging.getLogger(__name__)

Runner = Callable[[Callable[[], Coroutine[Any, Any, Any]]], object]
NO_NOTEPAD = "Empty. With AI Notepad on (Settings → Writers), the model's private notes for this chat gather here."
NO_NOTES = "No session notes yet. With Session Scribe on (Settings → Writers) they are written every few messages."


def size_text(size: int, cap: int) -> str:
    return f"{size / 1024:.1f} KiB of {cap // 1024} KiB" if size else f"empty (at most {cap // 1024} KiB)"


def when_text(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "?"


async def _no_window(vault: str, path: str) -> str:
    return f"{path} ({vault}): no window to open it in"


class NoteDialog(QDialog):
    """A vault note that is not a lore entry (a session note), read-only."""

    def __init__(self, vault: str, path: str, text: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(path.rsplit("/", 1)[-1])
        self.resize(640, 520)
        where = QLabel(
            f"{path} in {vault}. Session notes carry the lorebook-session tag, not the lorebook tag: they are "
            "kept in the vault but not injected, and the Vault view lists them under Health → Not indexed."
        )
        where.setWordWrap(True)
        where.setStyleSheet(MUTED_STYLE)
        where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit(text)
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(where)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)


class WritersTab(QWidget):
    """`open_note(vault, path)` (set by the window: an entry in the Vault view, any other note in a
    `NoteDialog`) opens a session note and says what it did."""

    def __init__(self, runner: Runner) -> None:
        super().__init__()
        self.runner = runner
        self.bridge: Any = None
        self.chat_id: str | None = None
        self.notes: list[dict[str, Any]] = []
        self.open_note: Callable[[str, str], Awaitable[str]] = _no_window
        #: how Clear is confirmed (tests answer it without a modal box)
        self.confirm: Callable[[str], bool] = lambda text: confirm(self, "Clear the AI Notepad", text, "Clear")

        self.notepad = QPlainTextEdit()
        self.notepad.setReadOnly(True)
        self.notepad.setPlaceholderText(NO_NOTEPAD)
        self.notepad_size = QLabel()
        self.notepad_size.setStyleSheet(MUTED_STYLE)
        self.clear_button = QPushButton("Clear…")
        self.clear_button.setToolTip("Empty this chat's notepad (DLE's /dle-ai-notepad clear)")
        self.clear_button.clicked.connect(lambda *_: self.runner(self.clear))
        pad = QGroupBox("AI Notepad")
        pad_column = QVBoxLayout(pad)
        pad_column.setContentsMargins(4, 4, 4, 4)
        pad_column.addWidget(self.notepad, 1)
        pad_row = QHBoxLayout()
        pad_row.addWidget(self.notepad_size, 1)
        pad_row.addWidget(self.clear_button)
        pad_column.addLayout(pad_row)

        self.note_list = QListWidget()
        self.note_list.setToolTip("Newest first; double-click to open one")
        # a note's title holds its date and time: cut at the end rather than scrolled sideways
        self.note_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.note_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.note_list.itemDoubleClicked.connect(lambda *_: self.runner(self.open_selected))
        self.note_list.currentItemChanged.connect(lambda *_: self._buttons())
        self.open_button = QPushButton("Open")
        self.open_button.clicked.connect(lambda *_: self.runner(self.open_selected))
        self.notes_label = QLabel()
        self.notes_label.setStyleSheet(MUTED_STYLE)
        self.notes_label.setWordWrap(True)
        self.summary = QPlainTextEdit()
        self.summary.setReadOnly(True)
        self.summary.setPlaceholderText("No summary yet.")
        self.summary.setToolTip("The last session note's summary: the next note starts from it")
        scribe = QGroupBox("Session Scribe")
        scribe_column = QVBoxLayout(scribe)
        scribe_column.setContentsMargins(4, 4, 4, 4)
        scribe_column.addWidget(self.note_list, 2)
        notes_row = QHBoxLayout()
        notes_row.addWidget(self.notes_label, 1)
        notes_row.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignTop)
        scribe_column.addLayout(notes_row)
        scribe_column.addWidget(QLabel("Last summary"))
        scribe_column.addWidget(self.summary, 3)

        self.message = note()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(pad)
        split.addWidget(scribe)
        split.setSizes([500, 500])  # half each
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(split, 1)
        layout.addWidget(self.message)
        self._buttons()

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def _buttons(self) -> None:
        self.open_button.setEnabled(self.note_list.currentItem() is not None)
        self.clear_button.setEnabled(bool(self.notepad.toPlainText()))

    # -- reading ---------------------------------------------------------------------------------
    async def load(self) -> None:
        chat_id = self.chat_id
        if chat_id is None or self.bridge is None:
            return
        try:
            pad = await self.bridge.ai_notepad(chat_id)
            history = await self.bridge.scribe_history(chat_id)
        except DleError as exc:
            if chat_id == self.chat_id:
                self.say(f"The writers' state of this chat could not be read: {exc}", ERROR_STYLE)
            return
        if chat_id != self.chat_id:  # another chat was chosen meanwhile
            return
        self.show_notepad(pad)
        self.show_history(history)

    def show_notepad(self, pad: dict[str, Any]) -> None:
        text = str(pad.get("text") or "")
        if self.notepad.toPlainText() != text:
            self.notepad.setPlainText(text)
        size = int(pad.get("bytes") or 0)
        state = f"on, {pad.get('mode')} mode" if pad.get("enabled") else "off"
        self.notepad_size.setText(f"{size_text(size, int(pad.get('cap_bytes') or 0))} · AI Notepad is {state}")
        self._buttons()

    def show_history(self, history: dict[str, Any]) -> None:
        self.notes = list(history.get("notes") or ())
        self.note_list.clear()
        for n in self.notes:
            item = QListWidgetItem(str(n["title"]))
            item.setToolTip(f"{n['path']} in {n['vault']}, written {when_text(float(n.get('created_at') or 0))}")
            item.setData(Qt.ItemDataRole.UserRole, n)
            self.note_list.addItem(item)
        running = " The Session Scribe is writing one now." if history.get("running") else ""
        self.notes_label.setText(
            (f"{plural(len(self.notes), 'session note')}, newest first." if self.notes else NO_NOTES) + running
        )
        summary = str(history.get("last_summary") or "")
        if self.summary.toPlainText() != summary:
            self.summary.setPlainText(summary)
        self._buttons()

    def clear_shown(self) -> None:
        """No single chat: nothing shown."""
        self.notepad.clear()
        self.notepad_size.clear()
        self.note_list.clear()
        self.notes = []
        self.notes_label.clear()
        self.summary.clear()
        self.say("")
        self._buttons()

    # -- acting ----------------------------------------------------------------------------------
    async def clear(self) -> bool:
        chat_id = self.chat_id
        if chat_id is None or self.bridge is None or not self.notepad.toPlainText():
            return False
        if not self.confirm(
            f"Clear the AI Notepad of chat “{chat_id}”? The model's private notes for this chat are deleted; "
            "the chat's messages stay as they are."
        ):
            return False
        try:
            pad = await self.bridge.clear_ai_notepad(chat_id)
        except DleError as exc:
            self.say(f"Not cleared: {exc}", ERROR_STYLE)
            return False
        self.show_notepad(pad)
        self.say("The AI Notepad is empty; the next notes start it again.", OK_STYLE)
        return True

    async def open_selected(self) -> None:
        item = self.note_list.currentItem()
        if item is None:
            return
        n = item.data(Qt.ItemDataRole.UserRole)
        try:
            said = await self.open_note(n["vault"], n["path"])
        except DleError as exc:
            self.say(f"{n['path']} could not be read: {exc}", ERROR_STYLE)
            return
        self.say(said, MUTED_STYLE)
