"""The Librarian's left column: the saved sessions (newest first) and the gap records."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.librarian.sessions import KINDS

_URGENCY_MARK = {"high": "●●●", "medium": "●●", "low": "●"}


class SessionsPanel(QTabWidget):
    newRequested = Signal(str)  # kind
    sessionChosen = Signal(str)  # id
    gapOpened = Signal(str)  # gap id
    gapHidden = Signal(str)
    gapDismissed = Signal(str)
    summarizeRequested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        sessions = QWidget()
        self.new_button = QPushButton("New session")
        menu = QMenu(self.new_button)
        for kind, label in KINDS.items():
            if kind != "gap":

                def request(k: str = kind) -> None:
                    self.newRequested.emit(k)

                menu.addAction(label, request)
        self.new_button.setMenu(menu)
        self.summarize_button = QPushButton("Summarize…")
        self.summarize_button.setToolTip("Write a summary for every entry without one (each shown to accept)")
        self.summarize_button.clicked.connect(self.summarizeRequested)
        self.sessions = QListWidget()
        self.sessions.currentItemChanged.connect(self._session_chosen)
        row = QHBoxLayout()
        row.addWidget(self.new_button)
        row.addWidget(self.summarize_button)
        lay = QVBoxLayout(sessions)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(row)
        lay.addWidget(self.sessions, 1)

        gaps = QWidget()
        self.gaps = QListWidget()
        self.gaps.itemDoubleClicked.connect(lambda item: self.gapOpened.emit(item.data(Qt.ItemDataRole.UserRole)))
        self.open_gap = QPushButton("Open in a session")
        self.hide_gap = QPushButton("Hide")
        self.hide_gap.setToolTip("Hidden gaps come back when the story asks again")
        self.dismiss_gap = QPushButton("Dismiss")
        self.dismiss_gap.setToolTip("Dismissed gaps stay buried")
        for button, signal in (
            (self.open_gap, self.gapOpened),
            (self.hide_gap, self.gapHidden),
            (self.dismiss_gap, self.gapDismissed),
        ):
            button.clicked.connect(lambda _=False, s=signal: self._gap_action(s))
        grow = QHBoxLayout()
        grow.addWidget(self.open_gap)
        grow.addWidget(self.hide_gap)
        grow.addWidget(self.dismiss_gap)
        glay = QVBoxLayout(gaps)
        glay.setContentsMargins(2, 2, 2, 2)
        glay.addWidget(self.gaps, 1)
        glay.addLayout(grow)
        self.addTab(sessions, "Sessions")
        self.addTab(gaps, "Gaps")

    def _session_chosen(self, item: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        if item is not None:
            self.sessionChosen.emit(item.data(Qt.ItemDataRole.UserRole))

    def _gap_action(self, signal) -> None:
        item = self.gaps.currentItem()
        if item is not None:
            signal.emit(item.data(Qt.ItemDataRole.UserRole))

    def set_sessions(self, sessions, current: str | None) -> None:
        self.sessions.blockSignals(True)
        self.sessions.clear()
        for s in sessions:
            when = time.strftime("%d %b %H:%M", time.localtime(s.updated))
            kind = KINDS[s.kind]
            item = QListWidgetItem(f"{s.title}\n{when}" if s.title == kind else f"{s.title}\n{kind} · {when}")
            item.setData(Qt.ItemDataRole.UserRole, s.id)
            self.sessions.addItem(item)
            if s.id == current:
                self.sessions.setCurrentItem(item)
        self.sessions.blockSignals(False)

    def set_gaps(self, gaps) -> None:
        self.gaps.clear()
        for g in gaps:
            label = "update" if g.subtype == "update" else g.type
            item = QListWidgetItem(f"{_URGENCY_MARK[g.urgency]} {g.query}  ×{g.frequency}\n{label}: {g.reason}")
            item.setData(Qt.ItemDataRole.UserRole, g.id)
            item.setToolTip(f"{g.urgency} urgency, seen {g.frequency}×")
            self.gaps.addItem(item)
        self.setTabText(1, f"Gaps ({len(gaps)})" if gaps else "Gaps")
