"""The app icon: the packaged PNGs (dle_desktop/icons, rendered from its SVG), with a status badge
drawn over them; drawn in code when an installation lacks them."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap

from dle_desktop.desktop.menu_entry import ICON_SIZES, icon_png


def _draw(size: int, badge: QColor | None = None) -> QPixmap:
    pm = QPixmap(str(icon_png(size)))
    if pm.isNull() or pm.width() != size:
        return _drawn(size, badge)
    if badge is not None:
        p = QPainter(pm)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        _badge(p, size, badge)
        p.end()
    return pm


def _badge(p: QPainter, size: int, badge: QColor) -> None:
    p.setBrush(badge)
    p.setPen(Qt.PenStyle.NoPen)
    p.drawEllipse(QRectF(size * 0.62, size * 0.62, size * 0.34, size * 0.34))


def _drawn(size: int, badge: QColor | None = None) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
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
    p.drawText(QRectF(size * 0.30, size * 0.12, size * 0.6, size * 0.76), Qt.AlignmentFlag.AlignCenter, "L")
    if badge is not None:
        _badge(p, size, badge)
    p.end()
    return pm


def app_icon(badge: QColor | None = None) -> QIcon:
    icon = QIcon()
    for s in ICON_SIZES:
        icon.addPixmap(_draw(s, badge))
    return icon
