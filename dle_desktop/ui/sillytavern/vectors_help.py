"""The SillyTavern view's vector panels: routing SillyTavern's Vector Storage through DLE Desktop
(a setting, off by default), and the manual setup of a stock SillyTavern's embedding sources
(llama.cpp, vLLM, Ollama, KoboldCpp) pointed at this server, each value with a Copy button."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QGridLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QVBoxLayout

from dle_desktop.ui.channels.profile_editor import ERROR_STYLE, MUTED_STYLE, OK_STYLE, note
from dle_desktop.ui.sillytavern.common import copy_text

#: Any name does: DLE Desktop embeds with its own local model whatever the request names.
MODEL_NAME = "dle-desktop"

#: (source as SillyTavern's Vector Storage lists it, whether it also needs a model name)
SOURCES = (("llama.cpp", False), ("vLLM", True), ("Ollama", True), ("KoboldCpp", False))


class VectorRoutingPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Vector routing")
        self.view = view
        self.route = QCheckBox("Route SillyTavern's Vector Storage through DLE Desktop")
        self.route.setToolTip(
            "The bridge sends Vector Storage's requests (chats, files, Data Bank, World Info) "
            "to DLE Desktop, which embeds with its local model and keeps its own index"
        )
        self.route.toggled.connect(self._toggled)
        self.message = note()
        layout = QVBoxLayout(self)
        layout.addWidget(self.route)
        layout.addWidget(
            note(
                "Off by default. SillyTavern's own vector index is left untouched, so switching back loses nothing.",
                MUTED_STYLE,
            )
        )
        layout.addWidget(self.message)
        self.message.hide()
        self.fill()

    def fill(self) -> None:
        self.route.blockSignals(True)
        self.route.setChecked(bool(getattr(self.view.current_settings(), "st_vector_routing", False)))
        self.route.blockSignals(False)

    def _toggled(self, on: bool) -> None:
        problem = self.view.save_settings(st_vector_routing=on)
        self.message.show()
        if problem:
            self.message.setText(f"Not saved: {problem}")
            self.message.setStyleSheet(ERROR_STYLE)
            self.fill()
            return
        self.message.setText(
            "On: SillyTavern's next vector request goes to DLE Desktop."
            if on
            else "Off: SillyTavern uses its own Vector Storage again."
        )
        self.message.setStyleSheet(OK_STYLE)


class VectorSourcesPanel(QGroupBox):
    """What to enter in SillyTavern's Vector Storage to use DLE Desktop's embedder without the bridge."""

    def __init__(self, view) -> None:
        super().__init__("Vector Storage sources (manual setup)")
        self.view = view
        self.url_fields: dict[str, QLineEdit] = {}
        self.copy_buttons: dict[str, QPushButton] = {}
        self.model_fields: dict[str, QLineEdit] = {}
        self.model_buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        row = 0
        for name, needs_model in SOURCES:
            grid.addWidget(QLabel(f"<b>{name}</b>"), row, 0)
            field, button = self._value("", f"Copy the address for SillyTavern's {name} source")
            self.url_fields[name], self.copy_buttons[name] = field, button
            grid.addWidget(field, row, 1)
            grid.addWidget(button, row, 2)
            row += 1
            if needs_model:
                label = QLabel(f"{name} model")
                label.setToolTip(
                    "SillyTavern needs a model name for this source; any name does, DLE Desktop "
                    "embeds with its own model"
                )
                label.setIndent(12)
                field, button = self._value(MODEL_NAME, f"Copy a model name for the {name} source")
                self.model_fields[name], self.model_buttons[name] = field, button
                grid.addWidget(label, row, 0)
                grid.addWidget(field, row, 1)
                grid.addWidget(button, row, 2)
                row += 1
        self.message = note()
        layout = QVBoxLayout(self)
        layout.addWidget(
            note(
                "Without the bridge: in SillyTavern's Extensions → Vector Storage, choose one of these "
                "sources, tick “Use secondary URL” and enter its address (and a model, where asked: "
                "any name). DLE Desktop embeds with its own model.",
                MUTED_STYLE,
            )
        )
        layout.addLayout(grid)
        layout.addWidget(
            note(
                "SillyTavern 1.12 has no secondary URL: enter the address as that backend's URL under "
                "API Connections → Text Completion.",
                MUTED_STYLE,
            )
        )
        layout.addWidget(self.message)
        self.message.hide()
        self.fill()

    def _value(self, text: str, tip: str) -> tuple[QLineEdit, QPushButton]:
        field = QLineEdit(text)
        field.setReadOnly(True)
        field.setMinimumWidth(120)
        button = QPushButton("Copy")
        button.setToolTip(tip)
        button.clicked.connect(lambda *_: self.copy(field.text()))
        return field, button

    def fill(self) -> None:
        url = self.view.server_url()
        for field in self.url_fields.values():
            if field.text() != url:
                field.setText(url)

    def copy(self, text: str) -> None:
        copy_text(text)
        self.message.show()
        self.message.setText(f"Copied {text}")
        self.message.setStyleSheet(OK_STYLE)
