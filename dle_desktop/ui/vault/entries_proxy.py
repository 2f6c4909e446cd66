"""The Vault table's filter and sort, done in Python over plain lists instead of through Qt's
QSortFilterProxyModel. At 10,000 entries that proxy asked the model for two values per comparison
while it sorted (265,000 `data()` calls, seconds of frozen window, on every reset and on clearing
the filter); here a sort is one `sorted()` over keys read once per column, a filter one pass over
precomputed search strings (only over the rows shown when the filter narrows), and the view is
told with a layout change that keeps the selection."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from PySide6.QtCore import (
    QAbstractProxyModel,
    QModelIndex,
    QModelRoleData,
    QModelRoleDataSpan,
    QPersistentModelIndex,
    Qt,
)

from dle_desktop.ui.vault.entries_model import ANSWERED_ROLES, EntriesModel

#: made once: Qt asks every painted cell for its flags, and combining them in Python costs
#: microseconds each time
_ROW_FLAGS = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemNeverHasChildren

Index = QModelIndex | QPersistentModelIndex


class EntriesFilter(QAbstractProxyModel):
    """Every word of the filter must appear somewhere in the entry (title, path, keys, tags,
    vault); rows are sorted by the clicked column (stable, text without regard to case)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._words: list[str] = []
        self._sort_column = -1
        self._order = Qt.SortOrder.AscendingOrder
        #: every source row in sort order, and the ones shown (a subsequence of it)
        self._sorted: list[int] = []
        self._rows: list[int] = []
        #: source row -> shown row, or -1 when the filter hides it
        self._shown_at: list[int] = []
        self._source: EntriesModel | None = None

    # -- wiring ---------------------------------------------------------------------------------
    def setSourceModel(self, model) -> None:
        old = self._source
        if old is not None:
            old.modelAboutToBeReset.disconnect(self.beginResetModel)
            old.modelReset.disconnect(self._source_reset)
            old.dataChanged.disconnect(self._source_data_changed)
        self.beginResetModel()
        super().setSourceModel(model)
        self._source = cast(EntriesModel, model)
        model.modelAboutToBeReset.connect(self.beginResetModel)
        model.modelReset.connect(self._source_reset)
        model.dataChanged.connect(self._source_data_changed)
        self._rebuild()
        self.endResetModel()

    def _source_reset(self) -> None:
        self._rebuild()
        self.endResetModel()

    def _source_data_changed(self, top: QModelIndex, bottom: QModelIndex, roles=()) -> None:
        if self._sort_column in range(top.column(), bottom.column() + 1):
            self._relayout(self._order_rows)  # the sorted column's values moved: sort again
        elif self._rows:
            self.dataChanged.emit(self.index(0, top.column()), self.index(len(self._rows) - 1, bottom.column()), roles)

    # -- the structure Qt asks for -------------------------------------------------------------
    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        if parent.isValid() or not (0 <= row < len(self._rows)) or not (0 <= column < self.columnCount()):
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, child: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # a flat table
        return QModelIndex()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        source = self._source
        return 0 if parent.isValid() or source is None else source.columnCount()

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        return not parent.isValid() and bool(self._rows)

    def mapToSource(self, proxy_index: Index) -> QModelIndex:
        source = self._source
        if source is None or not proxy_index.isValid() or proxy_index.row() >= len(self._rows):
            return QModelIndex()
        return source.index(self._rows[proxy_index.row()], proxy_index.column())

    def mapFromSource(self, source_index: Index) -> QModelIndex:
        if not source_index.isValid() or source_index.row() >= len(self._shown_at):
            return QModelIndex()
        row = self._shown_at[source_index.row()]
        return self.createIndex(row, source_index.column()) if row >= 0 else QModelIndex()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # Straight to the row: no proxy-to-source index is made for each of the roles a cell asks.
        source = self._source
        row = index.row()
        if source is None or not index.isValid() or row >= len(self._rows):
            return None
        return source.value(self._rows[row], index.column(), role)

    def multiData(self, index: Index, roleDataSpan: QModelRoleDataSpan | QModelRoleData, /) -> None:
        """Every role a painted cell asks for, in one call. Qt's delegate asks seven roles per cell;
        through `data` each was a call into Python, and each such call waits for the interpreter
        lock while an engine thread runs Python (up to the 1 ms switch interval): a repaint of
        the table during a re-index took hundreds of milliseconds."""
        source = self._source
        row = index.row()
        slots = cast(Iterable[QModelRoleData], roleDataSpan)  # iterable at run time; the stubs omit it
        if source is None or not index.isValid() or row >= len(self._rows):
            for slot in slots:
                slot.clearData()
            return
        source_row, column, value = self._rows[row], index.column(), source.value
        for slot in slots:
            role = slot.role()
            answer = value(source_row, column, role) if role in ANSWERED_ROLES else None
            if answer is None:
                slot.clearData()
            else:
                slot.setData(answer)

    def flags(self, index: Index) -> Qt.ItemFlag:
        return _ROW_FLAGS if index.isValid() else Qt.ItemFlag.NoItemFlags

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        source = self._source
        if source is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return source.headerData(section, orientation, role)
        return section + 1 if role == Qt.ItemDataRole.DisplayRole else None

    # -- filter and sort -------------------------------------------------------------------------
    def set_text(self, text: str) -> None:
        words = text.lower().split()
        if words == self._words:
            return
        narrower = bool(self._words) and all(any(old in new for new in words) for old in self._words)
        self._words = words
        # A narrower filter only ever hides rows: look at the ones shown, not all of them.
        self._relayout(self._filter_rows if not narrower else lambda: self._filter_rows(self._rows))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._sort_column, self._order = column, order
        self._relayout(self._order_rows)

    def sortColumn(self) -> int:
        return self._sort_column

    def sortOrder(self) -> Qt.SortOrder:
        return self._order

    def _rebuild(self) -> None:
        self._order_rows()

    def _order_rows(self) -> None:
        source = self._source
        count = source.rowCount() if source is not None else 0
        if source is None or not (0 <= self._sort_column < source.columnCount()):
            self._sorted = list(range(count))
        else:
            descending = self._order == Qt.SortOrder.DescendingOrder
            ahead = source.sort_order(self._sort_column, descending)
            if ahead is not None:
                self._sorted = ahead
            else:
                keys = source.sort_keys(self._sort_column)
                self._sorted = sorted(range(count), key=keys.__getitem__, reverse=descending)
        self._filter_rows()

    def _filter_rows(self, candidates: list[int] | None = None) -> None:
        source = self._source
        pool = self._sorted if candidates is None else candidates
        if not self._words or source is None:
            rows = list(pool)
        else:
            hay = source.search_texts()
            rows = list(pool)
            for word in self._words:  # word by word: a plain comprehension, no generator per row (5x quicker)
                rows = [r for r in rows if word in hay[r]]
        self._rows = rows
        shown_at = [-1] * (source.rowCount() if source is not None else 0)
        for at, row in enumerate(rows):
            shown_at[row] = at
        self._shown_at = shown_at

    def _relayout(self, change: Callable[[], None]) -> None:
        """Rows moved or were hidden: the views keep their selection (persistent indexes follow
        their source rows; one whose row is hidden goes)."""
        self.layoutAboutToBeChanged.emit()
        kept = self.persistentIndexList()
        sources = [(self._rows[i.row()] if 0 <= i.row() < len(self._rows) else -1, i.column()) for i in kept]
        change()
        moved = []
        for (row, column), _old in zip(sources, kept, strict=True):
            at = self._shown_at[row] if 0 <= row < len(self._shown_at) else -1
            moved.append(self.createIndex(at, column) if at >= 0 else QModelIndex())
        self.changePersistentIndexList(kept, moved)
        self.layoutChanged.emit()
