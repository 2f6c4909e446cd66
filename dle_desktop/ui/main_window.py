"""The main window: views in tabs, a toolbar for sync, and a status bar with progress and cancel."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from dle_desktop import __version__
from dle_desktop.core.index import IndexSnapshot, VaultSlice, build_snapshot
from dle_desktop.desktop import graph_size
from dle_desktop.ui.bridge import EngineBridge
from dle_desktop.ui.lazy_tabs import LazyTabs
from dle_desktop.ui.server_notice import ServerNotice
from dle_desktop.ui.vault.entries_model import PreparedRows
from dle_desktop.ui.vault.entry_detail import EngineWriteAccess
from dle_desktop.ui.vault.view import VaultView
from dle_desktop.ui.view_requests import show_requested_view
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.gc_guard import freeze_long_lived
from dle_desktop.ui.widgets.icons import app_icon

if TYPE_CHECKING:
    from dle_desktop.ui.channels.view import ChannelsView
    from dle_desktop.ui.graph.view import GraphView
    from dle_desktop.ui.librarian.view import LibrarianView
    from dle_desktop.ui.sillytavern.view import SillyTavernView

log = logging.getLogger(__name__)

#: from this many entries a new index's table rows are made off the GUI thread before it shows
ROWS_OFF_THREAD = 2000
#: from this many entries the table's sort orders are made ahead (`SortOrdersAhead`). Below it a
#: sort on the spot takes under 100 ms, and at 10,000 the extra thread, beside the start's other
#: background work, lengthened the window's stalls while the Graph first drew (UI watchdog test)
SORT_AHEAD_MIN = 20_000
#: how long after the entries are shown the other views' modules start loading (`LazyTabs.preload`)
PRELOAD_AFTER_MS = 3000


def _prepare_rows(snapshot, columns: Iterable[int] | None = None) -> PreparedRows:
    """Off the GUI thread: the table's rows (with the sort keys of `columns`, default all), and
    the lookups the entry detail uses (its links by title, its backlinks). The selection is shown
    again as soon as the rows are, and working the lookups out then, at 10,000 entries, held the
    window for half a second."""
    snapshot.by_title, snapshot.backlinks  # noqa: B018 - worked out once and kept by the snapshot
    return PreparedRows.of(snapshot.entries, columns)


def _prepare_partial(entries) -> tuple[IndexSnapshot, PreparedRows]:
    """Off the GUI thread: a snapshot of a first index's notes read so far, and its rows."""
    by_vault: dict[str, list] = {}
    for e in entries:
        by_vault.setdefault(e.vault, []).append(e)
    snapshot = build_snapshot([VaultSlice(name, tuple(group)) for name, group in by_vault.items()])
    return snapshot, _prepare_rows(snapshot)


def _prestart_graph_process(
    entries, give_way: Callable[[], float], send_entries: bool, still_wanted: Callable[[], bool]
) -> None:
    # Its code's import and the process's start wait for a quiet moment too: done at once, they
    # slowed the first keystrokes after a restart (the slowest 30 -> 65 ms in an A/B).
    give_way()
    # The Graph view may have opened meanwhile: its worker has a process of its own then, and a
    # second one would only idle.
    if still_wanted():
        # the process's own module: no Qt, no view code (those load later, giving way too)
        from dle_desktop.desktop.graph_process import prestart_process

        prestart_process(entries if send_entries else (), give_way)


class MainWindow(QMainWindow):
    closeToTray = Signal()
    quitRequested = Signal()
    settingsRequested = Signal()
    addFolderRequested = Signal()
    guideRequested = Signal()  # Help → Getting started…

    def __init__(self, bridge: EngineBridge, ui_state: QSettings, tray_available: bool) -> None:
        super().__init__()
        self.bridge = bridge
        self.ui_state = ui_state
        self.tray_available = tray_available
        self.close_to_tray = bridge.settings.close_to_tray
        self._quitting = False
        self._told_about_tray = bool(ui_state.value("tray/told", False, type=bool))
        self._pending_select: str | None = None
        self.setWindowTitle("DLE Desktop")
        self.setWindowIcon(app_icon())
        # Every view is laid out to fit this (tests/ui/test_layout_small_window.py); smaller, they would crush
        self.setMinimumSize(1000, 650)
        self.resize(1200, 760)

        self.tabs = QTabWidget()
        self.vault_view = VaultView(test_runner=self._run_test_chat)
        self.vault_view.set_write_access(EngineWriteAccess(bridge))
        self.vault_view.set_usage_reader(bridge.entry_usage)
        self.tabs.addTab(self.vault_view, "Vault")
        # The other views are made when first shown or asked for (`lazy_tabs`): the window
        # comes up with its first view only.
        self.lazy = LazyTabs(self.tabs)
        self.lazy.add("channels", "Channels", self._make_channels, "dle_desktop.ui.channels.view")
        self.lazy.add("graph", "Graph", self._make_graph, "dle_desktop.ui.graph.view")
        self.lazy.add("librarian", "Librarian", self._make_librarian, "dle_desktop.ui.librarian.view")
        self.lazy.add("sillytavern", "SillyTavern", self._make_sillytavern, "dle_desktop.ui.sillytavern.view")
        self.lazy.loading.connect(self._view_loading)
        self._snapshot = None  # the last index, for a view made after it came
        self._indexes_seen = 0  # indexes received: a large one shown after its rows are made, if still the last
        self._graph_prestarted = False  # the Graph view's process, started ahead once (`_load_ahead`)
        self._health_running = self._health_again = False  # `refresh_health`: one check at a time
        self.vault_view.entryActionRequested.connect(self._propose_in_librarian)
        self.vault_view.channelsRequested.connect(self._open_channels)
        self.vault_view.userActed.connect(bridge.user_acted)
        self.tabs.currentChanged.connect(bridge.user_acted)
        self.server_notice = ServerNotice()
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        column.addWidget(self.server_notice)
        column.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self._build_actions()
        self._build_status_bar()

        bridge.indexChanged.connect(self.on_index)
        bridge.indexPartial.connect(self.on_partial_index)
        bridge.progress.connect(self.on_progress)
        bridge.syncState.connect(self.on_sync_state)
        bridge.syncError.connect(self.on_sync_error)
        bridge.semantic.connect(self.vault_view.semantic_strip.set_status)
        bridge.aiBreaker.connect(self.on_ai_breaker)
        # Emitted on the engine's thread: queued, so the window is only ever touched on its own.
        bridge.windowRequested.connect(
            lambda request: show_requested_view(self, request), Qt.ConnectionType.QueuedConnection
        )
        self.reset_semantic(bridge.settings)
        self._restore_state()

    # -- the views made on first use ----------------------------------------------------------
    @property
    def channels_view(self) -> ChannelsView:
        return cast("ChannelsView", self.lazy.view("channels"))

    @property
    def graph_view(self) -> GraphView:
        return cast("GraphView", self.lazy.view("graph"))

    @property
    def librarian_view(self) -> LibrarianView:
        return cast("LibrarianView", self.lazy.view("librarian"))

    @property
    def sillytavern_view(self) -> SillyTavernView:
        return cast("SillyTavernView", self.lazy.view("sillytavern"))

    def _make_channels(self) -> QWidget:
        from dle_desktop.ui.channels.view import ChannelsView

        view = ChannelsView(self.bridge)
        view.dirtyChanged.connect(
            lambda dirty: self.tabs.setTabText(self.tabs.indexOf(view), "Channels •" if dirty else "Channels")
        )
        view.restore_state(self.ui_state)
        return view

    def _make_graph(self) -> QWidget:
        from dle_desktop.ui.graph.view import GraphView

        view = GraphView.for_paths(self.bridge.paths)
        view.openEntryRequested.connect(self.open_in_vault)
        view.busy.connect(self.bridge.user_acted)
        if self._snapshot is not None:
            view.set_snapshot(self._snapshot)
        return view

    def _make_librarian(self) -> QWidget:
        from dle_desktop.ui.librarian.view import LibrarianView

        view = LibrarianView(self.bridge)
        view.channelsRequested.connect(self._open_channels)
        if self._snapshot is not None:
            view.set_snapshot(self._snapshot)
        return view

    def _make_sillytavern(self) -> QWidget:
        from dle_desktop.ui.sillytavern.view import SillyTavernView

        view = SillyTavernView(self.bridge)
        view.chats_panel.steering.writers.open_note = self.open_note
        view.restore_state(self.ui_state)
        return view

    # -- construction -----------------------------------------------------------------------
    def _build_actions(self) -> None:
        tb = QToolBar("Main", self)
        tb.setObjectName("main-toolbar")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.addToolBar(tb)
        self.sync_action = QAction("Sync now", self)
        self.sync_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.sync_action.setStatusTip("Check every vault for changes (F5)")
        self.sync_action.triggered.connect(lambda *_: self.request_sync(False))
        self.rebuild_action = QAction("Rebuild index", self)
        self.rebuild_action.setShortcut(QKeySequence("Shift+F5"))
        self.rebuild_action.setStatusTip("Re-parse every note, ignoring the cache (Shift+F5)")
        self.rebuild_action.triggered.connect(lambda *_: self.request_sync(True))
        self.pause_action = QAction("Pause sync", self)
        self.pause_action.setCheckable(True)
        self.pause_action.setStatusTip("Stop picking up vault changes until resumed")
        self.pause_action.toggled.connect(self.set_paused)
        self.add_folder_action = QAction("Add vault folder…", self)
        self.add_folder_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Open))
        self.add_folder_action.setStatusTip("Open a folder of Markdown lore notes as a vault (Ctrl+O)")
        self.add_folder_action.triggered.connect(lambda *_: self.addFolderRequested.emit())
        self.settings_action = QAction("Settings…", self)
        self.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        self.settings_action.setStatusTip("Vaults, server and app options")
        self.settings_action.triggered.connect(lambda *_: self.settingsRequested.emit())
        self.vault_view_action = QAction("Vault", self)
        self.vault_view_action.setShortcut(QKeySequence("Ctrl+1"))
        self.vault_view_action.setStatusTip("The vault's entries, their health, and Test a chat (Ctrl+1)")
        self.vault_view_action.triggered.connect(lambda *_: self.tabs.setCurrentWidget(self.vault_view))
        self.channels_view_action = QAction("Channels", self)
        self.channels_view_action.setShortcut(QKeySequence("Ctrl+2"))
        self.channels_view_action.setStatusTip("AI connection profiles, channels, AI search and the breaker (Ctrl+2)")
        self.channels_view_action.triggered.connect(lambda *_: self.lazy.show("channels"))
        self.graph_view_action = QAction("Graph", self)
        self.graph_view_action.setShortcut(QKeySequence("Ctrl+3"))
        self.graph_view_action.setStatusTip("The vault as a graph: clusters, orphans, bridges (Ctrl+3)")
        self.graph_view_action.triggered.connect(lambda *_: self.lazy.show("graph"))
        self.librarian_view_action = QAction("Librarian", self)
        self.librarian_view_action.setShortcut(QKeySequence("Ctrl+4"))
        self.librarian_view_action.setStatusTip("Draft and write entries with the AI librarian; gaps (Ctrl+4)")
        self.librarian_view_action.triggered.connect(lambda *_: self.lazy.show("librarian"))
        self.sillytavern_view_action = QAction("SillyTavern", self)
        self.sillytavern_view_action.setShortcut(QKeySequence("Ctrl+5"))
        self.sillytavern_view_action.setStatusTip(
            "SillyTavern installs, the bridge extension, its connection and access (Ctrl+5)"
        )
        self.sillytavern_view_action.triggered.connect(lambda *_: self.lazy.show("sillytavern"))
        self.find_action = QAction("Find", self)
        self.find_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Find))
        self.find_action.setStatusTip("Filter the vault's entries (Ctrl+F)")
        self.find_action.triggered.connect(lambda *_: self.find())
        self.close_action = QAction("Close window", self)
        self.close_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Close))
        self.close_action.triggered.connect(lambda *_: self.close())
        self.quit_action = QAction("Quit", self)
        self.quit_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Quit))
        self.quit_action.triggered.connect(lambda *_: self.quitRequested.emit())
        for a in (self.sync_action, self.rebuild_action, self.pause_action):
            tb.addAction(a)
        tb.addSeparator()
        tb.addAction(self.add_folder_action)
        tb.addAction(self.settings_action)
        menu = self.menuBar()
        m = menu.addMenu("&File")
        m.addAction(self.add_folder_action)
        m.addAction(self.settings_action)
        m.addSeparator()
        m.addAction(self.sync_action)
        m.addAction(self.rebuild_action)
        m.addAction(self.pause_action)
        m.addSeparator()
        m.addAction(self.close_action)
        m.addAction(self.quit_action)
        m = menu.addMenu("&View")
        m.addAction(self.vault_view_action)
        m.addAction(self.channels_view_action)
        m.addAction(self.graph_view_action)
        m.addAction(self.librarian_view_action)
        m.addAction(self.sillytavern_view_action)
        m.addSeparator()
        m.addAction(self.find_action)
        m = menu.addMenu("World &Info")
        from dle_desktop.ui.worldinfo import WorldInfoActions  # import, export and sync of ST lorebooks

        self.wi_actions = WorldInfoActions(self, self.bridge)
        self.wi_actions.add_to(m)
        self.wi_actions.summarizeRequested.connect(self._summarize_in_librarian)
        self.vault_view.worldInfoImportRequested.connect(lambda folder: self.wi_actions.open_import(folder))
        self.vault_view.worldInfoExportRequested.connect(lambda folder: self.wi_actions.open_export(folder))
        m = menu.addMenu("&Help")
        from dle_desktop.ui.help_menu import HelpActions  # diagnostics and the log folder

        self.help_actions = HelpActions(self, self.bridge)
        self.help_actions.add_to(m)
        about = QAction("About DLE Desktop", self)
        about.triggered.connect(lambda *_: self._about())
        m.addAction(about)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.index_label = QLabel("Loading…")
        self.server_label = QLabel()
        self.server_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setMinimumWidth(200)  # "reading vault: 2000/10002" on one line, never squeezed
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop this sync; the last complete index stays in use")
        self.cancel_button.clicked.connect(self.cancel_sync)
        self.cancel_button.hide()
        sb.addWidget(self.index_label, 1)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        # Shown only while AI calls are paused: a glance answers "why is AI search not running?"
        self.ai_label = QLabel()
        self.ai_label.setStyleSheet("color: #b35c00;")
        self.ai_label.hide()
        sb.addPermanentWidget(self.ai_label)
        # Shown while sync is paused, with the count of changes waiting for Resume
        self.sync_label = QLabel()
        self.sync_label.setStyleSheet("color: #b35c00;")
        self.sync_label.setToolTip(
            "Changes to the vault folders are held, not lost: Resume sync (the Pause sync "
            "button) applies them in one go"
        )
        self.sync_label.hide()
        sb.addPermanentWidget(self.sync_label)
        sb.addPermanentWidget(self.server_label)

    def on_ai_breaker(self, snap: dict) -> None:
        if snap.get("state") == "closed":
            self.ai_label.hide()
            return
        self.ai_label.setText("AI paused (circuit breaker)")
        self.ai_label.setToolTip(
            "Two AI calls in a row failed (server or network errors, or unreadable answers), so "
            "AI calls pause for 30 s and generations use the fallback. The Channels view "
            "(Ctrl+2) shows the last error and can reset the breaker."
        )
        self.ai_label.show()

    def set_server_status(self, url: str | None, error: str | None) -> None:
        if url:
            self.server_label.setText(f"Server: {url}")
            self.server_label.setToolTip("SillyTavern and scripts connect here")
        else:
            self.server_label.setText("Server: not running" if error else "Server: off")
            self.server_label.setToolTip(error or "The HTTP server is disabled in settings")
        self.server_notice.show_problem(None if url else error)

    def reset_semantic(self, settings) -> None:
        """A (new) engine runs with `settings`: the strip waits for its first semantic event."""
        self.vault_view.semantic_strip.reset(settings.semantic_enabled, settings.semantic_paused)

    # -- engine events ----------------------------------------------------------------------
    def on_index(self, snapshot, changes, source: str) -> None:
        # The new index (made with the collector paused) is never walked: a reconcile's snapshot
        # of the very same entries left in the young generation cost a 90 ms collection.
        freeze_long_lived()
        shown = self._snapshot
        if shown is not None and self.vault_view.snapshot is shown and snapshot.same_entries_as(shown):
            # the same index again (a sync that found nothing new, as after a restart): the
            # table keeps its rows, its sort, its filter and the user's place in it
            if snapshot is shown:
                self._show_index(snapshot, source, rows_unchanged=True)
            else:
                soon(lambda: self._adopt_same_entries(snapshot, source))
            return
        self._snapshot = snapshot
        self._indexes_seen += 1
        if len(snapshot.entries) >= ROWS_OFF_THREAD:
            seen = self._indexes_seen
            soon(lambda: self._show_index_prepared(snapshot, source, seen))
        else:
            self._show_index(snapshot, source)

    async def _adopt_same_entries(self, snapshot, source: str) -> None:
        """A new snapshot of the very entries shown takes the old one's place without a reset;
        its lookups (by title, backlinks) are worked out off the GUI thread first."""
        shown = self._snapshot
        if shown is None or self.vault_view.snapshot is not shown or not snapshot.same_entries_as(shown):
            return  # another index came meanwhile
        snapshot.adopt_lookups(shown)
        await asyncio.to_thread(lambda: (snapshot.by_title, snapshot.backlinks))  # if the old ones were not made yet
        if self._snapshot is not shown or self.vault_view.snapshot is not shown:
            return
        self._snapshot = snapshot
        self.vault_view.snapshot = snapshot
        self._show_index(snapshot, source, rows_unchanged=True)

    def on_partial_index(self, entries) -> None:
        """A first index under way: the notes read so far fill the table (the index's own
        snapshot follows and replaces them)."""
        if self._snapshot is not None:
            return
        self._indexes_seen += 1
        seen = self._indexes_seen
        soon(lambda: self._show_partial(entries, seen))

    async def _show_partial(self, entries, seen: int) -> None:
        snapshot, prepared = await asyncio.to_thread(_prepare_partial, entries)
        if seen == self._indexes_seen and self._snapshot is None:
            self.vault_view.set_snapshot(snapshot, prepared)
            self.index_label.setText(f"Indexing… {len(snapshot)} entries read so far")

    async def _show_index_prepared(self, snapshot, source: str, seen: int) -> None:
        # The sorted column's keys only: making all seven held the entries of a restart back
        # ~0.1-0.2 s, and made in the background after, they held the first clicks back. A click
        # on another header makes that column's keys (~20 ms at 10,000 entries).
        prepared = await asyncio.to_thread(_prepare_rows, snapshot, (self.vault_view.sort_column(),))
        if seen == self._indexes_seen:  # else a newer index is on its way and shows instead
            self._show_index(snapshot, source, prepared)

    def _show_index(
        self, snapshot, source: str, prepared: PreparedRows | None = None, rows_unchanged: bool = False
    ) -> None:
        if not rows_unchanged:
            self.vault_view.set_snapshot(snapshot, prepared)
            if len(snapshot.entries) >= SORT_AHEAD_MIN:
                self.vault_view.sort_ahead.start(self.bridge.give_way)
            for key in ("graph", "librarian"):
                made = self.lazy.made_view(key)
                if made is not None:
                    cast("GraphView | LibrarianView", made).set_snapshot(snapshot)
        if self._pending_select and (self.vault_view.select_uid(self._pending_select) or source != "cache"):
            self._pending_select = None
        vaults = len(snapshot.slices) or 1
        when = time.strftime("%H:%M:%S", time.localtime(snapshot.built_at))
        cached = " (from cache, checking for changes…)" if source == "cache" else ""
        if self.bridge.using_sample_vault:
            cached += " · this is the bundled sample vault: Ctrl+O opens your own"
        self.index_label.setText(
            f"{len(snapshot)} entries in {vaults} vault{'s' if vaults != 1 else ''} · "
            f"{len(snapshot.skipped)} not indexed · updated {when}{cached}"
        )
        freeze_long_lived()  # the index and the table's rows: no collection walks them again
        # Entries just shown are what the user reaches for next: the work that follows a start
        # (the server's imports, the reconcile) waits for a quiet moment instead of meeting the first keys.
        self.bridge.user_acted()
        soon(self.refresh_health)
        # once the entries are up, the other views' code is loaded while the user reads them
        QTimer.singleShot(PRELOAD_AFTER_MS, self._load_ahead)

    def _load_ahead(self) -> None:
        """The other views' modules (`LazyTabs.preload`), and the Graph's process, handed the
        entries (it then finds their links before a job asks): in quiet moments. Started as
        soon as the entries were shown, the Graph drew its first picture sooner but beside the
        start's other background work, and a first start's stalls while it drew grew longer
        (the UI watchdog test)."""
        self.lazy.preload(self.bridge.give_way)
        self._prestart_graph(self.bridge.give_way)

    def _prestart_graph(self, give_way: Callable[[], float], ahead: bool = True) -> None:
        """`ahead`: the start once the entries are shown (once per window, in quiet moments; the
        entries are sent too). Else the Graph tab was clicked: a process is started now,
        whatever an earlier start still waits for."""
        snapshot = self._snapshot
        if (
            snapshot is None
            or len(snapshot.entries) < graph_size.PROCESS_MIN_ENTRIES  # the Graph works in a thread then
            or self.lazy.made_view("graph") is not None
            or (ahead and self._graph_prestarted)
        ):
            return
        self._graph_prestarted = True
        threading.Thread(
            target=_prestart_graph_process,
            args=(snapshot.entries, give_way, ahead, lambda: self.lazy.made_view("graph") is None),
            name="dle-graph-prestart",
            daemon=True,
        ).start()

    def _view_loading(self, key: str) -> None:
        """A click on the Graph tab loads its code first: its process starts beside that, now.
        The entries are not sent ahead then: that pickling would slow the code load the picture
        waits for, and the job sends them anyway."""
        if key == "graph":
            self._prestart_graph(lambda: 0.0, ahead=False)

    async def refresh_health(self) -> None:
        """Check the vault's health again. Asked while a check runs (syncs in a row), it runs
        once more after that one, not beside it: at 10,000 entries each check is a quarter of a
        second of Python, and checks side by side took the interpreter from the window."""
        if self._health_running:
            self._health_again = True
            return
        self._health_running = True
        try:
            while True:
                self._health_again = False
                try:
                    report = await self.bridge.health()
                except Exception:
                    log.exception("health check failed")
                    return
                if not self._health_again:
                    break
        finally:
            self._health_running = False
        self.vault_view.set_health(report)
        e, _warnings, _info = report.counts
        self.tabs.setTabText(0, f"Vault ({e} errors)" if e else "Vault")

    async def _run_test_chat(self, doc, replay: bool, seed: int, ai_mode: str | None = None) -> list[dict]:
        return await self.bridge.test_chat(doc, replay, seed, ai_mode)

    def on_progress(self, done: int, total: int, message: str) -> None:
        if total <= 0:
            return
        self.progress.show()
        self.cancel_button.show()
        self.progress.setMaximum(total)
        self.progress.setValue(done)
        self.progress.setFormat(f"{message}: %v/%m")

    def on_sync_state(self, state: dict) -> None:
        syncing = bool(state.get("syncing"))
        if syncing:
            self.cancel_button.show()
            self.progress.setMaximum(0)  # busy until the first progress report
            self.progress.setFormat("checking vaults…")
            self.progress.show()
        else:
            self.progress.hide()
            self.cancel_button.hide()
            if state.get("reason") == "cancelled":
                self.statusBar().showMessage("Sync cancelled; the previous index is still in use", 5000)
        if "paused" in state:
            self.pause_action.blockSignals(True)
            self.pause_action.setChecked(bool(state["paused"]))
            self.pause_action.blockSignals(False)
            self.sync_label.setVisible(bool(state["paused"]))
        if "held" in state:
            held = int(state["held"] or 0)
            self.sync_label.setText(
                "Sync paused" + (f" · {held} change{'' if held == 1 else 's'} held" if held else "")
            )

    def on_sync_error(self, message: str) -> None:
        self.statusBar().showMessage(f"Sync problem: {message}", 15000)

    # -- commands ---------------------------------------------------------------------------
    def request_sync(self, force: bool) -> None:
        soon(lambda: self._sync(force))

    async def _sync(self, force: bool) -> None:
        try:
            result = await self.bridge.sync_now(force=force)
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - a failed sync is shown; the last good index stays
            self.on_sync_error(str(exc))
            return
        if result is not None:
            self.statusBar().showMessage(
                f"Sync done: {result.changes.summary()} ({result.seconds * 1000:.0f} ms)", 5000
            )

    def cancel_sync(self) -> None:
        soon(self.bridge.cancel_sync)

    def set_paused(self, paused: bool) -> None:
        soon(lambda: self.bridge.set_sync_paused(paused))
        self.statusBar().showMessage("Sync paused" if paused else "Sync resumed", 4000)

    def _propose_in_librarian(self, action: str, uid: str) -> None:
        """Optimize Keys / Summarize: in the Librarian when its AI connection is there; without
        one the Vault view stays in front, the entry shown, and says what is missing."""

        need = self.librarian_view.ai_missing(action)
        self.vault_view.ai_notice.show_missing(need)
        if need is None:
            self.tabs.setCurrentWidget(self.librarian_view)
            soon(lambda: self.librarian_view.propose(action, uid))

    def _summarize_in_librarian(self) -> None:
        """After an import: the Librarian proposes a summary for each entry without one."""
        self.tabs.setCurrentWidget(self.librarian_view)
        soon(self.librarian_view.summarize_all)

    def _open_channels(self, channel: str) -> None:
        self.tabs.setCurrentWidget(self.channels_view)
        self.channels_view.show_place(channel)

    def open_in_vault(self, uid: str) -> None:
        self.tabs.setCurrentWidget(self.vault_view)
        self.vault_view.show_entry(uid)

    def show_note_in_vault(self, vault: str, path: str, title: str = "") -> bool:
        """A note named by vault and path (or by title) in the Vault view, when it is an entry
        there; False when it is not (a session note is not a lore entry)."""
        snapshot = self.vault_view.snapshot
        if snapshot is None:
            return False
        entry = snapshot.by_uid.get(f"{vault}\x00{path}")
        if entry is None:
            entry = next((e for e in snapshot.by_title.get(title.strip().lower(), ()) if e.vault == vault), None)
        if entry is None:
            return False
        self.open_in_vault(entry.uid)
        return True

    async def open_note(self, vault: str, path: str) -> str:
        """A vault note by vault and path: an entry in the Vault view, any other note (a session
        note) read-only in a window of its own. `vault` "": the vault the index knows the path in.
        Says what was shown, or why nothing was."""
        snapshot = self.vault_view.snapshot
        if not vault and snapshot is not None:
            known = [e.vault for e in snapshot.entries if e.path == path] + [
                s.vault for s in snapshot.skipped if s.path == path
            ]
            vault = known[0] if known else ""
        if not vault:
            return f"{path}: no vault has that note"
        if self.show_note_in_vault(vault, path):
            return f"Showing {path} ({vault})"
        text = await self.bridge.read_note(vault, path)
        if text is None:
            return f"{path} is not in {vault} any more (moved or deleted)"
        from dle_desktop.ui.sillytavern.chat_writers import NoteDialog

        viewer = NoteDialog(vault, path, text, self.vault_view)
        viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        viewer.open()
        return f"Opened {path} ({vault})"

    def find(self) -> None:  # type: ignore[override]  # Find (Ctrl+F), not QWidget.find(window id)
        self.tabs.setCurrentWidget(self.vault_view)
        self.vault_view.focus_filter()

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About DLE Desktop",
            f"<b>DLE Desktop {__version__}</b><p>A native lore engine for SillyTavern: "
            "reads your lore vaults from disk and explains every decision.</p>",
        )

    def bring_forward(self) -> None:
        self.show()
        self.setWindowState((self.windowState() & ~Qt.WindowState.WindowMinimized) | Qt.WindowState.WindowActive)
        self.raise_()
        self.activateWindow()

    # -- closing and state ------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        self.save_state()
        if not self._quitting and self.tray_available and self.close_to_tray:
            event.ignore()
            self.hide()
            self.closeToTray.emit()
            return
        event.accept()
        self.bridge.detach_window()  # SillyTavern's /dle-graph is told there is no window now
        if not self._quitting:
            self.quitRequested.emit()

    def prepare_quit(self) -> None:
        self._quitting = True
        self.bridge.detach_window()
        self.vault_view.usage.stop()
        for view in self.lazy.made_views().values():
            stop = getattr(view, "stop", None)
            if stop is not None:
                stop()
        self.save_state()

    def save_state(self) -> None:
        self.ui_state.setValue("window/geometry", self.saveGeometry())
        self.ui_state.setValue("window/state", self.saveState())
        self.vault_view.save_state(self.ui_state)
        for key in ("channels", "sillytavern"):
            made = self.lazy.made_view(key)
            if made is not None:
                cast("ChannelsView | SillyTavernView", made).save_state(self.ui_state)
        self.ui_state.setValue("window/tab", self.tabs.currentIndex())
        self.ui_state.sync()

    def _restore_state(self) -> None:
        geometry = self.ui_state.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        state = self.ui_state.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        self._pending_select = self.vault_view.restore_state(self.ui_state)
        tab = cast(int, self.ui_state.value("window/tab", 0, type=int))  # type=int: Qt converts
        if 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)

    @property
    def told_about_tray(self) -> bool:
        return self._told_about_tray

    def mark_told_about_tray(self) -> None:
        self._told_about_tray = True
        self.ui_state.setValue("tray/told", True)
