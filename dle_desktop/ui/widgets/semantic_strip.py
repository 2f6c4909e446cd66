"""The vault view's one-line account of semantic search: how far embedding the entries has got,
Pause while entries are being embedded, Resume while paused, and why it is unavailable when it is. Hidden while semantic search is off.

Fed by the engine's "semantic" events (through the bridge) and, while the default model is being
downloaded, by the download's progress: until the model is there, that is the news."""

from __future__ import annotations

import re

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy

from dle_desktop.ui.settings.model_download import describe_progress, megabytes

WARN_STYLE = "color: #a15c00"

# States in which there is no usable model yet, so a running download is the more useful news.
_WITHOUT_MODEL = ("off", "waiting", "error")


class StatusLabel(QLabel):
    """One line cut with "…" to the room there is, so the strip keeps its height while the counts
    change; a problem wraps instead, since its reason is the point. The whole text is the tooltip."""

    def __init__(self) -> None:
        super().__init__()
        self.full_text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def show_text(self, text: str, wrap: bool = False, tooltip: str | None = None) -> None:
        self.full_text = text
        self.setWordWrap(wrap)
        self.setToolTip(tooltip or text)
        self._fit()

    def _fit(self) -> None:
        if self.wordWrap():
            self.setText(self.full_text)
        else:
            self.setText(
                self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, max(self.width(), 40))
            )

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not self.wordWrap():
            self._fit()

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())


def headline(reason: str) -> str:
    """The part of an engine message that says what is wrong, before the advice or the details
    ("no local embedding model is configured: set …" → "no local embedding model is configured")."""
    m = re.match(r"(.{15,}?)(?::|;) ", reason)
    return m.group(1) if m else reason


class SemanticStrip(QFrame):
    pauseToggled = Signal(bool)
    settingsRequested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.semantic_enabled = False
        self.paused = False
        self.status: dict = {"state": "waiting"}
        self.download_progress = None
        self.downloading = False

        self.label = StatusLabel()
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(130)
        self.bar.setTextVisible(False)
        self.pause_button = QPushButton("Pause")
        self.pause_button.clicked.connect(lambda *_: self.toggle_pause())
        self.settings_button = QPushButton("Embedding settings…")
        self.settings_button.setToolTip("Choose or download an embedding model (Settings → Embeddings)")
        self.settings_button.clicked.connect(lambda *_: self.settingsRequested.emit())
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 2, 2, 2)
        row.addWidget(self.label, 1)
        row.addWidget(self.bar)
        row.addWidget(self.pause_button)
        row.addWidget(self.settings_button)
        self._render()

    # -- inputs -------------------------------------------------------------------------------
    def reset(self, enabled: bool, paused: bool) -> None:
        """A new engine with these settings: forget the old one's status, wait for the new one's."""
        self.semantic_enabled = enabled
        self.paused = paused
        self.status = {"state": "waiting"}
        self._render()

    def set_status(self, status: dict) -> None:
        self.status = dict(status)
        self._render()

    def show_download(self, progress) -> None:
        self.downloading = True
        self.download_progress = progress
        self._render()

    def download_ended(self, *_args) -> None:
        self.downloading = False
        self.download_progress = None
        self._render()

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self.pauseToggled.emit(self.paused)
        self._render()

    # -- what it shows ------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return str(self.status.get("state") or "waiting")

    def _render(self) -> None:
        self.setVisible(self.semantic_enabled)
        s, state = self.status, self.state
        model = f" ({s['model'].removesuffix('.gguf')})" if s.get("model") else ""
        done, total = int(s.get("done") or 0), int(s.get("total") or 0)
        self.label.setStyleSheet("")
        wrap, tooltip = False, None
        bar: tuple[int, int] | None = None  # (value, maximum); maximum 0 = busy
        pause = state in ("embedding", "paused", "ready")
        settings = False

        if self.downloading and state in _WITHOUT_MODEL:
            p = self.download_progress
            tooltip = "Downloading the embedding model" + (f": {describe_progress(p)}" if p else "…")
            if p is None:
                text = "Model download: starting…"
            elif p.total and p.total >= 1_000_000:
                text = f"Model download: {p.downloaded / 1e6:.1f} / {megabytes(p.total)}"
            else:
                text = f"Model download: {megabytes(p.downloaded)}" + (f" / {megabytes(p.total)}" if p.total else "")
            bar = (int(1000 * p.fraction), 1000) if p is not None and p.fraction is not None else (0, 0)
            pause, settings = False, True
        elif state == "error":
            reason = str(s.get("error") or "unknown error")
            text = f"Semantic search unavailable: {headline(reason)}"
            self.label.setStyleSheet(WARN_STYLE)
            wrap, tooltip = True, reason
            settings = True
        elif state == "embedding" and total:
            text = f"Semantic index: embedding {done} / {total} entries{model}"
            bar = (done, total)
        elif state == "embedding":
            text = f"Semantic index: checking {int(s.get('entries') or 0)} entries{model}…"
            bar = (0, 0)
        elif state == "paused":
            text = (
                f"Semantic index: paused at {done} / {total} entries{model}"
                if total
                else f"Semantic index: paused{model}"
            )
            bar = (done, max(total, 1))
        elif state == "ready" and not int(s.get("entries") or 0):
            # Every vault disabled or empty: nothing to embed, so nothing to pause or resume either
            text = "Semantic index: no entries to embed"
            pause = False
        elif state == "ready":
            embedded, entries = int(s.get("embedded") or 0), int(s.get("entries") or 0)
            text = f"Semantic index: ready, {embedded} of {entries} entries embedded{model}"
            if self.paused:
                text += " · embedding new and changed entries is paused"
            # Nothing is being embedded, so a Pause would do nothing visible; an edit starts a pass
            # ("embedding"), which brings it back. Resume stays: new and changed entries wait for it.
            pause = self.paused
        else:
            text = "Semantic index: waiting for the vault index…"
            pause = False

        self.label.show_text(text, wrap, tooltip)
        self.bar.setTextVisible(self.downloading and state in _WITHOUT_MODEL)  # a percentage, beside bytes
        if bar is None:
            self.bar.hide()
        else:
            self.bar.setRange(0, bar[1])
            self.bar.setValue(bar[0])
            self.bar.show()
        self.pause_button.setVisible(pause)
        self.pause_button.setText("Resume" if self.paused else "Pause")
        self.pause_button.setToolTip(
            "Go on embedding the vault's entries"
            if self.paused
            else "Stop embedding entries for now (searches use what is done); remembered across restarts"
        )
        self.settings_button.setVisible(settings)
