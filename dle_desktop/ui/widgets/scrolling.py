"""A panel that scrolls when the window is too small for it, instead of crushing its controls
(a button a sliver high, a wrapped line drawn over the control below it)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


def scrolling(panel: QWidget) -> QScrollArea:
    """`panel` in a frameless scroll area that gives it all the room there is, and a vertical
    scroll bar only when that is less than it needs (its width always follows the area's)."""
    area = QScrollArea()
    area.setWidget(panel)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    # as narrow as the panel may be, so the splitter never squeezes it below its minimum width
    area.setMinimumWidth(panel.minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width())
    return area
