"""The Channels view: connection profiles (keys in the keyring), the six AI channels with what each
one resolves to and what it has used, AI search's own options, and the circuit breaker.

The view holds the draft; its panels (`channels_profiles`, `channels_ai_search`, `channels_table`)
show it and edit it through `set_draft`. Edits are a draft of this view's settings only; Apply hands
them (and any keys typed in) to the app's `apply_settings`, laid over whatever the rest of the
settings are by then. The usage counts and the breaker come from `engine.ai.snapshot()`, read every
two seconds while the view is shown.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from dle_desktop.errors import DleError
from dle_desktop.state.settings import CHANNELS, ProfileConfig, Settings
from dle_desktop.ui.channels.ai_search import AiSearchPanel, BreakerPanel
from dle_desktop.ui.channels.common import OWN_FIELDS, own_values
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.channels.profiles import ProfilesPanel
from dle_desktop.ui.channels.table import COLUMNS, ChannelsPanel
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.scrolling import scrolling

__all__ = ["CHANNELS", "COLUMNS", "OWN_FIELDS", "ChannelsView", "own_values"]

log = logging.getLogger(__name__)


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
        self._was_dirty = False
        self._refresh: asyncio.Future | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(2000)
        self.timer.timeout.connect(self._tick)

        self.profiles_panel = ProfilesPanel(self)
        self.search_panel = AiSearchPanel(self)
        self.breaker_panel = BreakerPanel(self)
        self.channel_panel = ChannelsPanel(self)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 4, 0)
        lv.addWidget(self.profiles_panel, 1)
        lv.addWidget(self.search_panel)
        lv.addWidget(self.breaker_panel)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(4, 0, 0, 0)
        rv.addWidget(self.channel_panel, 1)
        # At the window's smallest size the columns scroll rather than crush their controls
        for column in (left, right):
            self.split.addWidget(scrolling(column))
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        self.split.setSizes([420, 780])
        layout = QVBoxLayout(self)
        layout.addWidget(self.split, 1)
        layout.addLayout(self._apply_bar())
        save_key = QShortcut(QKeySequence.StandardKey.Save, self)
        save_key.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        save_key.activated.connect(lambda: self.apply())
        self._fill_all()
        self.channel_panel.table.selectRow(0)

    # -- settings in and out -----------------------------------------------------------------------
    def current_settings(self) -> Settings:
        return self.bridge.runtime.ctx.settings

    def draft_settings(self) -> Settings:
        """The settings as they would be after Apply (raises DleError if a value is refused)."""
        return self.current_settings().replace(**self.draft)

    def draft_or_current(self) -> Settings:
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
        self.profiles_panel.fill()
        self.channel_panel.fill_table()
        self.channel_panel.fill_detail_state()
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

    def _fill_all(self) -> None:
        self.search_panel.fill(self.draft)
        self._changed()
        self.channel_panel.fill_detail()

    # -- engine reads ------------------------------------------------------------------------------
    async def refresh(self) -> None:
        """Read usage and the breaker from the engine (on its thread), as of now. A read already in
        flight (the view's timer) may have read before what the caller waits for, such as a call
        that just finished: it is let finish, and a read that starts after it follows (shared by
        everyone who asked meanwhile)."""
        previous = self._refresh
        if previous is not None and not previous.done():
            await asyncio.shield(previous)
        if self._refresh is None or self._refresh is previous or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._read_snapshot())
        await asyncio.shield(self._refresh)

    async def _read_snapshot(self) -> None:
        try:
            snap = await self.bridge.ai_snapshot()
        except Exception:
            log.debug("reading the AI snapshot failed", exc_info=True)
            return
        self.snapshot = snap
        self.channel_panel.fill_table()
        self.channel_panel.fill_usage()
        self.breaker_panel.fill(snap)
        self.channel_panel.fill_usage_since(snap.get("usage_since"))

    def _tick(self) -> None:
        if self.isVisible():
            self.sync_external()
            soon(self.refresh)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._stored.clear()  # keys are looked up again: the keyring may have changed meanwhile
        self.profiles_panel.fill()
        self.sync_external()
        self.timer.start()
        soon(self.refresh)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.timer.stop()

    def stop(self) -> None:
        """Quitting: no more engine reads, no test left running."""
        self.timer.stop()
        if self._refresh is not None:
            self._refresh.cancel()
        self.channel_panel.stop()

    def show_place(self, channel: str) -> None:
        """Where another view sends the user to set up a connection: `channel`'s row, or with no
        channel (no profile yet) the profile list, Add… in focus."""
        if channel in CHANNELS:
            self.channel_panel.select_channel(channel)
            self.channel_panel.table.setFocus()
        else:
            self.profiles_panel.add_button.setFocus()

    # -- window state ------------------------------------------------------------------------------
    def save_state(self, store) -> None:
        store.setValue("channels/split", self.split.saveState())
        store.setValue("channels/channel", self.channel_panel.current_channel())

    def restore_state(self, store) -> None:
        split = store.value("channels/split")
        if isinstance(split, QByteArray):
            self.split.restoreState(split)
        channel = store.value("channels/channel")
        if channel in CHANNELS:
            self.channel_panel.select_channel(channel)
