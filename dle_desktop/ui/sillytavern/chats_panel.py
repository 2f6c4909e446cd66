"""The SillyTavern view's Chats panel: the chats DLE Desktop keeps state for (cooldowns, warmup,
pins, what was injected), with Forget, the setting that forgets chats deleted in SillyTavern, and
below them how the selected chat is steered (chat_steering: gating context, folder filter, pins
and blocks, the entries injected most)."""

from __future__ import annotations

import asyncio
import logging
import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, note
from dle_desktop.ui.sillytavern.chat_steering import ChatSteering
from dle_desktop.ui.sillytavern.common import confirm, plural
from dle_desktop.ui.sillytavern.writer_switches import WriterSwitchBoxes
from dle_desktop.ui.widgets.cut_text import CutTextTips

log = logging.getLogger(__name__)

COLUMNS = ("Chat", "Generations", "Last updated")
LIMIT = 500
EMPTY = "No chat state yet: it appears with SillyTavern's first generation."


def when_text(stamp: float | None, now: float | None = None) -> str:
    if not stamp:
        return "?"
    now = time.time() if now is None else now
    local = time.localtime(stamp)
    if time.localtime(now)[:3] == local[:3]:
        return time.strftime("today %H:%M", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


class _NumberItem(QTableWidgetItem):
    def __lt__(self, other) -> bool:  # sort by the number, not its text
        return (self.data(Qt.ItemDataRole.UserRole) or 0) < (other.data(Qt.ItemDataRole.UserRole) or 0)


def _updated(chats: list[dict], chat_id: str) -> object:
    return next((c.get("updated_at") for c in chats if str(c.get("chat_id", "")) == chat_id), None)


class ChatsPanel(QWidget):
    """The chats (left) and the selected one's steering (right), side by side in their own tab."""

    def __init__(self, view) -> None:
        super().__init__()
        self.view = view
        self.chats: list[dict] = []
        self._read: asyncio.Future | None = None
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(2, Qt.SortOrder.DescendingOrder)  # the newest first
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        CutTextTips(self.table)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.setMinimumHeight(100)
        # The table takes what the column leaves (its own size hint would make the column scroll).
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        self.refresh_button = QPushButton("Refresh")
        self.forget_button: QPushButton = QPushButton("Forget…")
        self.forget_button.setToolTip(
            "Delete what DLE Desktop keeps for the selected chats (cooldowns, warmup, pins, "
            "injection history); the chats themselves stay in SillyTavern"
        )
        self.forget_button.setEnabled(False)
        self.refresh_button.clicked.connect(lambda *_: self.refresh_all())
        self.forget_button.clicked.connect(lambda *_: self.view.spawn(self.forget_selected))
        self.auto_forget = QCheckBox("Forget chats deleted in SillyTavern automatically")
        self.auto_forget.setToolTip(
            "When SillyTavern deletes a chat, the bridge tells DLE Desktop, which then forgets that chat's state"
        )
        self.auto_forget.toggled.connect(self._auto_toggled)
        self.message = note()
        self.writer_switches = WriterSwitchBoxes(
            self.view.current_settings,
            self.view.save_settings,
            lambda text, ok: self.say(text, OK_STYLE if ok else ERROR_STYLE),
        )
        self.steering = ChatSteering(self.view.spawn)
        buttons = QHBoxLayout()
        buttons.addWidget(self.message, 1)
        buttons.addWidget(self.refresh_button, 0, Qt.AlignmentFlag.AlignTop)
        buttons.addWidget(self.forget_button, 0, Qt.AlignmentFlag.AlignTop)
        chats = QGroupBox("Chats")
        column = QVBoxLayout(chats)
        column.addWidget(self.table, 1)
        column.addLayout(buttons)
        column.addWidget(self.auto_forget)
        column.addWidget(self.writer_switches)
        chosen = QGroupBox("The selected chat")
        QVBoxLayout(chosen).addWidget(self.steering)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(chats)
        self.split.addWidget(chosen)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        self.split.setSizes([420, 630])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.split, 1)
        self.fill_setting()

    def refresh_all(self) -> None:
        """Refresh: the list, and the selected chat with the vault's fields and folders as they are now."""
        self.view.spawn(self.refresh)
        self.view.spawn(self.steering.load)

    def _selection_changed(self) -> None:
        ids = self.selected_ids()
        self.forget_button.setEnabled(bool(ids))
        chosen = ids[0] if len(ids) == 1 else None
        if chosen != self.steering.chat_id:
            self.steering.choose(self.view.bridge, chosen)
            if chosen is not None:
                self.view.spawn(self.steering.load)

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def fill_setting(self) -> None:
        self.writer_switches.fill()
        self.auto_forget.blockSignals(True)
        self.auto_forget.setChecked(bool(getattr(self.view.current_settings(), "st_forget_deleted_chats", True)))
        self.auto_forget.blockSignals(False)

    def _auto_toggled(self, on: bool) -> None:
        problem = self.view.save_settings(st_forget_deleted_chats=on)
        if problem:
            self.say(f"Not saved: {problem}", ERROR_STYLE)
            self.fill_setting()
        else:
            self.say(
                "Chats deleted in SillyTavern are forgotten here too."
                if on
                else "Chats deleted in SillyTavern keep their state here until you forget them.",
                OK_STYLE,
            )

    async def refresh(self) -> None:
        """Read the chat list (joins a read in flight)."""
        if self._read is None or self._read.done():
            self._read = asyncio.ensure_future(self._do_refresh())
        await asyncio.shield(self._read)

    async def _do_refresh(self) -> None:
        try:
            chats = await self.view.bridge.list_chats(LIMIT)
        except Exception:
            log.debug("reading the chat list failed", exc_info=True)
            return
        if chats != self.chats:
            chosen = self.steering.chat_id
            moved = chosen is not None and _updated(chats, chosen) != _updated(self.chats, chosen)
            self.chats = chats
            self.fill()
            if moved and self.steering.chat_id == chosen:  # a generation or SillyTavern changed it
                await self.steering.load()

    def fill(self) -> None:
        keep = set(self.selected_ids())
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(self.chats))
        now = time.time()
        for r, chat in enumerate(self.chats):
            chat_id = str(chat.get("chat_id", ""))
            first = QTableWidgetItem(chat_id)
            first.setData(Qt.ItemDataRole.UserRole + 1, chat_id)
            count = chat.get("generation_count")
            gens = _NumberItem("?" if count is None else f"{int(count):,}")
            gens.setData(Qt.ItemDataRole.UserRole, int(count or 0))
            gens.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            updated = _NumberItem(when_text(chat.get("updated_at"), now))
            updated.setData(Qt.ItemDataRole.UserRole, float(chat.get("updated_at") or 0))
            for c, item in enumerate((first, gens, updated)):
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        for r in range(self.table.rowCount()):
            if self._chat_id(r) in keep:
                self.table.selectRow(r)
        if not self.chats and not self.message.text():
            self.say(EMPTY, MUTED_STYLE)
        elif self.chats and self.message.text() == EMPTY:
            self.say("")
        self._selection_changed()

    def _chat_id(self, row: int) -> str:
        item = self.table.item(row, 0)
        assert item is not None  # every row is filled whole
        chat_id: str = item.data(Qt.ItemDataRole.UserRole + 1)
        return chat_id

    def selected_ids(self) -> list[str]:
        return [
            item.data(Qt.ItemDataRole.UserRole + 1)
            for i in self.table.selectionModel().selectedRows()
            if (item := self.table.item(i.row(), 0)) is not None
        ]

    def select_chat(self, chat_id: str) -> bool:
        for r in range(self.table.rowCount()):
            if self._chat_id(r) == chat_id:
                self.table.selectRow(r)
                return True
        return False

    async def forget_selected(self, ask: bool = True) -> int:
        ids = self.selected_ids()
        if not ids:
            return 0
        what = f"chat “{ids[0]}”" if len(ids) == 1 else plural(len(ids), "chat")
        if ask and not confirm(
            self,
            "Forget chats",
            f"Forget the state DLE Desktop keeps for {what}? Its cooldowns, warmup, pins and "
            "injection history are deleted; the chat itself stays in SillyTavern.",
            "Forget",
        ):
            return 0
        self.forget_button.setEnabled(False)
        done = 0
        try:
            for chat_id in ids:
                if await self.view.bridge.reset_chat(chat_id):
                    done += 1
        except Exception as exc:
            log.exception("forgetting a chat failed")
            self.say(f"Forgetting failed after {plural(done, 'chat')}: {exc}", ERROR_STYLE)
        else:
            self.say(f"Forgot {what}." if done else "Nothing to forget: that state was gone already.", OK_STYLE)
        await self.refresh()
        return done

    def stop(self) -> None:
        if self._read is not None:
            self._read.cancel()
