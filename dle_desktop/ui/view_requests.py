"""SillyTavern's /dle-graph and /dle-librarian (POST /api/dle/v1/app/show) in the window: it comes
to the front, from the tray too, at the view asked for, with the entry or gap selected. What
cannot be shown as asked is said in the status bar, quietly."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtWidgets import QStatusBar, QTabWidget, QWidget

from dle_desktop.errors import DleError
from dle_desktop.ui.widgets.async_util import soon

if TYPE_CHECKING:
    from dle_desktop.ui.librarian.view import LibrarianView
    from dle_desktop.ui.vault.view import VaultView

log = logging.getLogger(__name__)

NOTE_MS = 10000


class ViewHost(Protocol):
    """What of the main window a request moves (`ui.main_window.MainWindow`)."""

    @property
    def tabs(self) -> QTabWidget: ...
    @property
    def vault_view(self) -> VaultView: ...
    @property
    def channels_view(self) -> QWidget: ...
    @property
    def graph_view(self) -> QWidget: ...
    @property
    def librarian_view(self) -> LibrarianView: ...
    async def open_note(self, vault: str, path: str) -> str: ...

    def bring_forward(self) -> None: ...
    def statusBar(self) -> QStatusBar: ...


def show_requested_view(window: ViewHost, request: dict[str, Any]) -> None:
    """Answer one request ({"view", "entry"?, "gap"?, "mode"?}) on the GUI thread."""
    window.bring_forward()
    view = request.get("view")
    if view == "vault":
        window.tabs.setCurrentWidget(window.vault_view)
        title = request.get("entry")
        if request.get("path"):
            soon(lambda: _show_note(window, str(request.get("vault") or ""), str(request["path"])))
        elif title:
            _select_title(window, str(title))
    elif view == "channels":
        window.tabs.setCurrentWidget(window.channels_view)
    elif view == "graph":
        window.tabs.setCurrentWidget(window.graph_view)
    elif view == "librarian":
        window.tabs.setCurrentWidget(window.librarian_view)
        if request.get("gap"):
            soon(lambda: _show_gap(window, str(request["gap"])))
        elif request.get("suggestion"):
            soon(lambda: _show_suggestion(window, str(request["suggestion"])))
        elif request.get("mode") in ("summarize", "optimize-keys"):
            _propose(window, str(request["mode"]), request.get("entry"))
        elif request.get("mode"):
            _note(window, window.librarian_view.open_mode(str(request["mode"])))
    else:  # the server checks the view; a newer client may know more views than this window
        _note(window, f"SillyTavern asked for a view this window does not have: {view}")


def _propose(window: ViewHost, action: str, title: object) -> None:
    """SillyTavern's /dle-summarize and /dle-optimize-keys: the Librarian proposes, the user
    reviews each change here as with the Vault view's buttons."""
    librarian = window.librarian_view
    missing = librarian.ai_missing(action)
    if missing is not None:
        _note(window, f"SillyTavern asked for {action.replace('-', ' ')}: {missing.text()}")
        return
    if action == "summarize":
        soon(librarian.summarize_all)
        return
    snapshot = window.vault_view.snapshot
    hits = snapshot.by_title.get(str(title or "").strip().lower(), ()) if snapshot is not None else ()
    if not hits:
        _note(window, f"SillyTavern asked to optimize the keys of “{title}”: no entry has that title")
        return
    uid = hits[0].uid
    soon(lambda: librarian.propose(action, uid))


def _select_title(window: ViewHost, title: str) -> None:
    vault_view = window.vault_view
    snapshot = vault_view.snapshot
    hits = snapshot.by_title.get(title.strip().lower(), ()) if snapshot is not None else ()
    if not hits:
        shown = "the vault is still loading" if snapshot is None else "no entry has that title"
        _note(window, f"SillyTavern asked for “{title}”: {shown}")
        return
    vault_view.show_entry(hits[0].uid)


async def _show_note(window: ViewHost, vault: str, path: str) -> None:
    """/dle-scribe-history's Open: an entry is selected in the Vault view; any other note (a
    session note is not a lore entry) opens read-only."""
    try:
        said = await window.open_note(vault, path)
    except DleError as exc:
        said = f"{path} could not be read: {exc}"
    _note(window, f"SillyTavern asked for a note: {said}")


async def _show_suggestion(window: ViewHost, suggestion_id: str) -> None:
    _note(window, await window.librarian_view.show_suggestion(suggestion_id))


async def _show_gap(window: ViewHost, gap_id: str) -> None:
    try:
        note = await window.librarian_view.show_gap(gap_id)
    except Exception as exc:  # the gap store could not be read: say so, keep the window
        log.exception("showing gap %s failed", gap_id)
        note = f"SillyTavern asked for gap {gap_id}; reading the gaps failed: {exc}"
    _note(window, note)


def _note(window: ViewHost, text: str) -> None:
    window.statusBar().showMessage(text, NOTE_MS)
