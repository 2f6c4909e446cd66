"""The Vault view: every entry in a filterable table (with its use over every chat), the selected
entry in full, and health."""

from __future__ import annotations

import heapq
from html import escape
from urllib.parse import unquote

from PySide6.QtCore import QByteArray, QItemSelectionModel, QModelIndex, Qt, QUrl, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSplitter,
    QStyle,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.entry import Entry
from dle_desktop.core.health import HealthReport
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.ui.librarian.ai_notice import AiNotice
from dle_desktop.ui.vault.chat_trial_panel import ChatTrialPanel
from dle_desktop.ui.vault.entries_model import COLUMNS, UID_ROLE, USAGE_COLUMNS, EntriesModel, PreparedRows
from dle_desktop.ui.vault.entries_proxy import EntriesFilter
from dle_desktop.ui.vault.entry_detail import EntryHistory, render_entry
from dle_desktop.ui.vault.health_panel import HealthPanel
from dle_desktop.ui.vault.sort_ahead import SortOrdersAhead
from dle_desktop.ui.vault.usage_columns import ColumnMenu, UsageReader, UsageRefresher, UsageRoom, set_up_columns
from dle_desktop.ui.widgets.cut_text import CutTextTips
from dle_desktop.ui.widgets.prompt_table import PromptPaintTable
from dle_desktop.ui.widgets.semantic_strip import SemanticStrip

#: Where the splitters are kept; "_v2" since the 1200×760 layout fix: the sizes saved before were
#: forced by Test a chat's width (the entries table squeezed), not chosen, so they are not restored.
MAIN_SPLIT_KEY, RIGHT_SPLIT_KEY = "vault/main_split_v2", "vault/right_split_v2"

#: The Title column grows to the longest title once, up to this width (Keys stretch into the rest)
TITLE_MAX = 260
#: Room beside a title's text in its cell (the cell's own margins come from the style)
TITLE_PADDING = 2
#: Keys never narrower than this (a key and a half): a narrow window takes the room from Title and Folder
KEYS_MIN = 120

WELCOME = """<h2>DLE Desktop</h2><p>Select an entry on the left to see its fields, links and the exact
text that would be injected. The health check below lists problems in the vault, each with what to do.</p>
<p>Lore in SillyTavern World Info books? <a href="wi:import">Import them</a> (World Info menu, Ctrl+Shift+I);
right-click a folder's entry to import into that folder or export it as a book.</p>"""


class VaultView(QWidget):
    selectionChangedUid = Signal(str)
    #: ("optimize-keys" | "summarize", uid): the Librarian proposes the change as a diff
    entryActionRequested = Signal(str, str)
    #: where the Channels view should open (from `ai_notice`): a channel, or "" for the profile list
    channelsRequested = Signal(str)
    #: World Info in or out of a folder ("" for the whole vault): the table's context menu
    worldInfoImportRequested = Signal(str)
    worldInfoExportRequested = Signal(str)
    #: the user typed, sorted, scrolled or chose a row: background work gives way a moment
    userActed = Signal()

    def __init__(self, parent=None, test_runner=None) -> None:
        super().__init__(parent)
        self.snapshot: IndexSnapshot | None = None
        #: The entry the user chose. The detail shows it while its row is visible; a filter that
        #: hides it, or a re-sync that misses its note, clears the row but keeps the choice, so it
        #: comes back with the row (an editor that saves by delete and re-create, a wider filter).
        self._chosen: Entry | None = None
        self._chosen_gone = False
        #: Qt moves the current row itself when rows go (a filter, a reset): not the user's choice.
        self._moving_rows = False
        self._title_fitted = False  # once per run, and never over widths the user kept from last time
        self.model = EntriesModel(self)
        self.proxy = EntriesFilter(self)
        self.proxy.setSourceModel(self.model)
        self.sort_ahead = SortOrdersAhead(self.model, self)

        self.filter = QLineEdit(placeholderText="Filter by title, key, folder or tag  (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter_changed)
        self.count_label = QLabel()
        self.no_matches = QLabel()
        self.no_matches.setWordWrap(True)
        self.no_matches.setTextFormat(Qt.TextFormat.PlainText)  # the filter is typed text, never markup
        self.no_matches.setStyleSheet("color: palette(placeholder-text); padding: 4px")
        self.no_matches.hide()

        self.table = PromptPaintTable()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col, width in enumerate((190, 110, 200, 58, 58, 64, 100)):
            self.table.setColumnWidth(col, width)
        set_up_columns(self.table)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        # Title, then Folder give way; Matched, Injected and Last injected are scrolled to when narrow
        self.keys_room = UsageRoom(self.table, 2, KEYS_MIN, ((0, 140), (1, 70)), USAGE_COLUMNS)
        self.usage = UsageRefresher(self.model, self)
        self.column_menu = ColumnMenu(self.table, always=0, auto=(6,))  # Vault shows itself with two vaults
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        self.tips = CutTextTips(self.table)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)

        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.anchorClicked.connect(self._anchor_clicked)
        self.detail.setHtml(WELCOME)
        self._detail_key: tuple[object, object, str] | None = None  # what the page shows (see _set_detail)

        self.health = HealthPanel()
        self.health.entryActivated.connect(self.select_entry)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.filter)
        lv.addWidget(self.no_matches)
        lv.addWidget(self.table)
        self.semantic_strip = SemanticStrip()
        lv.addWidget(self.semantic_strip)
        lv.addWidget(self.count_label)

        self.test_panel = ChatTrialPanel(test_runner)
        self.test_panel.entryRequested.connect(self.select_title)
        self.right_tabs = QTabWidget()
        self.right_tabs.setUsesScrollButtons(False)  # the splitter leaves room for every tab and the buttons
        self.right_tabs.addTab(self.detail, "Entry")
        self.right_tabs.addTab(self.test_panel, "Test a chat")
        # The selected note's last write by the app, taken back (conflict-checked); the history
        # itself is listed in the detail pane.
        self.undo_button = QPushButton("Undo last write")
        corner = QWidget()
        corner_row = QHBoxLayout(corner)
        corner_row.setContentsMargins(0, 0, 0, 0)
        self.optimize_button = QPushButton("Optimize keys")
        self.summarize_button = QPushButton("Summarize")
        for button, action in ((self.optimize_button, "optimize-keys"), (self.summarize_button, "summarize")):
            button.setToolTip(f"{button.text()}: the Librarian proposes a change to this entry as a diff")
            button.setEnabled(False)  # until an entry is shown

            def request(_: bool = False, a: str = action) -> None:
                uid = self.current_uid()
                if uid:
                    self.entryActionRequested.emit(a, uid)

            button.clicked.connect(request)
            corner_row.addWidget(button)
        corner_row.addWidget(self.undo_button)
        # What Optimize Keys or Summarize lacks to run (an AI connection), said beside the entry.
        self.ai_notice = AiNotice(closable=True)
        self.ai_notice.channelsRequested.connect(self.channelsRequested)
        self.right_tabs.setCornerWidget(corner, Qt.Corner.TopRightCorner)
        self.entry_history = EntryHistory(self.undo_button, self)
        self.entry_history.changed.connect(self._render_current)
        entry_side = QWidget()
        entry_column = QVBoxLayout(entry_side)
        entry_column.setContentsMargins(0, 0, 0, 0)
        entry_column.addWidget(self.ai_notice)
        entry_column.addWidget(self.right_tabs, 1)
        self.right_split = QSplitter(Qt.Orientation.Vertical)
        self.right_split.addWidget(entry_side)
        self.right_split.addWidget(self.health.pane)  # the list and the selected problem in full
        self.right_split.setStretchFactor(0, 3)
        self.right_split.setStretchFactor(1, 2)
        self.right_split.setSizes([470, 190])

        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(left)
        self.main_split.addWidget(self.right_split)
        self.main_split.setStretchFactor(0, 3)
        self.main_split.setStretchFactor(1, 2)
        self.main_split.setSizes([700, 480])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.main_split)

        # Ctrl+F belongs to the main window's Find action: a second binding here made Qt call the
        # key ambiguous and drop it.
        clear_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.filter)
        clear_key.activated.connect(lambda: self.filter.clear())
        # Signal to signal: no call into Python for each of them.
        for acted in (
            self.filter.textEdited,
            clear_key.activated,
            self.table.horizontalHeader().sectionClicked,
            self.table.verticalScrollBar().valueChanged,
            self.table.pressed,
            self.table.selectionModel().currentRowChanged,
        ):
            acted.connect(self.userActed)

    # -- data -------------------------------------------------------------------------------
    def sort_column(self) -> int:
        """The column the table is sorted by (-1: none), for rows prepared ahead (`PreparedRows`)."""
        return self.proxy.sortColumn()

    def set_snapshot(self, snapshot: IndexSnapshot, prepared: PreparedRows | None = None) -> None:
        """Show `snapshot`; `prepared` holds its rows when they were made off the GUI thread."""
        self.snapshot = snapshot
        self._moving_rows = True
        try:
            self.model.set_entries(snapshot.entries, prepared)
        finally:
            self._moving_rows = False
        self.table.setColumnHidden(6, len({e.vault for e in snapshot.entries}) <= 1)
        self.usage.request()  # a sync may follow generations: the counts are read again
        if not self._title_fitted and snapshot.entries:
            self._title_fitted = True
            self.table.setColumnWidth(0, max(self.table.columnWidth(0), min(self._title_width(snapshot), TITLE_MAX)))
        self._update_count()
        if self._chosen is not None:
            found = self._find_again(self._chosen, snapshot)
            self._chosen_gone = found is None
            if found is not None:
                self._chosen = found
            self._show_chosen()

    def _title_width(self, snapshot: IndexSnapshot) -> int:
        """The widest title's width. Measured with the font on the longest titles only: Qt's
        sizeHintForColumn asks the delegate about a thousand rows, or every row of a table not
        yet shown (half a second at 10,000 entries)."""
        longest = heapq.nlargest(64, (e.title for e in snapshot.entries), key=len)
        metrics = self.table.fontMetrics()
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1)
        return max(metrics.horizontalAdvance(t) for t in longest) + margin + TITLE_PADDING

    @staticmethod
    def _find_again(chosen: Entry, snapshot: IndexSnapshot) -> Entry | None:
        """The chosen entry in a new snapshot: by its file, else the one entry of its vault with
        its title (the note was renamed or moved)."""
        same = snapshot.by_uid.get(chosen.uid)
        if same is not None:
            return same
        titled = [e for e in snapshot.by_title.get(chosen.title.lower(), ()) if e.vault == chosen.vault]
        return titled[0] if len(titled) == 1 else None

    def set_health(self, report: HealthReport) -> None:
        self.health.show_report(report, self.snapshot.skipped if self.snapshot else ())

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count_label.setText(f"{shown} of {total} entries" if shown != total else f"{total} entries")
        text = self.filter.text().strip()
        self.no_matches.setText(f"No entry matches “{text}”. Esc clears the filter.")
        self.no_matches.setVisible(bool(total) and not shown)

    # -- selection --------------------------------------------------------------------------
    def current_uid(self) -> str | None:
        idx = self.table.currentIndex()
        return idx.data(UID_ROLE) if idx.isValid() else None

    def _visible_index(self, uid: str) -> QModelIndex:
        row = self.model.row_of(uid)
        return self.proxy.mapFromSource(self.model.index(row, 0)) if row is not None else QModelIndex()

    def select_uid(self, uid: str) -> bool:
        entry = self.snapshot.by_uid.get(uid) if self.snapshot is not None else None
        if entry is None or self.model.row_of(uid) is None:
            return False
        self._choose(entry)
        if not self._visible_index(uid).isValid():  # hidden by the filter: clear it so the entry can show
            self.filter.clear()  # shows the chosen entry
        else:
            self._show_chosen()
        return True

    def _choose(self, entry: Entry) -> None:
        changed = self._chosen is None or self._chosen.uid != entry.uid
        self._chosen, self._chosen_gone = entry, False
        if changed:
            self.selectionChangedUid.emit(entry.uid)

    def _show_chosen(self) -> None:
        """Select the chosen entry's row and show it; or, with no row to select, say why."""
        chosen = self._chosen
        if chosen is None:
            return
        index = QModelIndex() if self._chosen_gone else self._visible_index(chosen.uid)
        self._moving_rows = True
        try:
            if index.isValid():
                self.table.selectionModel().setCurrentIndex(
                    index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
                )
            else:
                self.table.selectionModel().clear()
        finally:
            self._moving_rows = False
        self._entry_buttons()
        if index.isValid():
            self.table.scrollTo(index)
            self._show(chosen.uid)
            return
        self.entry_history.clear()
        if self._chosen_gone:
            self._say(f"{chosen.title} is no longer in the vault ({chosen.vault} · {chosen.path} was removed).")
        else:
            self._say(f"{chosen.title} is hidden by the filter. Esc clears the filter.")

    def _entry_buttons(self) -> None:
        shown = self.current_uid() is not None
        self.optimize_button.setEnabled(shown)
        self.summarize_button.setEnabled(shown)

    def _say(self, text: str) -> None:
        self._detail_key = None
        self.detail.setHtml(f"{WELCOME}<p><i>{escape(text)}</i></p>")

    def show_entry(self, uid: str) -> bool:
        """Select the entry and show its details, whichever tab was in front."""
        if not self.select_uid(uid):
            return False
        self.right_tabs.setCurrentWidget(self.detail)
        return True

    def select_entry(self, vault: str, path: str) -> None:
        self.select_uid(f"{vault}\x00{path}")

    def select_title(self, vault: str, title: str) -> None:
        if self.snapshot is None:
            return
        hits = [e for e in self.snapshot.by_title.get(title.lower(), ()) if not vault or e.vault == vault]
        if hits:
            self.show_entry(hits[0].uid)

    def _current_changed(self, current, _previous) -> None:
        if self._moving_rows:
            return
        uid = current.data(UID_ROLE) if current.isValid() else None
        entry = self.snapshot.by_uid.get(uid) if self.snapshot is not None and uid else None
        if entry is None:
            return
        self._choose(entry)
        self._entry_buttons()
        self._show(entry.uid)
        if self.table.hasFocus():  # the user picked it: show it, even from the test tab
            self.right_tabs.setCurrentWidget(self.detail)

    def _show(self, uid: str) -> None:
        if self.snapshot is None:
            return
        entry = self.snapshot.by_uid.get(uid)
        if entry is not None:
            self.entry_history.show_note(entry.vault, entry.path)
            self._set_detail(entry)

    def _set_detail(self, entry: Entry) -> None:
        """Render the entry's page, unless that very page is on screen: every filter keystroke
        shows the chosen entry again, and laying out its page anew took tens of milliseconds."""
        assert self.snapshot is not None
        history = self.entry_history.html()
        key = (entry, self.snapshot, history)
        if self._detail_key is not None and all(a is b for a, b in zip(key, self._detail_key, strict=True)):
            return
        self._detail_key = key
        self.detail.setHtml(render_entry(entry, self.snapshot, history))

    def _render_current(self) -> None:
        uid = self.current_uid()
        entry = self.snapshot.by_uid.get(uid) if self.snapshot is not None and uid else None
        if entry is not None and self.snapshot is not None and self.entry_history.note == (entry.vault, entry.path):
            self._set_detail(entry)

    def set_write_access(self, access) -> None:
        """Where the entry detail reads write history and undoes writes (the engine's note writer)."""
        self.entry_history.set_access(access)
        uid = self.current_uid()
        if uid:
            self._show(uid)

    def _table_menu(self, pos) -> None:
        """Right-click on an entry: World Info in or out of its folder."""
        entry = self.model.entry(self.proxy.mapToSource(self.table.indexAt(pos)).row())
        folder = (entry.folder or "") if entry is not None else ""
        where = f"“{folder}”" if folder else "the vault's top folder"
        menu = QMenu(self.table)
        menu.addAction(f"Import World Info into {where}…", lambda: self.worldInfoImportRequested.emit(folder))
        menu.addAction(
            f"Export {where if folder else 'the vault'} as World Info…",
            lambda: self.worldInfoExportRequested.emit(folder),
        )
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def _anchor_clicked(self, url: QUrl) -> None:
        text = url.toString()
        if text == "wi:import":
            self.worldInfoImportRequested.emit("")
        elif text.startswith("entry:"):
            self.select_uid(unquote(text[len("entry:") :]))

    def _filter_changed(self, text: str) -> None:
        self._moving_rows = True
        try:
            self.proxy.set_text(text)
        finally:
            self._moving_rows = False
        self._update_count()
        self._show_chosen()

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    # -- each entry's use over every chat ---------------------------------------------------------
    def set_usage_reader(self, reader: UsageReader | None) -> None:
        """Where the Matched, Injected and Last injected columns are read from (the bridge's analytics)."""
        self.usage.reader = reader
        self.usage.request()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.usage.request()
        self.usage.while_shown.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.usage.while_shown.stop()

    # -- state that survives a restart --------------------------------------------------------
    def save_state(self, store) -> None:
        store.setValue(MAIN_SPLIT_KEY, self.main_split.saveState())
        store.setValue(RIGHT_SPLIT_KEY, self.right_split.saveState())
        store.setValue("vault/header", self.table.horizontalHeader().saveState())
        store.setValue("vault/header_columns", len(COLUMNS))
        store.setValue("vault/filter", self.filter.text())
        store.setValue("vault/selected", self.current_uid() or "")
        store.setValue("vault/right_tab", self.right_tabs.currentIndex())
        store.setValue("vault/test_chat", self.test_panel.input.toPlainText())

    def restore_state(self, store) -> str | None:
        for key, widget in ((MAIN_SPLIT_KEY, self.main_split), (RIGHT_SPLIT_KEY, self.right_split)):
            value = store.value(key)
            if isinstance(value, QByteArray):
                widget.restoreState(value)
        header = store.value("vault/header")
        if isinstance(header, QByteArray):
            self.table.horizontalHeader().restoreState(header)
            # A state saved before the use columns existed gives them Qt's default width: theirs instead.
            set_up_columns(self.table, restored=str(store.value("vault/header_columns")) == str(len(COLUMNS)))
            self._title_fitted = True
        self.filter.setText(store.value("vault/filter", "") or "")
        chat = store.value("vault/test_chat")
        if isinstance(chat, str) and chat.strip():
            self.test_panel.input.setPlainText(chat)
        try:
            self.right_tabs.setCurrentIndex(int(store.value("vault/right_tab", 0)))
        except (TypeError, ValueError):
            pass
        return store.value("vault/selected", "") or None
