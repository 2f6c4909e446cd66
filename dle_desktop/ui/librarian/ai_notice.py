"""What an AI feature (the Librarian, Optimize Keys, Summarize) needs before it can run, said in
place: a message bar naming what is missing, with a button to where it is set up in the Channels
view (the profile list when there is no profile yet, else the feature's channel)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton

from dle_desktop.ai.channels import ResolvedChannel

#: The channel each feature calls on (Summarize uses AI search's, as DLE does).
FEATURE_CHANNELS = {"librarian": "librarian", "optimize-keys": "optimize_keys", "summarize": "ai_search"}
FEATURE_NAMES = {"librarian": "The Librarian", "optimize-keys": "Optimize Keys", "summarize": "Summarize"}
#: Where the Channels view opens for a missing connection profile: its profile list.
PROFILES = ""


@dataclass(frozen=True)
class AiMissing:
    """Why a feature cannot run, and where in the Channels view that is fixed."""

    feature: str
    channel: ResolvedChannel
    has_profiles: bool

    @property
    def place(self) -> str:
        """The channel to select in the Channels view, or PROFILES."""
        return self.channel.channel if self.has_profiles else PROFILES

    def text(self) -> str:
        uses = "" if FEATURE_CHANNELS[self.feature] == "librarian" else f" (it uses the {self.channel.label} channel)"
        return f"{FEATURE_NAMES[self.feature]} needs an AI connection{uses}: {self.channel.problem}."

    def button_text(self) -> str:
        return "Choose a connection…" if self.has_profiles else "Add a connection…"


def missing(feature: str, channel: ResolvedChannel, has_profiles: bool) -> AiMissing | None:
    """None when the feature's channel resolves to a usable connection."""
    return None if channel.problem is None else AiMissing(feature, channel, has_profiles)


class AiNotice(QFrame):
    """A message bar: what is missing, a button to the Channels view, and (optionally) a close box."""

    channelsRequested = Signal(str)  # a channel to select, or PROFILES

    def __init__(self, closable: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("ai-notice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#ai-notice { background: #fff4e0; border: 1px solid #e0b060; border-radius: 3px; }")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setStyleSheet("color: #5c3b00")
        self.button = QPushButton()
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setToolTip("Hide this message")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.hide)
        self.close_button.setVisible(closable)
        self._closable = closable
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.label, 1)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self._place = PROFILES
        self.button.clicked.connect(self._open_channels)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def show_missing(self, need: AiMissing | None) -> None:
        """Say what `need` is missing, or hide when nothing is."""
        if need is None:
            self.hide()
            return
        self._place = need.place
        self.label.setText(need.text())
        self.button.setText(need.button_text())
        self.button.setToolTip(
            f"Open the Channels view at the {need.channel.label} channel"
            if need.has_profiles
            else "Open the Channels view's connection profiles, to add one"
        )
        self.show()

    def _open_channels(self) -> None:
        if self._closable:  # said and acted on; the next try checks again
            self.hide()
        self.channelsRequested.emit(self._place)
