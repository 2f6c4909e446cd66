"""The draft editor beside the librarian's chat: every field editable, and as you type the token
count, the keys' matches in the session's chat and the health warnings of the note it would be."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.librarian.draft import TYPES, Draft, Target, analyse

EMPTY_DRAFT = "An empty draft: fill it in here, or ask the librarian for one."


def _split(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


class DraftEditor(QWidget):
    writeRequested = Signal()
    changed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._target: Target | None = None
        self._loading = False
        self.snapshot = None
        self.chat_text = ""
        self.title = QLineEdit(placeholderText="Title")
        self.type = QComboBox()
        self.type.addItems(TYPES)
        self.priority = QSpinBox(minimum=1, maximum=100, value=50)
        self.tags = QLineEdit(placeholderText="lorebook, …")
        self.keys = QLineEdit(placeholderText="comma-separated keys")
        self.summary = QPlainTextEdit(placeholderText="What is this? When should it be selected? Key relationships?")
        self.summary.setFixedHeight(70)
        self.content = QPlainTextEdit(placeholderText="The entry's content")
        self.target_label = QLabel()
        self.target_label.setStyleSheet("color: palette(placeholder-text)")
        self.report = QLabel()
        self.report.setWordWrap(True)
        self.write_button = QPushButton("Write to vault…")
        self.write_button.clicked.connect(self.writeRequested)

        row = QHBoxLayout()
        row.addWidget(self.type, 2)
        row.addWidget(QLabel("Priority"))
        row.addWidget(self.priority, 1)
        form = QFormLayout()
        form.addRow("Title", self.title)
        form.addRow("Type", row)
        form.addRow("Tags", self.tags)
        form.addRow("Keys", self.keys)
        form.addRow("Summary", self.summary)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(QLabel("<b>Draft</b>"))
        layout.addWidget(self.target_label)
        layout.addLayout(form)
        layout.addWidget(self.content, 1)
        layout.addWidget(self.report)
        layout.addWidget(self.write_button)

        # The report re-parses the note; wait for a pause in typing rather than per key.
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.refresh_report)
        for w in (self.title, self.tags, self.keys):
            w.textChanged.connect(self._edited)
        for box in (self.summary, self.content):
            box.textChanged.connect(self._edited)
        self.type.currentTextChanged.connect(self._edited)
        self.priority.valueChanged.connect(self._edited)
        self.set_draft(Draft())

    def _edited(self, *_args) -> None:
        if not self._loading:
            self.changed.emit()
        self._timer.start()

    def set_draft(self, draft: Draft) -> None:
        self._loading = True
        try:
            self._target = draft.target
            self.title.setText(draft.title)
            self.type.setCurrentText(draft.type if draft.type in TYPES else "lore")
            self.priority.setValue(max(1, min(100, int(draft.priority))))
            self.tags.setText(", ".join(draft.tags))
            self.keys.setText(", ".join(draft.keys))
            if self.summary.toPlainText() != draft.summary:
                self.summary.setPlainText(draft.summary)
            if self.content.toPlainText() != draft.content:
                self.content.setPlainText(draft.content)
        finally:
            self._loading = False
        self.target_label.setText(f"Updates {draft.target.path}" if draft.target else "A new note")
        self.refresh_report()

    def draft(self) -> Draft:
        return Draft(
            title=self.title.text().strip(),
            type=self.type.currentText(),
            priority=self.priority.value(),
            tags=_split(self.tags.text()),
            keys=_split(self.keys.text()),
            summary=self.summary.toPlainText().strip(),
            content=self.content.toPlainText(),
            target=self._target,
        )

    def set_context(self, snapshot, chat_text: str) -> None:
        self.snapshot, self.chat_text = snapshot, chat_text
        self._timer.start()

    def refresh_report(self) -> None:
        draft = self.draft()
        if draft.empty and draft.target is None:  # nothing typed yet: nothing is wrong yet either
            self.report.setText(f"<span style='color:#777'>{EMPTY_DRAFT}</span>")
            self.write_button.setEnabled(False)
            return
        r = analyse(draft, self.chat_text, self.snapshot)
        parts = [f"~{r.tokens} tokens"]
        if r.key_hits:
            hits = ", ".join(
                f"{escape(k)} ×{n}" if n else f"<span style='color:#a33'>{escape(k)} ×0</span>" for k, n in r.key_hits
            )
            parts.append(f"keys in the chat: {hits}" if self.chat_text else "no chat to preview keys against")
        lines = [" · ".join(parts)]
        lines += [f"<span style='color:#a33'>✗ {escape(p)}</span>" for p in r.problems]
        lines += [f"<span style='color:#a60'>⚠ {escape(w)}</span>" for w in r.warnings]
        self.report.setText("<br>".join(lines))
        self.write_button.setEnabled(not r.problems)
