"""The SillyTavern view's Installs panel: the SillyTavern installs found (and the folders the user
chose), the bridge extension installed in each, and Install / Update / Remove for a user or for
all users. Scanning and copying run in a worker thread; the panel shows a busy bar meanwhile."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
)
from shiboken6 import isValid

from dle_desktop.errors import DleError
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, OK_STYLE, WARN_STYLE, note
from dle_desktop.ui.sillytavern.common import confirm, in_thread, st_install
from dle_desktop.ui.sillytavern.installs_table import (
    COLUMNS,
    InstallRow,
    InstallsFound,
    InstallsTable,
    scan,
    status_of,
    where_text,
)

__all__ = ["COLUMNS", "InstallsPanel", "status_of", "where_text"]

log = logging.getLogger(__name__)

ALL_USERS = None  # the combo's data for "all users"; a user's name otherwise


class InstallsPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("SillyTavern installs")
        self.view = view
        #: The home folder searched for installs (None: the user's); tests point it elsewhere.
        self.home: Path | None = None
        self.found: InstallsFound = []
        self._busy = 0
        self._scan: asyncio.Future | None = None
        self._asked = 0  # rescans asked for, and how many of them a finished scan answered
        self._scanned = 0

        self.table = InstallsTable()
        self.table.itemSelectionChanged.connect(self._selected)

        self.choose_button = QPushButton("Choose SillyTavern folder…")
        self.choose_button.setToolTip("Add a SillyTavern install that was not found (the folder holding server.js)")
        self.target = QComboBox()
        self.target.setToolTip(
            "Install for one SillyTavern user (their own extensions folder) or for every user "
            "of this install (public/scripts/extensions/third-party)"
        )
        self.target.setMinimumContentsLength(14)
        self.install_button = QPushButton("Install")
        self.remove_button = QPushButton("Remove")
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setToolTip("Look for SillyTavern installs and the bridge in them again")
        self.busy = QProgressBar(maximum=0, textVisible=False)
        self.busy.setMaximumWidth(90)
        self.busy.setMaximumHeight(12)
        self.busy_label = QLabel()
        self.message = note()
        self.choose_button.clicked.connect(lambda *_: self.choose_folder())
        self.install_button.clicked.connect(lambda *_: self.view.spawn(self.install_selected))
        self.remove_button.clicked.connect(lambda *_: self.view.spawn(self.remove_selected))
        self.rescan_button.clicked.connect(lambda *_: self.view.spawn(self.rescan))
        self.target.currentIndexChanged.connect(lambda *_: self._buttons())

        row = QHBoxLayout()
        row.addWidget(self.choose_button)
        row.addStretch(1)
        row.addWidget(QLabel("For"))
        row.addWidget(self.target)
        row.addWidget(self.install_button)
        row.addWidget(self.remove_button)
        row.addWidget(self.rescan_button)
        status = QHBoxLayout()
        status.addWidget(self.message, 1)
        status.addWidget(self.busy_label)
        status.addWidget(self.busy)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        layout.addLayout(status)
        self._set_busy(0)
        self._buttons()

    # -- reading ----------------------------------------------------------------------------------
    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def _set_busy(self, delta: int, what: str = "") -> None:
        if not isValid(self.busy):  # a scan that ends after the window is gone (quitting)
            return
        self._busy = max(0, self._busy + delta)
        self.busy.setVisible(self._busy > 0)
        self.busy_label.setVisible(self._busy > 0)
        if what:
            self.busy_label.setText(what)
        self._buttons()

    async def rescan(self) -> None:
        """Look again; returns once a scan that started after this call has finished (a scan in
        flight may predate a folder just added)."""
        self._asked += 1
        wanted = self._asked
        while self._scanned < wanted:
            if self._scan is None or self._scan.done():
                self._scan = asyncio.ensure_future(self._do_scan())
            await asyncio.shield(self._scan)

    async def _do_scan(self) -> None:
        covers = self._asked
        folders = self.view.st_folders()
        self._set_busy(+1, "Looking for SillyTavern…")
        try:
            found = await in_thread(scan, folders, self.home)
        except Exception as exc:
            log.exception("looking for SillyTavern installs failed")
            self.say(f"Looking for SillyTavern installs failed: {exc}", ERROR_STYLE)
            return
        finally:
            self._scanned = max(self._scanned, covers)
            self._set_busy(-1)
        self.found = found
        self.fill()
        if not found and not self.message.text():
            self.say("No SillyTavern install found here. Choose its folder (the one holding server.js).", WARN_STYLE)

    def installs(self) -> list:
        return [st for st, _ in self.found]

    def fill(self) -> None:
        self.table.show_installs(self.found, self.view.server_url())
        self._selected()

    def selected(self) -> InstallRow | None:
        return self.table.selected()

    def select(self, root: Path, user: str | None = "", all_users: bool = False) -> bool:
        """Select the row of `root` (and of the copy for `user` / all users, when there is one)."""
        if not self.table.select(root, user, all_users):
            return False
        self._selected()
        return True

    def _selected(self) -> None:
        picked = self.selected()
        self.target.blockSignals(True)
        self.target.clear()
        if picked is not None:
            st, copy = picked
            for user in st.users or (st_install.DEFAULT_USER,):
                self.target.addItem(f"user {user}", user)
            self.target.addItem("all users", ALL_USERS)
            if copy is not None:
                i = self.target.findData(ALL_USERS if copy.scope == st_install.SCOPE_ALL_USERS else copy.user)
                self.target.setCurrentIndex(max(i, 0))
        self.target.blockSignals(False)
        self._buttons()

    def set_target(self, user: str | None) -> None:
        """Choose who Install is for: a user's name, or None for all users."""
        i = self.target.findData(user)
        if i < 0:
            raise ValueError(f"no such target: {user!r}")
        self.target.setCurrentIndex(i)

    def target_copy(self):
        """The selected install's copy of the bridge for the chosen target, if there is one."""
        picked = self.selected()
        if picked is None or self.target.currentIndex() < 0:
            return None
        user = self.target.currentData()
        for st, copies in self.found:
            if st.root == picked[0].root:
                return next(
                    (
                        c
                        for c in copies
                        if (c.scope == st_install.SCOPE_ALL_USERS if user is ALL_USERS else c.user == user)
                    ),
                    None,
                )
        return None

    def _buttons(self) -> None:
        idle = self._busy == 0
        picked = self.selected() is not None and self.target.currentIndex() >= 0
        copy = self.target_copy() if picked else None
        if copy is None:
            self.install_button.setText("Install")
            self.install_button.setToolTip(
                "Copy the bridge extension into SillyTavern, with this server's address and token"
            )
        else:
            _text, tone = status_of(copy, self.view.server_url())
            self.install_button.setText("Reinstall" if tone == "ok" else "Update")
            self.install_button.setToolTip(
                "Replace the installed copy with this version of the bridge, and write "
                "this server's address and token again"
            )
        self.install_button.setEnabled(idle and picked)
        self.remove_button.setEnabled(idle and copy is not None)
        self.rescan_button.setEnabled(idle)
        self.choose_button.setEnabled(idle)
        self.target.setEnabled(idle and picked)

    # -- commands ---------------------------------------------------------------------------------
    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Choose the SillyTavern folder (the one holding server.js)", str(self.home or Path.home())
        )
        if folder:
            self.view.spawn(lambda: self.add_folder(folder))

    async def add_folder(self, folder: str) -> bool:
        """Add a SillyTavern folder to the ones searched (saved); a folder that is not SillyTavern
        is refused with the reason. True when it was added (or was listed already)."""
        self._set_busy(+1, "Reading the folder…")
        try:
            st = await in_thread(st_install.inspect, Path(folder))
        except DleError as exc:
            self.say(f"Not added: {exc}", ERROR_STYLE)
            return False
        except OSError as exc:
            self.say(f"Not added: cannot read {folder}: {exc.strerror or exc}", ERROR_STYLE)
            return False
        finally:
            self._set_busy(-1)
        known = {st_.root for st_ in self.installs()}
        folders = self.view.st_folders()
        if str(st.root) in folders or st.root in known:
            self.say(f"{st.root} is listed already.", OK_STYLE)
        else:
            problem = self.view.save_settings(st_folders=(*folders, str(st.root)))
            if problem:
                self.say(f"Not added: {problem}", ERROR_STYLE)
                return False
            self.say(f"Added SillyTavern {st.version or ''} in {st.root}.".replace("  ", " "), OK_STYLE)
        await self.rescan()
        self.select(st.root)
        return True

    async def install_selected(self) -> bool:
        """Install (or update) the bridge into the selected install for the chosen target."""
        picked = self.selected()
        if picked is None or self.target.currentIndex() < 0:
            self.say("Select a SillyTavern install first.", WARN_STYLE)
            return False
        st = picked[0]
        user = self.target.currentData()
        all_users = user is ALL_USERS
        had = self.target_copy()
        url = self.view.server_url()
        try:
            token = self.view.token()
        except Exception as exc:  # noqa: BLE001 - e.g. a locked keyring
            self.say(f"Not installed: the server token cannot be read: {exc}", ERROR_STYLE)
            return False
        self._set_busy(+1, "Updating…" if had else "Installing…")
        try:
            copy = await in_thread(st_install.install, st, server_url=url, token=token, user=user, all_users=all_users)
        except DleError as exc:
            self.say(f"Not installed: {exc}", ERROR_STYLE)
            return False
        except Exception as exc:
            log.exception("installing the bridge failed")
            self.say(f"Not installed: {exc}", ERROR_STYLE)
            return False
        finally:
            self._set_busy(-1)
        origins = self.view.allowed_origins()
        wanted = tuple(dict.fromkeys((*origins, *st.origins())))
        problem = self.view.save_settings(server_allowed_origins=wanted) if wanted != origins else None
        done = f"Updated to {copy.version}" if had else "Installed"
        text = f"{done} {'for all users' if all_users else f'for {user}'}. Reload SillyTavern's page (F5) to load it."
        if problem:
            self.say(f"{text} But SillyTavern's address could not be allowed: {problem}", WARN_STYLE)
        elif not self.view.server_running():
            self.say(f"{text} The server is not running now, so the bridge cannot connect until it is.", WARN_STYLE)
        else:
            self.say(text, OK_STYLE)
        self.view.access_panel.fill()
        await self.rescan()
        self.select(st.root, user, all_users)
        return True

    async def remove_selected(self, ask: bool = True) -> bool:
        picked = self.selected()
        copy = self.target_copy()
        if picked is None or copy is None:
            self.say("The bridge is not installed there.", WARN_STYLE)
            return False
        st = picked[0]
        where = where_text(copy)
        if ask and not confirm(
            self,
            "Remove the bridge",
            f"Remove the DLE Desktop bridge from {st.root} ({where})?\n\nSillyTavern stops "
            "using DLE Desktop after its page is reloaded; its own data is not touched.",
            "Remove",
        ):
            return False
        all_users = copy.scope == st_install.SCOPE_ALL_USERS
        self._set_busy(+1, "Removing…")
        try:
            await in_thread(st_install.remove, st, user=copy.user, all_users=all_users)
        except DleError as exc:
            self.say(f"Not removed: {exc}", ERROR_STYLE)
            return False
        finally:
            self._set_busy(-1)
        self.say(f"Removed ({where}). Reload SillyTavern's page (F5) to unload it.", OK_STYLE)
        await self.rescan()
        self.select(st.root)
        return True

    def stop(self) -> None:
        if self._scan is not None:
            self._scan.cancel()
