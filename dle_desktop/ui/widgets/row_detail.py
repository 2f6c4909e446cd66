"""The whole text of a list's selected row, below the list: a column cuts a long problem or reason
to "…", and a tooltip is no place to read (or copy) what to do. Read-only, wrapped, selectable,
and as tall as its text (between `lines` bounds), so a short text takes little room."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QSizePolicy, QTextBrowser


class RowDetail(QTextBrowser):
    def __init__(self, placeholder: str, lines: tuple[int, int] = (1, 8)) -> None:
        super().__init__()
        self.setOpenLinks(False)
        self.setPlaceholderText(placeholder)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._lines = lines
        self.document().documentLayout().documentSizeChanged.connect(lambda *_: self._fit())
        self._fit()

    def show_row(self, heading: str, facts: list[str], text: str) -> None:
        """`heading` in bold and the facts after it, then `text` (all plain text), run together so
        a short one takes a single line."""
        head = f"<b>{escape(heading)}</b>" + "".join(f" · {escape(f)}" for f in facts if f)
        body = escape(text).replace("\n", "<br>")
        self.setHtml(f"{head} — {body}" if text else head)

    def _height_for(self, lines: int) -> int:
        margins = 2 * (self.frameWidth() + int(self.document().documentMargin()))
        return lines * self.fontMetrics().lineSpacing() + margins

    def _fit(self) -> None:
        low, high = self._lines
        content = int(self.document().size().height()) + 2 * self.frameWidth()
        height = max(self._height_for(low), min(content, self._height_for(high)))
        if height != self.height() or self.minimumHeight() != height:
            self.setFixedHeight(height)

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.height())
