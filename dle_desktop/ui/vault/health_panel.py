"""The health results: errors, warnings and info in groups, plus notes that were not indexed."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from dle_desktop.core.health import HealthReport
from dle_desktop.ui.widgets.cut_text import MiddleCutTextTips
from dle_desktop.ui.widgets.row_detail import RowDetail

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
SELECT_ONE = "Select a problem to read it in full, with what to do."


#: a group with this many rows makes them when it is first opened
LAZY_GROUP_ROWS = 500
ROWS_ROLE = Qt.ItemDataRole.UserRole + 2

#: (first column, message, code, where it leads: (vault, path) or None)
Row = tuple[str, str, str, tuple[str, str] | None]


def _finding_row(f) -> Row:
    return (
        f.entry or f.path or "(configuration)",
        f.message,
        f.code,
        (f.vault, f.path) if f.vault and f.path else None,
    )


def _skipped_row(s) -> Row:
    return (s.path + (f" (line {s.line})" if s.line else ""), s.reason, s.code.lower(), None)


def _item(row: Row) -> QTreeWidgetItem:
    item = QTreeWidgetItem(list(row[:3]))
    item.setToolTip(1, row[1])
    if row[3] is not None:
        item.setData(0, ENTRY_ROLE, row[3])
    return item


class HealthPanel(QTreeWidget):
    entryActivated = Signal(str, str)  # vault, path

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["Entry", "Problem and what to do", "Code"])
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        self.setWordWrap(False)
        # The problem takes the room there is; the cut part is in its tooltip
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.itemActivated.connect(self._activated)
        self.itemExpanded.connect(self._fill)
        # Cut in the middle, the Entry column keeps a note's "(line N)" in view
        self.tips = MiddleCutTextTips(self, middle_columns={0})
        self._expanded = {"Errors": True, "Warnings": True}
        # The selected problem in full below the list; `pane` (the list and it) is what goes on screen
        self.detail = RowDetail(SELECT_ONE)
        self.pane = QWidget()
        column = QVBoxLayout(self.pane)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self, 1)
        column.addWidget(self.detail)
        self.currentItemChanged.connect(lambda item, _previous: self._show_detail(item))

    def show_report(self, report: HealthReport, skipped=()) -> None:
        """The new report in place of the last; the selected problem stays selected if it is still there."""
        current = self.currentItem()
        keep = tuple(current.text(c) for c in range(3)) if current is not None and current.parent() else None
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            assert item is not None  # i < topLevelItemCount()
            self._expanded[item.data(0, Qt.ItemDataRole.UserRole)] = item.isExpanded()
        self.clear()
        groups = (("Errors", report.errors), ("Warnings", report.warnings), ("Info", report.info))
        for name, findings in groups:
            top = QTreeWidgetItem([f"{name} ({len(findings)})", "", ""])
            top.setFirstColumnSpanned(False)
            top.setData(0, Qt.ItemDataRole.UserRole, name)
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            self._add_group(top, [_finding_row(f) for f in findings], self._expanded.get(name, False))
        not_indexed = list(skipped)
        top = QTreeWidgetItem([f"Not indexed ({len(not_indexed)})", "", ""])
        top.setData(0, Qt.ItemDataRole.UserRole, "Not indexed")
        self._add_group(top, [_skipped_row(s) for s in not_indexed], self._expanded.get("Not indexed", False))
        self.setColumnWidth(0, 170)
        self.setColumnWidth(2, 110)
        if keep is not None:
            self._select(keep)

    def _add_group(self, top: QTreeWidgetItem, rows: list[Row], expanded: bool) -> None:
        """A group of rows. A long one (a 10,000-entry vault has thousands of notes) gets its rows
        when first opened: making them all with each report held the window for 100 ms or more."""
        self.addTopLevelItem(top)
        if len(rows) >= LAZY_GROUP_ROWS and not expanded:
            top.setData(0, ROWS_ROLE, rows)
            top.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
        else:
            top.addChildren([_item(row) for row in rows])
        top.setExpanded(expanded)

    def _fill(self, top: QTreeWidgetItem) -> None:
        rows = top.data(0, ROWS_ROLE)
        if rows:
            top.setData(0, ROWS_ROLE, None)
            top.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.DontShowIndicatorWhenChildless)
            top.addChildren([_item(row) for row in rows])

    def _select(self, texts: tuple[str, ...]) -> None:
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            assert top is not None  # i < topLevelItemCount()
            rows = top.data(0, ROWS_ROLE)
            if rows and any(row[:3] == texts for row in rows):
                self._fill(top)
            for j in range(top.childCount()):
                child = top.child(j)
                if child is not None and tuple(child.text(c) for c in range(3)) == texts:
                    self.setCurrentItem(child)
                    return

    def _show_detail(self, item: QTreeWidgetItem | None) -> None:
        if item is None or item.parent() is None:  # nothing, or a group: say what the rows are for
            self.detail.clear()
            return
        heading, problem, code = (item.text(c) for c in range(3))
        self.detail.show_row(heading, [code], problem)

    def _activated(self, item: QTreeWidgetItem, _column: int) -> None:
        target = item.data(0, ENTRY_ROLE)
        if target:
            self.entryActivated.emit(*target)
