"""The SillyTavern view's "DeepLore Enhanced (Obsidian REST)" tab: serving the folder vaults with
the Obsidian Local REST API subset DLE uses (`dle_desktop/olra`), so an unmodified DeepLore
Enhanced reads and writes them without Obsidian.

On/off, ports, HTTPS (and its certificate), which vault is served: saved through the view's
`save_settings` (the app's `apply_settings` restarts the emulation alone). The status is live while
the tab is shown; the API key can be shown, copied and rotated (`st_olra_key`); `st_olra_steps`
says what to type into DLE's vault settings."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.sillytavern.common import age_text, plural
from dle_desktop.ui.sillytavern.olra_key import KeyPanel
from dle_desktop.ui.sillytavern.olra_steps import StepsPanel

MERGED = "All enabled folder vaults (merged)"
CERT_FILE_NAME = "obsidian-local-rest-api.crt"


def _port_box(tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(1, 65535)
    box.setToolTip(tip)
    box.setKeyboardTracking(False)  # saved when typing is done (Enter, focus out, arrows), not per digit
    return box


class OlraPanel(QWidget):
    def __init__(self, view) -> None:
        super().__init__()
        self.view = view
        self._requests_seen: int | None = None
        self._last_request: float | None = None  # monotonic time the request count was seen to move
        self._filling = False

        # -- the server ----------------------------------------------------------------------
        self.enabled = QCheckBox("Serve vaults to DeepLore Enhanced (Obsidian REST emulation)")
        self.enabled.setToolTip(
            "DeepLore Enhanced in SillyTavern reads and writes the folder vaults here as if "
            "they were an Obsidian vault with the Local REST API plugin (Obsidian can stay closed)"
        )
        self.port = _port_box("The plain HTTP port DeepLore Enhanced connects to (DLE's default: 27123)")
        self.https = QCheckBox("Also serve HTTPS")
        self.https.setToolTip(
            "With a self-signed certificate DLE Desktop makes; the browser accepts it only once "
            "the operating system trusts it. Plain HTTP is simpler and enough on this computer."
        )
        self.https_port = _port_box("The HTTPS port (DLE's default when its HTTPS box is ticked: 27124)")
        self.export_button = QPushButton("Export certificate…")
        self.export_button.setToolTip("Save the HTTPS certificate, to make the operating system trust it")
        self.vault = QComboBox()
        self.vault.setToolTip(
            "The folder vault DLE sees; merged: every enabled folder vault as one (a write goes "
            "to the vault that has the file, else the primary one)"
        )
        self.vault.setMinimumContentsLength(24)
        self.vault.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.status = note()
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.stats = note("", MUTED_STYLE)
        self.retry_button = QPushButton("Retry")
        self.retry_button.setToolTip("Start the emulation again (after closing the program that held the port)")
        self.message = note()

        self.enabled.toggled.connect(lambda on: self._save(olra_enabled=on))
        self.port.valueChanged.connect(lambda v: self._save(olra_port=v))
        self.https.toggled.connect(lambda on: self._save(olra_https=on))
        self.https_port.valueChanged.connect(lambda v: self._save(olra_https_port=v))
        self.vault.activated.connect(lambda i: self._save(olra_vault=self.vault.itemData(i) or ""))
        self.export_button.clicked.connect(lambda *_: self.export_certificate())
        self.retry_button.clicked.connect(lambda *_: self.retry())

        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.addWidget(QLabel("HTTP port"), 0, 0)
        grid.addWidget(self.port, 0, 1)
        grid.addWidget(QLabel("Vault served"), 0, 3)
        grid.addWidget(self.vault, 0, 4)
        grid.addWidget(self.https, 1, 0)
        grid.addWidget(self.https_port, 1, 1)
        grid.addWidget(self.export_button, 1, 2)
        grid.setColumnMinimumWidth(2, 12)
        grid.setColumnStretch(5, 1)  # the fields keep their size; the room is left empty on the right
        status_row = QHBoxLayout()
        status_row.addWidget(self.status, 1)
        status_row.addWidget(self.retry_button)
        server = QGroupBox("Obsidian REST emulation")
        box = QVBoxLayout(server)
        box.addWidget(self.enabled)
        box.addLayout(grid)
        box.addLayout(status_row)
        box.addWidget(self.stats)
        box.addWidget(self.message)
        self.message.hide()

        self.key_box = KeyPanel(self)
        self.steps = StepsPanel(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(server)
        layout.addWidget(self.key_box)
        layout.addWidget(self.steps)
        layout.addStretch(1)
        self.fill()
        self.refresh()

    # -- what the panel reads ---------------------------------------------------------------
    @property
    def runtime(self):
        return self.view.bridge.runtime

    def runner(self):
        """The emulation's runner (None while it is off)."""
        return getattr(self.runtime, "olra", None)

    def key(self) -> str:
        return self.runtime.olra_key()

    def connection(self) -> dict:
        """What DLE must be given: the runner's own values, or the saved ones while it is off."""
        runner = self.runner()
        if runner is not None and runner.running:
            return runner.connection_values()
        s = self.view.current_settings()
        return {
            "host": "127.0.0.1",
            "port": s.olra_https_port if s.olra_https else s.olra_port,
            "https": s.olra_https,
            "http_port": s.olra_port,
            "https_port": s.olra_https_port if s.olra_https else None,
        }

    def vault_choices(self) -> list[tuple[str, str]]:
        """(label, olra_vault) for the combo: merged first, then the folder vaults open or configured."""
        names = self.view.bridge.folder_vault_names()
        for cfg in self.view.current_settings().vaults:
            if cfg.kind == "folder" and cfg.name not in names:
                names.append(cfg.name)
        return [(MERGED, ""), *((name, name) for name in names)]

    def served_folders(self) -> list[str]:
        runner = self.runner()
        if runner is None or not runner.running:
            return []
        return [str(v.root) for v in runner.served().vaults]

    # -- settings -----------------------------------------------------------------------------
    def fill(self) -> None:
        """Show the saved settings (again, when they changed elsewhere)."""
        s = self.view.current_settings()
        self._filling = True
        try:
            for widget, value in ((self.enabled, s.olra_enabled), (self.https, s.olra_https)):
                if widget.isChecked() != value:
                    widget.setChecked(value)
            for spin, number in ((self.port, s.olra_port), (self.https_port, s.olra_https_port)):
                if spin.value() != number:
                    spin.setValue(number)
            choices = self.vault_choices()
            if s.olra_vault and s.olra_vault not in [v for _, v in choices]:
                choices.append((f"{s.olra_vault} (not open)", s.olra_vault))
            if [(self.vault.itemText(i), self.vault.itemData(i)) for i in range(self.vault.count())] != choices:
                self.vault.clear()
                for label, value in choices:
                    self.vault.addItem(label, value)
            self.vault.setCurrentIndex(max(0, self.vault.findData(s.olra_vault)))
        finally:
            self._filling = False
        self.https_port.setEnabled(s.olra_https)
        self.steps.fill()

    def _save(self, **changes) -> None:
        if self._filling:
            return
        problem = self.view.save_settings(**changes)
        if problem:
            self.say(f"Not saved: {problem}", ERROR_STYLE)
            self.fill()
            return
        self.message.hide()
        self.https_port.setEnabled(self.view.current_settings().olra_https)
        self.status.setText("Applying…")
        self.status.setStyleSheet(MUTED_STYLE)
        self.steps.fill()

    def retry(self) -> None:
        """Apply the same settings again: the app restarts an emulation that should run and does not."""
        self.status.setText("Starting…")
        self.view.applyRequested.emit(self.view.current_settings(), {})

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)
        self.message.show()

    # -- status -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """The live status line (and the steps' port, which is the runner's real one)."""
        runner = self.runner()
        enabled = self.view.current_settings().olra_enabled
        self.retry_button.setVisible(enabled and (runner is None or not runner.running))
        self.stats.setVisible(False)
        if runner is None:
            if enabled:
                self._status("Not running (starting, or the app serves nothing in this mode).", WARN_STYLE)
            else:
                self._status("Off: DeepLore Enhanced cannot reach these vaults.", MUTED_STYLE)
        elif not runner.running:
            self._status(f"Not running: {runner.error or 'it stopped'}.", ERROR_STYLE)
        else:
            where = f"<b>{runner.url}</b>" + (f" and <b>{runner.https_url}</b>" if runner.https_url else "")
            problem = runner.error
            if problem:
                self._status(f"Running at {where}, but serving nothing: {problem}.", WARN_STYLE, rich=True)
            else:
                served = runner.served()
                what = (
                    f"vault “{served.label}”"
                    if len(served.vaults) == 1
                    else f"{plural(len(served.vaults), 'folder vault')}, merged"
                )
                extra = f" (read-only: {served.read_only})" if served.read_only else ""
                self._status(f"Running at {where} · serving {what}{extra}", OK_STYLE, rich=True)
            self._show_stats(runner)
        self.steps.fill()

    def _status(self, text: str, style: str, rich: bool = False) -> None:
        if not rich:
            text = text.replace("&", "&amp;").replace("<", "&lt;")
        self.status.setText(text)
        self.status.setStyleSheet(style)

    def _show_stats(self, runner) -> None:
        stats = getattr(getattr(runner, "app", None), "stats", None)
        if not stats:
            return
        count = int(stats.get("requests", 0))
        now = time.monotonic()
        if self._requests_seen is not None and count != self._requests_seen:
            self._last_request = now
        elif self._requests_seen is None and count:
            self._last_request = None  # served before this panel looked: when is not known
        self._requests_seen = count
        if not count:
            self.stats.setText("No request yet: DeepLore Enhanced has not connected.")
        else:
            parts = [
                f"{plural(count, 'request')} served",
                f"{plural(stats.get('listings', 0), 'listing')}, {plural(stats.get('reads', 0), 'read')}, "
                f"{plural(stats.get('writes', 0), 'write')}",
            ]
            if stats.get("refused"):
                parts.append(f"{stats['refused']:,} refused (wrong key, missing note…)")
            if self._last_request is not None:
                parts.append(f"last request {age_text(now - self._last_request)} ago")
            self.stats.setText(" · ".join(parts))
        self.stats.setVisible(True)

    def emulation_restarted(self) -> None:
        """The app restarted (or stopped) the emulation: a new runner, new counters."""
        self._requests_seen = None
        self._last_request = None
        self.fill()
        self.refresh()

    # -- certificate ----------------------------------------------------------------------------
    def export_certificate(self, target: str | None = None) -> Path | None:
        source = self.runtime.olra_cert_path()
        if source is None:
            self.say(
                "There is no certificate yet: tick “Also serve HTTPS”; it is made when the HTTPS port starts.",
                WARN_STYLE,
            )
            return None
        if target is None:
            target, _ = QFileDialog.getSaveFileName(
                self, "Export the HTTPS certificate", str(Path.home() / CERT_FILE_NAME), "Certificates (*.crt *.pem)"
            )
            if not target:
                return None
        try:
            shutil.copyfile(source, target)
        except OSError as exc:
            self.say(f"The certificate was not exported: {exc.strerror or exc}", ERROR_STYLE)
            return None
        self.say(
            f"Certificate saved to {target}. Make the operating system trust it (as a trusted root "
            "certificate); accepting it in the browser is not enough.",
            OK_STYLE,
        )
        return Path(target)
