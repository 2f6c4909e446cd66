"""What the Graph canvas draws over its static layer each frame, in screen coordinates: the
highlighted nodes (hovered neighbourhood, selection, a finding) over a translucent wash that dims
the rest, and labels. Only small, numpy-selected sets are drawn here, so a frame stays cheap."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPen

from dle_desktop.ui.graph.style import BACKGROUND, EDGE_STYLES, LABEL

#: Above this many nodes in view, only the hovered / selected / focused ones get labels.
LABEL_CROWD = 700
MAX_LABELS = 120


def label_text(title: str) -> str:
    """A node's label: its title, a long one cut."""
    return title if len(title) <= 40 else title[:38] + "…"


def paint_overlay(c, p: QPainter, w: int, h: int) -> None:
    """Over the static layer: the highlighted neighbourhood (the rest dimmed) and labels."""
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    hi = c.highlighted()
    if c._drag >= 0:
        hi = c.adj.around(c._drag)
    if len(hi):
        hi = hi[c.visible[hi]]
        # dim: one translucent wash over the static layer, then the neighbourhood again on top
        p.fillRect(QRectF(0, 0, w, h), QColor(BACKGROUND.red(), BACKGROUND.green(), BACKGROUND.blue(), 200))
        _draw_subgraph(c, p, hi)
    _draw_labels(c, p, w, h, hi)


def _draw_subgraph(c, p: QPainter, nodes: np.ndarray) -> None:
    inside = np.zeros(len(c.xy), dtype=bool)
    inside[nodes] = True
    scale = c.node_px()
    for kind in ("link", "cascade", "requires", "excludes"):
        if kind not in c.kinds_on or kind not in c.edges:
            continue
        a, b = c.edges[kind]
        keep = inside[a] & inside[b]
        if not keep.any():
            continue
        _label, colour, width, style = EDGE_STYLES[kind]
        strong = QColor(colour)
        strong.setAlpha(230 if kind != "link" else 150)
        pen = QPen(strong, max(width, 1.0) * 1.3)
        pen.setStyle(style)
        p.setPen(pen)
        sa, sb = c.world_to_screen(c.xy[a[keep]]), c.world_to_screen(c.xy[b[keep]])
        path = QPainterPath()
        for x1, y1, x2, y2 in np.hstack([sa, sb]).tolist():
            path.moveTo(x1, y1)
            path.lineTo(x2, y2)
        p.drawPath(path)
    scr = c.world_to_screen(c.xy[nodes])
    for (x, y), i in zip(scr.tolist(), nodes.tolist()):
        colour = c.palette[int(c.bins[i]) % len(c.palette)]
        d = max(3.0, c.node_size[i] * scale)
        p.setPen(QPen(QColor(255, 255, 255), 1.0))
        p.setBrush(colour)
        p.drawEllipse(QPointF(x, y), d / 2, d / 2)
    for i, width in ((c.selected, 2.5), (c.hovered, 1.5)):
        if i >= 0 and c.visible[i]:
            x, y = c.world_to_screen(c.xy[i]).tolist()
            d = max(3.0, c.node_size[i] * scale) / 2 + 3
            p.setPen(QPen(LABEL, width))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(QPointF(x, y), d, d)


def _draw_labels(c, p: QPainter, w: int, h: int, highlighted: np.ndarray) -> None:
    """Labels never overlap: candidates are placed greedily (highlighted ones first, then by
    importance) and a label that would touch one already placed is skipped."""
    if not len(c.xy):
        return
    scr = c.world_to_screen(c.xy)
    onscreen = c.visible & (scr[:, 0] > -20) & (scr[:, 0] < w + 20) & (scr[:, 1] > -20) & (scr[:, 1] < h + 20)
    first = [i for i in (c.selected, c.hovered) if i >= 0 and onscreen[i]]
    first += [i for i in highlighted.tolist() if onscreen[i] and i not in first][:60]
    rest: list[int] = []
    count = int(onscreen.sum())
    if count <= LABEL_CROWD and c.node_px() >= 0.6:
        cand = np.flatnonzero(onscreen)
        cand = cand[np.argsort(-c.importance[cand], kind="stable")][: MAX_LABELS * 3]
        rest = cand.tolist()
    if not first and not rest:
        return
    p.setFont(c.label_font)
    fm = QFontMetricsF(c.label_font)
    placed: list[QRectF] = []
    scale = c.node_px()
    shown = 0
    dimmed = len(highlighted) > 0
    hi_set = set(highlighted.tolist())
    for i in first + rest:
        if shown >= MAX_LABELS + len(first):
            break
        text = label_text(c.titles[i])
        x, y = scr[i]
        r = max(2.0, c.node_size[i] * scale) / 2
        tw = fm.horizontalAdvance(text)
        rect = QRectF(x - tw / 2 - 2, y + r + 1, tw + 4, fm.height())
        if any(rect.intersects(q) for q in placed):
            continue
        placed.append(rect)
        shown += 1
        if dimmed and i not in hi_set:
            p.setPen(QColor(LABEL.red(), LABEL.green(), LABEL.blue(), 70))
        else:
            p.fillRect(rect, QColor(255, 255, 255, 170))
            p.setPen(LABEL)
        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
