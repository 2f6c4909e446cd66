"""The Installs panel's table: one row per SillyTavern install and copy of the bridge in it (an
install without one has a single "not installed" row), with what each copy's status is."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from dle_desktop.errors import DleError
from dle_desktop.ui.sillytavern.common import st_install
from dle_desktop.ui.widgets.cut_text import MiddleCutTextTips

log = logging.getLogger(__name__)

COLUMNS = ("Folder", "SillyTavern", "Where", "Bridge", "Status")
_COLORS = {"ok": "#2e7d32", "warn": "#a15c00", "error": "#b3261e"}

#: Each install found, with the copies of the bridge in it.
InstallsFound = list[tuple[st_install.StInstall, list[st_install.InstalledBridge]]]
#: A table row: an install and the copy of the bridge on that row (None: the install has none).
InstallRow = tuple[st_install.StInstall, st_install.InstalledBridge | None]


def where_text(copy) -> str:
    if copy is None:
        return "—"
    return "all users" if copy.scope == st_install.SCOPE_ALL_USERS else f"user {copy.user}"


def status_of(copy, server_url: str | None) -> tuple[str, str]:
    """(what the Status column says, ok|warn|error|'') for an installed copy (None: not installed)."""
    if copy is None:
        return "", ""
    try:
        bundled = st_install.bundled_version()
    except DleError:
        bundled = None
    if bundled is not None and copy.version != bundled:
        return f"update available: {copy.version or '?'} → {bundled}", "warn"
    if not copy.has_token:
        return "no token: Update writes one", "error"
    if server_url and copy.server_url and copy.server_url.rstrip("/") != server_url:
        return f"points at {copy.server_url}: Update to use {server_url}", "warn"
    return "up to date", "ok"


def scan(folders: Iterable[Path | str], home: Path | None) -> InstallsFound:
    """Every install (the chosen folders first) with the copies of the bridge in it (worker thread)."""
    out: InstallsFound = []
    for st in st_install.find_installs(tuple(folders), home=home):
        try:
            copies = st_install.installed(st)
        except OSError:
            log.warning("cannot look into %s", st.root, exc_info=True)
            copies = []
        out.append((st, copies))
    return out


class InstallsTable(QTableWidget):
    def __init__(self) -> None:
        super().__init__(0, len(COLUMNS))
        self.rows: list[InstallRow] = []
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        self.setWordWrap(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in (1, 2, 3):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Interactive)
        self.setColumnWidth(4, 190)
        header.setStretchLastSection(False)
        MiddleCutTextTips(self, middle_columns=(0,))
        self.setMinimumHeight(110)

    def show_installs(self, found: InstallsFound, server_url: str | None) -> None:
        """Fill the rows; the selected install (and copy) stays selected, else the first row is."""
        keep = self.selected()
        keep_key = (keep[0].root, keep[1].path if keep[1] else None) if keep else None
        no_copy: list[st_install.InstalledBridge | None] = [None]
        self.rows = [(st, c) for st, copies in found for c in (copies or no_copy)]
        self.setRowCount(len(self.rows))
        for r, (st, copy) in enumerate(self.rows):
            text, tone = status_of(copy, server_url)
            cells = (
                str(st.root),
                st.version or "?",
                where_text(copy),
                (copy.version or "?") if copy else "not installed",
                text,
            )
            for c, value in enumerate(cells):
                item = QTableWidgetItem(value)
                if c == 4 and tone:
                    item.setForeground(QBrush(QColor(_COLORS[tone])))
                if c == 0:
                    item.setToolTip(f"{st.root}\nSillyTavern's page: {st.origins()[0]}  ·  data: {st.data_root}")
                elif c == 2 and copy is not None:
                    item.setToolTip(str(copy.path))
                self.setItem(r, c, item)
        again = next(
            (r for r, (st, c) in enumerate(self.rows) if keep_key and (st.root, c.path if c else None) == keep_key),
            None,
        )
        if again is None and keep is not None:
            again = next((r for r, (st, _) in enumerate(self.rows) if st.root == keep[0].root), None)
        self.selectRow(again if again is not None else 0)

    def selected(self) -> InstallRow | None:
        rows = self.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.rows):
            return None
        return self.rows[rows[0].row()]

    def select(self, root: Path, user: str | None = "", all_users: bool = False) -> bool:
        """Select the row of `root` (and of the copy for `user` / all users, when there is one)."""
        root = Path(root).resolve()
        best = None
        for r, (st, copy) in enumerate(self.rows):
            if st.root != root:
                continue
            if best is None:
                best = r
            if copy is not None and (copy.scope == st_install.SCOPE_ALL_USERS if all_users else copy.user == user):
                best = r
                break
        if best is None:
            return False
        self.selectRow(best)
        return True
