#!/usr/bin/env python3
"""The Graph view's screenshot of the bundled sample vault, from the real app window (engine
thread, no HTTP port, a throwaway data folder), as README shows it:

    xvfb-run -a python benchmarks/graph_screenshot.py docs/screenshots/graph-sample.png [--hover TITLE]

(`QT_QPA_PLATFORM=offscreen` works too.) The 10,000-entry picture comes from
`bench_graph_view.py --screenshot`."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--hover", default="", help="hover this entry (shows the neighbourhood dimming)")
    ap.add_argument("--colour", default="community")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=860)
    args = ap.parse_args(argv)

    import qasync
    from PySide6.QtCore import QPoint, QSettings
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import resolve_paths, sample_vault_dir
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore
    from dle_desktop.ui.launch import DesktopApp
    from dle_desktop.vault.sources import FolderSource

    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    tmp = tempfile.TemporaryDirectory()
    paths = resolve_paths(Path(tmp.name) / "data").ensure()
    settings = Settings()
    ctx = AppContext(paths, SettingsStore(paths.settings_file), settings, SecretStore(use_keyring=False))
    engine = Engine(paths, settings, ctx.secrets, vault_override=[FolderSource("Sample", sample_vault_dir())])
    runtime = Runtime(ctx, engine, serve=False, port=0)
    desk = DesktopApp(
        app, runtime, QSettings(str(paths.config_dir / "ui.ini"), QSettings.IniFormat), tray_available=False
    )
    runtime.start()
    desk.start()
    win = desk.window
    win.resize(args.width, args.height)

    async def shoot():
        deadline = time.monotonic() + 60
        while win.vault_view.snapshot is None and time.monotonic() < deadline:  # noqa: ASYNC110 - polls Qt state, bounded
            await asyncio.sleep(0.05)
        win.graph_view_action.trigger()
        view = win.graph_view
        while view.graph is None and time.monotonic() < deadline:  # noqa: ASYNC110 - polls Qt state, bounded
            await asyncio.sleep(0.05)
        view.set_colour_mode(args.colour)
        await asyncio.sleep(0.3)
        view.canvas.fit()
        if args.hover:
            i = next(k for k, e in enumerate(view.graph.entries) if e.title == args.hover)
            x, y = view.canvas.world_to_screen(view.canvas.xy[i])
            QTest.mouseMove(view.canvas, QPoint(int(x), int(y)))
            view.canvas.set_hovered(i)
        await asyncio.sleep(0.3)
        win.grab().save(args.out)
        print(f"{args.out}: {view.graph.n} entries; {view.status.text()}")
        desk.quit()

    loop.run_until_complete(shoot())
    deadline = time.monotonic() + 20
    while not desk.done.is_set() and time.monotonic() < deadline:
        loop.run_until_complete(asyncio.sleep(0.05))
    return 0


if __name__ == "__main__":
    sys.exit(main())
