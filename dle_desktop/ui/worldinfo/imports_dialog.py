"""The World Info imports in the write history, each undone as a whole: an import's dialog may be
long closed (or the import made with `dle-desktop wi import` or SillyTavern's /dle-import) when
the user decides to take it back."""

from __future__ import annotations

import time
from html import escape
from typing import Any

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.ui.widgets.async_util import soon


def _status(summary: Any) -> str:
    if summary.fully_undone:
        return "undone"
    if summary.undone:
        return f"{summary.undone} of {summary.writes} undone"
    return "in the vault"


class WorldInfoImportsDialog(QDialog):
    def __init__(self, bridge: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("World Info imports")
        self.setObjectName("wi-imports-dialog")
        self.resize(760, 420)
        self.imports: list[Any] = []
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["When", "Vault", "Notes", "Now"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.message = QLabel("Each import is one step: Undo takes all of its notes back.")
        self.message.setWordWrap(True)
        self.undo_button = QPushButton("Undo this import")
        self.undo_button.setEnabled(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.undo_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        self.table.itemSelectionChanged.connect(self._selected_changed)
        self.undo_button.clicked.connect(lambda *_: soon(self.undo_selected))

    async def load(self) -> None:
        try:
            self.imports = list(await self.bridge.wi_recent_imports())
        except DleError as exc:
            self.message.setText(f"The imports could not be listed: {exc}")
            return
        self.table.setRowCount(len(self.imports))
        for row, summary in enumerate(self.imports):
            folder = summary.first_path.rsplit("/", 1)[0] if "/" in summary.first_path else ""
            cells = (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.started)),
                f"{summary.vault}{': ' + folder if folder else ''}",
                str(summary.writes),
                _status(summary),
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(summary.batch)
                self.table.setItem(row, column, item)
        if not self.imports:
            self.message.setText("No World Info import is in the write history yet.")
        else:
            self.table.selectRow(0)
        self._selected_changed()  # the same row selected again emits nothing

    def _selected(self) -> Any:
        rows = self.table.selectionModel().selectedRows()
        return self.imports[rows[0].row()] if rows else None

    def _selected_changed(self) -> None:
        summary = self._selected()
        self.undo_button.setEnabled(summary is not None and not summary.fully_undone)

    async def undo_selected(self) -> None:
        summary = self._selected()
        if summary is None:
            return
        try:
            undo = await self.bridge.wi_undo_import(summary.batch)
        except DleError as exc:
            self.message.setText(f"<b>Not undone:</b> {escape(str(exc))}")
            return
        text = f"Undone: {len(undo.undone)} notes of the import were removed or put back."
        kept = [*(c.path for c in undo.conflicts), *(str(r) for r in undo.refused)]
        if kept:
            text += f" Left as they are (changed since the import): {'; '.join(kept)}"
        await self.load()
        self.message.setText(escape(text))
