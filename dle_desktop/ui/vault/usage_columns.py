"""The Vault view's Matched, Injected and Last injected columns: each entry's use over every chat
(what SillyTavern's /dle-analytics lists), read through the bridge off the GUI thread after a
sync, when the view is shown and now and then while it is, never more often than every few
seconds. The columns have set widths (nothing measures 10,000 rows) and sit at the right: a
window too narrow for them scrolls to them rather than squeezing the Keys column."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, QPoint, Qt, QTimer
from PySide6.QtWidgets import QHeaderView, QMenu, QTableView

from dle_desktop.ui.vault.entries_model import INJECTED, LAST_INJECTED, MATCHED, EntriesModel
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.column_room import ColumnRoom

log = logging.getLogger(__name__)

WIDTHS = {MATCHED: 64, INJECTED: 64, LAST_INJECTED: 92}
#: the counts are read at most this often (seconds)
MIN_GAP = 4.0
#: and this often while the view is shown, so counts follow the chat being played (ms)
WHILE_SHOWN_MS = 15000

UsageReader = Callable[[], Awaitable[dict[str, Any]]]


def usage_by_uid(answer: dict[str, Any]) -> dict[str, tuple[int, int, float | None]]:
    """GET /analytics' answer as the model keeps it: the entries used at least once, by file."""
    return {
        f"{row['vault']}\x00{row['path']}": (int(row["matched"]), int(row["injected"]), row.get("last_injected_at"))
        for row in answer.get("entries") or ()
        if row.get("matched") or row.get("injected")
    }


def set_up_columns(table: QTableView, restored: bool = False) -> None:
    """Their widths and modes. `restored`: a header state saved with them was restored, so the
    widths it holds are the user's (only a column it lost is set again)."""
    header = table.horizontalHeader()
    for column, width in WIDTHS.items():
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        if not restored or header.sectionSize(column) < 30 or header.isSectionHidden(column):
            header.showSection(column)
            header.resizeSection(column, width)


class UsageRoom(ColumnRoom):
    """The Keys column's room (`ColumnRoom`), with columns `outside` it: they never take its
    room. While everything fits, Keys stretches into what is left; when the table is too narrow
    for the outside columns too, Keys keeps the room it has without them and the table scrolls
    sideways to them."""

    def __init__(
        self,
        table: QTableView,
        column: int,
        minimum: int,
        lenders: Sequence[tuple[int, int]],
        outside: Sequence[int],
    ) -> None:
        self.outside = tuple(outside)
        super().__init__(table, column, minimum, lenders)

    def fit(self) -> None:
        header = self.table.horizontalHeader()
        lenders = [(c, floor) for c, floor in self.lenders if not header.isSectionHidden(c)]
        lent = {c for c, _ in lenders}
        shown = [c for c in range(header.count()) if not header.isSectionHidden(c)]
        fixed = sum(
            header.sectionSize(c) for c in shown if c != self.column and c not in lent and c not in self.outside
        )
        outside = sum(header.sectionSize(c) for c in shown if c in self.outside)
        wanted = {c: self._chosen.get(c, header.sectionSize(c)) for c, _ in lenders}
        viewport = self.table.viewport().width()
        short = fixed + sum(wanted.values()) + self.minimum - viewport
        self._fitting = True
        try:
            for c, floor in lenders:
                give = max(0, min(short, wanted[c] - floor))
                short -= give
                if header.sectionSize(c) != wanted[c] - give:
                    header.resizeSection(c, wanted[c] - give)
            room = viewport - fixed - sum(header.sectionSize(c) for c, _ in lenders)
            if room - outside >= self.minimum:
                if header.sectionResizeMode(self.column) != QHeaderView.ResizeMode.Stretch:
                    header.setSectionResizeMode(self.column, QHeaderView.ResizeMode.Stretch)
            else:
                if header.sectionResizeMode(self.column) != QHeaderView.ResizeMode.Interactive:
                    header.setSectionResizeMode(self.column, QHeaderView.ResizeMode.Interactive)
                width = max(self.minimum, room)
                if header.sectionSize(self.column) != width:
                    header.resizeSection(self.column, width)
        finally:
            self._fitting = False


class ColumnMenu(QObject):
    """Right-click on the header: tick the columns to show (a narrow window can give the room of
    Folder or Flags to the use counts). Kept with the header's state. `auto`: columns the view
    shows or hides itself (Vault, with one vault open), left out."""

    def __init__(self, table: QTableView, always: int, auto: Sequence[int]) -> None:
        super().__init__(table)
        self.table = table
        self.always = always  # never hidden: the one a row is known by
        self.auto = tuple(auto)
        header = table.horizontalHeader()
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self.open)
        self.menu: QMenu | None = None  # the open menu (tests tick it)

    def build(self) -> QMenu:
        header = self.table.horizontalHeader()
        model = self.table.model()
        menu = QMenu(self.table)
        for column in range(header.count()):
            if column in self.auto:
                continue
            action = menu.addAction(str(model.headerData(column, Qt.Orientation.Horizontal)))
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(column))
            action.setEnabled(column != self.always)
            action.toggled.connect(lambda on, c=column: self.table.setColumnHidden(c, not on))
        return menu

    def open(self, at: QPoint) -> None:
        self.menu = self.build()
        self.menu.popup(self.table.horizontalHeader().mapToGlobal(at))


class UsageRefresher(QObject):
    """Reads the counts into the model: `request()` after a sync or when the view is shown; a
    request sooner than MIN_GAP after the last read is put off until then, and requests while a
    read runs make one more read after it."""

    def __init__(self, model: EntriesModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.reader: UsageReader | None = None
        self._last = float("-inf")
        self._reading = False
        self._again = False
        self.reads = 0  # finished reads (tests wait on it)
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.timeout.connect(self.request)
        self.while_shown = QTimer(self)
        self.while_shown.setInterval(WHILE_SHOWN_MS)
        self.while_shown.timeout.connect(self.request)

    def request(self) -> None:
        if self.reader is None:
            return
        if self._reading:
            self._again = True
            return
        wait = self._last + MIN_GAP - time.monotonic()
        if wait > 0:
            if not self._later.isActive():
                self._later.start(int(wait * 1000) + 1)
            return
        self._reading = True
        self._last = time.monotonic()
        if soon(self._read) is None:
            self._reading = False

    async def _read(self) -> None:
        reader = self.reader
        try:
            if reader is not None:
                self.model.set_usage(usage_by_uid(await reader()))
        except Exception:  # no index yet, or the engine is being replaced: the next read will do
            log.debug("reading the entries' use failed", exc_info=True)
        finally:
            self._reading = False
            self.reads += 1
        if self._again:
            self._again = False
            self.request()

    def stop(self) -> None:
        self.reader = None
        self._later.stop()
        self.while_shown.stop()
