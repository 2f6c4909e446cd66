"""The Chats panel's lower half: how the selected chat is steered, as SillyTavern's /dle-set-field,
/dle-set-folder, /dle-pins and /dle-analytics see it. Tabs: its gating context (gating_fields),
its folder filter (picked from the vault's folders), its pins and blocks (with Remove), the
entries injected most in it, and what its writers keep (chat_writers: AI Notepad, Session Scribe
notes). Everything is read and changed through the bridge, off the GUI
thread; a change the engine refuses is shown in its words and changes nothing."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.pipeline.state import ChatState, EntryRef
from dle_desktop.errors import DleError
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, note
from dle_desktop.ui.sillytavern.chat_writers import WritersTab
from dle_desktop.ui.sillytavern.common import plural
from dle_desktop.ui.sillytavern.gating_fields import GatingTab, shown_value

log = logging.getLogger(__name__)

Runner = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
TOP_ENTRIES = 10
PICK_ONE = (
    "Select one chat above to see and change its gating context, folder filter, pins and blocks, "
    "and what the writers keep for it."
)


def ref_text(ref: EntryRef) -> str:
    return ref.title if ref.vault is None else f"{ref.title}  ({ref.vault})"


def when_text(stamp: float | None, now: float | None = None) -> str:
    if not stamp:
        return "never"
    now = time.time() if now is None else now
    local = time.localtime(stamp)
    if time.localtime(now)[:3] == local[:3]:
        return time.strftime("today %H:%M", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


def _with_note(widget: QWidget, message: QLabel, *buttons: QPushButton) -> QVBoxLayout:
    layout = QVBoxLayout(widget)
    layout.setContentsMargins(4, 4, 4, 4)
    row = QHBoxLayout()
    row.addWidget(message, 1)
    for button in buttons:
        row.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
    layout.addLayout(row)
    return layout


class FoldersTab(QWidget):
    """The vault's folders, the chat's filter ticked; Apply and Clear filter."""

    def __init__(self, runner: Runner) -> None:
        super().__init__()
        self.runner = runner
        self.bridge: Any = None
        self.chat_id: str | None = None
        self.changed: Callable[[], object] = lambda: None  # the chat's state moved: re-read it
        self.filter: tuple[str, ...] | None = None
        self.folders = QListWidget()
        self.folders.setToolTip("Only entries in the ticked folders (and their subfolders) can be injected")
        self.message = note()
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Limit this chat's lore to the ticked folders (DLE's /dle-set-folder)")
        self.clear_button = QPushButton("Clear filter")
        self.clear_button.setToolTip("Every folder's entries can be injected again (DLE's /dle-clear-folder)")
        self.apply_button.clicked.connect(lambda *_: self.runner(self.apply))
        self.clear_button.clicked.connect(lambda *_: self.runner(lambda: self.apply(clear=True)))
        layout = _with_note(self, self.message, self.apply_button, self.clear_button)
        layout.insertWidget(0, self.folders, 1)

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def show_folders(self, folders: list[dict[str, Any]], chosen: tuple[str, ...] | None) -> None:
        self.filter = chosen
        ticked = {f.lower() for f in chosen or ()}
        known = {str(f["path"]).lower() for f in folders}
        rows = [(str(f["path"]), f"{f['path']}  ({plural(int(f['entries']), 'entry', 'entries')})") for f in folders]
        rows += [(f, f"{f}  (not in the vault now)") for f in chosen or () if f.lower() not in known]
        self.folders.clear()
        for path, text in rows:
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if path.lower() in ticked else Qt.CheckState.Unchecked)
            self.folders.addItem(item)
        self.clear_button.setEnabled(bool(chosen))
        if not self.message.styleSheet() or self.message.styleSheet() == MUTED_STYLE:
            self.say(self.state_text(), MUTED_STYLE)

    def state_text(self) -> str:
        if not self.filter:
            return "No folder filter: entries from every folder can be injected."
        return f"Only entries in {', '.join(self.filter)} can be injected."

    def ticked(self) -> list[str]:
        return [
            str(item.data(Qt.ItemDataRole.UserRole))
            for i in range(self.folders.count())
            if (item := self.folders.item(i)).checkState() == Qt.CheckState.Checked
        ]

    async def apply(self, clear: bool = False) -> None:
        if self.chat_id is None or self.bridge is None:
            return
        wanted = [] if clear else self.ticked()
        try:
            self.filter = await self.bridge.set_folder_filter(self.chat_id, wanted or None)
        except DleError as exc:  # the engine's words; the filter stays as it was
            self.say(str(exc), ERROR_STYLE)
            return
        self.clear_button.setEnabled(bool(self.filter))
        self.say(f"{self.state_text()} The next generation uses it.", OK_STYLE)
        self.changed()


class PinsTab(QWidget):
    """Pins (always injected) and blocks (never injected), each with Remove."""

    def __init__(self, runner: Runner) -> None:
        super().__init__()
        self.runner = runner
        self.bridge: Any = None
        self.chat_id: str | None = None
        self.changed: Callable[[], object] = lambda: None
        self.pins = self._list("Pinned entries are injected whatever the chat says (/dle-pin)")
        self.blocks = self._list("Blocked entries are never injected in this chat (/dle-block)")
        self.remove_pin = QPushButton("Remove pin")
        self.remove_block = QPushButton("Remove block")
        self.remove_pin.clicked.connect(lambda *_: self.runner(lambda: self.remove(pins=True)))
        self.remove_block.clicked.connect(lambda *_: self.runner(lambda: self.remove(pins=False)))
        self.pins.itemSelectionChanged.connect(self._buttons)
        self.blocks.itemSelectionChanged.connect(self._buttons)
        self.pins_label = QLabel("Pinned")
        self.blocks_label = QLabel("Blocked")
        grid = QGridLayout()
        grid.addWidget(self.pins_label, 0, 0)
        grid.addWidget(self.blocks_label, 0, 1)
        grid.addWidget(self.pins, 1, 0)
        grid.addWidget(self.blocks, 1, 1)
        grid.addWidget(self.remove_pin, 2, 0, Qt.AlignmentFlag.AlignLeft)
        grid.addWidget(self.remove_block, 2, 1, Qt.AlignmentFlag.AlignLeft)
        grid.setRowStretch(1, 1)
        self.message = note()
        layout = _with_note(self, self.message)
        layout.insertLayout(0, grid, 1)
        self._buttons()

    @staticmethod
    def _list(tip: str) -> QListWidget:
        shown = QListWidget()
        shown.setToolTip(tip)
        shown.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        return shown

    def _buttons(self) -> None:
        self.remove_pin.setEnabled(bool(self.pins.selectedItems()))
        self.remove_block.setEnabled(bool(self.blocks.selectedItems()))

    def show_state(self, state: ChatState) -> None:
        for shown, refs, label, word in (
            (self.pins, state.pins, self.pins_label, "Pinned"),
            (self.blocks, state.blocks, self.blocks_label, "Blocked"),
        ):
            shown.clear()
            for ref in refs:
                item = QListWidgetItem(ref_text(ref))
                item.setData(Qt.ItemDataRole.UserRole, ref)
                shown.addItem(item)
            label.setText(f"{word} ({len(refs)})" if refs else f"{word}: none")
        self._buttons()

    async def remove(self, pins: bool) -> None:
        shown = self.pins if pins else self.blocks
        gone = [item.data(Qt.ItemDataRole.UserRole) for item in shown.selectedItems()]
        if self.chat_id is None or self.bridge is None or not gone:
            return
        state = await self.bridge.chat_state(self.chat_id)  # as it is now: SillyTavern may have pinned since
        kept_pins = [p for p in state.pins if not (pins and p in gone)]
        kept_blocks = [b for b in state.blocks if not (not pins and b in gone)]
        state = await self.bridge.set_pins_blocks(self.chat_id, kept_pins, kept_blocks)
        self.show_state(state)
        what = ", ".join(ref.title for ref in gone)
        self.message.setText(f"{'Unpinned' if pins else 'Unblocked'} {what}.")
        self.message.setStyleSheet(OK_STYLE)
        self.changed()


class AnalyticsTab(QWidget):
    """The entries injected most in this chat, with a line on the rest."""

    COLUMNS = ("Entry", "Injected", "Matched", "Last injected")

    def __init__(self) -> None:
        super().__init__()
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column, width in ((1, 70), (2, 70), (3, 120)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            self.table.setColumnWidth(column, width)
        self.summary = note()
        layout = _with_note(self, self.summary)
        layout.insertWidget(0, self.table, 1)

    def show_analytics(self, answer: dict[str, Any], generations: int) -> None:
        rows = [
            r
            for r in answer.get("entries") or ()
            if (r.get("chat") or {}).get("matched") or (r.get("chat") or {}).get("injected")
        ]
        rows.sort(key=lambda r: (-r["chat"]["injected"], -r["chat"]["matched"], str(r["title"]).lower()))
        injected = sum(1 for r in rows if r["chat"]["injected"])
        total = len(answer.get("entries") or ())
        top = rows[:TOP_ENTRIES]
        titles = [str(r["title"]).lower() for r in top]
        self.table.setRowCount(len(top))
        now = time.time()
        for r, row in enumerate(top):
            mine = row["chat"]
            name = str(row["title"])
            if titles.count(name.lower()) > 1:  # two notes of one title: their folders tell them apart
                name = f"{name}  ({str(row['path']).rpartition('/')[0] or row['vault']})"
            cells = (
                name,
                f"{mine['injected']:,}",
                f"{mine['matched']:,}",
                when_text(mine.get("last_injected_at"), now),
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 0:
                    item.setToolTip(f"{row['title']} ({row['vault']}: {row['path']})")
                else:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        if not generations:
            self.summary.setText("No generation in this chat yet.")
        else:
            self.summary.setText(
                f"{plural(injected, 'entry', 'entries')} of {total:,} injected over "
                f"{plural(generations, 'generation')}; {total - injected:,} never in this chat"
                + (f". The {TOP_ENTRIES} injected most are listed." if len(rows) > TOP_ENTRIES else ".")
            )
        self.summary.setStyleSheet(MUTED_STYLE)


class ChatSteering(QWidget):
    """The selected chat's steering, in tabs. `runner` starts work the panel keeps track of."""

    def __init__(self, runner: Runner) -> None:
        super().__init__()
        self.runner = runner
        self.bridge: Any = None
        self.chat_id: str | None = None
        self.state: ChatState | None = None
        self._reads = 0  # re-reads started; only the latest one shows what it read
        self.heading = QLabel(PICK_ONE)
        self.heading.setWordWrap(True)
        self.heading.setStyleSheet(MUTED_STYLE)
        self.gating = GatingTab(runner)
        self.folders = FoldersTab(runner)
        self.pins = PinsTab(runner)
        self.analytics = AnalyticsTab()
        self.writers = WritersTab(runner)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.gating, "Gating context")
        self.tabs.addTab(self.folders, "Folder filter")
        self.tabs.addTab(self.pins, "Pins and blocks")
        self.tabs.addTab(self.analytics, "Analytics")
        self.tabs.addTab(self.writers, "Writers")
        self.tabs.setEnabled(False)
        for tab in (self.gating, self.folders, self.pins):
            tab.changed = self._changed
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(self.tabs, 1)

    def _changed(self) -> None:
        """A tab changed the chat: re-read it. Counted now, not when the re-read starts, so a read
        already on its way (with the values from before) finds it is no longer the latest."""
        self._reads += 1
        self.runner(self.load)

    def choose(self, bridge: Any, chat_id: str | None) -> None:
        """Show `chat_id` (None: no single chat selected)."""
        changed = chat_id != self.chat_id
        self.bridge = bridge
        self.chat_id = chat_id
        for tab in (self.gating, self.folders, self.pins, self.writers):
            tab.bridge = bridge
            tab.chat_id = chat_id
            if changed:
                tab.message.clear()
                tab.message.setStyleSheet("")
        if changed:
            self.writers.clear_shown()
        self.tabs.setEnabled(chat_id is not None)
        if chat_id is None:
            self.heading.setText(PICK_ONE)
            self.heading.setStyleSheet(MUTED_STYLE)

    async def load(self) -> None:
        """Read the vault's fields and folders and the chat's state and analytics (on the engine
        thread), then show them."""
        chat_id = self.chat_id
        if chat_id is None or self.bridge is None:
            return
        self._reads += 1
        read = self._reads
        try:
            fields = await self.bridge.gating_fields()
            folders = await self.bridge.vault_folders()
            state = await self.bridge.chat_state(chat_id)
            analytics = await self.bridge.entry_analytics(chat_id)
        except DleError as exc:  # e.g. the vault index is not ready yet
            if chat_id == self.chat_id and read == self._reads:
                self.heading.setText(f"Chat “{chat_id}”: {exc}")
            return
        if chat_id != self.chat_id or read != self._reads:
            return  # another chat was chosen, or a change started a newer read, meanwhile
        self.state = state
        self.gating.context = dict(state.context)
        self.gating.show_fields(fields)
        self.gating.show_context(dict(state.context))
        self.folders.show_folders(folders, state.folder_filter)
        self.pins.show_state(state)
        self.analytics.show_analytics(analytics, state.generation_count)
        await self.writers.load()
        if read != self._reads:
            return
        self.heading.setText(self.summary(chat_id, state))
        self.heading.setStyleSheet("")

    @staticmethod
    def summary(chat_id: str, state: ChatState) -> str:
        context = "; ".join(f"{k} = {shown_value(v)}" for k, v in state.context.items()) or "no gating context"
        folders = f"folders {', '.join(state.folder_filter)}" if state.folder_filter else "every folder"
        return (
            f"Chat “{chat_id}”: {context} · {folders} · {plural(len(state.pins), 'pin')}, "
            f"{plural(len(state.blocks), 'block')}"
        )
