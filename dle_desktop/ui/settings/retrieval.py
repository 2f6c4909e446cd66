"""Settings → Retrieval: every setting the retrieval pipeline reads, generated from the settings'
declarations (`_s(group=..., page=...)` in state/settings.py), grouped as DLE groups them. Each
row shows our name and DLE's, the allowed range, a one-line explanation and "reset to default";
the filter box matches any of them. Settings edited on another page (semantic search on
Embeddings, AI search's switch and fallbacks in the Channels view) are listed with their current
value and a pointer there, so searching finds them too. The page only edits values; the dialog
saves them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.state.settings import Settings, grouped_fields, label_for

MUTED_STYLE = "color: palette(placeholder-text)"
WARN_STYLE = "color: #a15c00"
_POSITIONS = {2: "Before the main prompt", 0: "After the main prompt", 1: "In the chat, at a depth"}
_ROLES = {0: "System", 1: "User", 2: "Assistant"}
#: Whole-number settings that are really a choice: shown as a list of words, stored as DLE's number.
NUMBERED_CHOICES = {
    "injection_position": _POSITIONS,
    "notebook_position": _POSITIONS,
    "injection_role": _ROLES,
    "notebook_role": _ROLES,
}
#: The "current value" of a setting edited elsewhere wraps past this, so the row fits the dialog
VALUE_WIDTH_MAX = 200
ELSEWHERE = {"embeddings": "Edit on the Embeddings page", "channels": "Edit in the Channels view (Ctrl+2)"}


def _range_text(f: dataclasses.Field) -> str:
    meta = f.metadata
    if f.name in NUMBERED_CHOICES:
        return ", ".join(f"{n} {label.lower()}" for n, label in sorted(NUMBERED_CHOICES[f.name].items()))
    if meta.get("choices"):
        return " | ".join(meta["choices"])
    if meta.get("lo") is not None:
        return f"{meta['lo']}–{meta['hi']}"
    return ""


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value == "":
        return "empty"
    if isinstance(value, str):
        return repr(value) if len(value) <= 24 and "\n" not in value else "the built-in text"
    return str(value)


def model_name(model_path: str) -> str:
    """The embedding model as the user knows it: the chosen file's name, or the default model's."""
    if model_path.strip():
        return Path(model_path.strip()).stem
    from dle_desktop.vectors.model_manager import DEFAULT_MODEL

    return DEFAULT_MODEL.description.split(" (")[0] or Path(DEFAULT_MODEL.filename).stem


def current_text(name: str, values: Mapping[str, Any]) -> str:
    """A setting's value in words, as a row edited elsewhere shows it ("On, model tiny", "0.5")."""
    value = values[name]
    semantic_on = bool(values.get("semantic_enabled"))
    if name == "semantic_enabled":
        return f"On, model {model_name(str(values.get('embedding_model_path') or ''))}" if value else "Off"
    text = ("On" if value else "Off") if isinstance(value, bool) else str(value)
    if name.startswith("semantic_") and not semantic_on:
        text += " (not used while semantic search is off)"
    return text


class SettingRow:
    """One setting's widgets in the page's grid: a label, its editor (or a pointer to the page that
    edits it), reset, and a muted line with the names, the range, the default and the explanation."""

    def __init__(self, f: dataclasses.Field, value: Any) -> None:
        self.name = f.name
        self.default = f.default
        self.editable = f.metadata.get("page") == "retrieval"
        meta = f.metadata
        dle = f"DLE: {meta['dle']}" if meta.get("dle") else "DLE Desktop only"
        facts = [f.name, dle, _range_text(f), f"default {_default_text(f.default)}"]
        self.label = QLabel(label_for(f.name))
        self.label.setToolTip(meta.get("doc", ""))
        self.info = QLabel(" · ".join(x for x in facts if x) + (f" — {meta['doc']}" if meta.get("doc") else ""))
        self.info.setWordWrap(True)
        self.info.setStyleSheet(MUTED_STYLE)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.haystack = " ".join(
            [f.name, meta.get("dle") or "", label_for(f.name), meta.get("doc", ""), meta.get("group", "")]
        ).lower()
        self.reset = QPushButton("Reset")
        self.reset.setToolTip(f"Reset to the default ({_default_text(f.default)})")
        self.editor: QWidget | None = None
        #: the editor, or where the setting is edited: a button for a page of this dialog, else a note
        self.control: QWidget
        #: what the grid shows: the editor, or the current value beside the pointer to its page
        self.cell: QWidget
        self.current = QLabel()
        if self.editable:
            self.control = self.cell = self._editor(f, value)
            self.reset.clicked.connect(lambda *_: self.set_value(self.default))
            self._changed()
        else:
            self.reset.hide()
            where = ELSEWHERE[meta["page"]]
            self.control = QPushButton(where) if meta["page"] == "embeddings" else QLabel(where)
            self.current.setToolTip(f"The value now. {where}.")
            self.current.setWordWrap(True)
            self.current.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            if isinstance(self.control, QPushButton):
                self.label.setBuddy(self.control)
            self.cell = QWidget()
            pair = QHBoxLayout(self.cell)
            pair.setContentsMargins(0, 0, 0, 0)
            pair.addWidget(self.current)
            pair.addSpacing(8)
            pair.addWidget(self.control)
            pair.addStretch(1)

    def widgets(self) -> list[QWidget]:
        return [self.label, self.cell, self.reset, self.info]

    def show_current(self, values: Mapping[str, Any]) -> None:
        if not self.editable:
            self.current.setText(current_text(self.name, values))

    def _editor(self, f: dataclasses.Field, value: Any) -> QWidget:
        meta = f.metadata
        default: Any = f.default
        w: QWidget
        if isinstance(default, bool):
            box = QCheckBox()
            box.toggled.connect(self._changed)
            w = box
        elif f.name in NUMBERED_CHOICES or meta.get("choices"):
            combo = QComboBox()
            options = NUMBERED_CHOICES.get(f.name) or {c: c for c in meta["choices"]}
            for data, text in options.items():
                combo.addItem(text, data)
            combo.currentIndexChanged.connect(self._changed)
            w = combo
        elif isinstance(default, int):
            spin = QSpinBox(minimum=meta["lo"], maximum=meta["hi"])
            spin.setMinimumWidth(120)
            spin.valueChanged.connect(self._changed)
            w = spin
        elif isinstance(default, float):
            fspin = QDoubleSpinBox(minimum=meta["lo"], maximum=meta["hi"], decimals=2, singleStep=0.05)
            fspin.setMinimumWidth(120)
            fspin.valueChanged.connect(self._changed)
            w = fspin
        elif "\n" in default or f.name.endswith(("_template", "_prompt")):
            text_box = QPlainTextEdit()
            text_box.setTabChangesFocus(True)
            text_box.setFixedHeight(text_box.fontMetrics().lineSpacing() * 4 + 12)
            text_box.textChanged.connect(self._changed)
            w = text_box
        else:
            line = QLineEdit()
            line.textChanged.connect(self._changed)
            w = line
        w.setToolTip(meta.get("doc", ""))
        self.label.setBuddy(w)
        self.editor = w
        self.set_value(value)
        return w

    def value(self) -> Any:
        w = self.editor
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QComboBox):
            return w.currentData()
        if isinstance(w, QDoubleSpinBox):
            return round(w.value(), 4)
        if isinstance(w, QSpinBox):
            return w.value()
        if isinstance(w, QPlainTextEdit):
            return w.toPlainText()
        assert isinstance(w, QLineEdit)  # _editor() makes one of these five
        return w.text()

    def set_value(self, value: Any) -> None:
        w = self.editor
        if isinstance(w, QCheckBox):
            w.setChecked(value)
        elif isinstance(w, QComboBox):
            w.setCurrentIndex(w.findData(value))
        elif isinstance(w, (QSpinBox, QDoubleSpinBox)):
            w.setValue(value)
        elif isinstance(w, QPlainTextEdit):
            w.setPlainText(value)
        else:
            assert isinstance(w, QLineEdit)  # _editor() makes one of these five
            w.setText(value)

    def _changed(self, *_: Any) -> None:
        self.reset.setEnabled(self.value() != self.default)

    def matches(self, words: list[str]) -> bool:
        return all(word in self.haystack for word in words)

    def set_visible(self, on: bool) -> None:
        for w in self.widgets():
            if w is not self.reset or self.editable:
                w.setVisible(on)


class RetrievalPage(QWidget):
    """The rows of every setting with a group, in group boxes; `values()` is what the dialog saves."""

    pageRequested = Signal(str)  # another settings page, e.g. "embeddings"

    def __init__(self, settings: Settings, parent=None) -> None:
        super().__init__(parent)
        self.filter = QLineEdit(clearButtonEnabled=True)
        self.filter.setPlaceholderText("Filter (Ctrl+F): our name, DLE's name (scanDepth) or a word of the explanation")
        self.filter.textChanged.connect(self.apply_filter)
        find = QShortcut(QKeySequence.StandardKey.Find, self)
        find.activated.connect(self.filter.setFocus)
        find.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.nothing = QLabel()
        self.nothing.setStyleSheet(WARN_STYLE)
        self.nothing.hide()
        self.rows: dict[str, SettingRow] = {}
        self._shown: dict[str, Any] = {}  # the values the rows edited elsewhere show
        self.groups: list[tuple[QGroupBox, list[SettingRow]]] = []
        body = QWidget()
        column = QVBoxLayout(body)
        grids: list[QGridLayout] = []
        for group, fields in grouped_fields():
            box = QGroupBox(group.replace("&", "&&"))  # "&" would underline the next letter
            grid = QGridLayout(box)
            grid.setColumnStretch(1, 1)
            grids.append(grid)
            rows = []
            for f in fields:
                row = SettingRow(f, getattr(settings, f.name))
                r = grid.rowCount()
                grid.addWidget(row.label, r, 0, Qt.AlignmentFlag.AlignTop)
                wide = isinstance(row.control, (QLineEdit, QPlainTextEdit)) or not row.editable
                # a setting edited elsewhere has no Reset: its value and pointer take that room too
                span = 1 if row.editable else 2
                grid.addWidget(row.cell, r, 1, 1, span, Qt.AlignmentFlag(0) if wide else Qt.AlignmentFlag.AlignLeft)
                grid.addWidget(row.reset, r, 2, Qt.AlignmentFlag.AlignTop)
                grid.addWidget(row.info, r + 1, 0, 1, 3)
                if isinstance(row.control, QPushButton):
                    row.control.clicked.connect(lambda *_, page=f.metadata["page"]: self.pageRequested.emit(page))
                self.rows[f.name] = row
                rows.append(row)
            self.groups.append((box, rows))
            column.addWidget(box)
        self.show_current({f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)})
        column.addStretch(1)
        label_width = max(row.label.sizeHint().width() for row in self.rows.values()) + 12
        for grid in grids:  # one label column through all groups, so the editors line up
            grid.setColumnMinimumWidth(0, label_width)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.nothing)
        layout.addWidget(scroll, 1)

    def apply_filter(self, text: str) -> int:
        """Show the rows whose names or explanation hold every word of `text`; returns how many."""
        words = text.lower().split()
        shown = 0
        for box, rows in self.groups:
            hits = [row.matches(words) for row in rows]
            for row, hit in zip(rows, hits):
                row.set_visible(hit)
            box.setVisible(any(hits))
            shown += sum(hits)
        self.nothing.setText(f"No setting matches “{text.strip()}”." if not shown else "")
        self.nothing.setVisible(not shown)
        return shown

    def show_current(self, values: Mapping[str, Any]) -> None:
        """Update the values shown for the settings edited elsewhere (the Embeddings page's, as
        edited in this dialog before Retrieval is shown again). `values`: all settings, or some."""
        merged = {**self._shown, **values}
        self._shown = merged
        shown = [row for row in self.rows.values() if not row.editable]
        for row in shown:
            row.show_current(merged)
        # One width for every value, so the pointers beside them line up; a longer value wraps
        widths = (row.current.fontMetrics().horizontalAdvance(row.current.text()) + 4 for row in shown)
        width = min(max(widths, default=0), VALUE_WIDTH_MAX)
        for row in shown:
            row.current.setFixedWidth(width)

    def visible_names(self) -> list[str]:
        return [name for name, row in self.rows.items() if not row.label.isHidden()]

    def values(self) -> dict[str, Any]:
        return {name: row.value() for name, row in self.rows.items() if row.editable}

    def problem(self) -> str | None:
        """A value that would break the vault (an empty tag), said plainly; None when all is well."""
        for name, row in self.rows.items():
            if row.editable and name.endswith("_tag") and not row.value().strip():
                return f"{label_for(name)} cannot be empty: notes are recognised by it."
        return None
