"""Step by step: pointing DeepLore Enhanced's vault settings at the Obsidian REST emulation, with
the exact values to type (each with a Copy button). Part of `st_olra_panel.OlraPanel`, which it
reads the live values from (the runner's real port, the key, the folders served)."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QVBoxLayout

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.sillytavern.common import copy_text

KEY_MASK = "•" * 24


class StepsPanel(QGroupBox):
    def __init__(self, panel) -> None:
        super().__init__("Point DeepLore Enhanced at DLE Desktop")
        self.panel = panel
        self.values: dict[str, QLineEdit] = {}
        self.copy_buttons: dict[str, QPushButton] = {}
        self.step_off = note("", WARN_STYLE)
        self.step_ports = note()
        self.step_open = note()
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        grid.setColumnStretch(3, 1)  # the values keep a readable width
        for row, (name, label, tip) in enumerate(
            (
                ("host", "Host", "DLE's vault Host"),
                ("port", "Port", "DLE's vault Port"),
                ("key", "API Key", "DLE's vault API Key"),
            )
        ):
            field = QLineEdit()
            field.setReadOnly(True)
            field.setMinimumWidth(field.fontMetrics().horizontalAdvance("0" * 64) + 16)
            field.setToolTip("Copy puts the key itself on the clipboard" if name == "key" else "")
            button = QPushButton("Copy")
            button.setToolTip(f"Copy the value for {tip}")
            button.clicked.connect(lambda *_, n=name: self.copy(n))
            self.values[name], self.copy_buttons[name] = field, button
            grid.addWidget(QLabel(label), row, 0)
            grid.addWidget(field, row, 1)
            grid.addWidget(button, row, 2)
        self.https_label = QLabel()
        self.https_label.setWordWrap(True)
        grid.addWidget(QLabel("HTTPS"), 3, 0)
        grid.addWidget(self.https_label, 3, 1, 1, 3)
        self.values["host"].setText("127.0.0.1")
        self.values["key"].setText(KEY_MASK)
        self.cert_note = note("", WARN_STYLE)
        self.step_done = note()
        self.message = note()
        layout = QVBoxLayout(self)
        layout.addWidget(self.step_off)
        layout.addWidget(self.step_ports)
        layout.addWidget(self.step_open)
        layout.addLayout(grid)
        layout.addWidget(self.cert_note)
        layout.addWidget(self.step_done)
        layout.addWidget(self.message)
        self.message.hide()
        self._shown: tuple | None = None

    def value(self, name: str) -> str:
        """What the Copy button of `name` (host, port, key) puts on the clipboard."""
        if name == "key":
            return self.panel.key()
        return self.values[name].text()

    def copy(self, name: str) -> bool:
        try:
            text = self.value(name)
        except Exception as exc:  # noqa: BLE001 - e.g. a locked keyring
            self._say(f"The key cannot be read: {exc}", ERROR_STYLE)
            return False
        copy_text(text)
        self._say("API key copied." if name == "key" else f"Copied {text}", OK_STYLE)
        return True

    def _say(self, text: str, style: str) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)
        self.message.show()

    def fill(self) -> None:
        """The live values: the runner's real port, HTTPS or not, the folders DLE's notes go to."""
        c = self.panel.connection()
        enabled = self.panel.view.current_settings().olra_enabled
        folders = tuple(self.panel.served_folders())
        shown = (c["port"], c["https"], c["http_port"], enabled, folders)
        if shown == self._shown:
            return
        self._shown = shown
        step = 1
        self.step_off.setVisible(not enabled)
        if not enabled:
            self.step_off.setText(f"{step}. Tick “Serve vaults to DeepLore Enhanced” above.")
            step += 1
        self.step_ports.setText(
            f"{step}. Close Obsidian, or change one of the two ports: Obsidian's Local REST API "
            f"and DLE Desktop both use 27123 by default (this one: {c['http_port']}"
            + (f" and {c['port']} for HTTPS" if c["https"] else "")
            + ")."
        )
        self.step_open.setText(
            f"{step + 1}. In SillyTavern, open <b>Extensions → DeepLore Enhanced</b> and its "
            "vault settings. Add a vault (or edit the one that pointed at Obsidian) and enter:"
        )
        self.values["port"].setText(str(c["port"]))
        if c["https"]:
            self.https_label.setText("<b>ticked</b> (DLE then suggests 27124; enter the port above)")
            self.cert_note.setText(
                "With HTTPS the browser must trust DLE Desktop's certificate: Export certificate… "
                "above and make your operating system trust it (accepting it in the browser is not "
                f"enough). Plain HTTP avoids this: untick HTTPS here and in DLE, port {c['http_port']}."
            )
        else:
            self.https_label.setText("<b>unticked</b> (plain HTTP: nothing to trust, enough on this computer)")
        self.cert_note.setVisible(bool(c["https"]))
        where = ", ".join(f"<b>{html.escape(f)}</b>" for f in folders) if folders else "the vault folder"
        self.step_done.setText(
            f"{step + 2}. Save and run DLE's connection test, then let it build its index: it reads the notes "
            f"straight from the folder.<br>The notes DLE writes (Session Scribe, Auto Lorebook, Librarian, imports) "
            f"land in {where} and appear in DLE Desktop's Vault view at once."
        )
