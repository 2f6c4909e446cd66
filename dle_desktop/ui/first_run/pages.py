"""The first-run guide's second and third steps: the embedding model (the Settings → Embeddings
model chooser itself, so the download, its progress, cancel and resume, and the file check are the
ones the app already has) and connecting SillyTavern (what is installed where, and the way to the
SillyTavern view that installs the bridge)."""

from __future__ import annotations

import asyncio
import html
import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWizardPage
from shiboken6 import isValid

from dle_desktop.ui.first_run.vault_page import ERROR_STYLE, OK_STYLE, WARN_STYLE
from dle_desktop.ui.settings.embeddings import EmbeddingsPage
from dle_desktop.ui.settings.model_download import megabytes
from dle_desktop.ui.settings.retrieval import model_name
from dle_desktop.ui.sillytavern.common import in_thread
from dle_desktop.ui.sillytavern.installs_table import InstallsFound, scan

log = logging.getLogger(__name__)

#: The default model's licence, from its model card (Qwen/Qwen3-Embedding-0.6B-GGUF). The model
#: spec has no field for it; one named `licence` there wins when it is added.
DEFAULT_MODEL_LICENCE = "Apache-2.0"
LICENCE_URL = "https://www.apache.org/licenses/LICENSE-2.0"


def _label(text: str = "", style: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet(style)
    return label


def model_facts(spec) -> str:
    """Name, size, licence and how the file is checked, as one rich-text paragraph."""
    name = spec.description or spec.filename
    size = f"{megabytes(spec.size)} download" if spec.size else "a one-time download"
    licence = getattr(spec, "licence", None) or DEFAULT_MODEL_LICENCE
    check = (
        "its SHA-256 is pinned and checked before the model is used"
        if spec.sha256
        else "its SHA-256 is checked against the one the server publishes before the model is used"
    )
    return (
        f'<b>{html.escape(name)}</b>: {size}, licence <a href="{LICENCE_URL}">{html.escape(licence)}</a>; '
        f"{check}. It runs on this computer: no text leaves it."
    )


class ModelPage(QWizardPage):
    def __init__(self, guide) -> None:
        super().__init__()
        self.guide = guide
        self.setTitle("Step 2 of 3: The embedding model (optional)")
        self.setSubTitle("With it DLE also finds entries whose meaning is close to the chat, not only their keywords.")
        download = guide.app.model_download
        self.facts = _label(model_facts(download.spec))
        self.facts.setTextFormat(Qt.TextFormat.RichText)
        self.facts.setOpenExternalLinks(True)
        # The Settings page itself, showing only its model chooser: one download UI, not two.
        self.embeddings = EmbeddingsPage(guide.base_settings, download)
        for box in self.embeddings.findChildren(QGroupBox):
            box.setVisible(box.title() == "Embedding model")
        layout = self.embeddings.layout()
        assert layout is not None  # EmbeddingsPage lays itself out
        layout.setContentsMargins(0, 0, 0, 0)
        self.embeddings.use_file.toggled.connect(lambda *_: self.completeChanged.emit())
        self.embeddings.path.textChanged.connect(lambda *_: self.completeChanged.emit())
        self.note = _label()
        self.say_what_skip_leaves()
        layout = QVBoxLayout(self)
        layout.addWidget(self.facts)
        layout.addWidget(self.embeddings)
        layout.addWidget(self.note)
        layout.addStretch(1)

    def initializePage(self) -> None:
        self.say_what_skip_leaves()

    def say_what_skip_leaves(self) -> None:
        """Skip leaves semantic search as it is now (off on a first start; on, with its model, when
        the guide is opened again after choosing one), and the note says which."""
        settings = self.guide.app.runtime.ctx.settings
        if settings.semantic_enabled:
            model = model_name(settings.embedding_model_path)
            self.note.setText(
                "<b>Next</b> uses the chosen model for semantic search; a download still under way "
                "carries on after the guide closes, and the model is used when it is done. "
                f"<b>Skip</b> leaves semantic search on (model {html.escape(model)}), as it is now; "
                "Settings → Embeddings turns it off."
            )
        else:
            self.note.setText(
                "<b>Next</b> turns semantic search on with the chosen model; a download still under "
                "way carries on after the guide closes, and semantic search starts when it is done. "
                "<b>Skip</b> keeps keyword retrieval only: it works without a model, and "
                "Settings → Embeddings adds one later."
            )

    @property
    def download(self):
        return self.embeddings.download

    def problem(self) -> str | None:
        return self.embeddings.problem()

    def changes(self) -> tuple[dict, dict[str, str]]:
        values = self.embeddings.values()
        return {"semantic_enabled": True, "embedding_model_path": values["embedding_model_path"]}, {}


class SillyTavernPage(QWizardPage):
    def __init__(self, guide) -> None:
        super().__init__()
        self.guide = guide
        #: The home folder searched for installs (None: the user's); tests point it elsewhere.
        self.home: Path | None = None
        self.scan_task: asyncio.Future | None = None
        self.found: InstallsFound = []
        self.setTitle("Step 3 of 3: Connect SillyTavern")
        self.setSubTitle("SillyTavern asks DLE for lore through a small bridge extension.")
        steps = _label(
            '<ol style="margin-left: 0px; -qt-list-indent: 1;">'
            "<li>Find your SillyTavern (below).</li>"
            "<li>Open the SillyTavern view (Ctrl+5) and press <b>Install</b>: it copies the bridge "
            "into SillyTavern with DLE's address and key.</li>"
            "<li>Reload SillyTavern's page in the browser: it connects by itself.</li></ol>"
        )
        self.found_label = _label()
        self.found_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.find_button = QPushButton("&Find SillyTavern installs")
        self.find_button.setToolTip("Look in the usual places (and the folders chosen in the SillyTavern view)")
        self.find_button.clicked.connect(lambda *_: self.start_scan())
        self.open_button = QPushButton("&Open the SillyTavern view")
        self.open_button.setToolTip(
            "Close this guide (keeping what it applied) and show the SillyTavern view, where the bridge is installed"
        )
        self.open_button.clicked.connect(lambda *_: guide.open_sillytavern())
        self.open_button.setDefault(False)
        buttons = QHBoxLayout()
        buttons.addWidget(self.find_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        later = _label(
            "Not using SillyTavern yet? Finish here: DLE Desktop works on its own (Test a chat in the "
            "Vault view), and View → SillyTavern is there when you are ready."
        )
        layout = QVBoxLayout(self)
        layout.addWidget(steps)
        layout.addLayout(buttons)
        layout.addWidget(self.found_label)
        layout.addSpacing(12)
        layout.addWidget(later)
        layout.addStretch(1)

    def initializePage(self) -> None:
        if self.scan_task is None:  # once: Back and Next again need not look again
            self.start_scan()

    def start_scan(self) -> asyncio.Future:
        self.scan_task = asyncio.ensure_future(self.find_installs())
        return self.scan_task

    async def find_installs(self) -> list:
        self.find_button.setEnabled(False)
        self.found_label.setStyleSheet("")
        self.found_label.setText("Looking for SillyTavern…")
        folders = tuple(self.guide.app.runtime.ctx.settings.st_folders)
        problem: str | None
        try:
            found = await in_thread(scan, folders, self.home)
        except Exception as exc:
            log.exception("looking for SillyTavern installs failed")
            found, problem = [], f"Looking for SillyTavern failed: {exc}"
        else:
            problem = None
        if not isValid(self):  # the guide was closed while the worker looked
            return found
        self.find_button.setEnabled(True)
        if problem:
            self.found_label.setStyleSheet(ERROR_STYLE)
            self.found_label.setText(problem)
            return []
        self.found = found
        self.found_label.setText(found_text(self.found))
        self.found_label.setStyleSheet(OK_STYLE if self.found else WARN_STYLE)
        return self.found


def found_text(found: InstallsFound) -> str:
    if not found:
        return (
            "No SillyTavern install found in the usual places. If you have one, open the SillyTavern view "
            "and choose its folder (the one holding server.js)."
        )
    lines = []
    for st, copies in found:
        version = f" (SillyTavern {st.version})" if st.version else ""
        bridge = "the bridge is installed" if copies else "the bridge is not installed yet"
        lines.append(f"✔ {st.root}{version}: {bridge}")
    return "\n".join(lines)
