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


def test_a_quit_while_the_server_start_gives_way_to_the_user_lets_run_finish(vault_copy, tmp_path, qapp, qloop):
    """The HTTP server's imports wait while the window's user acts; a quit then stopped the
    engine's loop under them, and the start went on to start the server on a closed loop
    ("Event loop is closed" out of `run`)."""
    from dle_desktop.core.user_activity import UserActivity

    paths = resolve_paths(tmp_path / "data").ensure()
    settings = Settings()
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("vault", vault_copy)])
    engine.activity = engine.indexer.activity = UserActivity(quiet_s=600.0, longest_wait_s=600.0)
    runtime = Runtime(ctx, engine, port=0)  # with the server
    ui_state = QSettings(str(paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
    desktop = DesktopApp(qapp, runtime, ui_state, tray_available=False)

    engine.activity.user_acted()  # a user busy in the window: the server's imports wait

    async def scenario():
        running = asyncio.ensure_future(desktop.run())
        # the engine is up; the start is on to the server's imports, which wait for the user
        await wait_for(lambda: runtime._following is not None, what="the engine's start")
        await asyncio.sleep(0.3)
        assert runtime.server is None
        desktop.quit()
        await asyncio.wait_for(running, 30)
        assert running.exception() is None

    try:
        qloop.run_until_complete(scenario())
    finally:
        engine.activity.release()  # a failed run must not leave the start waiting ten minutes
        if not desktop.done.is_set():
            desktop.quit()
    assert desktop.done.is_set() and not runtime.thread.alive and runtime.server is None
