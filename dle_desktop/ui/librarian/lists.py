"""The Librarian's left column: the saved sessions (newest first), the gap records (with why
the list is empty, and buttons that wait for a gap to act on) and Auto Lorebook's suggestions
(suggestions.py, added by the view)."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.librarian.sessions import KINDS
from dle_desktop.ui.librarian.suggestions import SuggestionsPanel

SESSIONS_TAB, GAPS_TAB, SUGGESTIONS_TAB = 0, 1, 2
_URGENCY_MARK = {"high": "●●●", "medium": "●●", "low": "●"}
NO_GAPS_YET = (
    "No gaps recorded yet. A gap is lore the story asked for and the vault lacks: a search that "
    "found nothing (the librarian's here, or SillyTavern's through the lore API) or an entry "
    "flagged as missing or out of date. Gaps show here as they are recorded."
)


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
        self._can_open = True  # opening a gap starts a session: only with the librarian's connection
        self.gaps_hint = QLabel(NO_GAPS_YET)
        self.gaps_hint.setWordWrap(True)
        self.gaps_hint.setStyleSheet("color: palette(placeholder-text); padding: 4px")
        self.gaps = QListWidget()
        self.gaps.itemDoubleClicked.connect(lambda *_: self._gap_action(self.gapOpened))
        self.gaps.currentItemChanged.connect(lambda *_: self._gap_buttons())
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
        glay.addWidget(self.gaps_hint)
        glay.addWidget(self.gaps, 1)
        glay.addLayout(grow)
        self.insertTab(SESSIONS_TAB, sessions, "Sessions")
        self.insertTab(GAPS_TAB, gaps, "Gaps")
        self._gap_buttons()

    def add_suggestions(self, panel: SuggestionsPanel) -> None:
        """The Suggestions tab beside Gaps; its title counts what waits."""
        self.insertTab(SUGGESTIONS_TAB, panel, "Suggestions")
        panel.countChanged.connect(
            lambda n: self.setTabText(SUGGESTIONS_TAB, f"Suggestions ({n})" if n else "Suggestions")
        )

    def _session_chosen(self, item: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        if item is not None:
            self.sessionChosen.emit(item.data(Qt.ItemDataRole.UserRole))

    def _gap_action(self, signal) -> None:
        item = self.gaps.currentItem()
        if item is None or (signal is self.gapOpened and not self._can_open):
            return
        signal.emit(item.data(Qt.ItemDataRole.UserRole))

    def _gap_buttons(self) -> None:
        chosen = self.gaps.currentItem() is not None
        self.open_gap.setEnabled(chosen and self._can_open)
        self.hide_gap.setEnabled(chosen)
        self.dismiss_gap.setEnabled(chosen)
        self.open_gap.setToolTip(
            "Start a session to write this gap's entry"
            if self._can_open
            else "Opening a gap starts a librarian session: it needs an AI connection (see above)"
        )

    def set_ai(self, librarian: bool, summarize: bool) -> None:
        """What the AI connections allow: new sessions (and gap sessions) need the librarian's,
        Summarize… AI search's."""
        self._can_open = librarian
        self.new_button.setEnabled(librarian)
        self.summarize_button.setEnabled(summarize)
        self._gap_buttons()

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

    def select_gap(self, gap_id: str) -> bool:
        for row in range(self.gaps.count()):
            item = self.gaps.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == gap_id:
                self.gaps.setCurrentItem(item)
                self.gaps.scrollToItem(item)
                return True
        return False

    def set_gaps(self, gaps, hidden: int = 0) -> None:
        """The gaps to list; `hidden`: how many more are hidden or dismissed. The selected gap
        stays selected."""
        current = self.gaps.currentItem()
        chosen = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        self.gaps.clear()
        for g in gaps:
            label = "update" if g.subtype == "update" else g.type
            item = QListWidgetItem(f"{_URGENCY_MARK[g.urgency]} {g.query}  ×{g.frequency}\n{label}: {g.reason}")
            item.setData(Qt.ItemDataRole.UserRole, g.id)
            item.setToolTip(f"{g.urgency} urgency, seen {g.frequency}×")
            self.gaps.addItem(item)
            if g.id == chosen:
                self.gaps.setCurrentItem(item)
        self.setTabText(GAPS_TAB, f"Gaps ({len(gaps)})" if gaps else "Gaps")
        self.gaps_hint.setText(
            f"No gaps to show: {hidden} hidden or dismissed. A hidden gap comes back when the story asks again."
            if hidden
            else NO_GAPS_YET
        )
        self.gaps_hint.setVisible(not gaps)
        self._gap_buttons()
