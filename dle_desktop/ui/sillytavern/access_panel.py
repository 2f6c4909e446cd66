"""The SillyTavern view's Access panel: which SillyTavern pages may call DLE Desktop from the
browser (`server_allowed_origins`, saved at once) and the server token they must send, with Show,
Copy and Rotate (the new token is written into every installed copy of the bridge)."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
)
from shiboken6 import isValid

from dle_desktop.core.hosts import parse_origin
from dle_desktop.errors import DleError
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.sillytavern.common import confirm, copy_text, in_thread, plural, st_install

log = logging.getLogger(__name__)

MASK = "•" * 24


class AccessPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Access")
        self.view = view
        self._shown: tuple[str, ...] | None = None
        self.origins = QListWidget()
        self.origins.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.origins.setMinimumHeight(54)
        self.origins.setMaximumHeight(84)
        self.origins.setToolTip(
            "Browser pages at these addresses may call DLE Desktop (with the token); every other page is refused"
        )
        self.new_origin = QLineEdit(placeholderText="http://127.0.0.1:8000")
        self.new_origin.setToolTip("The address SillyTavern's page has in your browser, without a path")
        self.add_button = QPushButton("Add")
        self.remove_button = QPushButton("Remove")
        self.add_button.clicked.connect(lambda *_: self.add_origin())
        self.new_origin.returnPressed.connect(lambda: self.add_origin())
        self.remove_button.clicked.connect(lambda *_: self.remove_origins())
        self.origins.itemSelectionChanged.connect(
            lambda: self.remove_button.setEnabled(bool(self.origins.selectedItems()))
        )
        self.remove_button.setEnabled(False)

        self.token_field = QLineEdit()
        self.token_field.setReadOnly(True)
        self.token_field.setText(MASK)
        self.token_field.setToolTip("SillyTavern's bridge sends this with every request; Install writes it for you")
        self.show_button = QPushButton("Show")
        self.show_button.setCheckable(True)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip(
            "Copy the token (e.g. as the API key of a backend SillyTavern calls from another machine)"
        )
        self.rotate_button = QPushButton("Rotate token…")
        self.rotate_button.setToolTip(
            "Make a new token: the old one stops working at once; installed copies of the bridge get the new one"
        )
        self.show_button.toggled.connect(self._show_token)
        self.copy_button.clicked.connect(lambda *_: self.copy_token())
        self.rotate_button.clicked.connect(lambda *_: self.view.spawn(self.rotate))
        self.message = note()

        add_row = QHBoxLayout()
        add_row.addWidget(self.new_origin, 1)
        add_row.addWidget(self.add_button)
        add_row.addWidget(self.remove_button)
        token_row = QHBoxLayout()
        token_row.addWidget(QLabel("Server token"))
        token_row.addWidget(self.token_field, 1)
        token_row.addWidget(self.show_button)
        token_row.addWidget(self.copy_button)
        token_row.addWidget(self.rotate_button)
        layout = QVBoxLayout(self)
        layout.addWidget(
            note("SillyTavern pages allowed to call DLE Desktop (Install adds the install's own):", MUTED_STYLE)
        )
        layout.addWidget(self.origins)
        layout.addLayout(add_row)
        layout.addLayout(token_row)
        layout.addWidget(self.message)
        self.fill()

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    # -- origins ----------------------------------------------------------------------------------
    def fill(self) -> None:
        """Show the saved origins (again, when they changed elsewhere)."""
        origins = self.view.allowed_origins()
        if origins == self._shown:
            return
        self._shown = origins
        self.origins.clear()
        self.origins.addItems(list(origins))
        if not origins:
            self.origins.addItem("(none: no SillyTavern page may call DLE Desktop from the browser)")
            self.origins.item(0).setFlags(Qt.ItemFlag.NoItemFlags)

    def add_origin(self, text: str | None = None) -> bool:
        value = (self.new_origin.text() if text is None else text).strip()
        if not value:
            self.say("Type an address like http://127.0.0.1:8000 first.", WARN_STYLE)
            return False
        try:
            origin = parse_origin(value)
        except ValueError as exc:
            self.say(f"Not added: {exc}", ERROR_STYLE)
            return False
        current = self.view.allowed_origins()
        if origin in current:
            self.say(f"{origin} is allowed already.", OK_STYLE)
            self.new_origin.clear()
            return True
        problem = self.view.save_settings(server_allowed_origins=(*current, origin))
        if problem:
            self.say(f"Not added: {problem}", ERROR_STYLE)
            return False
        self.new_origin.clear()
        self.fill()
        self.say(f"Allowed {origin}.", OK_STYLE)
        return True

    def remove_origins(self, origins: list[str] | None = None) -> bool:
        current = self.view.allowed_origins()
        chosen = [i.text() for i in self.origins.selectedItems()] if origins is None else list(origins)
        chosen = [o for o in chosen if o in current]
        if not chosen:
            return False
        problem = self.view.save_settings(server_allowed_origins=tuple(o for o in current if o not in chosen))
        if problem:
            self.say(f"Not removed: {problem}", ERROR_STYLE)
            return False
        self.fill()
        self.say(f"Removed {', '.join(chosen)}: pages there are refused from now on.", OK_STYLE)
        return True

    # -- the token --------------------------------------------------------------------------------
    def _show_token(self, shown: bool) -> None:
        self.show_button.setText("Hide" if shown else "Show")
        if not shown:
            self.token_field.setText(MASK)
            return
        try:
            self.token_field.setText(self.view.token())
        except Exception as exc:  # noqa: BLE001 - e.g. a locked keyring
            self.show_button.setChecked(False)
            self.say(f"The token cannot be read: {exc}", ERROR_STYLE)

    def copy_token(self) -> None:
        try:
            copy_text(self.view.token())
        except Exception as exc:  # noqa: BLE001 - whatever the secret store raises is shown, never a crash
            self.say(f"The token cannot be read: {exc}", ERROR_STYLE)
            return
        self.say("Token copied.", OK_STYLE)

    async def rotate(self, ask: bool = True) -> int | None:
        """A new token for the server, written into every installed copy; how many copies got it."""
        if ask and not confirm(
            self,
            "Rotate the server token",
            "Make a new server token? The old one stops working at once.\n\nDLE Desktop writes "
            "the new one into every installed copy of the bridge; programs you gave the token "
            "to yourself need the new one.",
            "Rotate",
        ):
            return None
        try:
            token = await in_thread(self.view.rotate_token)
        except Exception as exc:
            log.exception("rotating the server token failed")
            self.say(f"The token was not rotated: {exc}", ERROR_STYLE)
            return None
        if self.show_button.isChecked():
            self.token_field.setText(token)
        installs = self.view.installs_panel.installs()
        self.rotate_button.setEnabled(False)
        try:
            count = await in_thread(st_install.rewrite_token, installs, token)
        except DleError as exc:
            self.say(f"New token in use, but: {exc}", ERROR_STYLE)
            return None
        finally:
            if isValid(self.rotate_button):
                self.rotate_button.setEnabled(True)
        if count:
            self.say(
                f"New token in use; {plural(count, 'installed copy', 'installed copies')} of the bridge "
                "updated. Open SillyTavern pages pick it up on their next request or after a reload (F5).",
                OK_STYLE,
            )
        else:
            self.say("New token in use. No installed copy of the bridge needed it.", OK_STYLE)
        self.view.spawn(self.view.installs_panel.rescan)
        return count
