"""The Graph view's toolbar pieces: the edge kinds' toggle icons and the groups of controls that
wrap together (a `FlowLayout` row each) when the window is narrow."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QWidget

from dle_desktop.ui.graph.style import EDGE_STYLES


def edge_icon(kind: str) -> QIcon:
    """A short stroke in the edge kind's colour and dash pattern, for its toggle."""
    _label, colour, width, style = EDGE_STYLES[kind]
    pm = QPixmap(22, 12)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    strong = QColor(colour)
    strong.setAlpha(255)
    pen = QPen(strong, max(width, 1.0) * 1.6)
    pen.setStyle(style)
    p.setPen(pen)
    p.drawLine(1, 6, 21, 6)
    p.end()
    return QIcon(pm)


def control_group(*widgets: QWidget, spacing: int = 4) -> QWidget:
    """Controls that belong together, kept on one row of the wrapping toolbar."""
    group = QWidget()
    row = QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(spacing)
    for w in widgets:
        row.addWidget(w)
    return group
