"""The app icon, drawn in code so there is no binary asset to keep in sync."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap


def _draw(size: int, badge: QColor | None = None) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.Antialiasing)
    r = QRectF(size * 0.08, size * 0.08, size * 0.84, size * 0.84)
    path = QPainterPath()
    path.addRoundedRect(r, size * 0.18, size * 0.18)
    p.fillPath(path, QColor("#2f4858"))
    # Two page edges: a book.
    p.setPen(QPen(QColor("#f6ae2d"), max(1.0, size * 0.05)))
    p.drawLine(int(size * 0.30), int(size * 0.24), int(size * 0.30), int(size * 0.76))
    font = QFont()
    font.setBold(True)
    font.setPixelSize(int(size * 0.46))
    p.setFont(font)
    p.setPen(QColor("#ffffff"))
    p.drawText(QRectF(size * 0.30, size * 0.12, size * 0.6, size * 0.76), Qt.AlignCenter, "L")
    if badge is not None:
        p.setBrush(badge)
        p.setPen(Qt.NoPen)
        p.drawEllipse(QRectF(size * 0.62, size * 0.62, size * 0.34, size * 0.34))
    p.end()
    return pm


def app_icon(badge: QColor | None = None) -> QIcon:
    icon = QIcon()
    for s in (16, 24, 32, 48, 64, 128, 256):
        icon.addPixmap(_draw(s, badge))
    return icon
