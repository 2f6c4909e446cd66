from __future__ import annotations

import asyncio
import gc
import os
import shutil
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread():
    """As the app does (ui/gc_guard.py): no automatic collection during a test, where it could
    run on an engine thread and delete a Qt object of an earlier test there (a crash); instead a
    full collection on this, the GUI, thread after each test."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    gc.collect()
    if was_enabled:
        gc.enable()


@pytest.fixture
def qloop(qapp):
    """A qasync loop on the Qt thread, as in the real app; run test coroutines with it."""
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    try:
        loop.close()
    finally:
        asyncio.set_event_loop(None)


async def wait_for(condition, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def vault_copy(tmp_path):
    dest = tmp_path / "vault"
    shutil.copytree(SAMPLE, dest)
    return dest


@pytest.fixture
def make_desktop(tmp_path, qapp):
    """Build the real DesktopApp (engine thread, watcher, no HTTP port) on a vault folder."""
    from PySide6.QtCore import QSettings

    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore
    from dle_desktop.ui.launch import DesktopApp
    from dle_desktop.vault.sources import FolderSource

    made = []

    def make(
        vault: Path | None,
        tray: bool = False,
        data_dir: Path | None = None,
        settings: Settings | None = None,
        command_line: list[str] | None = None,
        runtime_options: dict | None = None,
        enabled: bool = True,
    ):
        """`command_line`: start as `dle-desktop --vault ...` would (vault=None: only those, or the
        saved/sample vaults when empty); otherwise `vault` is opened directly."""
        from dle_desktop.app.context import session_engine
        from dle_desktop.engine.session_vaults import SessionVaults

        paths = resolve_paths(data_dir or tmp_path / "data").ensure()
        settings = settings or Settings()
        ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
        if command_line is not None:
            ctx.session = SessionVaults.from_command_line(command_line)
            engine = session_engine(ctx)
        else:
            engine = Engine(
                paths, settings, ctx.secrets, vault_override=[FolderSource("vault", vault, enabled=enabled)]
            )
        runtime = Runtime(ctx, engine, **({"serve": False, "port": 0} if runtime_options is None else runtime_options))
        ui_state = QSettings(str(paths.config_dir / "ui-state.ini"), QSettings.IniFormat)
        desktop = DesktopApp(qapp, runtime, ui_state, tray_available=tray)
        runtime.start()
        desktop.start()
        made.append(desktop)
        return desktop

    yield make
    for d in made:
        if not d.done.is_set():
            d.quit()
