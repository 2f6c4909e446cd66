"""Settings → Embeddings: semantic search on/off and its tuning, which embedding model to use (the
default one, downloaded here, or a GGUF file the user already has), and the vector store's
exact-scan limit. The page only edits values; the Settings dialog saves them like all others."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.state.settings import FIELDS, Settings
from dle_desktop.ui.settings.model_download import ModelDownload, describe_progress, megabytes
from dle_desktop.vectors.model_manager import LOCAL_MODEL_HINT, ModelError

OK_STYLE = "color: #2e7d32"
WARN_STYLE = "color: #a15c00"
ERROR_STYLE = "color: #b3261e"


def _doc(name: str) -> str:
    return FIELDS[name].metadata.get("doc", "")


def _note(text: str = "", style: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet(style)
    return label


class EmbeddingsPage(QWidget):
    def __init__(self, settings: Settings, download: ModelDownload, parent=None) -> None:
        super().__init__(parent)
        self.download = download
        self.saved_model_path = settings.embedding_model_path.strip()
        self.file_dialog: QFileDialog | None = None
        self._file_problem: str | None = None

        layout = QVBoxLayout(self)
        layout.addWidget(self._search_group(settings))
        layout.addWidget(self._model_group(settings))
        layout.addWidget(self._store_group(settings))
        layout.addStretch(1)

        download.started.connect(self._download_started)
        download.progressed.connect(self._download_progressed)
        download.finished.connect(self._download_finished)
        download.failed.connect(self._download_failed)
        download.cancelled.connect(self._download_cancelled)
        self._semantic_toggled(self.semantic.isChecked())
        if self.use_file.isChecked():
            self.validate_file()
        self.refresh_model_state()
        if download.running and download.last_progress is not None:
            self._download_progressed(download.last_progress)

    # -- construction -------------------------------------------------------------------------
    def _search_group(self, s: Settings) -> QGroupBox:
        box = QGroupBox("Semantic search")
        self.semantic = QCheckBox("Also add entries whose &meaning is close to the chat, not only keyword matches")
        self.semantic.setChecked(s.semantic_enabled)
        self.semantic.setToolTip("Off by default so results match DeepLore Enhanced. Needs an embedding model (below).")
        self.semantic.toggled.connect(self._semantic_toggled)
        self.top_k = QSpinBox(minimum=1, maximum=50, value=s.semantic_top_k)
        self.top_k.setToolTip(_doc("semantic_top_k"))
        self.min_score = QDoubleSpinBox(
            minimum=-1.0, maximum=1.0, singleStep=0.05, decimals=2, value=s.semantic_min_score
        )
        self.min_score.setToolTip(
            _doc("semantic_min_score") + " 1 = identical meaning; the relative threshold "
            "below does most of the work, so keep this low (0.2)."
        )
        self.relative_margin = QDoubleSpinBox(
            minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=s.semantic_relative_margin
        )
        self.relative_margin.setToolTip(_doc("semantic_relative_margin"))
        self.last_weight = QDoubleSpinBox(
            minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=s.semantic_last_weight
        )
        self.last_weight.setToolTip(_doc("semantic_last_weight"))
        self.rrf_k = QSpinBox(minimum=1, maximum=1000, value=s.semantic_rrf_k)
        self.rrf_k.setToolTip(_doc("semantic_rrf_k") + " Semantic and keyword matches are merged by reciprocal rank.")
        for spin in (self.top_k, self.min_score, self.relative_margin, self.last_weight, self.rrf_k):
            spin.setMaximumWidth(110)
        form = QFormLayout(box)
        form.addRow(self.semantic)
        form.addRow("Semantic matches per generation", self.top_k)
        form.addRow("Minimum similarity", self.min_score)
        form.addRow("Relative threshold (share of best over median)", self.relative_margin)
        form.addRow("Weight of the newest message", self.last_weight)
        form.addRow("Rank fusion constant (RRF k)", self.rrf_k)
        self.need_model_note = _note(style=WARN_STYLE)
        form.addRow(self.need_model_note)
        return box

    def _model_group(self, s: Settings) -> QGroupBox:
        box = QGroupBox("Embedding model")
        self.use_default = QRadioButton(
            f"Use the &default model: {self.download.spec.description or self.download.spec.filename}"
        )
        self.use_file = QRadioButton("Use a GGUF embedding model &file on this computer")
        group = QButtonGroup(self)
        group.addButton(self.use_default)
        group.addButton(self.use_file)
        (self.use_file if self.saved_model_path else self.use_default).setChecked(True)
        group.buttonToggled.connect(lambda *_: self._choice_changed())

        self.model_state = _note()
        self.download_button = QPushButton("Do&wnload")
        self.download_button.clicked.connect(lambda *_: self.start_download())
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p%")
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setToolTip("Stop; what has arrived is kept and the next download resumes from there")
        self.cancel_button.clicked.connect(lambda *_: self.download.cancel())
        self.download_message = _note()

        self.path = QLineEdit(s.embedding_model_path)
        self.path.setPlaceholderText("e.g. Qwen3-Embedding-0.6B-Q8_0.gguf")
        self.path.setClearButtonEnabled(True)
        self.path.editingFinished.connect(self._path_edited)
        self.path.textEdited.connect(lambda *_: self.use_file.setChecked(True))
        browse = QPushButton("&Browse…")
        browse.clicked.connect(lambda *_: self.browse())
        self.browse_button = browse
        self.file_message = _note()

        indent = 22  # lines that belong to a choice sit under its text, not under its radio dot
        grid = QGridLayout(box)
        grid.setColumnMinimumWidth(0, indent)
        grid.setColumnStretch(1, 1)
        grid.addWidget(self.use_default, 0, 0, 1, 3)
        grid.addWidget(self.model_state, 1, 1, 1, 2)
        row = QHBoxLayout()
        row.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignLeft)  # not stretched while the bar is hidden
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        grid.addLayout(row, 2, 1, 1, 2)
        grid.addWidget(self.download_message, 3, 1, 1, 2)
        grid.addWidget(self.use_file, 4, 0, 1, 3)
        grid.addWidget(self.path, 5, 1)
        grid.addWidget(browse, 5, 2)
        grid.addWidget(self.file_message, 6, 1, 1, 2)
        return box

    def _store_group(self, s: Settings) -> QGroupBox:
        box = QGroupBox("Vector store")
        self.ann_threshold = QSpinBox(minimum=0, maximum=100_000_000, value=s.vector_ann_threshold, suffix=" vectors")
        self.ann_threshold.setGroupSeparatorShown(True)
        self.ann_threshold.setMaximumWidth(160)
        self.ann_threshold.setToolTip(_doc("vector_ann_threshold"))
        form = QFormLayout(box)
        form.addRow("Exact search up to", self.ann_threshold)
        form.addRow(
            _note(
                "Larger collections (SillyTavern's chats, files, Data Bank) use an approximate "
                "hnswlib index: much faster, very slightly less exact."
            )
        )
        return box

    # -- values -------------------------------------------------------------------------------
    def values(self) -> dict:
        """The settings this page edits, for `Settings.replace`."""
        return {
            "semantic_enabled": self.semantic.isChecked(),
            "semantic_top_k": self.top_k.value(),
            "semantic_min_score": round(self.min_score.value(), 4),
            "semantic_rrf_k": self.rrf_k.value(),
            "semantic_relative_margin": round(self.relative_margin.value(), 4),
            "semantic_last_weight": round(self.last_weight.value(), 4),
            "embedding_model_path": self.path.text().strip() if self.use_file.isChecked() else "",
            "vector_ann_threshold": self.ann_threshold.value(),
        }

    def problem(self) -> str | None:
        """What must be fixed before saving. A saved path that has since gone bad does not block
        saving other settings: the vault view already says semantic search is unavailable."""
        if not self.use_file.isChecked():
            return None
        path = self.path.text().strip()
        if not path:
            return self._show_file_problem("Choose a model file, or use the default model.")
        problem = self.validate_file()
        return problem if problem and path != self.saved_model_path else None

    # -- the model file -----------------------------------------------------------------------
    def browse(self) -> QFileDialog:
        start = self.path.text().strip()
        start_dir = str(Path(start).expanduser().parent) if start else str(self.download.manager.models_dir)
        dlg = QFileDialog(self, "Choose a GGUF embedding model", start_dir, "GGUF models (*.gguf);;All files (*)")
        dlg.setFileMode(QFileDialog.FileMode.ExistingFile)
        dlg.fileSelected.connect(self.set_model_file)
        self.file_dialog = dlg
        dlg.open()
        return dlg

    def set_model_file(self, path: str) -> str | None:
        self.path.setText(path)
        self.use_file.setChecked(True)
        return self.validate_file()

    def _path_edited(self) -> None:
        if self.use_file.isChecked() and self.path.text().strip():
            self.validate_file()

    def validate_file(self) -> str | None:
        """Check the chosen file and say so under it; returns the problem, if any."""
        path = self.path.text().strip()
        if not path:
            self._file_problem = None
            self.file_message.clear()
            return None
        try:
            model = self.download.manager.local_model(path)
        except ModelError as exc:
            return self._show_file_problem(_sentence(str(exc)))
        self._file_problem = None
        self.file_message.setStyleSheet(OK_STYLE)
        self.file_message.setText(f"✔ {model.name}: a GGUF model ({megabytes(model.stat().st_size)})")
        self._update_need_model()
        return None

    def _show_file_problem(self, message: str) -> str:
        self._file_problem = message
        self.file_message.setStyleSheet(ERROR_STYLE)
        self.file_message.setText(f"✖ {message}")
        self._update_need_model()
        return message

    def _choice_changed(self) -> None:
        if self.use_file.isChecked():
            self.validate_file()
        else:
            self.file_message.clear()
            self._file_problem = None
        self._update_need_model()

    def _semantic_toggled(self, on: bool) -> None:
        for w in (self.top_k, self.min_score, self.relative_margin, self.last_weight, self.rrf_k):
            w.setEnabled(on)
        self._update_need_model()

    def _update_need_model(self) -> None:
        missing = (self.use_default.isChecked() and not self.download.is_available()) or (
            self.use_file.isChecked() and (self._file_problem or not self.path.text().strip())
        )
        self.need_model_note.setVisible(bool(self.semantic.isChecked() and missing))
        self.need_model_note.setText(
            "Semantic search needs an embedding model: download the default model or choose a model file below."
        )

    # -- the default model's download ---------------------------------------------------------
    def start_download(self) -> None:
        self.use_default.setChecked(True)
        self.download.start()

    def refresh_model_state(self) -> None:
        d = self.download
        running = d.running
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        if d.is_available():
            self.model_state.setStyleSheet(OK_STYLE)
            self.model_state.setText(
                f"✔ Downloaded ({megabytes(d.model_path().stat().st_size)}), in {d.manager.models_dir}"
            )
            self.download_button.hide()
        else:
            part = d.partial()
            self.model_state.setStyleSheet("")
            if running:
                self.model_state.setText("Downloading…")
            elif part is None:
                self.model_state.setText(f"Not downloaded yet. It is fetched once and kept in {d.manager.models_dir}.")
            else:
                have, total = part
                of = f" of {megabytes(total)}" if total else ""
                self.model_state.setText(
                    f"Partly downloaded: {megabytes(have)}{of} kept; the download resumes from there."
                )
            self.download_button.setText("Resume do&wnload" if part else "Do&wnload")
            self.download_button.setVisible(True)
            self.download_button.setEnabled(not running)
        self._update_need_model()

    def _download_started(self, resuming) -> None:
        self.download_message.setStyleSheet("")
        self.progress.setValue(0)
        if resuming:
            have, total = resuming
            self.progress.setValue(int(1000 * have / total) if total else 0)
            self.download_message.setText(f"Resuming from {megabytes(have)}…")
        else:
            self.progress.setRange(0, 0)  # busy until the server says how big the file is
            self.download_message.setText("Connecting…")
        self.refresh_model_state()

    def _download_progressed(self, p) -> None:
        if p.fraction is None:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * p.fraction))
        resumed = f" · resumed at {megabytes(p.resumed_from)}" if p.resumed_from else ""
        self.download_message.setText(describe_progress(p) + resumed)

    def _download_finished(self, _path: str) -> None:
        self.progress.setRange(0, 1000)
        self.download_message.setStyleSheet(OK_STYLE)
        self.download_message.setText("Download complete and verified.")
        self.refresh_model_state()

    def _download_failed(self, message: str) -> None:
        self.progress.setRange(0, 1000)
        self.download_message.setStyleSheet(ERROR_STYLE)
        # The hint is written for the command line too; here the alternative is right below.
        message = message.replace(LOCAL_MODEL_HINT, "You can also use a model file you already have (below).")
        self.download_message.setText(f"✖ The download failed: {message}")
        self.refresh_model_state()

    def _download_cancelled(self, kept: str) -> None:
        self.progress.setRange(0, 1000)
        self.download_message.setStyleSheet("")
        self.download_message.setText(f"Download cancelled; {kept}.")
        self.refresh_model_state()


def _sentence(text: str) -> str:
    """Capitalise a message that starts with a plain word ("the model file…"), never a file name."""
    text = text.strip()
    first = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text
