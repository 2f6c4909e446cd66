"""Starts the desktop app: one instance per data folder, the engine on its thread, the window and
the tray on the Qt thread (qasync runs asyncio there so slots can await engine work)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.state.secrets import CLI_VAULT_SECRET
from dle_desktop.state.settings import VaultConfig
from dle_desktop.ui.bridge import ADDED, SECOND_LAUNCH, ApplyPlan, EngineBridge, plan_settings_change, spec_location
from dle_desktop.ui.interpreter import GuiInterpreter
from dle_desktop.ui.main_window import MainWindow
from dle_desktop.ui.ports import Composition, RuntimePort
from dle_desktop.ui.settings.dialog import SettingsDialog
from dle_desktop.ui.settings.model_download import ModelDownload
from dle_desktop.ui.single_instance import (
    ACK,
    OPEN_VAULTS,
    InstanceServer,
    ask_running_instance,
    hand_over,
    instance_name,
)
from dle_desktop.ui.tray import ChangeNotifier, TrayController
from dle_desktop.ui.widgets.async_util import soon
from dle_desktop.ui.widgets.icons import app_icon

if TYPE_CHECKING:
    from dle_desktop.ui.first_run.guide import FirstRunGuide

log = logging.getLogger(__name__)


class DesktopApp:
    """Wires window, tray, notifier and runtime together; owns the order of shutdown."""

    def __init__(
        self,
        qapp: QApplication,
        runtime: RuntimePort,
        ui_state: QSettings,
        start_hidden: bool = False,
        tray_available: bool | None = None,
        offer_guide: bool = False,
    ) -> None:
        """`offer_guide`: show the first-run guide on a first start (run_gui asks for it; tests
        and the packaged smoke test do not, and Help → Getting started… opens it anyway)."""
        self.qapp = qapp
        self.runtime = runtime
        self.bridge = EngineBridge(runtime)
        self.tray = TrayController(available=tray_available)
        self.window = MainWindow(self.bridge, ui_state, self.tray.available)
        self.notifier = ChangeNotifier()
        self.notifier.enabled = self.bridge.settings.show_sync_toasts
        self.done = asyncio.Event()
        self._start_hidden = start_hidden and self.tray.available
        self._offer_guide = offer_guide
        self.guide: FirstRunGuide | None = None  # the first-run guide while it is open
        # The app ends when run() returns, after quit() stopped the runtime. Had Qt ended its loop
        # as the last window closed, run() could be left unfinished (a quit while the runtime
        # was still starting ended the process with "Event loop stopped before Future completed").
        qapp.setQuitOnLastWindowClosed(False)

        self.tray.openRequested.connect(self.window.bring_forward)
        self.tray.syncRequested.connect(lambda: self.window.request_sync(False))
        self.tray.pauseToggled.connect(self.window.pause_action.setChecked)
        self.tray.quitRequested.connect(self.quit)
        self.window.pause_action.toggled.connect(self.tray.set_paused)
        self.window.quitRequested.connect(self.quit)
        self.window.closeToTray.connect(self._closed_to_tray)
        self.window.settingsRequested.connect(lambda: self.open_settings())
        self.window.server_notice.retryRequested.connect(self.retry_server)
        self.window.server_notice.settingsRequested.connect(lambda: self.open_settings(page="general"))
        self.window.addFolderRequested.connect(self._add_folder_dialog)
        self.window.guideRequested.connect(lambda: self.open_guide())
        self.window.wi_actions.applyRequested.connect(self.apply_settings)  # World Info syncs turned on or off
        # The Channels and SillyTavern views are made when first shown: wired then.
        self.window.lazy.made.connect(self._wire_view)
        for key, view in self.window.lazy.made_views().items():
            self._wire_view(key, view)
        self.settings_dialog: SettingsDialog | None = None
        self.apply_task: asyncio.Task | None = None
        self._apply_lock = asyncio.Lock()
        self.apply_bar = self._busy_bar("Applying settings…")
        self.window.statusBar().addPermanentWidget(self.apply_bar)
        self.vault_question: QMessageBox | None = None  # asking about a vault from a second launch
        self._vault_requests: list[str] = []
        self.model_download = ModelDownload(runtime.thread, runtime.ctx.paths.models_dir)
        strip = self.window.vault_view.semantic_strip
        strip.pauseToggled.connect(self.set_semantic_paused)
        strip.settingsRequested.connect(lambda: self.open_settings(page="embeddings"))
        self.model_download.progressed.connect(strip.show_download)
        self.model_download.started.connect(lambda *_: strip.show_download(None))
        for ended in (self.model_download.finished, self.model_download.failed, self.model_download.cancelled):
            ended.connect(strip.download_ended)
        self.model_download.finished.connect(self._model_downloaded)
        self.bridge.indexChanged.connect(lambda snap, changes, _src: self.notifier.add(changes))
        self.bridge.indexChanged.connect(lambda snap, *_: self.tray.set_tooltip(f"DLE Desktop: {len(snap)} entries"))
        self.notifier.notify.connect(self._notify)

    def _wire_view(self, key: str, view: QWidget) -> None:
        if key in ("channels", "sillytavern"):
            view.applyRequested.connect(self.apply_settings)  # type: ignore[attr-defined]  # both views have it

    @staticmethod
    def _busy_bar(text: str) -> QWidget:
        """A status-bar piece that says what is going on beside a busy bar (hidden until shown)."""
        bar = QWidget()
        row = QHBoxLayout(bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel(text))
        busy = QProgressBar()
        busy.setMaximumSize(120, 14)
        busy.setMaximum(0)  # 0: busy
        busy.setTextVisible(False)
        row.addWidget(busy)
        bar.hide()
        return bar

    async def run(self) -> None:
        """The app's life: the window at once (unless it starts in the tray), the engine and the
        HTTP server started behind it off the GUI thread (their imports and the cached index take
        a moment, and the window answers meanwhile), then the rest of `start`; until quit."""
        if not self._start_hidden:
            self.window.show()
        await asyncio.to_thread(self.runtime.start)
        if self.done.is_set():  # quit while starting: stop what the start began
            self.runtime.stop()
            return
        self.start()
        await self.done.wait()

    def start(self) -> None:
        """Call after runtime.start(): engine events from its start are already queued to us."""
        self.bridge.attach_window()  # SillyTavern's /dle-graph, /dle-librarian bring the window up
        server = self.runtime.server
        self.window.set_server_status(server.url if server else None, self.runtime.server_error)
        self._say_lan_warning()
        if self.runtime.ctx.store.problem:  # a server problem has its own notice, with Retry
            self.window.statusBar().showMessage(self.runtime.ctx.store.problem, 30000)
        if self.runtime.server_error and self._start_hidden:  # nobody sees the window's notice yet
            self.tray.show_message("SillyTavern cannot connect", self.runtime.server_error)
        if not self._start_hidden:
            self.window.show()
            from dle_desktop.ui.first_run.guide import is_first_start

            if self._offer_guide and is_first_start(self.window.ui_state, self.runtime.ctx.settings):
                self.open_guide()

    def open_guide(self):
        """The first-run guide (Help → Getting started…); the open one is brought forward."""
        from dle_desktop.ui.first_run.guide import open_guide

        if self.guide is not None:
            self.guide.raise_()
            self.guide.activateWindow()
            return self.guide
        self.guide = guide = open_guide(self)
        guide.finished.connect(lambda *_: setattr(self, "guide", None))
        return guide

    def _notify(self, title: str, message: str) -> None:
        if not self.tray.show_message(title, message):
            self.window.statusBar().showMessage(f"{title}: {message}", 6000)

    def _closed_to_tray(self) -> None:
        if not self.window.told_about_tray:
            self.tray.show_message(
                "DLE Desktop is still running",
                "Vaults keep syncing and SillyTavern stays connected. Quit from the tray menu.",
            )
            self.window.mark_told_about_tray()

    # -- settings -----------------------------------------------------------------------------
    def open_settings(self, add_folder: str | None = None, page: str | None = None) -> SettingsDialog:
        ctx = self.runtime.ctx
        dlg = SettingsDialog(
            ctx.settings,
            ctx.secrets,
            self.window,
            self.bridge,
            self.model_download,
            session=ctx.session,
            sample_folder=self._sample_folder(),
        )
        if add_folder:
            dlg.add_folder(add_folder)
        if page:
            dlg.show_page(page)
        dlg.accepted.connect(lambda: self.apply_settings(dlg.result_settings, dlg.new_keys))
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.settings_dialog = dlg
        dlg.open()
        return dlg

    def _sample_folder(self) -> str | None:
        return self.bridge.sample_folder()

    def _add_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.window, "Open a vault folder")
        if folder:
            self.add_vault_folder(folder)

    def add_vault_folder(self, folder: str) -> None:
        from dle_desktop.ui.settings.dialog import unique_name

        ctx = self.runtime.ctx
        path = Path(folder).expanduser().resolve()
        existing = [v.to_json() for v in ctx.settings.vaults]
        if any(v.get("path") == str(path) for v in existing):
            self.window.statusBar().showMessage(f"{path} is already a vault", 5000)
            return
        name = unique_name(path.name, {v["name"].lower() for v in existing})
        if (
            ctx.session and ctx.session.replaces_saved
        ):  # the command line chose the vaults: open this one next to them now
            ctx.session.add(str(path), ADDED)
        self.apply_settings(
            ctx.settings.replace(vaults=[*existing, {"name": name, "kind": "folder", "path": str(path)}]), {}
        )

    def apply_settings(self, settings, new_keys: dict[str, str], reopen_vaults: bool = False) -> asyncio.Task | None:
        """Save at once, then apply in the background (the window stays usable; the status bar
        shows it): only what the change needs restarts (see `settings_apply.plan`). Returns the
        background task, or None when the settings could not be saved."""
        ctx = self.runtime.ctx
        old = ctx.settings
        # Pausing from the vault view while the dialog was open must not be undone by the dialog's
        # older copy: the dialog never edits this one.
        settings = settings.replace(semantic_paused=old.semantic_paused)
        for secret_id, key in new_keys.items():
            ctx.secrets.set(secret_id, key)
        try:
            ctx.store.save(settings)
        except (OSError, DleError) as exc:
            QMessageBox.warning(self.window, "Settings", f"Settings could not be saved: {exc}")
            return None
        ctx.settings = settings  # the next settings dialog starts from these, even mid-apply
        self.window.close_to_tray = settings.close_to_tray
        self.notifier.enabled = settings.show_sync_toasts
        todo = plan_settings_change(old, settings, new_keys)
        if reopen_vaults:  # the session's vaults changed (a second launch), not the settings
            todo = dataclasses.replace(todo, new_engine=True)
        if self.runtime.server_needs_restart(old, settings):  # also: it should run and does not (busy port)
            todo = dataclasses.replace(todo, restart_server=True)
        if todo.restart_olra or self.runtime.olra_needs_restart(old, settings):  # also: it should run and does not
            todo = dataclasses.replace(todo, restart_olra=True)
        self.apply_task = asyncio.ensure_future(self._apply(settings, todo))
        return self.apply_task

    async def _apply(self, settings, todo: ApplyPlan) -> None:
        async with self._apply_lock:  # one at a time, in the order they were asked for
            self.apply_bar.show()
            try:
                if todo.new_engine:
                    try:  # keeps the vaults this session opened (--vault, a second launch)
                        engine = self.runtime.new_session_engine(settings)
                    except DleError as exc:  # e.g. a folder given with --vault was removed since
                        QMessageBox.warning(
                            self.window, "Settings", f"Settings were saved, but the vaults could not be opened: {exc}"
                        )
                        return
                    self.bridge.rebind(engine)
                    self.window.reset_semantic(settings)
                    self.window.on_ai_breaker({"state": "closed"})  # the new engine starts with a closed breaker
                    await asyncio.to_thread(self.runtime.replace_engine, engine, settings)
                elif todo.in_place:
                    await self.bridge.apply_settings(settings, todo.rebuild_ai)
                    if todo.refresh_access and not todo.restart_server:
                        await asyncio.to_thread(self.runtime.refresh_server_access)
                    if "semantic_enabled" in todo.changed:
                        self.window.reset_semantic(settings)
                    soon(self.window.refresh_health)  # its limits (scan depth, budget...) may have moved
                if todo.restart_server:
                    await asyncio.to_thread(self.runtime.restart_server)
                    self._show_server_state()
                    self._say_lan_warning()
                if todo.restart_olra:
                    await asyncio.to_thread(self.runtime.restart_olra)
                    sillytavern = self.window.lazy.made_view("sillytavern")
                    if sillytavern is not None:
                        sillytavern.olra_panel.emulation_restarted()  # type: ignore[attr-defined]  # a SillyTavernView
            except Exception as exc:
                log.exception("applying settings failed")
                self.window.statusBar().showMessage(f"Settings were saved, but applying them failed: {exc}", 15000)
                return
            finally:
                self.apply_bar.hide()
        done = todo.describe()
        self.window.statusBar().showMessage(f"Settings saved ({done})" if done else "Settings saved", 4000)

    def _say_lan_warning(self) -> None:
        """LAN mode with the bridge installed: once per server start, in the status bar and the tray."""
        warning = getattr(self.runtime.server, "lan_warning", None)
        if warning:
            self.window.statusBar().showMessage(warning, 60000)
            if self._start_hidden:
                self.tray.show_message("SillyTavern can hand out the server token", warning)

    def retry_server(self) -> None:
        """Start the server again (the notice's Retry)."""
        self.runtime.restart_server()
        self._show_server_state()

    def _show_server_state(self) -> None:
        server = self.runtime.server
        self.window.set_server_status(server.url if server else None, self.runtime.server_error)
        if server is not None:
            self.window.statusBar().showMessage(f"Server running on {server.url}", 5000)

    # -- semantic search ------------------------------------------------------------------------
    def set_semantic_paused(self, paused: bool) -> None:
        """Pause or resume embedding the entries, now and after a restart."""
        soon(lambda: self.bridge.set_semantic_paused(paused))
        ctx = self.runtime.ctx
        ctx.settings = ctx.settings.replace(semantic_paused=paused)
        try:
            ctx.store.save(ctx.settings)
        except (OSError, DleError) as exc:
            self.window.statusBar().showMessage(
                f"The pause holds until DLE Desktop quits; it could not be saved: {exc}", 10000
            )

    def _model_downloaded(self, path: str) -> None:
        self.window.statusBar().showMessage(f"Embedding model ready: {Path(path).name}", 5000)
        settings = self.runtime.ctx.settings
        if settings.semantic_enabled and not settings.embedding_model_path.strip():
            # The running engine found no model when it started; now the default one is there.
            soon(self._embed_vault_now)

    async def _embed_vault_now(self) -> None:
        try:
            await self.bridge.embed_vault_now()
        except Exception:
            log.debug("embedding the vault after the model download did not finish", exc_info=True)

    def on_instance_message(self, message: str) -> None:
        if message == "show":
            self.window.bring_forward()
        elif message.startswith(OPEN_VAULTS):
            try:
                specs = [s for s in json.loads(message[len(OPEN_VAULTS) :]) if isinstance(s, str) and s]
            except ValueError:
                log.warning("ignored an unreadable message from a second launch")
                return
            self.window.bring_forward()
            self._vault_requests.extend(specs)
            if self.vault_question is None:
                self._ask_next_vault()

    # -- vaults handed over by a second launch --------------------------------------------------
    def _ask_next_vault(self) -> None:
        """One question at a time, without a nested event loop (the engine's replies keep coming)."""
        if not self._vault_requests:
            self.vault_question = None
            return
        spec = self._vault_requests.pop(0)
        shown = spec_location(spec)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Open a vault?",
            f"DLE Desktop was started again with --vault {shown}.",
            parent=self.window,
        )
        box.setInformativeText(
            "Open for this session: the vault opens now, next to the open ones, until DLE "
            "Desktop quits.\n\nAdd to saved vaults: it opens now and at every start."
        )
        session = box.addButton("Open for this session", QMessageBox.ButtonRole.AcceptRole)
        saved = box.addButton("Add to saved vaults", QMessageBox.ButtonRole.AcceptRole)
        box.addButton("Ignore", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(session)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(_result) -> None:
            clicked = box.clickedButton()
            choice = "session" if clicked is session else "saved" if clicked is saved else "ignore"
            self.open_handed_vault(spec, choice)
            self._ask_next_vault()

        box.finished.connect(answered)
        self.vault_question = box
        box.open()

    def open_handed_vault(self, spec: str, choice: str) -> None:
        """choice: session (open until quit) | saved (save and open) | ignore."""
        ctx = self.runtime.ctx
        shown = spec_location(spec)
        if choice == "ignore":
            self.window.statusBar().showMessage(f"Not opened: {shown}", 6000)
            return
        try:
            if choice == "session":
                if not ctx.session.add(spec, SECOND_LAUNCH):
                    self.window.statusBar().showMessage(f"{shown} is already open", 5000)
                    return
                self.apply_settings(ctx.settings, {}, reopen_vaults=True)
            elif spec.startswith(("http://", "https://")):
                self._save_rest_vault(spec)
            else:
                self.add_vault_folder(spec)
        except DleError as exc:
            QMessageBox.warning(self.window, "Open a vault", f"{shown} could not be opened: {exc}")

    def _save_rest_vault(self, spec: str) -> None:
        from dle_desktop.ui.settings.dialog import unique_name
        from dle_desktop.vault.obsidian_rest import parse_vault_spec

        ctx = self.runtime.ctx
        source = parse_vault_spec(spec)
        existing = [v.to_json() for v in ctx.settings.vaults]
        cfg = VaultConfig(
            name=unique_name(f"Obsidian {source.port}", {v["name"].lower() for v in existing}),
            kind="obsidian-rest",
            host=source.host,
            port=source.port,
            https=source.https,
        )
        key = source.reveal_api_key() or ctx.secrets.get(CLI_VAULT_SECRET)
        if ctx.session and ctx.session.replaces_saved:
            ctx.session.add(spec, ADDED)
        self.apply_settings(
            ctx.settings.replace(vaults=[*existing, cfg.to_json()]), {cfg.secret_id: key} if key else {}
        )

    def quit(self) -> None:
        self.model_download.cancel()  # the bytes so far are kept: the next start resumes
        if self.guide is not None:  # quitting from the tray closes it as Close does: seen
            self.guide.reject()
        self.window.prepare_quit()
        self.window.close()
        self.tray.hide()
        self.bridge.close()
        self.runtime.stop()
        self.done.set()


def second_launch(name: str, args, check_vault_spec: Callable[[str], None]) -> int | None:
    """When the app already runs for this data folder: hand it the vaults (it asks the user there)
    or bring it forward, say plainly what was and was not applied, and return the exit code."""
    specs = []
    for spec in args.vault or ():
        check_vault_spec(spec)  # a folder that is not there is this launch's error, not the other's question
        specs.append(spec if spec.startswith(("http://", "https://")) else spec_location(spec))
    if not specs:
        if not ask_running_instance(name):
            return None
        print("DLE Desktop is already running; brought its window forward.")
    else:
        answer = hand_over(name, OPEN_VAULTS + json.dumps(specs))
        if answer is None:
            return None
        shown = ", ".join(spec_location(s) for s in specs)
        if answer != ACK:
            print(
                f"DLE Desktop is already running and did not take the vault: --vault {shown} was NOT applied. "
                "Open it there (File → Add vault folder…) or quit DLE Desktop and start it again.",
                file=sys.stderr,
            )
            return 1
        print(f"DLE Desktop is already running; it asks in its window whether to open {shown}.")
    if getattr(args, "port", None) is not None:
        print("--port was NOT applied: the running app keeps its server port (change it in Settings).", file=sys.stderr)
    return 0


def _exit_when_shown(desktop: DesktopApp) -> None:
    """The packaged build's smoke test (scripts/package --smoke): say when the window is on the
    screen with its first index shown, then quit the normal way (which must end the process)."""

    def check() -> None:
        shown = desktop.window.index_label.text().strip()
        if desktop.window.isVisible() and shown and not shown.startswith("Loading"):
            print("DLE-DESKTOP-WINDOW-VISIBLE", flush=True)
            QTimer.singleShot(200, desktop.quit)
        else:
            QTimer.singleShot(20, check)

    QTimer.singleShot(0, check)


def _exit_when_graph_shown(desktop: DesktopApp) -> None:
    """The packaged build's smoke test of the Graph view (`DLE_DESKTOP_EXIT_WHEN_SHOWN=graph`):
    once the first index is shown, open the Graph tab, say where its work ran when the graph is
    on the screen (or why it failed), then quit."""
    window = desktop.window

    def report_and_quit(line: str) -> None:
        print(line, flush=True)
        QTimer.singleShot(200, desktop.quit)

    def open_graph() -> None:
        shown = window.index_label.text().strip()
        if not (window.isVisible() and shown and not shown.startswith(("Loading", "Indexing"))):
            QTimer.singleShot(50, open_graph)
            return
        view = window.graph_view
        view.resultShown.connect(
            lambda res: report_and_quit(f"DLE-DESKTOP-GRAPH-SHOWN {res.graph.n} entries, in a {view.worker.ran_in}")
        )
        view.worker.failed.connect(lambda _job, message: report_and_quit(f"DLE-DESKTOP-GRAPH-FAILED {message}"))
        window.tabs.setCurrentWidget(view)

    QTimer.singleShot(0, open_graph)


def run_gui(args, composition: Composition[Any]) -> int:
    """The window, the tray and the Qt loop around a runtime that `composition` (the app) builds."""
    existing = QApplication.instance()
    qapp = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    qapp.setApplicationName("DLE Desktop")
    qapp.setOrganizationName("DLE Desktop")
    qapp.setDesktopFileName("dle-desktop")  # Wayland matches the window to the menu entry (and its icon) by this
    qapp.setWindowIcon(app_icon())
    interpreter = GuiInterpreter(qapp).start()  # noqa: F841 - lives as long as qapp

    ctx = composition.make_context(args.data_dir)
    name = instance_name(str(ctx.paths.data_dir))
    handed = second_launch(name, args, composition.check_vault_spec)
    if handed is not None:
        return handed
    instance = InstanceServer(name)

    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    try:
        runtime = composition.open_runtime(ctx, args.vault, getattr(args, "port", None))
    except DleError as exc:
        QMessageBox.critical(None, "DLE Desktop", str(exc))
        return 2
    ui_state = QSettings(str(ctx.paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
    # Built before the engine starts, so it hears the cached index and the first sync.
    from dle_desktop.ui.first_run.guide import offered_at_start

    minimized = getattr(args, "minimized", False)
    desktop = DesktopApp(qapp, runtime, ui_state, start_hidden=minimized, offer_guide=offered_at_start(minimized))
    instance.messageReceived.connect(desktop.on_instance_message)

    def quit_once() -> None:
        if not desktop.done.is_set():
            desktop.quit()

    qapp.aboutToQuit.connect(quit_once)
    exit_when = os.environ.get("DLE_DESKTOP_EXIT_WHEN_SHOWN")
    if exit_when == "1":
        _exit_when_shown(desktop)
    elif exit_when == "graph":
        _exit_when_graph_shown(desktop)
    with loop:
        try:
            loop.run_until_complete(desktop.run())
        except RuntimeError:
            if not desktop.done.is_set():
                raise
            # Qt itself ended the loop (the session is ending): quit() has stopped the runtime
            log.info("the window system ended the app before its loop finished")
    instance.close()
    return 0
