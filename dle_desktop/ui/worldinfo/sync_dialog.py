"""World Info sync: vault folders mirrored into SillyTavern books, each turned on by the user, and
the choice of which side wins when a book was edited in SillyTavern."""

from __future__ import annotations

import asyncio
import time
from html import escape
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.st_bridge.install import StInstall, find_installs
from dle_desktop.state.settings.records import WiSyncConfig
from dle_desktop.ui.widgets.async_util import soon

STATUS_WORDS = {
    "written": "written",
    "unchanged": "up to date",
    "foreign": "not ours: left alone",
    "conflict": "edited in SillyTavern: choose a side",
    "error": "failed",
    "off": "off",
}


def _ago(at: float) -> str:
    seconds = max(0, int(time.time() - at))
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return time.strftime("%H:%M", time.localtime(at))


class AddSyncDialog(QDialog):
    """One new sync: which folder, into which SillyTavern install, user and book."""

    def __init__(self, vaults: list[str], folders: list[str], installs: list[StInstall], parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Sync a folder with SillyTavern")
        self.installs = installs
        self.vault = QComboBox()
        self.vault.addItems(vaults)
        self.folder = QComboBox()
        self.folder.setEditable(True)
        self.folder.addItem("")
        self.folder.addItems(folders)
        self.install = QComboBox()
        for st in installs:
            self.install.addItem(f"{st.root} (SillyTavern {st.version or '?'})", str(st.root))
        self.user = QComboBox()
        self.book = QLineEdit()
        self.book.setPlaceholderText("the book's name in SillyTavern")
        self.enabled = QCheckBox("Sync now and after every change")
        self.enabled.setChecked(True)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Vault", self.vault)
        form.addRow("Folder", self.folder)
        form.addRow("SillyTavern", self.install)
        form.addRow("User", self.user)
        form.addRow("Book", self.book)
        form.addRow("", self.enabled)
        form.addRow(self.problem)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._check)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.install.currentIndexChanged.connect(self._fill_users)
        self.folder.currentTextChanged.connect(self._suggest_book)
        self._fill_users()
        if not installs:
            self.problem.setText("No SillyTavern install was found. Add its folder in the SillyTavern view (Ctrl+5).")
            buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
        self.config: WiSyncConfig | None = None

    def _fill_users(self, *_: Any) -> None:
        self.user.clear()
        index = self.install.currentIndex()
        if 0 <= index < len(self.installs):
            self.user.addItems(list(self.installs[index].users) or ["default-user"])

    def _suggest_book(self, folder: str) -> None:
        if not self.book.isModified():
            self.book.setText(folder.rstrip("/").rsplit("/", 1)[-1] or self.vault.currentText())

    def _check(self) -> None:
        try:
            self.config = WiSyncConfig.from_json(
                {
                    "book": self.book.text() or self.vault.currentText(),
                    "vault": self.vault.currentText(),
                    "folder": self.folder.currentText(),
                    "st_root": self.install.currentData() or "",
                    "st_user": self.user.currentText() or "default-user",
                    "enabled": self.enabled.isChecked(),
                }
            )
        except DleError as exc:
            self.problem.setText(f"<b>{escape(str(exc))}</b>")
            return
        self.accept()


class WorldInfoSyncDialog(QDialog):
    """The syncs of the settings; changes go out through `applyRequested` (the app saves them)."""

    applyRequested = Signal(object, dict)  # settings, new keys (none here)

    def __init__(self, bridge: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("World Info sync with SillyTavern")
        self.setObjectName("wi-sync-dialog")
        self.resize(960, 560)
        self.configs: list[WiSyncConfig] = list(bridge.settings.wi_syncs)
        self.outcomes: dict[str, dict[str, Any]] = {}
        intro = QLabel(
            "Each folder below is written into a SillyTavern World Info book within seconds of a change, so "
            "SillyTavern's own engine (and any frontend that reads its books) uses the vault's lore. A book "
            "DLE Desktop did not create is never overwritten; one edited in SillyTavern waits for your choice."
        )
        intro.setWordWrap(True)
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["On", "Book", "Vault folder", "SillyTavern", "Last sync"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        for col, width in ((1, 170), (2, 200), (3, 280)):
            header.resizeSection(col, width)
        self.detail = QTextBrowser()
        self.detail.setObjectName("wi-sync-detail")
        self.add_button = QPushButton("Add…")
        self.remove_button = QPushButton("Remove")
        self.toggle_button = QPushButton("Turn off")
        self.sync_button = QPushButton("Sync now")
        self.vault_wins = QPushButton("Keep the vault's version")
        self.st_wins = QPushButton("Take SillyTavern's edits")
        for b in (self.vault_wins, self.st_wins):
            b.setVisible(False)
        row = QHBoxLayout()
        for b in (self.add_button, self.remove_button, self.toggle_button, self.sync_button):
            row.addWidget(b)
        row.addStretch(1)
        resolve = QHBoxLayout()
        resolve.addStretch(1)
        resolve.addWidget(self.vault_wins)
        resolve.addWidget(self.st_wins)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 2)
        layout.addLayout(row)
        layout.addWidget(self.detail, 1)
        layout.addLayout(resolve)
        layout.addWidget(close)
        self.add_button.clicked.connect(lambda *_: soon(self.add))
        self.remove_button.clicked.connect(self.remove)
        self.toggle_button.clicked.connect(self.toggle)
        self.sync_button.clicked.connect(lambda *_: soon(self.sync_selected))
        self.vault_wins.clicked.connect(lambda *_: soon(lambda: self.resolve("vault")))
        self.st_wins.clicked.connect(lambda *_: soon(lambda: self.resolve("sillytavern")))
        self.table.itemSelectionChanged.connect(self._show_selected)
        if hasattr(bridge, "wiSync"):
            bridge.wiSync.connect(self.on_outcome)
        self._fill()
        soon(self.load_outcomes)

    # -- the list ------------------------------------------------------------------------------
    def _fill(self) -> None:
        selected = self._selected_index()
        self.table.setRowCount(len(self.configs))
        for i, c in enumerate(self.configs):
            outcome = self.outcomes.get(c.book_path)
            last = "—"
            if outcome is not None:
                last = f"{STATUS_WORDS.get(outcome['status'], outcome['status'])}, {_ago(outcome['at'])}"
            cells = ("✓" if c.enabled else "", c.book, f"{c.vault}: {c.folder or '(every folder)'}", c.book_path, last)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(outcome["message"] if outcome and col == 4 else text)
                self.table.setItem(i, col, item)
        if self.configs:
            self.table.selectRow(min(max(selected, 0), len(self.configs) - 1))
        self._show_selected()

    def _selected_index(self) -> int:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return rows[0].row() if rows else -1

    def _selected(self) -> WiSyncConfig | None:
        i = self._selected_index()
        return self.configs[i] if 0 <= i < len(self.configs) else None

    def _show_selected(self) -> None:
        c = self._selected()
        for b in (self.remove_button, self.toggle_button, self.sync_button):
            b.setEnabled(c is not None)
        conflict = False
        if c is None:
            self.detail.setHtml("<p>No sync yet. <b>Add…</b> chooses a folder and a SillyTavern book.</p>")
        else:
            self.toggle_button.setText("Turn off" if c.enabled else "Turn on")
            self.sync_button.setEnabled(c.enabled)
            outcome = self.outcomes.get(c.book_path)
            parts = [f"<p><b>{escape(c.book)}</b> ← {escape(c.vault)}: {escape(c.folder or '(every folder)')}</p>"]
            if outcome is None:
                parts.append("<p>Not synced in this session yet.</p>" if c.enabled else "<p>Off.</p>")
            else:
                parts.append(f"<p>{escape(outcome['message'])}</p>")
                conflict = outcome["status"] == "conflict"
                if outcome.get("changes"):
                    rows = "".join(
                        f"<tr><td>{escape(ch['title'])}</td><td>{escape(ch['kind'])}</td>"
                        f"<td>{escape(', '.join(ch['fields']))}</td></tr>"
                        for ch in outcome["changes"]
                    )
                    parts.append(
                        "<table cellspacing=6><tr><th align=left>Entry</th><th align=left>What</th>"
                        f"<th align=left>Fields</th></tr>{rows}</table>"
                    )
            self.detail.setHtml("".join(parts))
        self.vault_wins.setVisible(conflict)
        self.st_wins.setVisible(conflict)

    def on_outcome(self, outcome: dict[str, Any]) -> None:
        self.outcomes[outcome["book_path"]] = outcome
        self._fill()

    async def load_outcomes(self) -> None:
        try:
            for outcome in await self.bridge.wi_sync_outcomes():
                self.outcomes[outcome["book_path"]] = outcome
        except (DleError, OSError, AttributeError):
            return
        self._fill()

    # -- changes ------------------------------------------------------------------------------
    def _apply(self) -> None:
        self.applyRequested.emit(self.bridge.settings.replace(wi_syncs=[c.to_json() for c in self.configs]), {})
        self._fill()

    async def add(self) -> None:
        installs = await asyncio.to_thread(find_installs, list(self.bridge.settings.st_folders))
        vaults = [] if self.bridge.using_sample_vault else list(self.bridge.vault_names())
        try:
            folders = [f["path"] for f in await self.bridge.vault_folders() if f.get("path")]
        except (DleError, OSError):
            folders = []
        dialog = AddSyncDialog(vaults, sorted(set(folders)), installs, self)
        if not dialog.exec() or dialog.config is None:
            return
        if any(c.book_path == dialog.config.book_path for c in self.configs):
            self.detail.setHtml(f"<p><b>{escape(dialog.config.book)}</b> is already synced from another folder.</p>")
            return
        self.configs.append(dialog.config)
        self._apply()

    def remove(self) -> None:
        c = self._selected()
        if c is not None:
            # The book stays in SillyTavern: removing the sync stops the mirroring, it deletes nothing.
            self.configs.remove(c)
            self._apply()

    def toggle(self) -> None:
        i = self._selected_index()
        if 0 <= i < len(self.configs):
            c = self.configs[i]
            self.configs[i] = WiSyncConfig.from_json({**c.to_json(), "enabled": not c.enabled})
            self._apply()

    async def sync_selected(self) -> None:
        c = self._selected()
        if c is not None:
            await self._run(c, None)

    async def resolve(self, winner: str) -> None:
        c = self._selected()
        if c is not None:
            await self._run(c, winner)

    async def _run(self, config: WiSyncConfig, winner: str | None) -> None:
        self.detail.setHtml("<p>Syncing…</p>")
        try:
            outcome = await self.bridge.wi_sync_now(config.book_path, winner)
        except (DleError, OSError) as exc:
            self.detail.setHtml(f"<p><b>Sync failed:</b> {escape(str(exc))}</p>")
            return
        self.on_outcome(outcome)
