"""The Channels view: connection profiles (keys in the keyring), the six AI channels with what each
one resolves to and what it has used, AI search's own options, and the circuit breaker.

Edits are a draft of this view's settings only; Apply hands them (and any keys typed in) to the
app's `apply_settings`, laid over whatever the rest of the settings are by then. The usage counts
and the breaker come from `engine.ai.snapshot()`, read every two seconds while the view is shown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.ai.channels import LABELS, PURPOSES, ResolvedChannel, resolve_channel
from dle_desktop.ai.types import FLAVOR_LABELS
from dle_desktop.errors import DleError
from dle_desktop.state.settings import CHANNELS, FIELDS, ProfileConfig, Settings
from dle_desktop.ui.async_util import soon
from dle_desktop.ui.profile_editor import (
    ERROR_STYLE,
    MUTED_STYLE,
    OK_STYLE,
    WARN_STYLE,
    ProfileEditor,
    TestStrip,
    new_profile_id,
    note,
)

log = logging.getLogger(__name__)

CHANNEL_PARTS = ("connection_mode", "profile_id", "proxy_url", "model", "max_tokens", "timeout")
AI_SEARCH_FIELDS = ("ai_search_enabled", "ai_search_mode", "ai_confidence_threshold", "ai_error_fallback",
                    "ai_empty_fallback", "fix_ai_confidence_budget", "hierarchical_pre_filter",
                    "hierarchical_aggressiveness")
#: The settings this view edits; everything else is left as it is.
OWN_FIELDS = ("connection_profiles", *(f"{c}_{p}" for c in CHANNELS for p in CHANNEL_PARTS), *AI_SEARCH_FIELDS)

MODE_LABELS = {
    "inherit": "Same as AI search",
    "st": "SillyTavern's connection (not reachable here: same as AI search)",
    "profile": "A connection profile",
    "proxy": "A proxy (Anthropic Messages API, e.g. claude-code-proxy)",
}
AI_MODE_LABELS = {
    "two-stage": "Two-stage: keywords first, then the AI chooses",
    "ai-only": "AI only: the AI chooses from all entries",
}
THRESHOLD_LABELS = {
    "low": "Low: keep every pick",
    "medium": "Medium: drop low-confidence picks",
    "high": "High: keep only high-confidence picks",
}
ERROR_FALLBACK_LABELS = {
    "keyword": "Use the keyword matches",
    "constants_only": "Only constant entries",
    "bootstrap_only": "Only bootstrap entries",
    "none": "Nothing",
}
EMPTY_FALLBACK_LABELS = {
    "constants": "Only constant entries",
    "constants_bootstrap": "Constant and bootstrap entries",
    "keyword": "Use the keyword matches",
    "none": "Nothing",
}
BREAKER_TEXT = {
    "closed": ("Closed: AI calls go through.", OK_STYLE),
    "half-open": ("Half-open: the next AI call is a trial; its success closes the breaker.", WARN_STYLE),
}
COLUMNS = ("Channel", "Status", "Connection", "Model", "Calls", "Tokens in / out", "Last call")


def own_values(settings: Settings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in OWN_FIELDS}


def _meta(name: str, what: str):
    return FIELDS[name].metadata.get(what)


def _combo(labels: dict[str, str], choices) -> QComboBox:
    combo = QComboBox()
    for value in choices:
        combo.addItem(labels.get(value, value), value)
    return combo


def _set_combo(combo: QComboBox, value) -> None:
    i = combo.findData(value)
    if i >= 0:
        combo.setCurrentIndex(i)


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def profile_kind(p: ProfileConfig) -> str:
    return FLAVOR_LABELS.get(p.flavor if p.provider == "openai" else p.provider, p.provider)


class ChannelsView(QWidget):
    applyRequested = Signal(object, object)  # Settings, {secret_id: api key}
    dirtyChanged = Signal(bool)

    def __init__(self, bridge, parent=None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.secrets = bridge.runtime.ctx.secrets
        self.applied = own_values(self.current_settings())
        self.draft = dict(self.applied)
        self.new_keys: dict[str, str] = {}
        self.forget_keys: set[str] = set()
        self._stored: dict[str, bool] = {}
        self.snapshot: dict | None = None
        self.editor: ProfileEditor | None = None
        self.question: QMessageBox | None = None
        self._was_dirty = False
        self._filling = False
        self._refresh: asyncio.Future | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(2000)
        self.timer.timeout.connect(self._tick)

        self.split = QSplitter(Qt.Horizontal)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 4, 0)
        lv.addWidget(self._profiles_box(), 1)
        lv.addWidget(self._ai_search_box())
        lv.addWidget(self._breaker_box())
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(4, 0, 0, 0)
        rv.addWidget(self._channels_box(), 1)
        self.split.addWidget(left)
        self.split.addWidget(right)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        self.split.setSizes([420, 780])
        layout = QVBoxLayout(self)
        layout.addWidget(self.split, 1)
        layout.addLayout(self._apply_bar())
        QShortcut(QKeySequence.Save, self, activated=lambda: self.apply(), context=Qt.WidgetWithChildrenShortcut)
        self._fill_all()
        self.table.selectRow(0)

    # -- settings in and out -----------------------------------------------------------------------
    def current_settings(self) -> Settings:
        return self.bridge.runtime.ctx.settings

    def draft_settings(self) -> Settings:
        """The settings as they would be after Apply (raises DleError if a value is refused)."""
        return self.current_settings().replace(**self.draft)

    def _draft_or_current(self) -> Settings:
        try:
            return self.draft_settings()
        except DleError:
            return self.current_settings()

    @property
    def dirty(self) -> bool:
        return self.draft != self.applied or bool(self.new_keys) or bool(self.forget_keys)

    def profiles(self) -> tuple[ProfileConfig, ...]:
        return self.draft["connection_profiles"]

    def profile(self, pid: str) -> ProfileConfig | None:
        return next((p for p in self.profiles() if p.id == pid), None)

    def key_state(self, secret_id: str) -> str:
        if secret_id in self.new_keys:
            return "pending"
        if secret_id in self.forget_keys:
            return "cleared"
        if secret_id not in self._stored:
            self._stored[secret_id] = self.secrets.get(secret_id) is not None
        return "stored" if self._stored[secret_id] else "none"

    def set_draft(self, **values) -> None:
        self.draft.update(values)
        self._changed()

    def _changed(self) -> None:
        self._fill_profiles()
        self._fill_channels()
        self._fill_detail_state()
        dirty = self.dirty
        self.dirty_label.setVisible(dirty)
        self.apply_button.setEnabled(dirty)
        self.revert_button.setEnabled(dirty)
        if dirty != self._was_dirty:
            self._was_dirty = dirty
            self.dirtyChanged.emit(dirty)

    def apply(self) -> bool:
        """Save the draft (and store typed keys) through the app; True when it was saved."""
        if not self.dirty:
            return True
        try:
            settings = self.draft_settings()
        except DleError as exc:
            self._say(f"Not saved: {exc}", ERROR_STYLE)
            return False
        forget = set(self.forget_keys)
        self.applyRequested.emit(settings, dict(self.new_keys))
        now = own_values(self.current_settings())
        if now != self.draft:  # the app said why (it could not save); the draft stays
            return False
        for secret_id in forget:
            self.secrets.delete(secret_id)
        self.new_keys.clear()
        self.forget_keys.clear()
        self._stored.clear()
        self.applied = now
        self._changed()
        self._say("Saved; the engine runs with these settings now.", OK_STYLE)
        soon(self.refresh)
        return True

    def revert(self) -> None:
        self.draft = dict(self.applied)
        self.new_keys.clear()
        self.forget_keys.clear()
        self._fill_all()
        self._say("")

    def sync_external(self) -> None:
        """Settings saved elsewhere (the Settings dialog, another Apply): follow them unless this
        view holds unsaved edits, which then apply on top of the new values."""
        now = own_values(self.current_settings())
        if now != self.applied:
            clean = not self.dirty
            self.applied = now
            if clean:
                self.draft = dict(now)
                self._fill_all()
            else:
                self._changed()

    def _say(self, text: str, style: str = "") -> None:
        self.apply_message.setText(text)
        self.apply_message.setStyleSheet(style)

    # -- construction ------------------------------------------------------------------------------
    def _profiles_box(self) -> QGroupBox:
        box = QGroupBox("Connection profiles")
        self.profile_list = QListWidget()
        self.profile_list.setAlternatingRowColors(True)
        self.profile_list.setMinimumHeight(90)
        self.profile_list.itemActivated.connect(lambda *_: self.edit_profile())
        self.profile_list.currentRowChanged.connect(lambda *_: self._profile_buttons())
        self.add_button = QPushButton("Add…")
        self.edit_button = QPushButton("Edit…")
        self.duplicate_button = QPushButton("Duplicate")
        self.delete_button = QPushButton("Delete")
        self.add_button.setToolTip("A new named connection: provider, server, model and API key")
        self.delete_button.setToolTip("Delete the selected profile (Del); its key leaves the keyring on Apply")
        self.add_button.clicked.connect(lambda *_: self.add_profile())
        self.edit_button.clicked.connect(lambda *_: self.edit_profile())
        self.duplicate_button.clicked.connect(lambda *_: self.duplicate_profile())
        self.delete_button.clicked.connect(lambda *_: self.delete_profile())
        QShortcut(QKeySequence.Delete, self.profile_list, activated=lambda: self.delete_profile(),
                  context=Qt.WidgetShortcut)
        row = QHBoxLayout()
        for b in (self.add_button, self.edit_button, self.duplicate_button, self.delete_button):
            row.addWidget(b)
        row.addStretch(1)
        layout = QVBoxLayout(box)
        layout.addWidget(self.profile_list, 1)
        layout.addLayout(row)
        if self.secrets.problem:
            layout.addWidget(note(self.secrets.problem, WARN_STYLE))
        return box

    def _ai_search_box(self) -> QGroupBox:
        box = QGroupBox("AI search")
        self.ai_enabled = QCheckBox("Let an AI choose the entries for each generation")
        self.ai_enabled.setToolTip("Uses the AI search channel's connection; its failures fall back as set below")
        self.ai_mode = _combo(AI_MODE_LABELS, _meta("ai_search_mode", "choices"))
        self.ai_threshold = _combo(THRESHOLD_LABELS, _meta("ai_confidence_threshold", "choices"))
        self.ai_error = _combo(ERROR_FALLBACK_LABELS, _meta("ai_error_fallback", "choices"))
        self.ai_empty = _combo(EMPTY_FALLBACK_LABELS, _meta("ai_empty_fallback", "choices"))
        self.ai_budget = QCheckBox("Confidence decides budget cuts")
        self.ai_budget.setToolTip(_meta("fix_ai_confidence_budget", "doc"))
        self.prefilter = QCheckBox("Category pre-filter")
        self.prefilter.setToolTip("For large vaults: a first, small AI call picks categories, so the full "
                                  "search sees fewer candidates")
        self.aggressiveness = QSpinBox(minimum=0, maximum=int(_meta("hierarchical_aggressiveness", "hi") * 100),
                                       suffix=" %")
        self.aggressiveness.setPrefix("may drop up to ")
        self.aggressiveness.setToolTip("The most of the candidates the pre-filter may drop; an answer that "
                                       "would drop more is ignored")
        form = QFormLayout(box)
        form.addRow(self.ai_enabled)
        form.addRow("Mode", self.ai_mode)
        form.addRow("Confidence", self.ai_threshold)
        form.addRow("If the AI fails", self.ai_error)
        form.addRow("If it picks nothing", self.ai_empty)
        form.addRow(self.ai_budget)
        form.addRow(note("When the token budget cuts, the AI's surest picks are kept first (off: by "
                         "priority only, as DLE does).", MUTED_STYLE))
        pre = QHBoxLayout()
        pre.addWidget(self.prefilter)
        pre.addWidget(self.aggressiveness, 1)
        form.addRow(pre)
        self.ai_enabled.toggled.connect(lambda on: self._edit(ai_search_enabled=on))
        self.ai_mode.currentIndexChanged.connect(lambda *_: self._edit(ai_search_mode=self.ai_mode.currentData()))
        self.ai_threshold.currentIndexChanged.connect(
            lambda *_: self._edit(ai_confidence_threshold=self.ai_threshold.currentData()))
        self.ai_error.currentIndexChanged.connect(lambda *_: self._edit(ai_error_fallback=self.ai_error.currentData()))
        self.ai_empty.currentIndexChanged.connect(lambda *_: self._edit(ai_empty_fallback=self.ai_empty.currentData()))
        self.ai_budget.toggled.connect(lambda on: self._edit(fix_ai_confidence_budget=on))
        self.prefilter.toggled.connect(lambda on: self._edit(hierarchical_pre_filter=on))
        self.aggressiveness.valueChanged.connect(lambda v: self._edit(hierarchical_aggressiveness=v / 100))
        return box

    def _breaker_box(self) -> QGroupBox:
        box = QGroupBox("Circuit breaker")
        self.breaker_label = note("Reading…", MUTED_STYLE)
        self.breaker_label.setToolTip("Two failures in a row that say the provider is broken (server errors, network, "
                                      "unreadable answers) pause AI calls for 30 s; AI search then falls back")
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Close the breaker now, so the next AI call goes out")
        self.clear_cache_button = QPushButton("Clear AI cache")
        self.clear_cache_button.setToolTip("Forget remembered AI-search answers; the next generation asks again")
        self.breaker_message = note("", MUTED_STYLE)
        self.reset_button.clicked.connect(lambda *_: soon(self.reset_breaker))
        self.clear_cache_button.clicked.connect(lambda *_: soon(self.clear_cache))
        row = QHBoxLayout()
        row.addWidget(self.reset_button)
        row.addWidget(self.clear_cache_button)
        row.addWidget(self.breaker_message, 1)
        layout = QVBoxLayout(box)
        layout.addWidget(self.breaker_label)
        layout.addLayout(row)
        return box

    def _channels_box(self) -> QGroupBox:
        box = QGroupBox("Channels")
        self.table = QTableWidget(len(CHANNELS), len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        for col, width in ((2, 130), (3, 140)):
            header.setSectionResizeMode(col, QHeaderView.Interactive)
            self.table.setColumnWidth(col, width)
        header.setStretchLastSection(False)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.table.setTextElideMode(Qt.ElideRight)
        for r, c in enumerate(CHANNELS):
            item = QTableWidgetItem(LABELS[c])
            item.setToolTip(PURPOSES[c])
            self.table.setItem(r, 0, item)
            for col in range(1, len(COLUMNS)):
                self.table.setItem(r, col, QTableWidgetItem(""))
        self.table.setFixedHeight(self.table.verticalHeader().length() + header.sizeHint().height()
                                  + 2 * self.table.frameWidth() + 2)
        self.table.currentCellChanged.connect(lambda *_: self._fill_detail())

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
            strip.button.setToolTip("Send a tiny request (8 tokens) on this channel's connection; it bypasses the "
                                    "breaker")
            strip.button.clicked.connect(lambda *_, ch=c: self.test_channel(ch))
            self.strips[c] = strip
            self.tests.addWidget(strip)
        self.usage = note()
        self.last_error = note("", ERROR_STYLE)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
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

        self.mode.currentIndexChanged.connect(lambda *_: self._edit_channel("connection_mode", self.mode.currentData()))
        self.profile_combo.currentIndexChanged.connect(
            lambda *_: self._edit_channel("profile_id", self.profile_combo.currentData() or ""))
        self.proxy_url.textEdited.connect(lambda t: self._edit_channel("proxy_url", t.strip()))
        self.model.textEdited.connect(lambda t: self._edit_channel("model", t.strip()))
        self.max_tokens.valueChanged.connect(lambda v: self._edit_channel("max_tokens", v))
        self.timeout.valueChanged.connect(lambda v: self._edit_channel("timeout", int(round(v * 1000))))

        self.usage_since = note("", MUTED_STYLE)
        self.reset_usage_button = QPushButton("Reset counts")
        self.reset_usage_button.setToolTip("Start every channel's usage counts from zero")
        self.reset_usage_button.clicked.connect(lambda *_: soon(self.reset_usage))
        since_row = QHBoxLayout()
        since_row.addWidget(self.usage_since, 1)
        since_row.addWidget(self.reset_usage_button)

        layout = QVBoxLayout(box)
        layout.addWidget(self.table)
        layout.addLayout(since_row)
        layout.addWidget(self.detail, 1)
        return box

    def _apply_bar(self) -> QHBoxLayout:
        self.dirty_label = QLabel("● Unsaved changes")
        self.dirty_label.setStyleSheet(WARN_STYLE)
        self.dirty_label.hide()
        self.apply_message = note()
        self.revert_button = QPushButton("Revert")
        self.revert_button.setToolTip("Drop the changes made here since the last Apply")
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Save these settings and restart the engine with them (Ctrl+S)")
        self.apply_button.setDefault(True)
        self.revert_button.clicked.connect(lambda *_: self.revert())
        self.apply_button.clicked.connect(lambda *_: self.apply())
        self.apply_button.setEnabled(False)
        self.revert_button.setEnabled(False)
        row = QHBoxLayout()
        row.addWidget(self.dirty_label)
        row.addWidget(self.apply_message, 1)
        row.addWidget(self.revert_button)
        row.addWidget(self.apply_button)
        return row

    # -- filling -----------------------------------------------------------------------------------
    def _fill_all(self) -> None:
        self._filling = True
        try:
            d = self.draft
            self.ai_enabled.setChecked(d["ai_search_enabled"])
            _set_combo(self.ai_mode, d["ai_search_mode"])
            _set_combo(self.ai_threshold, d["ai_confidence_threshold"])
            _set_combo(self.ai_error, d["ai_error_fallback"])
            _set_combo(self.ai_empty, d["ai_empty_fallback"])
            self.ai_budget.setChecked(d["fix_ai_confidence_budget"])
            self.prefilter.setChecked(d["hierarchical_pre_filter"])
            self.aggressiveness.setValue(int(round(d["hierarchical_aggressiveness"] * 100)))
            self.aggressiveness.setEnabled(d["hierarchical_pre_filter"])
        finally:
            self._filling = False
        self._changed()
        self._fill_detail()

    def _fill_profiles(self) -> None:
        current = self.selected_profile_id()
        settings = self._draft_or_current()
        users: dict[str, list[str]] = {}
        for c in CHANNELS:
            r = resolve_channel(settings, c)
            if r.profile is not None and r.mode == "profile":
                users.setdefault(r.profile.id, []).append(LABELS[c])
        self.profile_list.blockSignals(True)
        self.profile_list.clear()
        for p in self.profiles():
            key = {"stored": "key stored", "pending": "key saved on Apply", "cleared": "key removed on Apply",
                   "none": "no key"}[self.key_state(p.secret_id)]
            item = QListWidgetItem(f"{p.name}\n{profile_kind(p)} · {p.model or 'server default'} · {key}")
            item.setData(Qt.UserRole, p.id)
            used = users.get(p.id)
            item.setToolTip(f"Used by {', '.join(used)}" if used else "Not used by any channel")
            self.profile_list.addItem(item)
            if p.id == current:
                self.profile_list.setCurrentItem(item)
        if not self.profiles():
            item = QListWidgetItem("No profiles yet: Add… one for your AI provider\nor local server.")
            item.setFlags(Qt.NoItemFlags)
            self.profile_list.addItem(item)
        elif self.profile_list.currentRow() < 0:
            self.profile_list.setCurrentRow(0)
        self.profile_list.blockSignals(False)
        self._profile_buttons()

    def _profile_buttons(self) -> None:
        has = self.selected_profile_id() is not None
        for b in (self.edit_button, self.duplicate_button, self.delete_button):
            b.setEnabled(has)

    def selected_profile_id(self) -> str | None:
        item = self.profile_list.currentItem()
        return item.data(Qt.UserRole) if item is not None else None

    def _fill_channels(self) -> None:
        settings = self._draft_or_current()
        usage = (self.snapshot or {}).get("channels", {})
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
                self._cell(r, 6, f"{u['last_latency_ms']} ms" if u["last_latency_ms"] is not None else "—",
                           time.strftime("at %H:%M:%S", time.localtime(u["last_call_at"])) if u["last_call_at"] else None)
            else:
                for col in range(4, 7):
                    self._cell(r, col, "")

    def _cell(self, row: int, col: int, text: str, tip: str | None = None, color: QColor | None = None) -> None:
        item = self.table.item(row, col)
        item.setText(text)
        item.setToolTip(tip or "")
        item.setForeground(color if color is not None else self.table.palette().text())

    @staticmethod
    def _connection_text(r: ResolvedChannel) -> str:
        if r.profile is None:
            return "—"
        what = f"proxy {r.profile.base_url}" if r.mode == "proxy" else r.profile.name
        return f"↳ {what}" if r.inherited else what

    def _status(self, r: ResolvedChannel, settings: Settings) -> tuple[str, QColor | None, str]:
        if r.problem:
            return f"✗ {r.problem}", QColor("#b3261e"), r.problem
        if r.channel == "ai_search" and not settings.ai_search_enabled:
            return "○ off", None, "The connection is set up; AI search itself is off (turn it on in the AI search box)"
        if r.note:
            return "⚠ ready", QColor("#a15c00"), r.note
        return "✓ ready", QColor("#2e7d32"), "The connection is set up; Test checks that it answers"

    def current_channel(self) -> str:
        row = self.table.currentRow()
        return CHANNELS[row if 0 <= row < len(CHANNELS) else 0]

    def select_channel(self, channel: str) -> None:
        self.table.selectRow(CHANNELS.index(channel))

    def _fill_detail(self) -> None:
        c = self.current_channel()
        d = self.draft
        self._filling = True
        try:
            self.detail.setTitle(LABELS[c])
            self.purpose.setText(PURPOSES[c][:1].upper() + PURPOSES[c][1:] + ".")
            mode = d[f"{c}_connection_mode"]
            self.mode.clear()
            for m in _meta(f"{c}_connection_mode", "choices"):
                if m != "st" or mode == "st":
                    self.mode.addItem(MODE_LABELS[m], m)
            _set_combo(self.mode, mode)
            self.proxy_url.setText(d[f"{c}_proxy_url"])
            self.model.setText(d[f"{c}_model"])
            self.max_tokens.setRange(_meta(f"{c}_max_tokens", "lo"), _meta(f"{c}_max_tokens", "hi"))
            self.max_tokens.setValue(d[f"{c}_max_tokens"])
            self.timeout.setRange(_meta(f"{c}_timeout", "lo") / 1000, int(_meta(f"{c}_timeout", "hi") / 100) / 10)
            self.timeout.setValue(d[f"{c}_timeout"] / 1000)
            self.tests.setCurrentWidget(self.strips[c])
        finally:
            self._filling = False
        self._fill_detail_state()
        self._fill_usage()

    def _fill_profile_combo(self, c: str) -> None:
        pid = self.draft[f"{c}_profile_id"]
        self.profile_combo.clear()
        self.profile_combo.addItem("(choose a profile)" if self.profiles() else "(add a profile first)", "")
        for p in self.profiles():
            self.profile_combo.addItem(p.name, p.id)
        if pid and self.profile(pid) is None:
            self.profile_combo.addItem(f"(missing: {pid})", pid)
        _set_combo(self.profile_combo, pid)

    def _fill_detail_state(self) -> None:
        """The parts of the detail that follow other edits: which fields apply, and what is in effect."""
        c = self.current_channel()
        settings = self._draft_or_current()
        r = resolve_channel(settings, c)
        mode = self.draft[f"{c}_connection_mode"]
        self._filling = True
        try:
            self._fill_profile_combo(c)
        finally:
            self._filling = False
        self.profile_combo.setEnabled(mode == "profile")
        self.proxy_url.setEnabled(r.mode == "proxy")
        default_model = (settings.ai_search_model if r.inherited else "") or (
            r.profile.model if r.profile is not None and r.mode == "profile" else "")
        self.model.setPlaceholderText(f"default: {default_model}" if default_model else
                                      "required for a proxy" if r.mode == "proxy" else "the profile's model")
        if r.problem:
            text, style = f"✗ {r.problem}", ERROR_STYLE
        else:
            via = "AI search's connection: " if r.inherited else ""
            conn = f"the proxy at {r.profile.base_url}" if r.mode == "proxy" else f"profile '{r.profile.name}'"
            text = (f"{via}{conn}, model {r.model or 'chosen by the server'}, up to {r.max_tokens} tokens, "
                    f"{r.timeout_s:g} s timeout.")
            style = ""
        if r.note:
            text += f"\n⚠ {r.note}."
            style = style or WARN_STYLE
        self.resolved.setText(text)
        self.resolved.setStyleSheet(style)

    def _fill_usage(self) -> None:
        c = self.current_channel()
        u = ((self.snapshot or {}).get("channels", {}).get(c) or {}).get("usage")
        if not u:
            self.usage.setText("No calls yet.")
            self.last_error.hide()
            return
        parts = [f"{u['calls']} call{'s' if u['calls'] != 1 else ''}", f"{u['failures']} failed",
                 f"tokens {u['input_tokens']:,} in / {u['output_tokens']:,} out"]
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

    def _fill_breaker(self) -> None:
        snap = self.snapshot or {}
        b = snap.get("breaker") or {}
        state = b.get("state")
        if snap.get("offline"):
            text, style = "AI calls are switched off for this run (offline).", WARN_STYLE
        elif state == "open":
            text = (f"Open after {b.get('failures', 0)} failures: AI calls are paused, retrying in "
                    f"{max(0, round(b.get('retry_in_seconds') or 0))} s.")
            style = ERROR_STYLE
        elif state in BREAKER_TEXT:
            text, style = BREAKER_TEXT[state]
        else:
            text, style = "Reading…", MUTED_STYLE
        self.breaker_label.setText(text)
        self.breaker_label.setStyleSheet(style)
        self.reset_button.setEnabled(state in ("open", "half-open"))

    # -- edits -------------------------------------------------------------------------------------
    def _edit(self, **values) -> None:
        if self._filling:
            return
        if "hierarchical_pre_filter" in values:
            self.aggressiveness.setEnabled(values["hierarchical_pre_filter"])
        self.set_draft(**values)

    def _edit_channel(self, part: str, value) -> None:
        if self._filling or value is None:
            return
        self.set_draft(**{f"{self.current_channel()}_{part}": value})

    # -- profiles ----------------------------------------------------------------------------------
    def _tester(self):
        bridge = self.bridge
        return lambda config, key: bridge.call(bridge.engine.ai.test_profile(config, key))

    def _open_editor(self, profile: ProfileConfig | None, on_save) -> ProfileEditor:
        others = [p for p in self.profiles() if profile is None or p.id != profile.id]
        secret_id = profile.secret_id if profile else ""
        editor = ProfileEditor(profile, taken_names={p.name for p in others},
                               taken_ids={p.id for p in self.profiles()},
                               key_state=self.key_state(secret_id) if profile else "none",
                               persistent=self.secrets.persistent, key_location=getattr(self.secrets, "location", None),
                               tester=self._tester(),
                               pending_key=self.new_keys.get(secret_id), parent=self)
        editor.accepted.connect(lambda: on_save(editor))
        editor.finished.connect(lambda *_: editor.deleteLater())
        self.editor = editor
        editor.open()
        return editor

    def add_profile(self) -> ProfileEditor:
        return self._open_editor(None, self._added)

    def _added(self, editor: ProfileEditor) -> None:
        cfg = editor.profile()
        values: dict[str, Any] = {"connection_profiles": (*self.profiles(), cfg)}
        for c in CHANNELS:  # a channel set to use a profile but with none chosen takes the first one added
            if self.draft[f"{c}_connection_mode"] == "profile" and self.profile(self.draft[f"{c}_profile_id"]) is None:
                values[f"{c}_profile_id"] = cfg.id
        self._take_key(cfg.secret_id, editor)
        self.set_draft(**values)
        self._select_profile(cfg.id)
        self._fill_detail()

    def edit_profile(self, pid: str | None = None) -> ProfileEditor | None:
        pid = pid or self.selected_profile_id()
        profile = self.profile(pid) if pid else None
        if profile is None:
            return None
        return self._open_editor(profile, self._edited)

    def _edited(self, editor: ProfileEditor) -> None:
        cfg = editor.profile()
        self._take_key(cfg.secret_id, editor)
        self.set_draft(connection_profiles=tuple(cfg if p.id == cfg.id else p for p in self.profiles()))
        self._select_profile(cfg.id)

    def _take_key(self, secret_id: str, editor: ProfileEditor) -> None:
        if editor.new_key:
            self.new_keys[secret_id] = editor.new_key
            self.forget_keys.discard(secret_id)
        elif editor.clear_key:
            self.new_keys.pop(secret_id, None)
            if self.key_state(secret_id) == "stored":
                self.forget_keys.add(secret_id)

    def duplicate_profile(self) -> ProfileConfig | None:
        source = self.profile(self.selected_profile_id() or "")
        if source is None:
            return None
        taken = {p.name.lower() for p in self.profiles()}
        name, n = f"{source.name} (copy)", 2
        while name.lower() in taken:
            name, n = f"{source.name} (copy {n})", n + 1
        copy = dataclasses.replace(source, id=new_profile_id(name, {p.id for p in self.profiles()}), name=name)
        state = self.key_state(source.secret_id)
        key = self.new_keys.get(source.secret_id) or (self.secrets.get(source.secret_id) if state == "stored" else None)
        if key:
            self.new_keys[copy.secret_id] = key
        self.set_draft(connection_profiles=(*self.profiles(), copy))
        self._select_profile(copy.id)
        return copy

    def _users_of(self, pid: str) -> list[str]:
        settings = self._draft_or_current()
        users = []
        for c in CHANNELS:
            r = resolve_channel(settings, c)
            if self.draft[f"{c}_profile_id"] == pid and self.draft[f"{c}_connection_mode"] == "profile":
                users.append(LABELS[c])
            elif r.profile is not None and r.profile.id == pid and r.mode == "profile":
                users.append(f"{LABELS[c]} (through AI search)")
        return users

    def delete_profile(self, pid: str | None = None) -> QMessageBox | None:
        pid = pid or self.selected_profile_id()
        profile = self.profile(pid) if pid else None
        if profile is None:
            return None
        users = self._users_of(pid)
        if users:
            text = (f"'{profile.name}' is used by {', '.join(users)}. Delete it anyway? Those channels have no "
                    "connection until you choose another profile.")
        else:
            text = f"Delete the connection profile '{profile.name}'?"
        box = QMessageBox(QMessageBox.Warning if users else QMessageBox.Question, "Delete connection profile", text,
                          QMessageBox.Yes | QMessageBox.No, self)
        box.setInformativeText("Its API key is removed from the keyring when you apply.")
        box.setDefaultButton(QMessageBox.No)
        box.button(QMessageBox.Yes).setText("Delete")
        box.buttonClicked.connect(lambda b: box.standardButton(b) == QMessageBox.Yes and self._delete(pid))
        box.finished.connect(lambda *_: box.deleteLater())
        self.question = box
        box.open()
        return box

    def _delete(self, pid: str) -> None:
        profile = self.profile(pid)
        if profile is None:
            return
        values: dict[str, Any] = {"connection_profiles": tuple(p for p in self.profiles() if p.id != pid)}
        for c in CHANNELS:
            if self.draft[f"{c}_profile_id"] == pid:
                values[f"{c}_profile_id"] = ""
        self.new_keys.pop(profile.secret_id, None)
        if self.key_state(profile.secret_id) == "stored":
            self.forget_keys.add(profile.secret_id)
        self.set_draft(**values)
        self._fill_detail()

    def _select_profile(self, pid: str) -> None:
        for r in range(self.profile_list.count()):
            if self.profile_list.item(r).data(Qt.UserRole) == pid:
                self.profile_list.setCurrentRow(r)
                return

    # -- engine work -------------------------------------------------------------------------------
    def _channel_untouched(self, channel: str) -> bool:
        """Is what this channel resolves to the same in the draft as in the running engine?"""
        try:
            draft = resolve_channel(self.draft_settings(), channel)
        except DleError:
            return False
        running = resolve_channel(self.bridge.engine.settings, channel)
        secret = draft.profile.secret_id if draft.profile is not None else ""
        return draft == running and secret not in self.new_keys and secret not in self.forget_keys

    def test_channel(self, channel: str) -> asyncio.Task | None:
        """Test the channel's connection: the engine's own when nothing here changed it, else the
        edited one (with the key typed in), so Test answers for what the view shows."""
        strip = self.strips[channel]
        engine = self.bridge.engine
        if self._channel_untouched(channel):
            work = self.bridge.call(engine.ai.test_channel(channel))
            key = None
        else:
            r = resolve_channel(self._draft_or_current(), channel)
            if r.profile is None:
                strip.show_text(f"✗ {r.problem}", ERROR_STYLE)
                return None
            config = dataclasses.replace(r.profile, model=r.model)
            key = self.new_keys.get(config.secret_id)
            if key is None and config.secret_id in self.forget_keys:
                key = ""
            work = self._labelled(channel, config, self.bridge.call(engine.ai.test_profile(config, key)))
        task = strip.start(work, key)
        task.add_done_callback(lambda *_: self.isVisible() and soon(self.refresh))
        return task

    @staticmethod
    async def _labelled(channel: str, config: ProfileConfig, work) -> tuple[bool, str, int]:
        ok, message, ms = await work
        return ok, f"{LABELS[channel]} (unsaved settings) via {profile_kind(config)}: {message}", ms

    async def refresh(self) -> None:
        """Read usage and the breaker from the engine (on its thread); joins a read in flight."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._read_snapshot())
        await asyncio.shield(self._refresh)

    async def _read_snapshot(self) -> None:
        try:
            snap = await self.bridge.run(self.bridge.engine.ai.snapshot)
        except Exception:  # noqa: BLE001 - the engine may be between restarts
            log.debug("reading the AI snapshot failed", exc_info=True)
            return
        self.snapshot = snap
        self._fill_channels()
        self._fill_usage()
        self._fill_breaker()
        since = snap.get("usage_since")
        self.usage_since.setText(time.strftime("Usage counted since %d %b %Y, %H:%M", time.localtime(since))
                                 if isinstance(since, (int, float)) else "")

    async def reset_breaker(self) -> None:
        await self.bridge.run(self.bridge.engine.ai.reset_breaker)
        self.breaker_message.setText("Breaker reset.")
        await self.refresh()

    async def reset_usage(self) -> None:
        await self.bridge.run(self.bridge.engine.ai.reset_usage)
        await self.refresh()

    async def clear_cache(self) -> None:
        await self.bridge.run(self.bridge.engine.ai.clear_cache)
        self.breaker_message.setText("AI cache cleared.")
        await self.refresh()

    def _tick(self) -> None:
        if self.isVisible():
            self.sync_external()
            soon(self.refresh)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self._stored.clear()  # keys are looked up again: the keyring may have changed meanwhile
        self._fill_profiles()
        self.sync_external()
        self.timer.start()
        soon(self.refresh)

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().hideEvent(event)
        self.timer.stop()

    def stop(self) -> None:
        """Quitting: no more engine reads, no test left running."""
        self.timer.stop()
        if self._refresh is not None:
            self._refresh.cancel()
        for strip in self.strips.values():
            strip.cancel()

    # -- window state ------------------------------------------------------------------------------
    def save_state(self, store) -> None:
        store.setValue("channels/split", self.split.saveState())
        store.setValue("channels/channel", self.current_channel())

    def restore_state(self, store) -> None:
        split = store.value("channels/split")
        if isinstance(split, QByteArray):
            self.split.restoreState(split)
        channel = store.value("channels/channel")
        if channel in CHANNELS:
            self.select_channel(channel)
