"""Applying settings from the window: saved at once, applied in the background (the Qt loop keeps
running, the status bar shows it), restarting only what the change needs."""

from __future__ import annotations

import asyncio
import threading

from PySide6.QtCore import QTimer

from dle_desktop.state.settings import Settings, SettingsStore
from tests.ui.conftest import wait_for


def test_applying_runs_in_the_background_while_the_window_stays_responsive(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    engine = desk.runtime.engine
    # Hold the engine's loop busy, as a slow engine stop would: applying must wait for it
    # without holding up the Qt loop.
    release = threading.Event()

    async def busy_engine():
        release.wait(20)

    held = desk.runtime.thread.submit(busy_engine())
    other = tmp_path / "other"
    other.mkdir()
    s = desk.runtime.ctx.settings
    task = desk.apply_settings(
        s.replace(vaults=[{"name": "other", "kind": "folder", "path": str(other)}], scan_depth=5), {}
    )
    assert task is not None and not task.done()
    assert SettingsStore(desk.runtime.ctx.paths.settings_file).load().scan_depth == 5  # saved at once

    async def scenario():
        ticks = []
        QTimer.singleShot(0, lambda: ticks.append("tick"))
        while not ticks:  # the Qt loop runs its timers while the engine is busy
            await asyncio.sleep(0.01)
        assert not desk.apply_bar.isHidden() and not task.done()
        release.set()
        await task
        assert desk.apply_bar.isHidden()
        assert desk.runtime.engine is not engine  # a new vault needs a new engine
        assert [v.name for v in desk.runtime.engine.sources] == ["other"]
        assert "re-reading the vaults" in desk.window.statusBar().currentMessage()

    try:
        qloop.run_until_complete(scenario())
    finally:
        release.set()
        held.result(20)


def test_a_server_change_restarts_the_server_and_keeps_the_engine(make_desktop, vault_copy, qloop):
    # A runtime allowed to serve, on settings that keep the server off until the change below.
    desk = make_desktop(vault_copy, settings=Settings(server_enabled=False), runtime_options={"serve": True})
    engine = desk.runtime.engine
    assert desk.runtime.server is None
    desk.apply_settings(desk.runtime.ctx.settings.replace(server_port=0, server_enabled=True), {})
    status = desk.window.statusBar()
    qloop.run_until_complete(wait_for(lambda: status.currentMessage().startswith("Settings saved"), what="applied"))
    server = desk.runtime.server
    assert server is not None and server.port > 0
    assert desk.runtime.engine is engine  # a server option is no reason to re-read the vaults
    assert desk.window.server_label.text() == f"Server: {server.url}"
    assert "server restarted" in status.currentMessage()
