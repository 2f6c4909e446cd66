"""Renders one entry as HTML for the detail pane: every field, links both ways, the cleaned text,
and the app's own writes of the note, whose last one the Undo button takes back."""

from __future__ import annotations

import time
from html import escape
from urllib.parse import quote

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.errors import DleError, WriteConflict
from dle_desktop.ui.widgets.async_util import soon

_CSS = """
<style>
 h2 { margin: 0 0 2px 0; }
 .path { color: #666; }
 .badge { background: #2f4858; color: white; padding: 1px 5px; border-radius: 3px; }
 .warn { color: #a15c00; }
 .dead { color: #999; text-decoration: line-through; }
 table.fields td { padding: 1px 8px 1px 0; vertical-align: top; }
 td.k { color: #555; white-space: nowrap; }
 pre.content { white-space: pre-wrap; font-family: sans-serif; background: #f6f6f4; padding: 6px; }
</style>
"""


def entry_link(e: Entry) -> str:
    return f"entry:{quote(e.uid, safe='')}"


def _titles(titles, snapshot: IndexSnapshot, kept: tuple[str, ...] | None = None) -> str:
    out = []
    for t in titles:
        target = snapshot.find(t)
        if target is not None and (kept is None or t in kept):
            out.append(f'<a href="{entry_link(target)}">{escape(t)}</a>')
        else:
            out.append(f'<span class="dead" title="not an entry: ignored">{escape(t)}</span>')
    return ", ".join(out) or "—"


def render_entry(e: Entry, snapshot: IndexSnapshot, history_html: str = "") -> str:
    rows: list[tuple[str, str]] = []

    def row(label: str, value) -> None:
        rows.append((label, value if isinstance(value, str) else escape(str(value))))

    row("Keys", escape(", ".join(e.keys)) or "<i>none</i>")
    if e.refine_keys:
        row("Refine keys", escape(", ".join(e.refine_keys)))
    row("Priority", f"{e.priority:g} <span class='path'>(lower runs first)</span>")
    row("Tokens", f"~{e.token_estimate}")
    if e.original_requires:
        row("Requires", _titles(e.original_requires, snapshot, e.requires))
    if e.original_excludes:
        row("Excludes", _titles(e.original_excludes, snapshot, e.excludes))
    if e.original_cascade_links:
        row("Cascade", _titles(e.original_cascade_links, snapshot, e.cascade_links))
    placement = ", ".join(
        f"{k} {v}" for k, v in (("position", e.position), ("depth", e.depth), ("role", e.role)) if v is not None
    )
    if placement:
        row("Placement", escape(placement))
    timing = ", ".join(
        f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in (
            ("scan depth", e.scan_depth),
            ("warmup", e.warmup),
            ("cooldown", e.cooldown),
            ("probability", e.probability),
        )
        if v is not None
    )
    if timing:
        row("Timing", escape(timing))
    if e.exclude_recursion:
        row("Recursion", "its text does not trigger other entries")
    if e.outlet:
        row("Outlet", escape(e.outlet))
    if not e.graph:
        row("Graph", "hidden")
    if e.tags:
        row("Tags", escape(", ".join(e.tags)))
    for name, value in e.custom_fields.items():
        shown = ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)
        row(name, escape(shown))
    if e.summary:
        row("Summary", escape(e.summary).replace("\n", "<br>"))
    row("Links", _titles(e.links, snapshot) if e.links else "—")
    back = snapshot.backlinks.get(e.title, ())
    row("Linked from", _titles(back, snapshot) if back else "—")
    row("Hash", f"<span class='path'>{escape(e.content_hash)}</span>")

    badges = " ".join(
        f"<span class='badge'>{b}</span>"
        for b, on in (("constant", e.constant), ("seed", e.seed), ("bootstrap", e.bootstrap), ("guide", e.guide))
        if on
    )
    warnings = "".join(f"<li class='warn'>{escape(w.code)}: {escape(w.message)}</li>" for w in e.warnings)
    table = "".join(f"<tr><td class='k'>{escape(k)}</td><td>{v}</td></tr>" for k, v in rows)
    return (
        f"{_CSS}<h2>{escape(e.title)}</h2>"
        f"<div class='path'>{escape(e.vault)} · {escape(e.path)}</div>"
        f"<p>{badges}</p>"
        f"<table class='fields'>{table}</table>"
        + (f"<p><b>Parser notes</b></p><ul>{warnings}</ul>" if warnings else "")
        + history_html
        + f"<p><b>Injected text</b></p><pre class='content'>{escape(e.content) or '<i>(empty)</i>'}</pre>"
    )


# --------------------------------------------------------------------------- write history


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


_ACTIONS = {
    "create": "created",
    "edit-fields": "fields changed",
    "edit-body": "text changed",
    "replace": "rewritten",
    "undo": "undo",
    "delete": "deleted",
}


def render_history(records) -> str:
    """The app's writes of one note (newest first), as an HTML section for the detail pane."""
    if not records:
        return ""
    rows = []
    for r in records:
        what = _ACTIONS.get(r.action, r.action)
        if r.action == "undo":
            what = f"undid write #{r.undoes}" if r.undoes is not None else what
            if r.after_text is None:
                what += " (deleted the note)"
        state = " <span class='path'>(undone)</span>" if r.undone else ""
        rows.append(
            f"<tr><td class='k'>#{r.id} {escape(_when(r.at))}</td><td>{escape(r.feature)}: "
            f"{escape(what)}{state}</td></tr>"
        )
    return f"<p><b>Written by DLE Desktop</b></p><table class='fields'>{''.join(rows)}</table>"


class EngineWriteAccess:
    """What the entry detail needs of the engine's note writer, called through the bridge."""

    def __init__(self, bridge) -> None:
        self.bridge = bridge

    async def history(self, vault: str, path: str):
        return await self.bridge.write_history(vault, path, 20)

    async def undo(self, record_id: int):
        return await self.bridge.undo_write(record_id)


class ConflictDialog(QDialog):
    """Shows the versions of a note a write could not choose between, side by side."""

    def __init__(self, conflict: WriteConflict, parent=None, what: str = "Undo") -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{what}: the note changed")
        self.resize(900, 520)
        self.conflict = conflict
        message = QLabel(
            f"{escape(str(conflict))}<br>Nothing was written. Copy what you want to keep into the note "
            "in your editor; the write history keeps both texts."
        )
        message.setWordWrap(True)
        panes = QHBoxLayout()
        self.panes = {}
        for key, title, text in (
            ("current", "On disk now", conflict.current_text),
            ("expected", "As the app's write left it", conflict.expected_text),
            ("proposed", f"What {what.lower()} would write", conflict.proposed_text),
        ):
            box = QVBoxLayout()
            box.addWidget(QLabel(f"<b>{title}</b>"))
            view = QPlainTextEdit()
            view.setReadOnly(True)
            view.setPlainText(text if text is not None else "(no such note)")
            self.panes[key] = view
            box.addWidget(view)
            panes.addLayout(box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(message)
        layout.addLayout(panes, 1)
        layout.addWidget(buttons)


class EntryHistory(QObject):
    """Loads the selected note's write history into the detail pane and runs its Undo button
    (conflict-checked: on conflict a ConflictDialog shows the versions; nothing is written)."""

    changed = Signal()  # the history shown (or the button) changed

    def __init__(self, button: QPushButton, parent=None) -> None:
        super().__init__(parent)
        self.button = button
        self.access: EngineWriteAccess | None = None
        self.note: tuple[str, str] | None = None
        self.records: list = []
        self.message = ""
        self.conflict_dialog: ConflictDialog | None = None
        button.setEnabled(False)
        button.clicked.connect(lambda *_: soon(self.undo_last))
        self._update_button()

    def set_access(self, access: EngineWriteAccess | None) -> None:
        self.access = access
        self._update_button()

    def show_note(self, vault: str, path: str) -> None:
        if self.note != (vault, path):
            self.note, self.records, self.message = (vault, path), [], ""
            self._update_button()
        if self.access is not None:
            soon(lambda: self._load((vault, path)))

    def clear(self) -> None:
        """No note is shown: nothing to list, nothing the Undo button may take back."""
        self.note, self.records, self.message = None, [], ""
        self._update_button()

    def html(self) -> str:
        note = f"<p class='warn'>{escape(self.message)}</p>" if self.message else ""
        return note + render_history(self.records)

    async def _load(self, note: tuple[str, str]) -> None:
        try:
            assert self.access is not None  # set_note() loads only with an access
            records = await self.access.history(*note)
        except Exception as exc:  # noqa: BLE001 - a history that cannot be read must not break the view
            records, self.message = [], f"The write history could not be read: {exc}"
        if note == self.note:
            self.records = list(records)
            self._update_button()
            self.changed.emit()

    def _update_button(self) -> None:
        last = self.records[0] if self.records else None
        self.button.setEnabled(self.access is not None and last is not None and not last.undone)
        # Undoing an undo puts the undone write back: say so.
        self.button.setText("Redo undone write" if last is not None and last.action == "undo" else "Undo last write")
        self.button.setToolTip(
            f"Undo write #{last.id} ({last.feature}, {_when(last.at)}) if the note has not changed since"
            if last is not None and not last.undone
            else "The app has made no write to this note that can be undone"
        )

    async def undo_last(self) -> None:
        if not self.records or self.access is None:
            return
        last, note = self.records[0], self.note
        self.button.setEnabled(False)
        try:
            await self.access.undo(last.id)
            self.message = f"Write #{last.id} was undone."
        except WriteConflict as conflict:
            self.message = "Nothing was undone: the note changed since that write."
            self.conflict_dialog = ConflictDialog(conflict, self.button.window())
            self.conflict_dialog.open()
        except DleError as exc:
            self.message = f"Nothing was undone: {exc}"
        if note is not None and note == self.note:
            await self._load(note)
