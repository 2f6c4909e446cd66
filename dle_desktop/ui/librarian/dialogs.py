"""Previews the user confirms before anything is written: the exact new file (or the diff of an
update), and a proposed change (Optimize Keys, Summarize) to accept, edit or reject."""

from __future__ import annotations

from html import escape

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
)


def diff_html(diff: str) -> str:
    rows = []
    for line in diff.splitlines():
        colour = (
            "#1a7f37"
            if line.startswith("+") and not line.startswith("+++")
            else "#b3261e"
            if line.startswith("-") and not line.startswith("---")
            else "#777"
            if line.startswith("@@")
            else "inherit"
        )
        rows.append(f"<span style='color:{colour}'>{escape(line) or '&nbsp;'}</span>")
    return "<pre style='margin:0'>" + "<br>".join(rows) + "</pre>"


def _mono(widget) -> None:
    widget.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))


class WritePreviewDialog(QDialog):
    def __init__(self, plan, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Write to vault")
        self.resize(720, 560)
        what = (
            f"Update <b>{escape(plan.path)}</b> in {escape(plan.vault)}"
            if plan.is_update
            else f"Create <b>{escape(plan.path)}</b> in {escape(plan.vault)}"
        )
        self.view = QTextBrowser()
        _mono(self.view)
        if plan.is_update:
            self.view.setHtml(diff_html(plan.diff) if plan.diff else "<p>Nothing would change.</p>")
        else:
            self.view.setPlainText(plan.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.write_button = buttons.addButton("Write", QDialogButtonBox.ButtonRole.AcceptRole)
        self.write_button.setEnabled(not plan.is_update or bool(plan.diff))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(what + (" — the exact file:" if not plan.is_update else " — the change:")))
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)


class ProposalDialog(QDialog):
    """Accept writes `text()` (the proposal, or the user's edit of it); Reject writes nothing."""

    def __init__(self, change, parent=None) -> None:
        super().__init__(parent)
        name = "Optimize Keys" if change.feature == "optimize-keys" else "Summarize"
        self.setWindowTitle(f"{name}: {change.title}")
        self.resize(760, 560)
        self.change = change
        self.diff_view = QTextBrowser()
        _mono(self.diff_view)
        self.diff_view.setHtml(diff_html(change.diff) if change.changed else "<p>No change proposed.</p>")
        self.editor = QPlainTextEdit(change.new_text)
        _mono(self.editor)
        self.editor.textChanged.connect(self._edited)
        tabs = QTabWidget()
        tabs.addTab(self.diff_view, "Proposed change")
        tabs.addTab(self.editor, "Edit the note")
        buttons = QDialogButtonBox()
        self.accept_button = buttons.addButton("Accept", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton("Reject", QDialogButtonBox.ButtonRole.RejectRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        if change.note:
            note = QLabel(f"<i>{escape(change.note)}</i>")
            note.setWordWrap(True)
            layout.addWidget(note)
        layout.addWidget(tabs, 1)
        layout.addWidget(buttons)

    def _edited(self) -> None:
        self.diff_view.setHtml(diff_html(self.change.edited(self.text()).diff))

    def text(self) -> str:
        return self.editor.toPlainText()
