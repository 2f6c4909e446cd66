"""The Chats panel's Gating context tab: one row per gating field of the vault, with an editable
list of the values its notes use (and how many entries each lets through), Set and Clear, and
Clear all. Every change goes through the engine, which checks it against the vault: a field or
value it refuses is shown here in its words, and the chat's context stays as it was."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.errors import DleError
from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, note

NOT_SET = "not set (no gating)"
Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Choice:
    value: str
    entries: int  # notes that carry the value
    lets_through: int | None  # notes the gate passes with the chat set to it; None: not counted


def shown_value(value: Any) -> str:
    """A context value as the user types it (a list as a comma list)."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def choices_of(field: dict[str, Any]) -> list[Choice]:
    """The values the notes use (most used first, as the engine lists them), then the values the
    field definitions declare that no note uses yet."""
    used = [
        Choice(str(u["value"]), int(u.get("entries") or 0), int(u.get("lets_through") or 0))
        for u in field.get("used_values") or ()
    ]
    known = {c.value.lower() for c in used}
    declared = [Choice(str(v), 0, None) for v in field.get("values") or () if str(v).lower() not in known]
    return used + declared


class ChoiceModel(QAbstractListModel):
    """The combo's list: the popup shows each value with its counts, the line edit gets the value
    alone (an editable combo takes EditRole)."""

    def __init__(self, choices: list[Choice], total: int) -> None:
        super().__init__()
        self.choices = choices
        self.total = total

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.choices)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        c = self.choices[index.row()]
        if role == Qt.ItemDataRole.EditRole:
            return c.value
        if role == Qt.ItemDataRole.DisplayRole:
            if c.lets_through is None:
                return f"{c.value}   (declared; no entry uses it)"
            used = f"{c.entries} entr{'y' if c.entries == 1 else 'ies'}"
            return f"{c.value}   ({used}; lets {c.lets_through} of {self.total} through)"
        if role == Qt.ItemDataRole.ToolTipRole and c.lets_through is not None:
            return (
                f"{c.entries} entries carry “{c.value}”. With the chat set to it, this field's gate "
                f"lets {c.lets_through} of the vault's {self.total} entries through."
            )
        return None


class FieldRow:
    """One field: its label, the editable value list, Set and Clear."""

    def __init__(self, field: dict[str, Any], total: int) -> None:
        self.field = field
        self.name = str(field["name"])
        self.multi = bool(field.get("multi"))
        self.shown = ""  # the chat's value as last read: what an unedited box holds
        gating = field.get("gating") or {}
        self.label = QLabel(str(field.get("label") or self.name))
        kind = f"{field.get('type') or 'string'}{', several values (comma list)' if self.multi else ''}"
        gate = f"gates with {gating.get('operator', 'match_any')}" if gating.get("enabled", True) else "gating is off"
        self.label.setToolTip(
            f"{self.name}: {kind}; {gate}; {field.get('entries_with_field', 0)} entries carry it"
            + (f"; SillyTavern's context key {field['context_key']}" if field.get("context_key") else "")
        )
        self.box = QComboBox()
        self.box.setEditable(True)
        self.box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        # A comma list would fight inline completion; the list is one click away.
        self.box.setCompleter(None)  # type: ignore[arg-type]  # Qt takes None (no completer); the stubs miss it
        self.box.setModel(ChoiceModel(choices_of(field), total))
        self.box.setCurrentIndex(-1)  # a model brings its first value along: not set until set
        self.box.setMinimumContentsLength(12)
        self.box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.box.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        edit = self.box.lineEdit()
        assert edit is not None  # an editable combo has one
        self.edit = edit
        edit.setPlaceholderText(NOT_SET)
        edit.setToolTip("Not set: this field lets every entry through. A comma list sets several values.")
        edit.setClearButtonEnabled(True)
        self._typed = ""
        edit.textEdited.connect(self._remember)
        self.box.activated.connect(self._picked)
        self.set_button = QPushButton("Set")
        self.set_button.setToolTip(f"Set {self.label.text()} for this chat (Enter does it too)")
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip(f"Clear {self.label.text()}: it no longer gates this chat")

    def _remember(self, text: str) -> None:
        self._typed = text

    def _picked(self, index: int) -> None:
        """A value picked from the list: a multi-valued field adds it to what the box held."""
        value = self.box.itemText(index)
        if self.multi and self._typed.strip():
            values = [v.strip() for v in self._typed.split(",") if v.strip()]
            if value.lower() not in {v.lower() for v in values}:
                values.append(value)
            value = ", ".join(values)
        self.box.setCurrentIndex(-1)
        self.box.setEditText(value)
        self._typed = value

    def text(self) -> str:
        return self.box.currentText().strip()

    def show_value(self, value: Any, typed_too: bool = False) -> None:
        """The chat's value; text the user typed and has not set yet stays, unless `typed_too`."""
        new = shown_value(value)
        if typed_too or self.box.currentText() == self.shown:
            self.box.setCurrentIndex(-1)
            self.box.setEditText(new)
            self._typed = new
        self.shown = new


class GatingTab(QWidget):
    """The rows, the engine's answer under them, and Clear all. `runner` starts the panel's work."""

    def __init__(self, runner: Callable[[Callable[[], Coroutine[Any, Any, None]]], object]) -> None:
        super().__init__()
        self.runner = runner
        self.bridge: Any = None
        self.chat_id: str | None = None
        self.changed: Callable[[], object] = lambda: None  # the chat's state moved: re-read it
        self.rows: dict[str, FieldRow] = {}
        self.context: dict[str, Any] = {}
        self._shape: tuple[Any, ...] = ()
        self.grid = QGridLayout()
        self.grid.setColumnStretch(1, 1)
        self.grid.setVerticalSpacing(4)
        inner = QWidget()
        column = QVBoxLayout(inner)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(self.grid)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(inner)
        scroll.viewport().setAutoFillBackground(False)  # the tab page's own colour, not the window's
        inner.setAutoFillBackground(False)
        self.message = note()
        self.clear_all_button = QPushButton("Clear all")
        self.clear_all_button.setToolTip("Clear every gating field of this chat (DLE's /dle-clear-all-context)")
        self.clear_all_button.clicked.connect(lambda *_: self.runner(self.clear_all))
        bottom = QHBoxLayout()
        bottom.addWidget(self.message, 1)
        bottom.addWidget(self.clear_all_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(scroll, 1)
        layout.addLayout(bottom)

    def say(self, text: str, style: str = "") -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def show_fields(self, answer: dict[str, Any]) -> None:
        """The vault's fields (GET /fields' answer); rows are rebuilt only when they changed."""
        fields = list(answer.get("fields") or ())
        total = int(answer.get("entries") or 0)
        shape = (total, repr(fields))
        if shape == self._shape:
            return
        self._shape = shape
        old = self.rows
        while self.grid.count():
            item = self.grid.takeAt(0)
            if item is not None and (widget := item.widget()) is not None:
                widget.deleteLater()
        self.rows = {}
        for r, field in enumerate(fields):
            row = FieldRow(field, total)
            if row.name in old and old[row.name].box.currentText() != old[row.name].shown:
                row.box.setEditText(old[row.name].box.currentText())  # typed, not set yet: kept
            self.rows[row.name] = row
            row.set_button.clicked.connect(lambda *_, n=row.name: self.runner(lambda: self.set_field(n)))
            row.clear_button.clicked.connect(lambda *_, n=row.name: self.runner(lambda: self.set_field(n, clear=True)))
            row.edit.returnPressed.connect(lambda n=row.name: self.runner(lambda: self.set_field(n)))
            self.grid.addWidget(row.label, r, 0)
            self.grid.addWidget(row.box, r, 1)
            self.grid.addWidget(row.set_button, r, 2)
            self.grid.addWidget(row.clear_button, r, 3)
        if not fields:
            self.say("This vault defines no gating fields (DeepLore/field-definitions.yaml).", MUTED_STYLE)
        for problem in answer.get("problems") or ():
            self.say(f"{answer.get('source') or 'field-definitions.yaml'}: {problem}", MUTED_STYLE)
        self.show_context(self.context)

    def show_context(self, context: dict[str, Any]) -> None:
        self.context = dict(context)
        for row in self.rows.values():
            key = row.field.get("context_key") or row.name
            row.show_value(self.context.get(key, self.context.get(row.name)))
        self.clear_all_button.setEnabled(bool(self.context))

    async def set_field(self, name: str, clear: bool = False) -> None:
        row = self.rows.get(name)
        if row is None or self.chat_id is None or self.bridge is None:
            return
        text = "" if clear else row.text()
        value = text or None  # an emptied box clears, as Clear does
        try:
            answer = await self.bridge.set_context_field(self.chat_id, name, value)
        except DleError as exc:  # the engine's words; nothing was changed
            self.say(str(exc), ERROR_STYLE)
            return
        row.show_value(answer["value"], typed_too=True)
        self.show_context(answer["context"])
        label = row.label.text()
        done = f"{label} cleared" if value is None else f"{label} set to {shown_value(answer['value'])}"
        self.say(f"{done}; the next generation uses it.", OK_STYLE)
        self.changed()

    async def clear_all(self) -> None:
        if self.chat_id is None or self.bridge is None:
            return
        state = await self.bridge.clear_context(self.chat_id)
        for row in self.rows.values():
            row.show_value(None, typed_too=True)
        self.show_context(dict(state.context))
        self.say("Every gating field cleared; the next generation uses no context.", OK_STYLE)
        self.changed()
