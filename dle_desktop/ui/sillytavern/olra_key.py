"""The Obsidian REST emulation's API key in the SillyTavern view (part of `st_olra_panel`): masked,
Show, Copy, and Rotate (off the GUI thread; the old key is refused from the next request on, and
DeepLore Enhanced must be given the new one)."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout
from shiboken6 import isValid

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, OK_STYLE, note
from dle_desktop.ui.sillytavern.common import confirm, copy_text, in_thread

log = logging.getLogger(__name__)

MASK = "•" * 24


class KeyPanel(QGroupBox):
    def __init__(self, panel) -> None:
        super().__init__("API key")
        self.panel = panel
        self.key_field = QLineEdit(MASK)
        self.key_field.setReadOnly(True)
        self.key_field.setToolTip("DeepLore Enhanced sends this with every request (its vault's API Key)")
        self.key_field.setMinimumWidth(self.key_field.fontMetrics().horizontalAdvance("0" * 64) + 16)
        self.show_button = QPushButton("Show")
        self.show_button.setCheckable(True)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the key, to paste into DLE's vault settings (API Key)")
        self.rotate_button = QPushButton("Rotate key…")
        self.rotate_button.setToolTip("Make a new key: the old one is refused at once; DLE needs the new one")
        self.message = note()
        self.show_button.toggled.connect(self._show_key)
        self.copy_button.clicked.connect(lambda *_: self.copy_key())
        self.rotate_button.clicked.connect(lambda *_: self.panel.view.spawn(self.rotate))
        row = QHBoxLayout()
        row.addWidget(QLabel("API key"))
        row.addWidget(self.key_field)
        row.addWidget(self.show_button)
        row.addWidget(self.copy_button)
        row.addWidget(self.rotate_button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.message)
        self.message.hide()

    def say(self, text: str, style: str) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)
        self.message.show()

    def _show_key(self, shown: bool) -> None:
        self.show_button.setText("Hide" if shown else "Show")
        if not shown:
            self.key_field.setText(MASK)
            return
        try:
            self.key_field.setText(self.panel.key())
        except Exception as exc:  # noqa: BLE001 - e.g. a locked keyring
            self.show_button.setChecked(False)
            self.say(f"The key cannot be read: {exc}", ERROR_STYLE)

    def copy_key(self) -> bool:
        try:
            copy_text(self.panel.key())
        except Exception as exc:  # noqa: BLE001 - whatever the secret store raises is shown, never a crash
            self.say(f"The key cannot be read: {exc}", ERROR_STYLE)
            return False
        self.say("API key copied: paste it into DLE's vault settings (API Key).", OK_STYLE)
        return True

    async def rotate(self, ask: bool = True) -> str | None:
        """A new key, in use at once by the running emulation; returns it (None: not rotated)."""
        if ask and not confirm(
            self,
            "Rotate the API key",
            "Make a new API key for the Obsidian REST emulation? The old one is refused at "
            "once.\n\nDeepLore Enhanced then needs the new key in its vault settings.",
            "Rotate",
        ):
            return None
        self.rotate_button.setEnabled(False)
        try:
            key = await in_thread(self.panel.runtime.rotate_olra_key)
        except Exception as exc:
            log.exception("rotating the Obsidian REST emulation's key failed")
            if isValid(self):
                self.say(f"The key was not rotated: {exc}", ERROR_STYLE)
            return None
        finally:
            if isValid(self.rotate_button):
                self.rotate_button.setEnabled(True)
        if not isValid(self):
            return key
        if self.show_button.isChecked():
            self.key_field.setText(key)
        self.say(
            "New key in use; the old one is refused from now on. DeepLore Enhanced needs the new key: Copy it "
            "and paste it as the API Key of its vault (then run DLE's connection test).",
            OK_STYLE,
        )
        return key
