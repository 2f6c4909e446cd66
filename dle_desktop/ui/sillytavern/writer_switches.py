"""The writers' on/off switches beside the chats (the same settings as Settings → Writers and the
bridge panel's boxes in SillyTavern): each is off until turned on, and applies to every chat."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QWidget

from dle_desktop.state.settings import Settings

#: (setting, box label, what it does)
SWITCHES = (
    ("scribe_enabled", "Session Scribe", "A session note in the vault every few messages (Settings → Writers)"),
    ("auto_suggest_enabled", "Auto Lorebook", "Proposes the entries a chat is missing, for review in the Librarian"),
    ("ai_notepad_enabled", "AI Notepad", "The model keeps private notes across each chat"),
)


class WriterSwitchBoxes(QWidget):
    """`save(**changes)` saves settings (None, or why not); `said(text, ok)` reports the outcome."""

    def __init__(
        self,
        current: Callable[[], Settings],
        save: Callable[..., str | None],
        said: Callable[[str, bool], None],
    ) -> None:
        super().__init__()
        self._current = current
        self._save = save
        self._said = said
        self.boxes: dict[str, QCheckBox] = {}
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Writers, every chat:"))
        for name, label, tip in SWITCHES:
            box = QCheckBox(label)
            box.setToolTip(tip)
            box.toggled.connect(lambda on, n=name, text=label: self._toggled(n, text, on))
            self.boxes[name] = box
            row.addWidget(box)
        row.addStretch(1)
        self.fill()

    def fill(self) -> None:
        settings = self._current()
        for name, box in self.boxes.items():
            box.blockSignals(True)
            box.setChecked(bool(getattr(settings, name)))
            box.blockSignals(False)

    def _toggled(self, name: str, label: str, on: bool) -> None:
        problem = self._save(**{name: on})
        if problem:
            self._said(f"Not saved: {problem}", False)
            self.fill()
        else:
            self._said(f"{label} is {'on' if on else 'off'} for every chat.", True)
