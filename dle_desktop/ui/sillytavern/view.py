"""The SillyTavern view: the installs of SillyTavern and the bridge extension in them, whether a
SillyTavern page is connected now, who may call the server (origins, token), routing SillyTavern's
Vector Storage through DLE Desktop and the manual Vector Storage setup (inner tab "SillyTavern
bridge"); the chats DLE Desktop keeps state for, and how the selected one is steered (inner tab
"Chats"); and the Obsidian REST emulation that an unmodified DeepLore Enhanced reads and writes
the folder vaults through (inner tab "DeepLore Enhanced (Obsidian REST)", `st_olra_panel`).

The panels (`st_installs_panel`, `st_connection_panel`, `st_access_panel`, `st_vectors_help`,
`st_chats_panel`, `st_olra_panel`) reach the app through this view: settings are saved with `save_settings`, which
hands them to the app's `apply_settings` (as the Channels view's Apply does), never by writing
settings.json itself. While the view is shown it reads the bridge monitor every two seconds and
the chat list every ten.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QSplitter, QTabWidget, QVBoxLayout, QWidget

from dle_desktop.core.hosts import is_loopback_bind
from dle_desktop.errors import DleError
from dle_desktop.state.settings import Settings
from dle_desktop.ui.sillytavern.access_panel import AccessPanel
from dle_desktop.ui.sillytavern.chats_panel import ChatsPanel
from dle_desktop.ui.sillytavern.connection_panel import ConnectionPanel
from dle_desktop.ui.sillytavern.installs_panel import InstallsPanel
from dle_desktop.ui.sillytavern.olra_panel import OlraPanel
from dle_desktop.ui.sillytavern.vectors_help import VectorRoutingPanel, VectorSourcesPanel
from dle_desktop.ui.widgets.async_util import soon

log = logging.getLogger(__name__)

TICK_MS = 2000
CHATS_EVERY = 5  # ticks


def _column(*panels) -> QScrollArea:
    """Panels stacked in a column that scrolls when the window is too short for them."""
    inner = QWidget()
    layout = QVBoxLayout(inner)
    layout.setContentsMargins(0, 0, 4, 0)
    for panel, stretch in panels:
        layout.addWidget(panel, stretch)
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setWidget(inner)
    return scroll


class SillyTavernView(QWidget):
    applyRequested = Signal(object, object)  # Settings, {secret_id: key} (always empty here)

    def __init__(self, bridge, parent=None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self._ticks = 0
        self._tasks: set[asyncio.Future] = set()
        self._url: str | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

        self.installs_panel = InstallsPanel(self)
        self.connection_panel = ConnectionPanel(self)
        self.access_panel = AccessPanel(self)
        self.routing_panel = VectorRoutingPanel(self)
        self.sources_panel = VectorSourcesPanel(self)
        self.chats_panel = ChatsPanel(self)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(_column((self.installs_panel, 1), (self.connection_panel, 0), (self.access_panel, 0)))
        self.split.addWidget(_column((self.routing_panel, 0), (self.sources_panel, 0)))
        self.split.setStretchFactor(0, 4)
        self.split.setStretchFactor(1, 3)
        self.split.setSizes([650, 550])
        self.olra_panel = OlraPanel(self)
        self.inner_tabs = QTabWidget()
        self.inner_tabs.setDocumentMode(True)
        self.inner_tabs.addTab(self.split, "SillyTavern bridge")
        self.inner_tabs.addTab(self.chats_panel, "Chats")
        self.inner_tabs.addTab(_column((self.olra_panel, 1)), "DeepLore Enhanced (Obsidian REST)")
        self.inner_tabs.currentChanged.connect(self._inner_tab_shown)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 2)  # the inner tab bar takes the room the margins had
        layout.addWidget(self.inner_tabs, 1)

    # -- the app, as the panels see it ------------------------------------------------------------
    def current_settings(self) -> Settings:
        return self.bridge.runtime.ctx.settings

    def st_folders(self) -> tuple[str, ...]:
        return tuple(self.current_settings().st_folders)

    def allowed_origins(self) -> tuple[str, ...]:
        return tuple(self.current_settings().server_allowed_origins)

    def save_settings(self, **changes) -> str | None:
        """Save these settings through the app (which applies them in the background); None when
        they were saved, else why not."""
        current = self.current_settings()
        try:
            wanted = current.replace(**changes)
        except DleError as exc:
            return str(exc)
        if all(getattr(current, k) == getattr(wanted, k) for k in changes):
            return None
        self.applyRequested.emit(wanted, {})
        now = self.current_settings()
        if any(getattr(now, k) != getattr(wanted, k) for k in changes):
            return "the settings could not be saved (the app said why)"
        return None

    def server_running(self) -> bool:
        return self.bridge.runtime.server is not None

    def server_port(self) -> int:
        server = self.bridge.runtime.server
        return int(server.port) if server is not None else int(self.current_settings().server_port)

    def server_url(self) -> str:
        """The address SillyTavern (on this machine) reaches the server at."""
        server = self.bridge.runtime.server
        host = server.host if server is not None else self.current_settings().server_host
        if is_loopback_bind(host) or host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.server_port()}"

    def token(self) -> str:
        return self.bridge.runtime.server_token()

    def rotate_token(self) -> str:
        """A new server token, in use by the running server at once (blocking: call it in a thread)."""
        return self.bridge.runtime.rotate_server_token()

    # -- background work --------------------------------------------------------------------------
    def spawn(self, make: Callable[[], Coroutine]) -> asyncio.Future | None:
        """Start the view's work on the GUI's asyncio loop, kept track of (see `idle`, `stop`)."""
        task = soon(make)
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return task

    async def idle(self) -> None:
        """Until every piece of work the view started has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- reading ----------------------------------------------------------------------------------
    def sync_external(self) -> None:
        """Settings saved elsewhere (Settings dialog, another view) or a new server port: follow them."""
        self.access_panel.fill()
        self.routing_panel.fill()
        self.chats_panel.fill_setting()
        self.sources_panel.fill()
        self.olra_panel.fill()
        url = self.server_url()
        if url != self._url:  # the copies' status says whether they point at this address
            self._url = url
            self.installs_panel.fill()

    def _tick(self) -> None:
        if not self.isVisible():
            return
        self._ticks += 1
        self.sync_external()
        self.connection_panel.refresh()
        self.olra_panel.refresh()
        if self._ticks % CHATS_EVERY == 0:
            self.spawn(self.chats_panel.refresh)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.sync_external()
        self.connection_panel.refresh()
        self.olra_panel.refresh()
        self.spawn(self.installs_panel.rescan)  # SillyTavern may have been installed or updated meanwhile
        self.spawn(self.chats_panel.refresh)
        self.timer.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.timer.stop()

    def stop(self) -> None:
        """Quitting: no more reads."""
        self.timer.stop()
        for task in list(self._tasks):
            task.cancel()
        self.installs_panel.stop()
        self.chats_panel.stop()

    def _inner_tab_shown(self, _index: int) -> None:
        self.olra_panel.refresh()
        if self.inner_tabs.currentWidget() is self.chats_panel:
            self.spawn(self.chats_panel.refresh)
            if self.chats_panel.steering.chat_id is not None:
                self.spawn(self.chats_panel.steering.load)

    # -- window state -----------------------------------------------------------------------------
    def save_state(self, store) -> None:
        store.setValue("sillytavern/split", self.split.saveState())
        store.setValue("sillytavern/inner_tab", self.inner_tabs.tabText(self.inner_tabs.currentIndex()))

    def restore_state(self, store) -> None:
        split = store.value("sillytavern/split")
        if isinstance(split, QByteArray):
            self.split.restoreState(split)
        # By name: a tab added between them does not move the user to another one.
        names = [self.inner_tabs.tabText(i) for i in range(self.inner_tabs.count())]
        name = store.value("sillytavern/inner_tab")
        if name not in names:  # saved by an earlier version, by its place then: bridge, Obsidian REST
            name = {"0": names[0], "1": names[-1]}.get(str(store.value("sillytavern/tab")))
        if name in names:
            self.inner_tabs.setCurrentIndex(names.index(name))
