"""Screenshots of every view at the window sizes a user meets, for looking at by eye.

    xvfb-run -a -s "-screen 0 1920x1080x24" .venv/bin/python scripts/screenshots.py --out docs/screenshots

Starts the real app (engine thread, window, dialogs; no HTTP server, no AI, no network) on the
bundled sample vault with a throwaway data folder, and for each size saves
`<W>x<H>-<view>.png`. A view that cannot be shot (a view being rebuilt, say) is reported and
skipped; the others are still taken, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# No keyring prompt, no secret of the user's read: the throwaway folder's file store only.
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")

SIZES = ((1000, 650), (1200, 760), (1920, 1080))
#: An entry with keys, links and a summary: the Entry tab shows most of what it can.
SAMPLE_ENTRY = "Tidewriting"
#: The writers' content the views are shot with (no AI runs here: put in their store as they would be).
WRITERS_CHAT = "Mira - 2026-12-02@18h04m"
WRITERS_TALK = (
    "We walk along Lantern Quay to the Old Harbour.",
    "The lamplighters' tower is dark tonight; Hobb holds up a brass key.",
    "Where does it lead?",
    "To the sea gate, the old man says, and nowhere you should go alone.",
)
WRITERS_SUGGESTIONS = (
    {
        "title": "Sea Gate",
        "type": "location",
        "keys": ["sea gate", "the gate"],
        "summary": "The barred gate under the harbour wall, opened by the brass key.",
        "content": "An iron gate below the harbour wall, green with salt and older than the quay.\n\n"
        "Only Old Hobb's brass key opens it; what lies behind it the harbourmaster will not say.",
    },
    {
        "title": "Lamplighters' Tower",
        "type": "location",
        "keys": ["lamplighters' tower", "the tower"],
        "summary": "The tower from which the quay's lanterns are lit each night; dark since the storm.",
        "content": "A narrow stone tower at the end of Lantern Quay.",
    },
)
WRITERS_NOTEPAD = (
    "- Mira owes Hobb a favour for the key.\n- The tower went dark the night the Wayfarer docked.\n"
    "- Hobb lied about where the gate leads; watch for the lie to surface."
)
WRITERS_SUMMARY = (
    "## Events\n- Mira and Hobb walked Lantern Quay to the Old Harbour.\n"
    "- Hobb showed the brass key and named the sea gate.\n\n## Open threads\n- Why the tower is dark."
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="where the PNGs go")
    parser.add_argument(
        "--sizes",
        default=",".join(f"{w}x{h}" for w, h in SIZES),
        help="comma-separated WxH window sizes (default: %(default)s)",
    )
    parser.add_argument("--only", default="", help="comma-separated view names to shoot (default: all)")
    parser.add_argument("--full-colour", action="store_true", help="24-bit PNGs (default: a 256-colour palette)")
    args = parser.parse_args(argv)
    try:
        args.sizes = [tuple(int(n) for n in s.lower().split("x")) for s in args.sizes.split(",") if s]
    except ValueError:
        parser.error("--sizes: WxH,WxH,... (e.g. 1000x650)")
    args.only = {s.strip() for s in args.only.split(",") if s.strip()}
    return args


async def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def settle(seconds: float = 0.4) -> None:
    """Let layouts, deferred resizes and repaints run (the qasync loop runs Qt's events meanwhile)."""
    await asyncio.sleep(seconds)


class Shooter:
    def __init__(self, desktop: Any, out: Path, full_colour: bool = False) -> None:
        self.desk = desktop
        self.full_colour = full_colour
        self.window = desktop.window
        self.out = out
        self.failed: list[str] = []
        self.saved: list[Path] = []
        self._test_chat_ran = False
        self._writers_ready = False

    def save(self, widget: Any, name: str, size: tuple[int, int]) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QImage

        path = self.out / f"{size[0]}x{size[1]}-{name}.png"
        image = widget.grab().toImage()
        if not self.full_colour:  # a window's few colours fit a palette: a quarter of the bytes, the same look
            image = image.convertToFormat(
                QImage.Format.Format_Indexed8,
                Qt.ImageConversionFlag.ThresholdDither | Qt.ImageConversionFlag.AvoidDither,
            )
        # quality 0: the PNG's strongest compression (the same pixels, a smaller file)
        if not image.save(str(path), "PNG", 0):
            raise OSError(f"could not write {path}")
        self.saved.append(path)

    def fit_dialog(self, dialog: Any, size: tuple[int, int]) -> None:
        """A dialog as the window manager would place it on a screen of this size: never larger."""
        hint = dialog.size().expandedTo(dialog.minimumSizeHint())
        dialog.resize(min(hint.width(), size[0]), min(hint.height(), size[1]))

    # -- the views ---------------------------------------------------------------------------
    async def vault_entry(self, size: tuple[int, int]) -> Any:
        from PySide6.QtCore import QModelIndex

        view = self.window.vault_view
        self.window.tabs.setCurrentWidget(view)
        snapshot = view.snapshot
        hits = snapshot.by_title.get(SAMPLE_ENTRY.lower()) if snapshot else None
        uid = hits[0].uid if hits else view.model.entry(0).uid
        view.filter.clear()
        view.health.setCurrentIndex(QModelIndex())  # no problem selected: the health list as it opens
        view.show_entry(uid)
        view.right_tabs.setCurrentWidget(view.detail)
        return self.window

    async def vault_health(self, size: tuple[int, int]) -> Any:
        from PySide6.QtWidgets import QAbstractItemView

        view = self.window.vault_view
        self.window.tabs.setCurrentWidget(view)
        health = view.health
        tabs = view.right_tabs
        for i in range(tabs.count()):  # a Health tab, where the view has one
            if tabs.tabText(i).lower().startswith("health"):
                tabs.setCurrentIndex(i)
        # the first warning: its text is long enough to show whether the problem is readable
        for top_row in (1, 0):
            top = health.topLevelItem(top_row)
            if top is not None and top.childCount():
                top.setExpanded(True)
                problem = top.child(0)
                health.setCurrentItem(problem)
                health.scrollToItem(problem, QAbstractItemView.ScrollHint.PositionAtCenter)
                health.itemActivated.emit(problem, 0)  # a double-click: its entry beside it
                view.right_tabs.setCurrentWidget(view.detail)
                break
        return self.window

    async def vault_test_chat(self, size: tuple[int, int]) -> Any:
        view = self.window.vault_view
        panel = view.test_panel
        self.window.tabs.setCurrentWidget(view)
        view.right_tabs.setCurrentWidget(panel)
        if not self._test_chat_ran:
            from dle_desktop.ui.vault.chat_trial_panel import EXAMPLE

            panel.input.setPlainText(EXAMPLE)
            self._test_chat_ran = bool(await panel.run_async())
        # a verdict whose reason is long: the row's full text shows in the panel
        rows = panel.proxy.rowCount()
        longest = max(range(rows), key=lambda r: len(str(panel.proxy.index(r, 3).data() or "")), default=-1)
        if longest >= 0:
            panel.verdicts.selectRow(longest)
            panel.verdicts.scrollTo(panel.proxy.index(longest, 0))
        return self.window

    async def channels(self, size: tuple[int, int]) -> Any:
        from PySide6.QtWidgets import QScrollArea

        view = self.window.channels_view
        self.window.tabs.setCurrentWidget(view)
        # the AI-search channel's Test, with no connection set up: its answer under the button
        strip = getattr(getattr(view, "channel_panel", None), "strips", {}).get("ai_search")
        if strip is not None and not strip.result.text():
            strip.button.click()
            await wait_for(lambda: bool(strip.result.text()) and not strip.running, 30, "the channel test")
        await settle(0.3)
        area = strip.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is not None:  # a small window scrolls the column: bring the answer into view
            area.ensureWidgetVisible(strip.result)
        return self.window

    async def graph(self, size: tuple[int, int]) -> Any:
        view = self.window.graph_view
        self.window.tabs.setCurrentWidget(view)
        await wait_for(lambda: view.result is not None, 120, "the graph's layout")
        await wait_for(lambda: not view.progress.isVisible(), 120, "the graph's layout to finish")
        await settle(0.3)
        view.canvas.fit()  # the Fit button: the whole graph at this size
        await settle(0.6)
        return self.window

    async def librarian(self, size: tuple[int, int]) -> Any:
        self.window.tabs.setCurrentWidget(self.window.librarian_view)
        return self.window

    async def first_run(self, size: tuple[int, int]) -> None:
        guide = self.desk.open_guide()
        try:
            self.fit_dialog(guide, size)
            await settle(0.6)
            self.save(guide, "first-run-1", size)
            if hasattr(guide, "skip"):
                guide.skip()  # on to step 2 without applying step 1
            else:
                guide.next()
            await settle(0.6)
            self.save(guide, "first-run-2", size)
        finally:
            guide.reject()
            await settle(0.2)

    async def settings_retrieval(self, size: tuple[int, int]) -> Any:
        dialog = self.desk.open_settings(page="retrieval")
        try:
            self.fit_dialog(dialog, size)
            await settle(0.6)
            self.save(dialog, "settings-retrieval", size)
        finally:
            dialog.reject()
            await settle(0.2)

    async def _writers_content(self) -> None:
        """A chat with suggestions, a notepad and a session note, as the writers leave them."""
        if self._writers_ready:
            return
        from dle_desktop.core.pipeline.chat_input import parse_chat_document

        engine = self.desk.runtime.engine
        bridge = self.desk.bridge
        vault = engine.sources[0].name
        messages = [
            {"name": "Mira" if i % 2 == 0 else "Old Hobb", "is_user": i % 2 == 0, "mes": text}
            for i, text in enumerate(WRITERS_TALK)
        ]
        await bridge.call(
            engine.retrieval.retrieve(parse_chat_document({"chat_id": WRITERS_CHAT, "messages": messages}))
        )

        def fill() -> None:
            store = engine.writers.store()
            store.add_suggestions(WRITERS_CHAT, None, [dict(s) for s in WRITERS_SUGGESTIONS])
            store.add_reply_notes(WRITERS_CHAT, 3, 0, WRITERS_NOTEPAD)
            for n, stamp in enumerate(("18-04-11", "18-31-52")):
                title = f"Old Hobb - 2026-12-02 {stamp}"
                store.record_scribe(WRITERS_CHAT, 5 * (n + 1), WRITERS_SUMMARY, vault, f"Sessions/{title}.md", title)

        await bridge.run(fill)
        self._writers_ready = True

    async def settings_writers(self, size: tuple[int, int]) -> Any:
        from PySide6.QtWidgets import QScrollArea

        dialog = self.desk.open_settings(page="writers")
        try:
            self.fit_dialog(dialog, size)
            await settle(0.6)
            self.save(dialog, "settings-writers", size)
            area = dialog.writers.findChild(QScrollArea)
            area.verticalScrollBar().setValue(area.verticalScrollBar().maximum())  # the AI Notepad group
            await settle(0.3)
            self.save(dialog, "settings-writers-notepad", size)
        finally:
            dialog.reject()
            await settle(0.2)

    async def librarian_suggestions(self, size: tuple[int, int]) -> Any:
        from dle_desktop.ui.librarian.lists import SUGGESTIONS_TAB

        await self._writers_content()
        view = self.window.librarian_view
        self.window.tabs.setCurrentWidget(view)
        view.lists.setCurrentIndex(SUGGESTIONS_TAB)
        await view.suggestions.refresh()
        view.suggestions.list.setCurrentRow(0)
        return self.window

    async def sillytavern_chat_writers(self, size: tuple[int, int]) -> Any:
        await self._writers_content()
        view = self.window.sillytavern_view
        panel = view.chats_panel
        self.window.tabs.setCurrentWidget(view)
        view.inner_tabs.setCurrentWidget(panel)
        await view.idle()
        await panel.refresh()
        panel.select_chat(WRITERS_CHAT)
        await view.idle()
        panel.steering.tabs.setCurrentWidget(panel.steering.writers)
        panel.steering.writers.note_list.setCurrentRow(0)
        return self.window

    # -- running them ------------------------------------------------------------------------
    def shots(self) -> list[tuple[str, Callable[[tuple[int, int]], Awaitable[Any]]]]:
        return [
            ("vault-entry", self.vault_entry),
            ("vault-health", self.vault_health),
            ("vault-test-chat", self.vault_test_chat),
            ("channels", self.channels),
            ("graph", self.graph),
            ("librarian", self.librarian),
            ("first-run", self.first_run),
            ("settings-retrieval", self.settings_retrieval),
            ("settings-writers", self.settings_writers),
            ("librarian-suggestions", self.librarian_suggestions),
            ("sillytavern-chat-writers", self.sillytavern_chat_writers),
        ]

    async def run(self, sizes: list[tuple[int, int]], only: set[str]) -> None:
        view = self.window.vault_view
        await wait_for(lambda: view.model.rowCount() > 0, 120, "the sample vault's entries")
        await wait_for(lambda: view.health.topLevelItemCount() > 0, 60, "the health check")
        for size in sizes:
            self.window.showNormal()
            self.window.resize(*size)
            await settle(0.6)
            if (self.window.width(), self.window.height()) != size:
                print(
                    f"note: the window is {self.window.width()}x{self.window.height()}, not {size[0]}x{size[1]}",
                    file=sys.stderr,
                )
            for name, shoot in self.shots():
                if only and name not in only:
                    continue
                try:
                    widget = await shoot(size)
                    if widget is not None:
                        await settle()
                        self.save(widget, name, size)
                except Exception:  # noqa: BLE001 - one view failing must not cost the others their pictures
                    self.failed.append(f"{size[0]}x{size[1]}-{name}")
                    traceback.print_exc()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and "QT_QPA_PLATFORM" not in os.environ:
        print(
            'No display: run it under Xvfb, e.g. xvfb-run -a -s "-screen 0 1920x1080x24" '
            ".venv/bin/python scripts/screenshots.py --out docs/screenshots",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)

    import qasync
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from dle_desktop.app.context import make_context, session_engine
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.ui.launch import DesktopApp

    qapp = QApplication([sys.argv[0]])
    qapp.setApplicationName("DLE Desktop")
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory(prefix="dle-screenshots-") as data_dir:
        ctx = make_context(data_dir, log_to_stderr=False)
        # serve=False: no port taken, so it runs beside a real DLE Desktop
        runtime = Runtime(ctx, session_engine(ctx), serve=False)
        ui_state = QSettings(str(ctx.paths.config_dir / "ui-state.ini"), QSettings.Format.IniFormat)
        desktop = DesktopApp(qapp, runtime, ui_state, tray_available=False)
        runtime.start()
        desktop.start()
        shooter = Shooter(desktop, args.out, args.full_colour)
        try:
            with loop:
                loop.run_until_complete(shooter.run(args.sizes, args.only))
                desktop.quit()
        finally:
            if not desktop.done.is_set():
                desktop.quit()
    for path in shooter.saved:
        print(f"{path}  {path.stat().st_size // 1024} KiB")
    if shooter.failed:
        print("not taken: " + ", ".join(shooter.failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
