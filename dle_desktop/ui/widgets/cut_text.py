"""Item views cut a cell's text that is wider than its column with "…". This delegate makes the
whole text the cell's tooltip when, and only when, it was cut (a tooltip the model gives wins),
and can cut chosen columns in the middle, so the end of a text (a note's "(line N)") stays in view.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QAbstractItemView, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QToolTip


class CutTextTips(QStyledItemDelegate):
    """Tooltips for cut cells. It leaves painting to Qt: a Python `initStyleOption` would be a
    call into Python for every cell painted (see `MiddleCutTextTips`)."""

    def __init__(self, view: QAbstractItemView) -> None:
        super().__init__(view)
        view.setItemDelegate(self)

    def shown_text(self, view: QAbstractItemView, index) -> str:
        """The cell's text as the view draws it now (cut to its column's room)."""
        option = QStyleOptionViewItem()
        view.initViewItemOption(option)
        option.rect = view.visualRect(index)
        self.initStyleOption(option, index)
        style = view.style()
        room = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, view).width()
        room -= 2 * (
            style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
        )  # the item's text margins
        return option.fontMetrics.elidedText(option.text, option.textElideMode, max(room, 0))

    def cut_text(self, view: QAbstractItemView, index) -> str | None:
        """The cell's whole text when the view shows it cut, else None."""
        text = index.data(Qt.ItemDataRole.DisplayRole)
        if text is None or str(text) == "":
            return None
        return None if self.shown_text(view, index) == str(text) else str(text)

    def helpEvent(self, event, view, option, index) -> bool:
        if event is not None and event.type() == QEvent.Type.ToolTip and not index.data(Qt.ItemDataRole.ToolTipRole):
            text = self.cut_text(view, index)
            if text:
                QToolTip.showText(event.globalPos(), text, view)
                return True
        return super().helpEvent(event, view, option, index)


class MiddleCutTextTips(CutTextTips):
    """`CutTextTips` that cuts `middle_columns` in the middle, so a text's end stays in view."""

    def __init__(self, view: QAbstractItemView, middle_columns=()) -> None:
        super().__init__(view)
        self.middle_columns = frozenset(middle_columns)

    def initStyleOption(self, option, index) -> None:
        super().initStyleOption(option, index)
        if index.column() in self.middle_columns:
            option.textElideMode = Qt.TextElideMode.ElideMiddle
