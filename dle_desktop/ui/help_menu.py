"""Help menu entries for bug reports: "Copy diagnostics…" writes the diagnostics zip and says
where (its path goes to the clipboard, the folder opens on request); "Open log folder" shows the
rotating log files in the file manager; "Getting started…" reopens the first-run guide."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMessageBox

from dle_desktop.desktop import diagnostics

log = logging.getLogger(__name__)


def output_folder() -> Path:
    """Where the zip goes: Downloads, where a browser's file picker looks first; else home."""
    downloads = Path.home() / "Downloads"
    return downloads if downloads.is_dir() else Path.home()


def open_folder(path: Path) -> bool:
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


class HelpActions:
    def __init__(self, window, bridge) -> None:
        self.window = window
        self.bridge = bridge
        self.last_box: QMessageBox | None = None
        self.diagnostics_action = QAction("Copy diagnostics…", window)
        self.diagnostics_action.setStatusTip(
            "Write a zip for a bug report: versions, settings without "
            "secrets, the last log lines, index stats, recent errors"
        )
        self.diagnostics_action.triggered.connect(lambda *_: asyncio.ensure_future(self.write_diagnostics()))
        self.guide_action = QAction("Getting started…", window)
        self.guide_action.setStatusTip("The first-run guide: your vault, the embedding model, SillyTavern")
        self.guide_action.triggered.connect(lambda *_: window.guideRequested.emit())
        self.log_folder_action = QAction("Open log folder", window)
        self.log_folder_action.setStatusTip("Show the log files in the file manager")
        self.log_folder_action.triggered.connect(lambda *_: self.open_log_folder())

    def add_to(self, menu) -> None:
        menu.addAction(self.diagnostics_action)
        menu.addAction(self.log_folder_action)
        menu.addSeparator()
        menu.addAction(self.guide_action)

    @property
    def logs_dir(self) -> Path:
        return self.bridge.paths.logs_dir

    def open_log_folder(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        if not open_folder(self.logs_dir):
            QMessageBox.information(self.window, "Log folder", f"The log files are in\n{self.logs_dir}")

    async def write_diagnostics(self, folder: Path | None = None) -> Path | None:
        self.diagnostics_action.setEnabled(False)
        try:
            runtime = self.bridge.runtime
            try:
                status = await self.bridge.status()
            except Exception as exc:  # noqa: BLE001 - a stuck engine is one more thing to report
                status = {"problem": f"the engine did not answer: {type(exc).__name__}: {exc}"}
            server = getattr(runtime, "server", None)
            live = {
                "server": getattr(server, "url", None),
                "server_error": runtime.server_error,
                "olra_running": bool(runtime.olra and runtime.olra.running),
                "olra_error": getattr(runtime.olra, "error", None),
                "tray": getattr(self.window, "tray_available", None),
            }
            ctx = runtime.ctx
            out = (folder or output_folder()) / diagnostics.default_name()
            path = await asyncio.to_thread(self._write, ctx, ctx.secrets, status, live, out)
        except Exception as exc:
            log.exception("writing diagnostics failed")
            self._show(
                QMessageBox(
                    QMessageBox.Icon.Warning,
                    "Diagnostics",
                    f"The diagnostics could not be written: {exc}",
                    QMessageBox.StandardButton.Close,
                    self.window,
                )
            )
            return None
        finally:
            self.diagnostics_action.setEnabled(True)
        self._tell(path)
        return path

    @staticmethod
    def _write(ctx, secrets, status, live, out: Path) -> Path:
        started = time.monotonic()
        report = diagnostics.collect(
            ctx.paths, ctx.settings, secrets, status=status, runtime=live, settings_problem=ctx.store.problem
        )
        path = diagnostics.write_zip(report, out)
        log.info("diagnostics written to %s in %.2f s", path, time.monotonic() - started)
        return path

    def _tell(self, path: Path) -> None:
        QGuiApplication.clipboard().setText(str(path))
        box = QMessageBox(
            QMessageBox.Icon.Information,
            "Diagnostics",
            f"Diagnostics written to<br><b>{path}</b><br><br>The path is on the clipboard: attach "
            "the file to your bug report. API keys, tokens and passwords were replaced by ***; "
            "vault, note and chat names are kept, so look it over first.",
            QMessageBox.StandardButton.Close,
            self.window,
        )
        box.setObjectName("diagnostics-written")
        opener = box.addButton("Open folder", QMessageBox.ButtonRole.ActionRole)
        opener.clicked.connect(lambda: open_folder(path.parent))
        self._show(box)

    def _show(self, box: QMessageBox) -> None:
        # Window-modal, not exec(): the engine's events keep flowing while it is open.
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.last_box = box
        box.open()
