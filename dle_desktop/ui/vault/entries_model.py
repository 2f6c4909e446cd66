"""Table model over a snapshot's entries (with each entry's use over all chats: times matched,
times injected, when last injected). `entries_proxy` filters and sorts it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush

from dle_desktop.core.entry import Entry

if TYPE_CHECKING:  # numpy itself loads with the sort orders, on their thread: not at the window's start
    import numpy as np

COLUMNS = ("Title", "Folder", "Keys", "Priority", "Tokens", "Flags", "Vault", "Matched", "Injected", "Last injected")
MATCHED, INJECTED, LAST_INJECTED = 7, 8, 9
USAGE_COLUMNS = (MATCHED, INJECTED, LAST_INJECTED)
HEADER_TIPS = {
    MATCHED: "Times its keys (or another stage) matched, over every chat",
    INJECTED: "Times it was injected into a prompt, over every chat",
    LAST_INJECTED: "When it was last injected, in any chat",
}
UID_ROLE = Qt.ItemDataRole.UserRole + 1
#: the roles `EntriesModel.value` answers; a painted cell asks for about seven, most of them
#: answered None (a set lookup then spares the walk through the branches)
ANSWERED_ROLES = frozenset(
    int(r)
    for r in (
        UID_ROLE,
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.ToolTipRole,
        Qt.ItemDataRole.ForegroundRole,
        Qt.ItemDataRole.TextAlignmentRole,
    )
)
#: made once: combining Qt's flags in Python costs microseconds each time, per cell painted
_RIGHT_ALIGNED = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


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


def last_injected_text(stamp: float | None, now: float | None = None) -> str:
    """today 09:35, 1 Dec, Dec 2025: short enough for a narrow column (the tooltip has it whole)."""
    if not stamp:
        return ""
    now = time.time() if now is None else now
    local, today = time.localtime(stamp), time.localtime(now)
    if local[:3] == today[:3]:
        return time.strftime("today %H:%M", local)
    if local.tm_year == today.tm_year:
        return f"{local.tm_mday} {time.strftime('%b', local)}"
    return time.strftime("%b %Y", local)


@dataclass(frozen=True)
class PreparedRows:
    """A snapshot's rows worked out ahead, off the GUI thread (at 10,000 entries building them
    on the GUI thread held it for about 200 ms): what the filter matches, and every column's
    sort keys."""

    entries: list[Entry]
    search: list[str]
    rows: dict[str, int]
    sort_keys: dict[int, list[Any]]

    @classmethod
    def of(cls, entries: Sequence[Entry], columns: Iterable[int] | None = None) -> PreparedRows:
        """`columns`: whose sort keys to make (default: every column but the usage ones, which
        change with every generation and are read when sorted by)."""
        listed = list(entries)
        wanted = KEYED_COLUMNS if columns is None else [c for c in columns if c in KEYED_COLUMNS]
        keys = {column: [entry_sort_key(e, column) for e in listed] for column in wanted}
        return cls(listed, [search_text(e) for e in listed], {e.uid: i for i, e in enumerate(listed)}, keys)


#: the columns whose sort keys come from the entries alone
KEYED_COLUMNS = tuple(range(USAGE_COLUMNS[0]))


def search_text(e: Entry) -> str:
    """An entry's lower-case title, path, keys, tags and vault (what the filter matches)."""
    return " ".join((e.title, e.path, " ".join(e.keys), " ".join(e.tags), e.vault)).lower()


def entry_sort_key(e: Entry, column: int) -> Any:
    """An entry's key for sorting by `column` (not a usage column): text without regard to case,
    numbers as numbers."""
    if column == 3:
        return e.priority
    if column == 4:
        return e.token_estimate
    text = (e.title, e.folder or "", ", ".join(e.keys), "", "", entry_flags(e), e.vault)[column]
    return text.casefold()


class EntriesModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._entries: list[Entry] = []
        self._search: list[str] = []
        self._rows: dict[str, int] = {}
        #: uid -> (matched, injected, last injected at) over every chat; absent: never matched
        self._usage: dict[str, tuple[int, int, float | None]] = {}
        self._now = time.time()
        #: column -> each row's sort key, read once per column (the usage columns' per count)
        self._sort_keys: dict[int, list[Any]] = {}
        #: column -> (ascending, descending) row orders worked out ahead (`sort_order_job`)
        self._orders: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def set_usage(self, usage: dict[str, tuple[int, int, float | None]]) -> None:
        """New counts: only the three columns change (the selection and the sort stay)."""
        if usage == self._usage:
            return
        self._usage = usage
        self._now = time.time()
        for column in USAGE_COLUMNS:
            self._sort_keys.pop(column, None)
        if self._entries:
            self.dataChanged.emit(self.index(0, MATCHED), self.index(len(self._entries) - 1, LAST_INJECTED))

    def usage(self, uid: str) -> tuple[int, int, float | None]:
        return self._usage.get(uid, (0, 0, None))

    def set_entries(self, entries, prepared: PreparedRows | None = None) -> None:
        """Show `entries`; `prepared` (`PreparedRows.of(entries)`, made elsewhere) saves the work."""
        rows = prepared if prepared is not None else PreparedRows.of(entries)
        self.beginResetModel()
        self._entries, self._search, self._rows = rows.entries, rows.search, rows.rows
        self._sort_keys = dict(rows.sort_keys)
        self._orders = {}
        self.endResetModel()

    # -- sort orders made ahead (`sort_orders.py`) -------------------------------------------------
    def sort_order_job(self) -> Callable[[Callable[[], object]], tuple[list[Entry], dict]]:
        """What a background thread runs, with its `give_way`, to work out the orders of every
        column the entries alone decide, for the rows shown now. Hand its result to
        `install_sort_orders` on the GUI thread."""
        entries, known = self._entries, dict(self._sort_keys)

        def run(give_way: Callable[[], object]) -> tuple[list[Entry], dict]:
            from dle_desktop.ui.vault.sort_orders import PIECE, stable_orders

            made = {}
            for column in KEYED_COLUMNS:
                keys = known.get(column)
                if keys is None:  # a piece at a time: 100,000 keys are ~0.1 s of Python
                    keys = []
                    for start in range(0, len(entries), PIECE):
                        give_way()
                        keys.extend([entry_sort_key(e, column) for e in entries[start : start + PIECE]])
                give_way()
                orders = stable_orders(keys)
                if orders is not None:
                    made[column] = (keys, *orders)
            return entries, made

        return run

    def install_sort_orders(self, made: tuple[list[Entry], dict]) -> None:
        entries, by_column = made
        if entries is not self._entries:  # a newer index arrived meanwhile: these are its predecessor's
            return
        for column, (keys, ascending, descending) in by_column.items():
            self._sort_keys.setdefault(column, keys)
            self._orders[column] = (ascending, descending)

    def make_sort_orders(self) -> None:
        """All at once, on this thread (tests)."""
        self.install_sort_orders(self.sort_order_job()(lambda: None))

    def has_sort_orders(self) -> bool:
        return bool(self._orders)

    def sort_order(self, column: int, descending: bool) -> list[int] | None:
        """The rows in `column`'s order, if it was worked out ahead."""
        orders = self._orders.get(column)
        return None if orders is None else orders[descending].tolist()

    def entry(self, row: int) -> Entry | None:
        return self._entries[row] if 0 <= row < len(self._entries) else None

    def row_of(self, uid: str) -> int | None:
        return self._rows.get(uid)

    def search_text(self, row: int) -> str:
        return self._search[row]

    def search_texts(self) -> list[str]:
        """Each row's lower-case title, path, keys, tags and vault (what the filter matches)."""
        return self._search

    def sort_keys(self, column: int) -> list[Any]:
        """Each row's key for sorting by `column`: text without regard to case, numbers as numbers."""
        keys = self._sort_keys.get(column)
        if keys is None:
            keys = [self._sort_key(e, column) for e in self._entries]
            self._sort_keys[column] = keys
        return keys

    def _sort_key(self, e: Entry, column: int) -> Any:
        if column in USAGE_COLUMNS:
            matched, injected, last = self.usage(e.uid)
            return (matched, injected, last or 0.0)[column - MATCHED]
        return entry_sort_key(e, column)

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._entries)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        return self.value(index.row(), index.column(), role)

    def value(self, row: int, col: int, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """What `data` answers for a cell (the filter's proxy asks here directly: a view asks for
        ten roles per cell it paints)."""
        e = self.entry(row)
        if e is None:
            return None
        if role == UID_ROLE:
            return e.uid
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return e.title
            if col == 1:
                return e.folder or ""
            if col == 2:
                return ", ".join(e.keys)
            if col == 3:
                return f"{e.priority:g}"
            if col == 4:
                return e.token_estimate
            if col == 5:
                return entry_flags(e)
            if col == 6:
                return e.vault
            if col in USAGE_COLUMNS:
                matched, injected, last = self.usage(e.uid)
                if col == MATCHED:
                    return matched
                if col == INJECTED:
                    return injected
                return last_injected_text(last, self._now)
        if role == Qt.ItemDataRole.ToolTipRole and col == 2 and e.keys:
            return "\n".join(e.keys)
        if role == Qt.ItemDataRole.ToolTipRole and col == LAST_INJECTED and (last := self.usage(e.uid)[2]):
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last))
        if (
            role == Qt.ItemDataRole.ForegroundRole
            and col in (MATCHED, INJECTED)
            and not self.usage(e.uid)[col - MATCHED]
        ):
            return QBrush(Qt.GlobalColor.gray)  # a column of zeros reads quieter; the used entries stand out
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (3, 4, *USAGE_COLUMNS):
            return _RIGHT_ALIGNED
        return None
