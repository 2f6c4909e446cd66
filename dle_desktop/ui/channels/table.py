"""The Channels view's right-hand panel: the six AI channels in a table (what each resolves to and
what it has used), and the selected channel's settings, connection test and usage below it."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from dle_desktop.ai.channels import LABELS, PURPOSES, ResolvedChannel, resolve_channel
from dle_desktop.errors import DleError
from dle_desktop.state.settings import CHANNELS, ProfileConfig, Settings
from dle_desktop.ui.channels.common import MODE_LABELS, meta, profile_kind, set_combo
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, WARN_STYLE, TestStrip, note
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.cut_text import CutTextTips

COLUMNS = ("Channel", "Status", "Connection", "Model", "Calls", "Tokens in / out", "Last call")
#: Connection and Model fit their text up to this width, so Status keeps the room it needs
NAME_COLUMN_MAX = 160
#: Below this, Connection and Model are too cut to read: Tokens and Last call make way for them
#: (both are in the selected channel's Usage line)
NAME_COLUMN_MIN = 100
USAGE_DETAIL_COLUMNS = (5, 6)
#: Room past the Status text, so a status never ends flush against the next column
STATUS_SLACK = 8


#: A channel's advice as the engine words it for any view, and as it reads here, where "in the
#: Channels view" would send the user where they already are.
_ADVICE_HERE = {
    "add one in the Channels view": "add one with Add… on the left",
    "choose one of yours in the Channels view": "choose one of yours as this channel's profile",
}


def said_here(problem: str) -> str:
    """A channel's problem worded for the Channels view itself."""
    for elsewhere, here in _ADVICE_HERE.items():
        problem = problem.replace(elsewhere, here)
    return problem


#: A channel's problem in a word or two for its Status cell, by what the engine's sentence says;
#: the whole sentence is the cell's tooltip and the selected channel's "In effect" line.
_STATUS_WORDS = (
    ("proxy URL", "bad proxy URL"),
    ("needs a model", "no model"),
    ("has no model", "no model"),
    ("does not exist", "profile missing"),
    ("no connection profile", "no profile"),
)
AI_SEARCH_OFF = "AI search itself is off: turn it on in the AI search box"


def status_word(problem: str) -> str:
    """The Status cell's words for a problem: "proxy mode needs a model name (…)" → "no model"."""
    return next((word for part, word in _STATUS_WORDS if part in problem), "not set up")


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


class ChannelsPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Channels")
        self.view = view
        self._filling = False
        self.table = QTableWidget(len(CHANNELS), len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for col in (2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self._names: tuple = ()
        #: what each header's title needs, measured while every column is shown (a hidden one's is 0)
        self._header_widths = [header.sectionSizeHint(c) for c in range(len(COLUMNS))]
        header.setStretchLastSection(False)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        for r, c in enumerate(CHANNELS):
            item = QTableWidgetItem(LABELS[c])
            item.setToolTip(PURPOSES[c])
            self.table.setItem(r, 0, item)
            for col in range(1, len(COLUMNS)):
                self.table.setItem(r, col, QTableWidgetItem(""))
        self.table.setFixedHeight(
            self.table.verticalHeader().length() + header.sizeHint().height() + 2 * self.table.frameWidth() + 2
        )
        self.table.currentCellChanged.connect(lambda *_: self.fill_detail())
        self.tips = CutTextTips(self.table)
        self.table.viewport().installEventFilter(self)  # Connection and Model widths follow the room there is

        self.detail = QGroupBox()
        self.purpose = note("", MUTED_STYLE)
        self.mode = QComboBox()
        self.profile_combo = QComboBox()
        self.proxy_url = QLineEdit()
        self.proxy_url.setPlaceholderText("http://127.0.0.1:42069")
        self.model = QLineEdit()
        self.max_tokens = QSpinBox()
        self.timeout = QDoubleSpinBox(decimals=1, suffix=" s")
        self.resolved = note()
        self.tests = QStackedWidget()
        self.strips: dict[str, TestStrip] = {}
        for c in CHANNELS:
            strip = TestStrip("Test")
            strip.button.setToolTip(
                "Send a tiny request (8 tokens) on this channel's connection; it bypasses the breaker"
            )
            strip.button.clicked.connect(lambda *_, ch=c: self.test_channel(ch))
            self.strips[c] = strip
            self.tests.addWidget(strip)
        self.usage = note()
        self.last_error = note("", ERROR_STYLE)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Connection", self.mode)
        form.addRow("Profile", self.profile_combo)
        form.addRow("Proxy URL", self.proxy_url)
        form.addRow("Model", self.model)
        limits = QHBoxLayout()
        limits.addWidget(self.max_tokens)
        limits.addWidget(QLabel("Timeout"))
        limits.addWidget(self.timeout)
        limits.addStretch(1)
        form.addRow("Max tokens", limits)
        form.addRow("In effect", self.resolved)
        form.addRow("", self.tests)
        form.addRow("Usage", self.usage)
        form.addRow("", self.last_error)
        dv = QVBoxLayout(self.detail)
        dv.addWidget(self.purpose)
        dv.addLayout(form)
        dv.addStretch(1)

        self.mode.currentIndexChanged.connect(lambda *_: self._edit("connection_mode", self.mode.currentData()))
        self.profile_combo.currentIndexChanged.connect(
            lambda *_: self._edit("profile_id", self.profile_combo.currentData() or "")
        )
        self.proxy_url.textEdited.connect(lambda t: self._edit("proxy_url", t.strip()))
        self.model.textEdited.connect(lambda t: self._edit("model", t.strip()))
        self.max_tokens.valueChanged.connect(lambda v: self._edit("max_tokens", v))
        self.timeout.valueChanged.connect(lambda v: self._edit("timeout", round(v * 1000)))

        self.usage_since = note("", MUTED_STYLE)
        self.reset_usage_button = QPushButton("Reset counts")
        self.reset_usage_button.setToolTip("Start every channel's usage counts from zero")
        self.reset_usage_button.clicked.connect(lambda *_: soon(self.reset_usage))
        since_row = QHBoxLayout()
        since_row.addWidget(self.usage_since, 1)
        since_row.addWidget(self.reset_usage_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(since_row)
        layout.addWidget(self.detail, 1)

    # -- the table ---------------------------------------------------------------------------------
    def fill_table(self) -> None:
        settings = self.view.draft_or_current()
        usage = (self.view.snapshot or {}).get("channels", {})
        for r, c in enumerate(CHANNELS):
            res = resolve_channel(settings, c)
            status, color, tip = self._status(res, settings)
            self._cell(r, 1, status, tip, color)
            conn = self._connection_text(res)
            self._cell(r, 2, conn, f"{conn[2:]} (AI search's connection)" if res.inherited and res.profile else conn)
            model = res.model or ("server default" if res.profile else "")
            self._cell(r, 3, model, model)
            u = usage.get(c, {}).get("usage")
            if u:
                calls = f"{u['calls']}" + (f" ({u['failures']} failed)" if u["failures"] else "")
                self._cell(r, 4, calls, None, QColor("#b3261e") if u["failures"] else None)
                self._cell(r, 5, f"{_tokens(u['input_tokens'])} / {_tokens(u['output_tokens'])}")
                self._cell(
                    r,
                    6,
                    f"{u['last_latency_ms']} ms" if u["last_latency_ms"] is not None else "—",
                    time.strftime("at %H:%M:%S", time.localtime(u["last_call_at"])) if u["last_call_at"] else None,
                )
            else:
                for col in range(4, 7):
                    self._cell(r, col, "")
        self._fit_names()

    def _fit_names(self, force: bool = False) -> None:
        """Status as wide as its longest word, Connection and Model as wide as their text in what
        is left, and Tokens and Last call only while that leaves the names readable; set again only
        when the texts change or the table is resized, so a width the user dragged stays while the
        counts tick."""
        names = tuple(self._item(r, c).text() for r in range(self.table.rowCount()) for c in (1, 2, 3))
        if names == self._names and not force:
            return
        self._names = names
        table = self.table

        def wanted(col: int) -> int:  # sampled over the six rows
            return max(table.sizeHintForColumn(col), self._header_widths[col])

        status = max(self._header_widths[1], table.sizeHintForColumn(1) + STATUS_SLACK)
        spare = table.viewport().width() - status - sum(wanted(c) for c in (0, 4))
        usage = sum(wanted(c) for c in USAGE_DETAIL_COLUMNS)
        wants = {c: wanted(c) for c in (2, 3)}
        show_usage = spare - usage >= sum(min(want, NAME_COLUMN_MIN) for want in wants.values())
        for col in USAGE_DETAIL_COLUMNS:
            table.setColumnHidden(col, not show_usage)
        spare -= usage if show_usage else 0
        narrow, wide = sorted(wants, key=lambda c: wants[c])
        for col, room in ((narrow, spare // 2), (wide, None)):
            room = spare if room is None else room  # the wider one gets what the narrower left
            width = max(min(self._header_widths[col], NAME_COLUMN_MIN), min(wants[col], NAME_COLUMN_MAX, room))
            table.setColumnWidth(col, width)
            spare -= width

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_names(force=True)
        return super().eventFilter(watched, event)

    def _item(self, row: int, col: int) -> QTableWidgetItem:
        item = self.table.item(row, col)
        assert item is not None  # every row is filled whole
        return item

    def _cell(self, row: int, col: int, text: str, tip: str | None = None, color: QColor | None = None) -> None:
        item = self._item(row, col)
        item.setText(text)
        item.setToolTip(tip or "")
        item.setForeground(color if color is not None else self.table.palette().text())

    @staticmethod
    def _connection_text(r: ResolvedChannel) -> str:
        if r.profile is None:
            return "—"
        what = f"proxy {r.profile.base_url}" if r.mode == "proxy" else r.profile.name
        return f"↳ {what}" if r.inherited else what

    @staticmethod
    def _status(r: ResolvedChannel, settings: Settings) -> tuple[str, QColor | None, str]:
        if r.problem:
            return f"✗ {status_word(r.problem)}", QColor("#b3261e"), said_here(r.problem)
        if r.channel == "ai_search" and not settings.ai_search_enabled:
            return "○ off", None, AI_SEARCH_OFF
        if r.note:
            return "⚠ ready", QColor("#a15c00"), r.note
        return "✓ ready", QColor("#2e7d32"), "The connection is set up; Test checks that it answers"

    def current_channel(self) -> str:
        row = self.table.currentRow()
        return CHANNELS[row if 0 <= row < len(CHANNELS) else 0]

    def select_channel(self, channel: str) -> None:
        self.table.selectRow(CHANNELS.index(channel))

    # -- the selected channel ----------------------------------------------------------------------
    def fill_detail(self) -> None:
        c = self.current_channel()
        d = self.view.draft
        self._filling = True
        try:
            self.detail.setTitle(LABELS[c])
            self.purpose.setText(PURPOSES[c][:1].upper() + PURPOSES[c][1:] + ".")
            mode = d[f"{c}_connection_mode"]
            self.mode.clear()
            for m in meta(f"{c}_connection_mode", "choices"):
                if m != "st" or mode == "st":
                    self.mode.addItem(MODE_LABELS[m], m)
            set_combo(self.mode, mode)
            self.proxy_url.setText(d[f"{c}_proxy_url"])
            self.model.setText(d[f"{c}_model"])
            self.max_tokens.setRange(meta(f"{c}_max_tokens", "lo"), meta(f"{c}_max_tokens", "hi"))
            self.max_tokens.setValue(d[f"{c}_max_tokens"])
            self.timeout.setRange(meta(f"{c}_timeout", "lo") / 1000, int(meta(f"{c}_timeout", "hi") / 100) / 10)
            self.timeout.setValue(d[f"{c}_timeout"] / 1000)
            self.tests.setCurrentWidget(self.strips[c])
        finally:
            self._filling = False
        self.fill_detail_state()
        self.fill_usage()

    def _fill_profile_combo(self, c: str) -> None:
        view = self.view
        pid = view.draft[f"{c}_profile_id"]
        self.profile_combo.clear()
        self.profile_combo.addItem("(choose a profile)" if view.profiles() else "(add a profile first)", "")
        for p in view.profiles():
            self.profile_combo.addItem(p.name, p.id)
        if pid and view.profile(pid) is None:
            self.profile_combo.addItem(f"(missing: {pid})", pid)
        set_combo(self.profile_combo, pid)

    def fill_detail_state(self) -> None:
        """The parts of the detail that follow other edits: which fields apply, and what is in effect."""
        c = self.current_channel()
        settings = self.view.draft_or_current()
        r = resolve_channel(settings, c)
        mode = self.view.draft[f"{c}_connection_mode"]
        self._filling = True
        try:
            self._fill_profile_combo(c)
        finally:
            self._filling = False
        self.profile_combo.setEnabled(mode == "profile")
        self.proxy_url.setEnabled(r.mode == "proxy")
        default_model = (settings.ai_search_model if r.inherited else "") or (
            r.profile.model if r.profile is not None and r.mode == "profile" else ""
        )
        self.model.setPlaceholderText(
            f"default: {default_model}"
            if default_model
            else "required for a proxy"
            if r.mode == "proxy"
            else "the profile's model"
        )
        if r.problem:
            text, style = f"✗ {said_here(r.problem)}", ERROR_STYLE
        else:
            assert r.profile is not None  # None only with a problem
            via = "AI search's connection: " if r.inherited else ""
            conn = f"the proxy at {r.profile.base_url}" if r.mode == "proxy" else f"profile '{r.profile.name}'"
            text = (
                f"{via}{conn}, model {r.model or 'chosen by the server'}, up to {r.max_tokens} tokens, "
                f"{r.timeout_s:g} s timeout."
            )
            style = ""
        if r.note:
            text += f"\n⚠ {r.note}."
            style = style or WARN_STYLE
        elif c == "ai_search" and not r.problem and not settings.ai_search_enabled:
            text += f"\n○ {AI_SEARCH_OFF}."
        self.resolved.setText(text)
        self.resolved.setStyleSheet(style)

    def fill_usage(self) -> None:
        c = self.current_channel()
        u = ((self.view.snapshot or {}).get("channels", {}).get(c) or {}).get("usage")
        if not u:
            self.usage.setText("No calls yet.")
            self.last_error.hide()
            return
        parts = [
            f"{u['calls']} call{'s' if u['calls'] != 1 else ''}",
            f"{u['failures']} failed",
            f"tokens {u['input_tokens']:,} in / {u['output_tokens']:,} out",
        ]
        if u["cache_read_tokens"] or u["cache_write_tokens"]:
            parts.append(f"prompt cache {u['cache_read_tokens']:,} read / {u['cache_write_tokens']:,} written")
        if c == "ai_search":
            parts.append(f"{u['cache_hits']} answers from the AI cache")
        if u["last_latency_ms"] is not None:
            when = time.strftime("%H:%M:%S", time.localtime(u["last_call_at"])) if u["last_call_at"] else ""
            parts.append(f"last {u['last_latency_ms']} ms" + (f" at {when}" if when else ""))
        self.usage.setText(" · ".join(parts))
        self.last_error.setText(f"Last error: {u['last_error']}" if u["last_error"] else "")
        self.last_error.setVisible(bool(u["last_error"]))

    def fill_usage_since(self, since) -> None:
        self.usage_since.setText(
            time.strftime("Usage counted since %d %b %Y, %H:%M", time.localtime(since))
            if isinstance(since, (int, float))
            else ""
        )

    def _edit(self, part: str, value) -> None:
        if self._filling or value is None:
            return
        self.view.set_draft(**{f"{self.current_channel()}_{part}": value})

    # -- engine work -------------------------------------------------------------------------------
    def _channel_untouched(self, channel: str) -> bool:
        """Is what this channel resolves to the same in the draft as in the running engine?"""
        view = self.view
        try:
            draft = resolve_channel(view.draft_settings(), channel)
        except DleError:
            return False
        running = resolve_channel(view.bridge.settings, channel)
        secret = draft.profile.secret_id if draft.profile is not None else ""
        return draft == running and secret not in view.new_keys and secret not in view.forget_keys

    def test_channel(self, channel: str) -> asyncio.Task | None:
        """Test the channel's connection: the engine's own when nothing here changed it, else the
        edited one (with the key typed in), so Test answers for what the view shows."""
        view = self.view
        strip = self.strips[channel]
        if self._channel_untouched(channel):
            work = self._said_here(view.bridge.test_ai_channel(channel))
            key = None
        else:
            r = resolve_channel(view.draft_or_current(), channel)
            if r.profile is None:
                strip.show_text(f"✗ {said_here(r.problem or '')}", ERROR_STYLE)
                return None
            config = dataclasses.replace(r.profile, model=r.model)
            key = view.new_keys.get(config.secret_id)
            if key is None and config.secret_id in view.forget_keys:
                key = ""
            work = self._labelled(channel, config, view.bridge.test_ai_profile(config, key))
        task = strip.start(work, key)
        task.add_done_callback(lambda *_: view.isVisible() and soon(view.refresh))
        return task

    @staticmethod
    async def _said_here(work) -> tuple[bool, str, int]:
        ok, message, ms = await work
        return ok, said_here(message), ms

    @staticmethod
    async def _labelled(channel: str, config: ProfileConfig, work) -> tuple[bool, str, int]:
        ok, message, ms = await work
        return ok, f"{LABELS[channel]} (unsaved settings) via {profile_kind(config)}: {message}", ms

    async def reset_usage(self) -> None:
        bridge = self.view.bridge
        await bridge.reset_ai_usage()
        await self.view.refresh()

    def stop(self) -> None:
        for strip in self.strips.values():
            strip.cancel()
