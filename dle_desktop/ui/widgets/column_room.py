"""A table's stretching column (the Vault view's Keys) kept readable in a narrow window: the
columns named as lenders give up width, down to their floors, and get it back when the table
widens again. A width the user drags a lender to is the width it returns to."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QTableView


class ColumnRoom(QObject):
    def __init__(self, table: QTableView, column: int, minimum: int, lenders: Sequence[tuple[int, int]]) -> None:
        """`lenders`: (column, floor) in the order they give way."""
        super().__init__(table)
        self.table = table
        self.column = column
        self.minimum = minimum
        self.lenders = tuple(lenders)
        # lender -> the width it has when there is room
        self._chosen = {c: table.horizontalHeader().sectionSize(c) for c, _ in self.lenders}
        self._fitting = False
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.setInterval(0)
        self._later.timeout.connect(self.fit)
        table.horizontalHeader().sectionResized.connect(self._resized)
        table.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

    def _resized(self, column: int, _old: int, new: int) -> None:
        if self._fitting:
            return
        if column in dict(self.lenders):  # set by the user or the app: that is the width it wants
            self._chosen[column] = new
        self._later.start()  # after the header has settled (a restored state sets every section)

    def fit(self) -> None:
        header = self.table.horizontalHeader()
        lenders = [(c, floor) for c, floor in self.lenders if not header.isSectionHidden(c)]
        lent = {c for c, _ in lenders}
        fixed = sum(
            header.sectionSize(c)
            for c in range(header.count())
            if c != self.column and c not in lent and not header.isSectionHidden(c)
        )
        wanted = {c: self._chosen.get(c, header.sectionSize(c)) for c, _ in lenders}
        short = fixed + sum(wanted.values()) + self.minimum - self.table.viewport().width()
        self._fitting = True
        try:
            for c, floor in lenders:
                give = max(0, min(short, wanted[c] - floor))
                short -= give
                if header.sectionSize(c) != wanted[c] - give:
                    header.resizeSection(c, wanted[c] - give)
        finally:
            self._fitting = False
