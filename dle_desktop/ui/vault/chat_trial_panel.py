""" "Test a chat": paste or load a chat, run the pipeline on the current index (a dry run: no
chat state is touched), and see the injected text and a verdict for every entry it touched."""

from __future__ import annotations

import asyncio
import logging
from html import escape
from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.core.pipeline.chat_formats import parse_chat_text
from dle_desktop.core.pipeline.chat_input import ChatInputError
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.cut_text import CutTextTips
from dle_desktop.ui.widgets.row_detail import RowDetail

log = logging.getLogger(__name__)

EXAMPLE = """Mira: We come ashore at Lantern Quay at dusk. Who keeps the lamps?
Narrator: The lamplighters of the guild move along the quay; a Vantreel heron banner hangs over the toll house.
Mira: I ask about the silt-ink shortage and the Chancery.
"""
OUTCOME_ORDER = {"injected": 0, "truncated": 1, "matched": 2, "cut": 3, "removed": 4, "skipped": 5}


class ChatTrialPanel(QWidget):
    entryRequested = Signal(str, str)  # vault, title

    #: (label, engine ai_mode): how AI search runs for one dry run
    AI_MODES = (
        ("AI search: as configured", None),
        ("AI search: off", "off"),
        ("AI search: two-stage", "two-stage"),
        ("AI search: AI only", "ai-only"),
    )

    def __init__(self, runner, parent=None) -> None:
        """`runner(doc, replay, seed, ai_mode) -> awaitable list[generation dict]`."""
        super().__init__(parent)
        self.runner = runner
        self.generations: list[dict] = []
        self._task: asyncio.Task | None = None
        self.input = QPlainTextEdit()
        self.input.setPlaceholderText(
            "Paste a chat: 'Name: message' lines (the first speaker is the user), a JSON list of SillyTavern "
            'messages, a {"messages": [...], "context": {...}} object, or a .jsonl chat export.'
        )
        self.input.setPlainText(EXAMPLE)
        load = QPushButton("Load chat file…")
        load.clicked.connect(self.load_file)
        self.replay = QCheckBox("Replay")
        self.replay.setToolTip("One generation per user message, as the chat went")
        self.seed = QSpinBox(minimum=0, maximum=2_000_000_000, value=1)
        self.seed.setToolTip("Seed for probability rolls, so results repeat")
        self.ai_mode = QComboBox()
        for label, _ in self.AI_MODES:
            self.ai_mode.addItem(label)
        self.ai_mode.setToolTip(
            "Run this test with AI search on or off, whatever the settings say "
            "(uses the AI-search channel; a real call unless the answer is cached)"
        )
        self.run_button = QPushButton("Run  (Ctrl+Enter)")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(lambda *_: self.run())
        self.cancel_button = QPushButton("Cancel  (Esc)")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(lambda *_: self.cancel())
        QShortcut(QKeySequence("Ctrl+Return"), self).activated.connect(self.run)
        QShortcut(QKeySequence("Escape"), self).activated.connect(self.cancel)
        self.status = QLabel()
        self.status.setWordWrap(True)

        # Two rows: one row of every control would make this panel (and so the window's right
        # side) too wide for the entries table beside it.
        top = QHBoxLayout()
        top.addWidget(load)
        top.addWidget(self.replay)
        top.addWidget(QLabel("Seed"))
        top.addWidget(self.seed)
        top.addStretch(1)
        actions = QHBoxLayout()
        actions.addWidget(self.ai_mode, 1)
        actions.addWidget(self.cancel_button)
        actions.addWidget(self.run_button)

        self.generation = QComboBox()
        self.generation.currentIndexChanged.connect(self._show_generation)
        self.generation.setVisible(False)  # a choice only when a replay gave several generations
        self.summary = QLabel()
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setVisible(False)
        self.verdict_filter = QLineEdit(placeholderText="Filter verdicts (a title, 'cooldown'…)")
        self.verdict_filter.setClearButtonEnabled(True)
        self.model = QStandardItemModel(0, 4, self)
        self.model.setHorizontalHeaderLabels(["Entry", "Stage", "Outcome", "Why"])
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.verdict_filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.no_matches = QLabel()
        self.no_matches.setTextFormat(Qt.TextFormat.PlainText)
        self.no_matches.setStyleSheet("color: palette(placeholder-text); padding: 4px")
        self.no_matches.hide()
        self.verdict_filter.textChanged.connect(lambda *_: self._say_no_matches())
        self.verdicts = QTableView()
        self.verdicts.setModel(self.proxy)
        self.verdicts.setSortingEnabled(True)
        self.verdicts.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.proxy.sort(-1)  # keep the panel's own order (injected first) until a header is clicked
        self.verdicts.verticalHeader().setDefaultSectionSize(22)
        self.verdicts.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.verdicts.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verdicts.verticalHeader().hide()
        self.verdicts.horizontalHeader().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        # Why gets what is left; its full text is below the table
        for column, width in enumerate((150, 90, 72)):
            self.verdicts.setColumnWidth(column, width)
        self.verdicts.doubleClicked.connect(self._verdict_activated)
        self.verdicts.selectionModel().currentRowChanged.connect(lambda current, _previous: self._show_verdict(current))
        self.tips = CutTextTips(self.verdicts)
        self.verdict_detail = RowDetail("Select a verdict to read why in full.")
        self.prompt = QTextBrowser()

        results = QTabWidget()
        vw = QWidget()
        vl = QVBoxLayout(vw)
        vl.setContentsMargins(0, 0, 0, 0)
        vl.setSpacing(2)
        vl.addWidget(self.no_matches)
        vl.addWidget(self.verdicts, 1)
        vl.addWidget(self.verdict_detail)
        results.addTab(vw, "Verdicts")
        results.addTab(self.prompt, "Injected text")
        # the filter beside the tabs, not on a row of its own: the rows go to the verdicts
        results.setCornerWidget(self.verdict_filter, Qt.Corner.TopRightCorner)
        results.currentChanged.connect(lambda i: self.verdict_filter.setVisible(i == 0))
        self.results = results

        out = QWidget()
        ol = QVBoxLayout(out)
        ol.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        # the run's state on the results' first row, beside its summary: a row more for the verdicts
        head.addWidget(self.generation, 1)
        head.addWidget(self.summary)
        head.addWidget(self.status, 1)
        ol.addLayout(head)
        ol.addWidget(self.notes)
        ol.addWidget(results, 1)

        inp = QWidget()
        il = QVBoxLayout(inp)
        il.setContentsMargins(0, 0, 0, 0)
        il.addLayout(top)
        il.addLayout(actions)
        il.addWidget(self.input, 1)

        margins = 2 * (self.input.frameWidth() + int(self.input.document().documentMargin()))
        self.input.setMinimumHeight(self.input.fontMetrics().lineSpacing() * 3 + margins)
        self.split = split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(inp)
        split.addWidget(out)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([1, 1000])  # the verdicts get the room; the chat box (3 lines) scrolls
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

    # -- actions ----------------------------------------------------------------------------
    def load_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a chat", "", "Chats (*.jsonl *.json *.txt);;All files (*)")
        if path:
            soon(lambda: self.load_path(path))

    async def load_path(self, path: str) -> None:
        """Read a chat file off the GUI thread (an export of a long chat runs to megabytes)."""
        try:
            text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.status.setText(f"Could not read {path}: {exc}")
            return
        self.input.setPlainText(text)
        self.status.setText(f"Loaded {path}")

    def run(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.run_async())

    def cancel(self) -> None:
        """Stop a run in progress (an AI call that hangs is aborted, not left running)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def run_async(self) -> bool:
        try:
            doc = parse_chat_text(self.input.toPlainText())
        except ChatInputError as exc:
            self.clear_results()  # results of an earlier chat would read as this one's
            self.status.setText(f"✖ {exc}")
            return False
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        ai_mode = self.AI_MODES[self.ai_mode.currentIndex()][1]
        self.status.setToolTip("")
        self.status.setText("Running… (asking the AI)" if ai_mode not in (None, "off") else "Running…")
        try:
            gens = await self.runner(doc, self.replay.isChecked(), self.seed.value(), ai_mode)
        except asyncio.CancelledError:
            self.status.setText("Cancelled: nothing was changed")
            return False
        except Exception as exc:
            log.exception("test chat failed")
            self.clear_results()
            self.status.setText(f"✖ {exc}")
            return False
        finally:
            self.run_button.setEnabled(True)
            self.cancel_button.setEnabled(False)
        self.show_generations(gens)
        n = len(doc.messages)
        self.status.setText(f"{n} message{'' if n == 1 else 's'} · dry run: nothing stored")
        self.status.setToolTip("A dry run: no chat state was changed")
        return True

    # -- display ----------------------------------------------------------------------------
    def clear_results(self) -> None:
        self.show_generations([])
        self.summary.clear()
        self.notes.clear()
        self.notes.hide()
        self.model.removeRows(0, self.model.rowCount())
        self.prompt.clear()
        self._say_no_matches()

    def show_generations(self, gens: list[dict]) -> None:
        self.generations = gens
        self.generation.blockSignals(True)
        self.generation.clear()
        for i, g in enumerate(gens, 1):
            self.generation.addItem(
                f"#{i}: after message {g['messages']} — {len(g['injected'])} entries, {g['total_tokens']} tokens"
            )
        self.generation.setCurrentIndex(len(gens) - 1)
        self.generation.blockSignals(False)
        self.generation.setVisible(len(gens) > 1)
        self._show_generation(len(gens) - 1)

    def _show_generation(self, i: int) -> None:
        if not 0 <= i < len(self.generations):
            return
        g = self.generations[i]
        ms = g["timings_ms"].get("total", 0.0)
        if g.get("skipped_reason"):
            self.summary.setText(f"Skipped: {g['skipped_reason']}")
        else:
            ai_ms = g["timings_ms"].get("ai search")
            ai = f" (AI search {ai_ms:.0f} ms)" if ai_ms is not None else ""
            self.summary.setText(f"{len(g['injected'])} injected, {g['total_tokens']} tokens, {ms:.1f} ms{ai}")
        notes = g.get("notes") or []
        # AI fallbacks, cache hits and partial semantic search are explained here, not in verdicts
        self.notes.setText("\n".join(f"Note: {n}" for n in notes))
        self.notes.setVisible(bool(notes))
        self.model.removeRows(0, self.model.rowCount())
        self.verdict_detail.clear()
        for v in sorted(g["verdicts"], key=lambda v: (OUTCOME_ORDER.get(v["outcome"], 9), v["title"].casefold())):
            row = [
                QStandardItem(v["title"]),
                QStandardItem(v["stage"]),
                QStandardItem(v["outcome"]),
                QStandardItem(v["reason"]),
            ]
            row[0].setData(v.get("vault"), Qt.ItemDataRole.UserRole)
            row[3].setToolTip(v["reason"])
            self.model.appendRow(row)
        parts = []
        for grp in g["groups"]:
            where = (
                grp["outlet"] and f"outlet {grp['outlet']}"
            ) or f"{grp['position_name']}, depth {grp['depth']}, {grp['role_name']}"
            parts.append(
                f"<h4>{escape(grp['key'])} <small>({escape(where)})</small></h4>"
                f"<pre style='white-space: pre-wrap'>{escape(grp['text'])}</pre>"
            )
        self.prompt.setHtml("".join(parts) or "<i>Nothing would be injected.</i>")
        self._say_no_matches()

    def _say_no_matches(self) -> None:
        text = self.verdict_filter.text()
        self.no_matches.setText(f"No verdict matches “{text}”.")
        self.no_matches.setVisible(bool(text) and self.model.rowCount() > 0 and self.proxy.rowCount() == 0)

    def verdict_rows(self) -> list[tuple[str, str, str, str]]:
        def cell(r: int, c: int) -> str:
            return self.model.item(r, c).text()

        return [(cell(r, 0), cell(r, 1), cell(r, 2), cell(r, 3)) for r in range(self.model.rowCount())]

    def _show_verdict(self, index) -> None:
        if not index.isValid():
            self.verdict_detail.clear()
            return
        title, stage, outcome, reason = (index.siblingAtColumn(c).data() or "" for c in range(4))
        self.verdict_detail.show_row(title, [stage, outcome], reason)

    def _verdict_activated(self, index) -> None:
        src = self.proxy.mapToSource(index)
        item = self.model.item(src.row(), 0)
        self.entryRequested.emit(item.data(Qt.ItemDataRole.UserRole) or "", item.text())
