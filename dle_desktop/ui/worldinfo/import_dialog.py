"""Import SillyTavern World Info: pick a book (an installed one, a file, or pasted JSON), see what
every entry becomes before anything is written, import with progress and Cancel, undo it all."""

from __future__ import annotations

import asyncio
from html import escape
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
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
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.st_bridge.install import find_installs
from dle_desktop.ui.librarian.dialogs import diff_html
from dle_desktop.ui.widgets.async_util import soon

#: What each collision choice does, in the dialog's words.
COLLISIONS = (
    ("rename", "Keep both: the new note gets “_imported” in its name"),
    ("skip", "Skip the entry: the existing note stays"),
    ("overwrite", "Overwrite the existing note (shown as a diff)"),
)
ACTION_WORDS = {
    "create": "new note",
    "rename": "new note, renamed (the name is taken)",
    "skip": "skipped (the note exists)",
    "overwrite": "overwrites the note",
}
SOURCES = ("SillyTavern book", "File (JSON or character card PNG)", "Pasted JSON")
_ImportErrors = (DleError, ValueError, OSError)


class PlanModel(QAbstractTableModel):
    """One row per entry of the plan: entry, the file it becomes, what happens, warnings."""

    HEADERS = ("Entry", "File", "What happens", "Warnings")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Any] = []

    def set_rows(self, rows: list[Any]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return row.title
            if col == 1:
                return row.path
            if col == 2:
                return ACTION_WORDS.get(row.action, row.action)
            return "; ".join(row.warnings) if row.warnings else ""
        if role == Qt.ItemDataRole.ToolTipRole and col == 3 and row.warnings:
            return "\n".join(row.warnings)
        return None


def plan_summary(plan: Any) -> str:
    """One line: how many notes are made, renamed, skipped, overwritten, and what needs a look."""
    counts: dict[str, int] = {}
    for row in plan.rows:
        counts[row.action] = counts.get(row.action, 0) + 1
    parts = [f"{counts.get('create', 0)} new notes"]
    for action, word in (("rename", "renamed"), ("overwrite", "overwritten"), ("skip", "skipped")):
        if counts.get(action):
            parts.append(f"{counts[action]} {word}")
    warned = sum(1 for r in plan.rows if r.warnings)
    kept = sum(1 for r in plan.rows if getattr(r, "kept", ()))
    where = f"into “{plan.folder}”" if plan.folder else "into the vault's top folder"
    text = f"{', '.join(parts)} {where} of {plan.vault}."
    if warned:
        text += f" {warned} entries have warnings (see the last column)."
    if kept:
        text += f" {kept} carry SillyTavern fields kept for the way back but not acted on here."
    if plan.problems:
        text += " " + " ".join(plan.problems)
    return text


class WorldInfoImportDialog(QDialog):
    """The whole import in one window. `imported` carries the result (with its batch id) after a
    finished import; `summarizeRequested` asks the window to summarize the entries without one."""

    imported = Signal(object)
    summarizeRequested = Signal()

    def __init__(self, bridge: Any, parent: QWidget | None = None, folder: str = "") -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.setWindowTitle("Import SillyTavern World Info")
        self.setObjectName("wi-import-dialog")
        self.resize(980, 640)
        self.book: Any = None
        self.plan: Any = None
        self.result: Any = None
        self.books: list[Any] = []
        self._task: asyncio.Future[Any] | None = None

        self.source = QComboBox()
        self.source.addItems(SOURCES)
        self.book_combo = QComboBox()
        self.book_combo.setMinimumWidth(360)
        self.refresh_books = QPushButton("Refresh")
        self.file_edit = QLineEdit()
        self.file_edit.setPlaceholderText("A World Info .json export, or a character card (.png or .json)")
        self.browse = QPushButton("Browse…")
        self.paste = QPlainTextEdit()
        self.paste.setPlaceholderText('Paste a World Info book here: {"entries": {…}}')
        self.paste.setMaximumHeight(120)
        self.pages = QStackedWidget()
        for widgets in ((self.book_combo, self.refresh_books), (self.file_edit, self.browse), (self.paste,)):
            page = QWidget()
            row = QHBoxLayout(page)
            row.setContentsMargins(0, 0, 0, 0)
            for w in widgets:
                row.addWidget(w, 1 if w is widgets[0] else 0)
            self.pages.addWidget(page)
        self.read_button = QPushButton("Read")
        self.read_button.setToolTip("Read the book and show what the import would do (Ctrl+R)")

        self.vault_combo = QComboBox()
        self.folder_edit = QLineEdit(folder)
        self.folder_edit.setPlaceholderText("a folder inside the vault; empty: the vault's top folder")
        self.collision = QComboBox()
        for key, words in COLLISIONS:
            self.collision.addItem(words, key)

        self.summary = QLabel("Choose a book, then Read.")
        self.summary.setWordWrap(True)
        self.summary.setObjectName("wi-import-summary")
        self.model = PlanModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        for col, width in enumerate((220, 260, 200)):
            header.resizeSection(col, width)
        self.detail = QTextBrowser()
        self.detail.setObjectName("wi-import-detail")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setSizes([380, 160])

        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setFormat("%v of %m notes")
        self.import_button = QPushButton("Import")
        self.import_button.setEnabled(False)
        self.import_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.undo_button = QPushButton("Undo the import")
        self.undo_button.setVisible(False)
        self.summarize_button = QPushButton("Summarize…")
        self.summarize_button.setVisible(False)
        self.summarize_button.setToolTip("Ask the AI for a summary of each imported entry (the Librarian)")
        self.close_button = QPushButton("Close")
        self.close_button.setVisible(False)

        form = QFormLayout()
        src_row = QHBoxLayout()
        src_row.addWidget(self.source)
        src_row.addWidget(self.pages, 1)
        src_row.addWidget(self.read_button)
        form.addRow("Source", src_row)
        form.addRow("Into vault", self.vault_combo)
        form.addRow("Folder", self.folder_edit)
        form.addRow("A note exists", self.collision)
        buttons = QHBoxLayout()
        buttons.addWidget(self.progress, 1)
        buttons.addStretch(0)
        for b in (self.summarize_button, self.undo_button, self.import_button, self.cancel_button, self.close_button):
            buttons.addWidget(b)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addLayout(buttons)

        self.source.currentIndexChanged.connect(self._show_page)
        self.source.currentIndexChanged.connect(lambda *_: self._invalidate())
        # The list of installed books may arrive after a file was read: only a change of the chosen
        # book while books are the source makes the preview stale.
        self.book_combo.currentIndexChanged.connect(
            lambda *_: self._invalidate() if self.source.currentIndex() == 0 and self.result is None else None
        )
        self.refresh_books.clicked.connect(lambda *_: soon(self.load_books))
        self.browse.clicked.connect(lambda *_: self._browse())
        self.read_button.clicked.connect(lambda *_: soon(self.read_and_plan))
        read_again = QShortcut(QKeySequence("Ctrl+R"), self)
        read_again.activated.connect(lambda: soon(self.read_and_plan))
        for signal in (self.vault_combo.currentIndexChanged, self.collision.currentIndexChanged):
            signal.connect(lambda *_: soon(self.replan))
        self.folder_edit.editingFinished.connect(lambda: soon(self.replan))
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._show_row(cur.row()))
        self.import_button.clicked.connect(lambda *_: soon(self.run_import))
        self.cancel_button.clicked.connect(self._cancel_or_close)
        self.close_button.clicked.connect(self.accept)
        self.undo_button.clicked.connect(lambda *_: soon(self.undo))
        self.summarize_button.clicked.connect(self._summarize)
        if hasattr(bridge, "wiImport"):
            bridge.wiImport.connect(self._show_progress)
        self._show_page(0)
        self._fill_vaults()

    # -- choices -----------------------------------------------------------------------------
    def _show_page(self, index: int) -> None:
        # A stacked widget is as tall as its tallest page (the paste box): the hidden pages are
        # told to take no room, so the one-line choices keep one line.
        for i in range(self.pages.count()):
            policy = QSizePolicy.Policy.Preferred if i == index else QSizePolicy.Policy.Ignored
            page = self.pages.widget(i)
            if page is not None:
                page.setSizePolicy(policy, policy)
        self.pages.setCurrentIndex(index)
        self.pages.adjustSize()

    def _fill_vaults(self) -> None:
        # Notes are written into folder vaults and Obsidian REST vaults alike; the bundled sample is read-only.
        names = [] if self.bridge.using_sample_vault else list(self.bridge.vault_names())
        self.vault_combo.blockSignals(True)
        self.vault_combo.clear()
        self.vault_combo.addItems(names)
        self.vault_combo.blockSignals(False)
        if not names:
            self.summary.setText(
                "There is no vault to import into: the bundled sample vault is read-only. "
                "Add your own vault folder (File → Add vault folder…) first."
            )
            self.read_button.setEnabled(False)

    async def load_books(self) -> None:
        """Every World Info book of every SillyTavern install found (and user), with its size."""
        self.book_combo.clear()
        self.books = []
        try:
            installs = await asyncio.to_thread(find_installs, list(self.bridge.settings.st_folders))
            for st in installs:
                for user in st.users or ("default-user",):
                    for book in await self.bridge.wi_list_books(st.root, user, st.data_root):
                        self.books.append((st, user, book))
        except _ImportErrors as exc:
            self.summary.setText(f"The SillyTavern books could not be listed: {exc}")
        several = len({(st.root, user) for st, user, _b in self.books}) > 1
        for st, user, book in self.books:
            where = f" ({user} in {st.root})" if several else ""
            if book.error:
                self.book_combo.addItem(f"{book.name} — unreadable: {book.error}{where}", None)
            else:
                self.book_combo.addItem(f"{book.name} — {book.entries} entries{where}", str(book.path))
        if not self.books:
            self.book_combo.addItem("No SillyTavern books found (choose File instead)", None)
            if self.source.currentIndex() == 0:
                self.source.setCurrentIndex(1)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "World Info book or character card", "", "Lorebooks and cards (*.json *.png);;All files (*)"
        )
        if path:
            self.file_edit.setText(path)
            soon(self.read_and_plan)

    def _invalidate(self) -> None:
        self.book = None
        self.plan = None
        self.model.set_rows([])
        self.import_button.setEnabled(False)

    # -- reading and planning -----------------------------------------------------------------
    async def read_and_plan(self) -> None:
        self._invalidate()
        self.summary.setText("Reading…")
        try:
            self.book = await self._read()
        except _ImportErrors as exc:
            self.summary.setText(f"<b>Nothing can be imported:</b> {escape(str(exc))}")
            return
        if self.book is None:
            return
        if not self.folder_edit.text().strip() and self.source.currentIndex() == 0:
            self.folder_edit.setText(self.book.name)
        await self.replan()

    async def _read(self) -> Any:
        index = self.source.currentIndex()
        if index == 0:
            path = self.book_combo.currentData()
            if not path:
                self.summary.setText("Choose a readable SillyTavern book first.")
                return None
            return await self.bridge.wi_read_book(path)
        if index == 1:
            path = self.file_edit.text().strip()
            if not path:
                self.summary.setText("Choose a file first (Browse…).")
                return None
            return await self.bridge.wi_read_book(path)
        text = self.paste.toPlainText()
        if not text.strip():
            self.summary.setText("Paste a World Info book's JSON first.")
            return None
        return await self.bridge.wi_read_book(text.encode("utf-8"), "Pasted book")

    async def replan(self) -> None:
        if self.book is None or self.result is not None:
            return
        vault = self.vault_combo.currentText()
        try:
            self.plan = await self.bridge.wi_plan_import(
                self.book, vault, self.folder_edit.text().strip(), self.collision.currentData()
            )
        except _ImportErrors as exc:
            self.plan = None
            self.model.set_rows([])
            self.summary.setText(f"<b>Nothing can be imported:</b> {escape(str(exc))}")
            self.import_button.setEnabled(False)
            return
        self.model.set_rows(list(self.plan.rows))
        problems = list(self.book.problems)
        text = escape(plan_summary(self.plan))
        if self.plan.notes:
            text += "<br>" + escape(" ".join(self.plan.notes))
        if problems:
            text += "<br><b>Left out:</b> " + escape("; ".join(problems))
        self.summary.setText(text)
        writes = sum(1 for r in self.plan.rows if r.action != "skip")
        self.import_button.setEnabled(writes > 0)
        self.import_button.setText(f"Import {writes} notes" if writes else "Import")
        if self.plan.rows:
            self.table.selectRow(0)

    def _show_row(self, row: int) -> None:
        if self.plan is None or not 0 <= row < len(self.plan.rows):
            self.detail.clear()
            return
        r = self.plan.rows[row]
        parts = [f"<b>{escape(r.title)}</b> → {escape(r.path)}"]
        for w in r.warnings:
            parts.append(f"<div style='color:#9a6700'>⚠ {escape(w)}</div>")
        if r.action == "overwrite" and r.diff:
            parts.append(diff_html(r.diff))
        elif r.action != "skip":
            parts.append(f"<pre>{escape(r.text)}</pre>")
        self.detail.setHtml("".join(parts))

    # -- writing ------------------------------------------------------------------------------
    async def run_import(self) -> None:
        if self.plan is None:
            return
        plan = self.plan
        self._busy(True, len(plan.rows))
        try:
            self.result = await self.bridge.wi_run_import(plan)
        except _ImportErrors as exc:
            self._busy(False, 0)
            self.summary.setText(f"<b>{escape(str(exc)[:1].upper() + str(exc)[1:])}</b>")
            return
        self._busy(False, 0)
        self._finished(plan)

    def _show_progress(self, event: dict[str, Any]) -> None:
        if not self.progress.isVisible():
            return
        phase = event.get("phase")
        self.progress.setRange(0, max(1, int(event.get("total", 1))))
        self.progress.setValue(int(event.get("done", 0)))
        self.progress.setFormat("Taking back… %v of %m" if phase == "undoing" else "%v of %m notes")

    def _busy(self, busy: bool, total: int) -> None:
        self.progress.setVisible(busy)
        if busy:
            self.progress.setRange(0, total)
            self.progress.setValue(0)
        for w in (
            self.import_button,
            self.read_button,
            self.source,
            self.vault_combo,
            self.folder_edit,
            self.collision,
        ):
            w.setEnabled(not busy)
        self.cancel_button.setText("Cancel import" if busy else "Cancel")

    def _finished(self, plan: Any) -> None:
        result = self.result
        if result.cancelled:
            left = f" These could not be taken back: {'; '.join(result.left)}" if result.left else ""
            self.summary.setText(
                escape(f"The import was cancelled; the {len(result.removed)} notes it had written were removed.{left}")
            )
            self.result = None
            self.import_button.setEnabled(True)
            return
        written = len(result.written)
        folder = plan.folder or "the vault's top folder"
        self.summary.setText(
            f"Imported {written} notes into “{escape(folder)}” of {escape(plan.vault)}"
            + (f"; {len(result.skipped)} skipped" if result.skipped else "")
            + ". Undo removes them all."
        )
        self.import_button.setVisible(False)
        self.cancel_button.setVisible(False)
        self.close_button.setVisible(True)
        self.undo_button.setVisible(written > 0)
        self.summarize_button.setVisible(written > 0)
        self.summarize_button.setText(f"Summarize {written} entries…")
        self.imported.emit(result)

    async def undo(self) -> None:
        if self.result is None:
            return
        try:
            undo = await self.bridge.wi_undo_import(self.result.batch)
        except _ImportErrors as exc:
            self.summary.setText(f"<b>Undo failed:</b> {escape(str(exc))}")
            return
        text = f"Undone: {len(undo.undone)} notes of the import were removed or put back."
        kept = [*(c.path for c in undo.conflicts), *(str(r) for r in undo.refused)]
        if kept:
            text += f" Left as they are (changed since the import): {'; '.join(kept)}"
        self.summary.setText(escape(text))
        self.undo_button.setVisible(False)
        self.summarize_button.setVisible(False)

    def _summarize(self) -> None:
        self.summarizeRequested.emit()
        self.accept()

    def _cancel_or_close(self) -> None:
        if self.progress.isVisible():
            self.bridge.wi_cancel_import()
            self.cancel_button.setText("Cancelling…")
            return
        self.reject()
