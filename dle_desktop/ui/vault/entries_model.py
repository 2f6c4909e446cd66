"""Table model over a snapshot's entries, and a filter that matches title, keys, folder and tags."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt

from dle_desktop.core.entry import Entry

COLUMNS = ("Title", "Folder", "Keys", "Priority", "Tokens", "Flags", "Vault")
UID_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2


def entry_flags(e: Entry) -> str:
    flags = []
    if e.constant:
        flags.append("constant")
    if e.seed:
        flags.append("seed")
    if e.bootstrap:
        flags.append("bootstrap")
    if e.guide:
        flags.append("guide")
    if e.outlet:
        flags.append(f"outlet:{e.outlet}")
    if e.warnings:
        flags.append("⚠")
    return " ".join(flags)


class EntriesModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._entries: list[Entry] = []
        self._search: list[str] = []
        self._rows: dict[str, int] = {}

    def set_entries(self, entries) -> None:
        self.beginResetModel()
        self._entries = list(entries)
        self._search = [
            " ".join((e.title, e.path, " ".join(e.keys), " ".join(e.tags), e.vault)).lower() for e in self._entries
        ]
        self._rows = {e.uid: i for i, e in enumerate(self._entries)}
        self.endResetModel()

    def entry(self, row: int) -> Entry | None:
        return self._entries[row] if 0 <= row < len(self._entries) else None

    def row_of(self, uid: str) -> int | None:
        return self._rows.get(uid)

    def search_text(self, row: int) -> str:
        return self._search[row]

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._entries)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        e = self.entry(index.row())
        if e is None:
            return None
        col = index.column()
        if role == UID_ROLE:
            return e.uid
        if role in (Qt.ItemDataRole.DisplayRole, SORT_ROLE):
            if col == 0:
                return e.title
            if col == 1:
                return e.folder or ""
            if col == 2:
                return ", ".join(e.keys)
            if col == 3:
                return e.priority if role == SORT_ROLE else f"{e.priority:g}"
            if col == 4:
                return e.token_estimate
            if col == 5:
                return entry_flags(e)
            if col == 6:
                return e.vault
        if role == Qt.ItemDataRole.ToolTipRole and col == 2 and e.keys:
            return "\n".join(e.keys)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (3, 4):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class EntriesFilter(QSortFilterProxyModel):
    """Every word of the filter must appear somewhere in the entry (title, path, keys, tags, vault)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._words: list[str] = []
        self.setSortRole(SORT_ROLE)

    def set_text(self, text: str) -> None:
        self.beginFilterChange() if hasattr(self, "beginFilterChange") else None
        self._words = text.lower().split()
        if hasattr(self, "endFilterChange"):
            self.endFilterChange()
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row, source_parent) -> bool:
        if not self._words:
            return True
        hay = cast(EntriesModel, self.sourceModel()).search_text(source_row)
        return all(w in hay for w in self._words)
