"""Export the vault (or a folder or tag of it) as a SillyTavern World Info book: the report says,
entry by entry, what World Info cannot express, before the file is saved."""

from __future__ import annotations

from html import escape
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.ui.widgets.async_util import soon

ALL_FOLDERS = "(every folder)"


class LossModel(QAbstractTableModel):
    """The entries that lose something on the way to World Info, and what."""

    HEADERS = ("Entry", "Note", "What World Info cannot express")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lines: list[Any] = []

    def set_lines(self, lines: list[Any]) -> None:
        self.beginResetModel()
        self.lines = [line for line in lines if line.lost]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.lines)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else 3

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        line = self.lines[index.row()]
        return (line.title, line.path, "; ".join(line.lost))[index.column()]


class WorldInfoExportDialog(QDialog):
    def __init__(self, bridge: Any, parent: QWidget | None = None, folder: str = "") -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("Export as a SillyTavern World Info book")
        self.setObjectName("wi-export-dialog")
        self.resize(900, 560)
        self.book: dict[str, Any] | None = None
        self._wanted_folder = folder
        self.vault_combo = QComboBox()
        self.folder_combo = QComboBox()
        self.folder_combo.setEditable(True)
        self.tag_edit = QLineEdit()
        self.tag_edit.setPlaceholderText("only notes with this tag (optional)")
        self.summary = QLabel("Choose what to export.")
        self.summary.setWordWrap(True)
        self.summary.setObjectName("wi-export-summary")
        self.model = LossModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().resizeSection(0, 220)
        self.table.horizontalHeader().resizeSection(1, 260)
        self.save_button = QPushButton("Save as…")
        self.save_button.setEnabled(False)
        self.save_button.setDefault(True)
        close = QPushButton("Close")
        form = QFormLayout()
        form.addRow("Vault", self.vault_combo)
        form.addRow("Folder", self.folder_combo)
        form.addRow("Tag", self.tag_edit)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.save_button)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        for name in self._vault_names():
            self.vault_combo.addItem(name)
        self.vault_combo.currentIndexChanged.connect(lambda *_: soon(self.load_folders))
        self.folder_combo.currentIndexChanged.connect(lambda *_: soon(self.preview))
        typed = self.folder_combo.lineEdit()
        if typed is not None:
            typed.editingFinished.connect(lambda: soon(self.preview))
        self.tag_edit.editingFinished.connect(lambda: soon(self.preview))
        self.save_button.clicked.connect(lambda *_: soon(self.save))
        close.clicked.connect(self.accept)

    def _vault_names(self) -> list[str]:
        return list(self.bridge.vault_names())

    async def load_folders(self) -> None:
        try:
            folders = await self.bridge.vault_folders()
        except (DleError, OSError) as exc:
            self.summary.setText(f"The folders could not be listed: {exc}")
            folders = []
        self.folder_combo.blockSignals(True)
        self.folder_combo.clear()
        self.folder_combo.addItem(ALL_FOLDERS, "")
        for f in folders:  # the folders of every open vault (a folder missing from this one exports nothing)
            if f.get("path"):
                self.folder_combo.addItem(f"{f['path']} ({f.get('entries', '?')} entries)", f["path"])
        if self._wanted_folder:  # opened for one folder (the Vault view's context menu)
            index = self.folder_combo.findData(self._wanted_folder)
            if index >= 0:
                self.folder_combo.setCurrentIndex(index)
            else:
                self.folder_combo.setEditText(self._wanted_folder)
            self._wanted_folder = ""
        self.folder_combo.blockSignals(False)
        await self.preview()

    def _folder(self) -> str:
        data = self.folder_combo.currentData()
        if isinstance(data, str) and self.folder_combo.currentText() == self.folder_combo.itemText(
            self.folder_combo.currentIndex()
        ):
            return data
        typed = self.folder_combo.currentText().strip()
        return "" if typed == ALL_FOLDERS else typed

    async def preview(self) -> None:
        self.save_button.setEnabled(False)
        try:
            book, report = await self.bridge.wi_export(
                vault=self.vault_combo.currentText() or None,
                folder=self._folder() or None,
                tag=self.tag_edit.text().strip() or None,
            )
        except (DleError, ValueError, OSError) as exc:
            self.book = None
            self.model.set_lines([])
            self.summary.setText(f"<b>Nothing to export:</b> {escape(str(exc))}")
            return
        self.book = book
        self.model.set_lines(list(report.lines))
        lossy = self.model.rowCount()
        text = f"{report.entries} entries become a World Info book."
        if lossy:
            text += (
                f" {lossy} of them use what World Info cannot express (listed below): in SillyTavern without "
                "the bridge they fire by their keys alone."
            )
        else:
            text += " Everything they use has a World Info equivalent."
        self.summary.setText(escape(text))
        self.save_button.setEnabled(report.entries > 0)

    async def save(self) -> None:
        if self.book is None:
            return
        default = (self._folder().rsplit("/", 1)[-1] or self.vault_combo.currentText() or "lorebook") + ".json"
        path, _ = QFileDialog.getSaveFileName(self, "Save the World Info book", default, "World Info book (*.json)")
        if not path:
            return
        try:
            await self.bridge.wi_save_book(path, self.book)
        except (OSError, DleError) as exc:
            self.summary.setText(f"<b>Not saved:</b> {escape(str(exc))}")
            return
        self.summary.setText(escape(f"Saved {path}. In SillyTavern: World Info → Import, then choose this file."))
