"""Quitting the app at any moment of its start ends it cleanly: the window closing must not end
Qt's loop before `DesktopApp.run()` has stopped what the start began (a quit while the runtime
was still starting ended the process with "Event loop stopped before Future completed",
exit code 1: the packaged build's smoke test caught it)."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QSettings

from dle_desktop.app.context import AppContext
from dle_desktop.app.runtime import Runtime
from dle_desktop.engine.engine import Engine
from dle_desktop.state.paths import resolve_paths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.ui.launch import DesktopApp
from dle_desktop.vault.sources import FolderSource
from tests.ui.conftest import wait_for


def desktop_on(vault, data, qapp) -> DesktopApp:
    paths = resolve_paths(data).ensure()
    settings = Settings()
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("vault", vault)])
    runtime = Runtime(ctx, engine, serve=False, port=0)
    ui_state = QSettings(str(paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
    return DesktopApp(qapp, runtime, ui_state, tray_available=False)


def test_a_quit_while_the_runtime_starts_lets_run_finish(vault_copy, tmp_path, qapp, qloop):
    desktop = desktop_on(vault_copy, tmp_path / "data", qapp)
    assert not qapp.quitOnLastWindowClosed()  # the app ends when run() returns, not when Qt likes

    async def scenario():
        running = asyncio.ensure_future(desktop.run())
        await wait_for(desktop.window.isVisible, what="the window")
        desktop.quit()  # the runtime is still starting in its thread
        await asyncio.wait_for(running, 30)
        assert running.exception() is None

    qloop.run_until_complete(scenario())
    assert desktop.done.is_set() and not desktop.runtime.thread.alive


def test_closing_the_window_without_a_tray_ends_run(vault_copy, tmp_path, qapp, qloop):
    desktop = desktop_on(vault_copy, tmp_path / "data", qapp)

    async def scenario():
        running = asyncio.ensure_future(desktop.run())
        await wait_for(lambda: desktop.window.vault_view.model.rowCount() == 61, what="the index")
        desktop.window.close()  # as the user closes it: no tray, so this quits
        await asyncio.wait_for(running, 30)

    qloop.run_until_complete(scenario())
    assert desktop.done.is_set() and not desktop.runtime.thread.alive
