"""A layout that lays its items out in rows, left to right, and starts a new row when the next
item would not fit: a toolbar that wraps at a narrow window instead of squeezing its buttons
until their labels read "Fi…"."""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QStyle, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    # -- the item list QLayout asks for -----------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # Qt asks past the end and expects None
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    # -- sizes ---------------------------------------------------------------------------------
    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), apply=False)

    def sizeHint(self) -> QSize:
        """Everything on one row."""
        shown = self._shown()
        margins = self.contentsMargins()
        width = sum(i.sizeHint().width() for i in shown) + self._spacing * max(len(shown) - 1, 0)
        height = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(width, height).grownBy(margins)

    def minimumSize(self) -> QSize:
        """As narrow as the widest item: one item per row."""
        size = QSize()
        for item in self._shown():
            size = size.expandedTo(item.minimumSize().expandedTo(item.sizeHint()))
        return size.grownBy(self.contentsMargins())

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, apply=True)

    # -- placing -------------------------------------------------------------------------------
    def _shown(self) -> list[QLayoutItem]:
        return [i for i in self._items if not i.isEmpty()]

    def _gap(self, item: QLayoutItem) -> int:
        if self._spacing >= 0:
            return self._spacing
        widget = item.widget()
        style = widget.style() if widget is not None else None
        if style is None:
            return 6
        return style.layoutSpacing(
            QSizePolicy.ControlType.PushButton, QSizePolicy.ControlType.PushButton, Qt.Orientation.Horizontal
        ) or style.pixelMetric(QStyle.PixelMetric.PM_LayoutHorizontalSpacing)

    def _place(self, rect: QRect, apply: bool) -> int:
        """Lay the items out in `rect` (or only measure); returns the height the rows take."""
        margins: QMargins = self.contentsMargins()
        area = rect.marginsRemoved(margins)
        x, y, row_height = area.x(), area.y(), 0
        row: list[tuple[QLayoutItem, QSize]] = []
        rows: list[tuple[int, int, list[tuple[QLayoutItem, QSize]]]] = []
        for item in self._shown():
            size = item.sizeHint().expandedTo(item.minimumSize())
            gap = self._gap(item)
            if row and x + size.width() > area.right() + 1:
                rows.append((y, row_height, row))
                x, y, row_height, row = area.x(), y + row_height + gap, 0, []
            row.append((item, size))
            x += size.width() + gap
            row_height = max(row_height, size.height())
        if row:
            rows.append((y, row_height, row))
        if apply:
            for top, height, items in rows:
                left = area.x()
                for item, size in items:
                    # each item centred in its row's height, so a combo box sits level with a button
                    item.setGeometry(QRect(QPoint(left, top + (height - size.height()) // 2), size))
                    left += size.width() + self._gap(item)
        bottom = rows[-1][0] + rows[-1][1] if rows else area.y()
        return bottom - rect.y() + margins.bottom()
