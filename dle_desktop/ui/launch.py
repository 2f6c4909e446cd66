"""Starts the desktop app: one instance per data folder, the engine on its thread, the window and
the tray on the Qt thread (qasync runs asyncio there so slots can await engine work)."""

from __future__ import annotations

import asyncio
import logging
import sys

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

from dle_desktop.errors import DleError
from dle_desktop.ui.bridge import EngineBridge
from dle_desktop.ui.icons import app_icon
from dle_desktop.ui.main_window import MainWindow
from dle_desktop.ui.single_instance import InstanceServer, ask_running_instance, instance_name
from dle_desktop.ui.tray import ChangeNotifier, TrayController

log = logging.getLogger(__name__)


class DesktopApp:
    """Wires window, tray, notifier and runtime together; owns the order of shutdown."""

    def __init__(self, qapp: QApplication, runtime, ui_state: QSettings, start_hidden: bool = False,
                 tray_available: bool | None = None) -> None:
        self.qapp = qapp
        self.runtime = runtime
        self.bridge = EngineBridge(runtime)
        self.tray = TrayController(available=tray_available)
        self.window = MainWindow(self.bridge, ui_state, self.tray.available)
        self.notifier = ChangeNotifier()
        self.notifier.enabled = runtime.engine.settings.show_sync_toasts
        self.done = asyncio.Event()
        self._start_hidden = start_hidden and self.tray.available
        qapp.setQuitOnLastWindowClosed(not self.tray.available)

        self.tray.openRequested.connect(self.window.bring_forward)
        self.tray.syncRequested.connect(lambda: self.window.request_sync(False))
        self.tray.pauseToggled.connect(self.window.pause_action.setChecked)
        self.tray.quitRequested.connect(self.quit)
        self.window.pause_action.toggled.connect(self.tray.set_paused)
        self.window.quitRequested.connect(self.quit)
        self.window.closeToTray.connect(self._closed_to_tray)
        self.bridge.indexChanged.connect(lambda snap, changes, _src: self.notifier.add(changes))
        self.bridge.indexChanged.connect(lambda snap, *_: self.tray.set_tooltip(f"DLE Desktop: {len(snap)} entries"))
        self.notifier.notify.connect(self._notify)

    def start(self) -> None:
        """Call after runtime.start(): engine events from its start are already queued to us."""
        server = self.runtime.server
        self.window.set_server_status(server.url if server else None, self.runtime.server_error)
        if self.runtime.server_error:
            self.window.statusBar().showMessage(self.runtime.server_error, 20000)
        if not self._start_hidden:
            self.window.show()

    def _notify(self, title: str, message: str) -> None:
        if not self.tray.show_message(title, message):
            self.window.statusBar().showMessage(f"{title}: {message}", 6000)

    def _closed_to_tray(self) -> None:
        if not self.window.told_about_tray:
            self.tray.show_message("DLE Desktop is still running",
                                   "Vaults keep syncing and SillyTavern stays connected. Quit from the tray menu.")
            self.window.mark_told_about_tray()

    def on_instance_message(self, message: str) -> None:
        if message == "show":
            self.window.bring_forward()

    def quit(self) -> None:
        self.window.prepare_quit()
        self.window.close()
        self.tray.hide()
        self.bridge.close()
        self.runtime.stop()
        self.done.set()


def run_gui(args) -> int:
    from dle_desktop.app import Runtime, make_context, make_engine

    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    qapp.setApplicationName("DLE Desktop")
    qapp.setOrganizationName("DLE Desktop")
    qapp.setWindowIcon(app_icon())

    ctx = make_context(args.data_dir, log_to_stderr=True)
    name = instance_name(str(ctx.paths.data_dir))
    if ask_running_instance(name):
        print("DLE Desktop is already running; brought its window forward.")
        return 0
    instance = InstanceServer(name)

    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    try:
        engine = make_engine(ctx, args.vault)
    except DleError as exc:
        QMessageBox.critical(None, "DLE Desktop", str(exc))
        return 2
    runtime = Runtime(ctx, engine)
    ui_state = QSettings(str(ctx.paths.config_dir / "ui-state.ini"), QSettings.IniFormat)
    # Built before the engine starts, so it hears the cached index and the first sync.
    desktop = DesktopApp(qapp, runtime, ui_state, start_hidden=getattr(args, "minimized", False))
    runtime.start()
    instance.messageReceived.connect(desktop.on_instance_message)
    qapp.aboutToQuit.connect(lambda: desktop.done.is_set() or desktop.quit())
    desktop.start()
    with loop:
        loop.run_until_complete(desktop.done.wait())
    instance.close()
    return 0
