"""Settings → Writers: Session Scribe, Auto Lorebook and AI Notepad, each off until turned on.
The editors take their ranges and choices from the settings' declarations (fields.py), so a value
out of range cannot be typed; a prompt left empty is the built-in one (core/writers/prompts.py),
shown greyed in the empty box. The page only edits values; the dialog saves them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
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

from dle_desktop.core.writers.prompts import (
    NOTEPAD_EXTRACT_PROMPT,
    NOTEPAD_TAG_PROMPT,
    SCRIBE_PROMPT,
    SUGGEST_PROMPT,
)
from dle_desktop.errors import VaultPathError
from dle_desktop.state.settings import Settings
from dle_desktop.ui.settings.retrieval import MUTED_STYLE, NUMBERED_CHOICES, WARN_STYLE
from dle_desktop.vault.filenames import note_path_for_title

#: The built-in text of each prompt setting (what an empty setting means).
DEFAULT_PROMPTS = {
    "scribe_prompt": SCRIBE_PROMPT,
    "auto_suggest_prompt": SUGGEST_PROMPT,
    "ai_notepad_prompt": NOTEPAD_TAG_PROMPT,
    "ai_notepad_extract_prompt": NOTEPAD_EXTRACT_PROMPT,
}
MODE_LINES = {
    "tag": "tag: the model is asked to end its reply with a <dle-notes> block; the block is taken out "
    "of the message and kept in the notepad.",
    "extract": "extract: the model replies as usual; a second call on the AI Notepad channel picks the "
    "notes out of the reply.",
}
CHANNEL_LINE = "Its AI calls use the {label} channel: set its connection in the Channels view (Ctrl+2)."
SKIP_REVIEW_WARNING = (
    "Suggestions will be written to the vault with no review: every entry the model proposes becomes a "
    "note at once (each write can still be undone from the Vault view's history)."
)
#: The notepad's place in the prompt, in the words the other injection settings use.
NUMBERED_WORDS = {
    "ai_notepad_position": NUMBERED_CHOICES["injection_position"],
    "ai_notepad_role": NUMBERED_CHOICES["injection_role"],
}
FOLDERS = {"scribe_folder": "Session Scribe folder", "auto_suggest_folder": "Auto Lorebook folder"}


def _field(name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(Settings) if f.name == name)


def channel_state(resolved: Any) -> str:
    """A channel's connection as it is now, in words (`resolved`: a ResolvedChannel)."""
    if resolved.profile is None:
        return f"Now: not set up ({resolved.problem})."
    inherited = " (inherited from AI search)" if resolved.inherited else ""
    model = f", model {resolved.model}" if resolved.model else ""
    return f"Now: {resolved.profile.name}{model}{inherited}."


def folder_problem(name: str, folder: str) -> str | None:
    """Why a note cannot go in `folder` (it leaves the vault, say); None when it can."""
    try:
        note_path_for_title("check", folder.strip())
    except VaultPathError as exc:
        return f"{FOLDERS[name]}: {folder!r} cannot hold a note: {exc}"
    return None


class PromptEditor(QWidget):
    """A prompt setting: empty means the built-in prompt, which the empty box shows greyed.
    "Start from the default" puts that text in the box to edit; "Use the default" empties it."""

    def __init__(self, name: str, value: str) -> None:
        super().__init__()
        self.name = name
        self.default = DEFAULT_PROMPTS[name]
        self.text = QPlainTextEdit()
        self.text.setTabChangesFocus(True)
        self.text.setPlaceholderText(self.default)
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * 6 + 12)
        self.text.setToolTip(_field(name).metadata.get("doc", ""))
        self.state = QLabel()
        self.state.setStyleSheet(MUTED_STYLE)
        self.show_default = QPushButton("Start from the default")
        self.show_default.setToolTip("Put the built-in prompt in the box, to edit it")
        self.show_default.clicked.connect(lambda *_: self.text.setPlainText(self.default))
        self.reset = QPushButton("Use the default")
        self.reset.setToolTip("Empty the box: the built-in prompt is used (shown greyed)")
        self.reset.clicked.connect(lambda *_: self.text.clear())
        self.text.textChanged.connect(self._changed)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.state, 1)
        row.addWidget(self.show_default)
        row.addWidget(self.reset)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.text)
        column.addLayout(row)
        self.text.setPlainText(value)
        self._changed()

    def value(self) -> str:
        """The setting: "" while the box is empty or holds the built-in text unchanged."""
        text = self.text.toPlainText()
        return "" if text.strip() in ("", self.default.strip()) else text

    def _changed(self) -> None:
        own = bool(self.value())
        self.state.setText("Your own prompt" if own else "The built-in prompt")
        self.reset.setEnabled(bool(self.text.toPlainText()))


class WritersPage(QWidget):
    """Three groups: Session Scribe, Auto Lorebook, AI Notepad. `editors` maps each setting to its
    editor; `values()` is what the dialog saves, `problem()` what it must not save."""

    def __init__(self, settings: Settings, channel_note: Callable[[str], str] | None = None, parent=None) -> None:
        """`channel_note(channel)`: a line on the channel's connection as it is now."""
        super().__init__(parent)
        self.editors: dict[str, QWidget] = {}
        self.prompts: dict[str, PromptEditor] = {}
        self.channel_notes: dict[str, QLabel] = {}
        self._channel_note = channel_note
        self._settings = settings
        body = QWidget()
        column = QVBoxLayout(body)
        column.addWidget(self._scribe_group())
        column.addWidget(self._suggest_group())
        column.addWidget(self._notepad_group())
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        intro = QLabel(
            "The writers add to the vault and to the prompt while you chat in SillyTavern. Each is off "
            "until you turn it on; every note they write can be undone from the Vault view."
        )
        intro.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(scroll, 1)
        self._follow()

    # -- building ------------------------------------------------------------------------------
    def _editor(self, name: str, text: str = "") -> QWidget:
        """The editor of one setting, its range or choices from the declaration."""
        f = _field(name)
        meta = f.metadata
        value = getattr(self._settings, name)
        w: QWidget
        if isinstance(f.default, bool):
            box = QCheckBox(text)
            box.setChecked(value)
            box.toggled.connect(self._follow)
            w = box
        elif name in NUMBERED_WORDS or meta.get("choices"):
            combo = QComboBox()
            options = NUMBERED_WORDS.get(name) or {c: c for c in meta["choices"]}
            for data, label in options.items():
                combo.addItem(label, data)
            combo.setCurrentIndex(combo.findData(value))
            combo.currentIndexChanged.connect(self._follow)
            w = combo
        elif isinstance(f.default, int):
            spin = QSpinBox(minimum=meta["lo"], maximum=meta["hi"], value=value)
            spin.setMinimumWidth(110)
            spin.setToolTip(f"{meta.get('doc', '')} ({meta['lo']}–{meta['hi']}; default {f.default})")
            w = spin
        else:
            line = QLineEdit(value)
            line.textChanged.connect(self._follow)
            w = line
        if not w.toolTip():
            w.setToolTip(meta.get("doc", ""))
        self.editors[name] = w
        return w

    def _prompt(self, name: str) -> PromptEditor:
        editor = PromptEditor(name, getattr(self._settings, name))
        self.prompts[name] = editor
        return editor

    def _group(self, title: str, what: str, channel: str) -> tuple[QGroupBox, QFormLayout]:
        """A group: what the writer does, then the channel its AI calls use."""
        box = QGroupBox(title)
        form = QFormLayout(box)
        form.addRow(self._muted(what))
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        note = QLabel(CHANNEL_LINE.format(label=title))
        if self._channel_note is not None:
            note.setText(f"{note.text()} {self._channel_note(channel)}")
        note.setWordWrap(True)
        note.setStyleSheet(MUTED_STYLE)
        note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.channel_notes[channel] = note
        form.addRow(note)
        return box, form

    @staticmethod
    def _muted(text: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setStyleSheet(MUTED_STYLE)
        return label

    def _scribe_group(self) -> QGroupBox:
        box, form = self._group(
            "Session Scribe",
            "Writes a session note (a summary of the recent chat) into the vault every few messages.",
            "scribe",
        )
        form.addRow("", self._editor("scribe_enabled", "Write session notes"))
        form.addRow("Every", self._with_suffix(self._editor("scribe_interval"), "messages"))
        form.addRow("Summarise the last", self._with_suffix(self._editor("scribe_scan_depth"), "messages"))
        form.addRow("Folder", self._editor("scribe_folder"))
        form.addRow("", self._editor("scribe_informed_retrieval", "Scribe-informed retrieval"))
        form.addRow("", self._muted("AI search also reads the chat's last session summary when it picks entries."))
        form.addRow("Prompt", self._prompt("scribe_prompt"))
        return box

    def _suggest_group(self) -> QGroupBox:
        box, form = self._group(
            "Auto Lorebook",
            "Proposes entries for the characters, places and things the chat mentions that the vault lacks. "
            "They wait in the Librarian view's Suggestions tab for you to accept, edit or reject.",
            "auto_suggest",
        )
        form.addRow("", self._editor("auto_suggest_enabled", "Suggest new entries"))
        form.addRow("Every", self._with_suffix(self._editor("auto_suggest_interval"), "AI messages"))
        folder = self._editor("auto_suggest_folder")
        assert isinstance(folder, QLineEdit)  # a text setting
        folder.setPlaceholderText("the vault's top folder")
        form.addRow("Folder", folder)
        form.addRow("", self._editor("auto_suggest_skip_review", "Write without review"))
        self.skip_warning = QLabel(SKIP_REVIEW_WARNING)
        self.skip_warning.setWordWrap(True)
        self.skip_warning.setStyleSheet(WARN_STYLE)
        form.addRow("", self.skip_warning)
        form.addRow("Prompt", self._prompt("auto_suggest_prompt"))
        return box

    def _notepad_group(self) -> QGroupBox:
        box, form = self._group(
            "AI Notepad",
            "Gives the model private notes that carry across the chat: kept per chat (at most 64 KiB) "
            "and put back into the prompt. The SillyTavern view's Chats tab shows each chat's notepad.",
            "ai_notepad",
        )
        form.addRow("", self._editor("ai_notepad_enabled", "Keep an AI notepad"))
        form.addRow("Mode", self._editor("ai_notepad_mode"))
        self.mode_lines = {mode: self._muted(line) for mode, line in MODE_LINES.items()}
        for line in self.mode_lines.values():
            form.addRow("", line)
        form.addRow("Position", self._editor("ai_notepad_position"))
        form.addRow("Depth", self._with_suffix(self._editor("ai_notepad_depth"), "messages from the end"))
        form.addRow("Role", self._editor("ai_notepad_role"))
        form.addRow("Tag instruction", self._prompt("ai_notepad_prompt"))
        form.addRow("Extract prompt", self._prompt("ai_notepad_extract_prompt"))
        return box

    @staticmethod
    def _with_suffix(editor: QWidget, suffix: str) -> QWidget:
        row = QWidget()
        pair = QHBoxLayout(row)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.addWidget(editor)
        pair.addWidget(QLabel(suffix))
        pair.addStretch(1)
        return row

    # -- following the values --------------------------------------------------------------------
    def _follow(self, *_: Any) -> None:
        """What depends on another value: the no-review warning, the mode's line, the depth."""
        values = self.values()
        self.skip_warning.setVisible(values["auto_suggest_skip_review"])
        for mode, line in self.mode_lines.items():
            line.setStyleSheet("" if mode == values["ai_notepad_mode"] else MUTED_STYLE)
        in_chat = values["ai_notepad_position"] == 1
        self.editors["ai_notepad_depth"].setEnabled(in_chat)
        self.editors["ai_notepad_depth"].setToolTip(
            "Messages from the end of the chat" if in_chat else "Only used when the position is in the chat"
        )

    # -- the values ------------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, w in self.editors.items():
            if isinstance(w, QCheckBox):
                out[name] = w.isChecked()
            elif isinstance(w, QComboBox):
                out[name] = w.currentData()
            elif isinstance(w, QSpinBox):
                out[name] = w.value()
            else:
                assert isinstance(w, QLineEdit)  # _editor() makes one of these four
                out[name] = w.text().strip()
        out.update({name: editor.value() for name, editor in self.prompts.items()})
        return out

    def problem(self) -> str | None:
        """A folder a note cannot go in, said plainly; None when all is well."""
        values = self.values()
        for name in FOLDERS:
            problem = folder_problem(name, values[name])
            if problem:
                return problem
        return None
