"""The connection profile editor: one named AI connection (provider, server, model, key, headers)
with a cancellable connection test. It only edits: the Channels view keeps the result and saves it
with everything else on Apply (the key then goes to the keyring, never to settings.json)."""

from __future__ import annotations

import asyncio
import re
import secrets as _random
from collections.abc import Awaitable, Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.ai.service import connection_profile
from dle_desktop.ai.types import (
    AZURE_DEFAULT_API_VERSION,
    FLAVOR_LABELS,
    LOADED_MODEL_HINT,
    default_base_url,
    model_optional,
)
from dle_desktop.errors import DleError
from dle_desktop.state.settings import OPENAI_FLAVORS, PROVIDERS, ProfileConfig

OK_STYLE = "color: #2e7d32"
WARN_STYLE = "color: #a15c00"
ERROR_STYLE = "color: #b3261e"
MUTED_STYLE = "color: palette(placeholder-text)"

PROVIDER_LABELS = {
    "openai": "OpenAI-compatible",
    "anthropic": "Anthropic",
    "gemini": "Google Gemini",
    "ollama": "Ollama (native API)",
}
#: Placeholders for the flavors that have no built-in address.
URL_HINTS = {
    "custom": "http://127.0.0.1:5000/v1",
    "azure": "https://YOUR-RESOURCE.openai.azure.com",
}

#: (ok, message, latency ms), as AiService.test_profile answers
TestResult = tuple[bool, str, int]
Tester = Callable[[ProfileConfig, "str | None"], Awaitable[TestResult]]


def new_profile_id(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A slug of the name and a short random suffix; never changes once given."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24].strip("-") or "profile"
    while True:
        pid = f"{slug}-{_random.token_hex(3)}"
        if pid not in taken:
            return pid


def key_status_text(state: str, persistent: bool, where: str | None = None) -> tuple[str, str]:
    """What to say about a profile's key, and in which style. state: stored | pending | cleared | none.
    `where`: the secret store's own words (keyring, a private file, or memory)."""
    where = where or ("the system keyring" if persistent else "memory for this session only (no system keyring)")
    if state == "stored":
        return f"A key is stored in {where}. Type a new one to replace it.", OK_STYLE
    if state == "pending":
        return f"A new key will be stored in {where} when you apply.", WARN_STYLE
    if state == "cleared":
        return "The stored key will be removed when you apply.", WARN_STYLE
    return "No key stored (local servers usually need none).", MUTED_STYLE


def scrub_key(message: str, key: str | None) -> str:
    """A server may echo what it was sent; a typed key never reaches the window."""
    if key and len(key) >= 4 and key in message:
        message = message.replace(key, "••••")
    return message


def note(text: str = "", style: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    label.setStyleSheet(style)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class TestStrip(QWidget):
    """[Test] [busy bar] [Cancel] result — a connection test that shows progress and can be cancelled."""

    def __init__(self, label: str = "Test connection", parent=None) -> None:
        super().__init__(parent)
        self.button = QPushButton(label)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setTextVisible(False)
        self.busy.setFixedWidth(70)
        self.busy.setFixedHeight(12)
        self.busy.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the test; the request is aborted")
        self.cancel_button.hide()
        self.result = note()
        row = QHBoxLayout()
        row.addWidget(self.button)
        row.addWidget(self.busy)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.result)
        self.result.hide()
        self.task: asyncio.Task | None = None
        self.cancel_button.clicked.connect(lambda *_: self.cancel())

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self, work: Awaitable[TestResult], key: str | None = None) -> asyncio.Task:
        self.cancel()
        self._set_busy(True)
        self.show_text("Testing…", MUTED_STYLE)
        self.task = asyncio.ensure_future(self._run(work, key))
        return self.task

    async def _run(self, work: Awaitable[TestResult], key: str | None) -> None:
        try:
            ok, message, ms = await work
        except asyncio.CancelledError:
            self.show_text("Test cancelled.", MUTED_STYLE)
            self._set_busy(False)
            raise
        except Exception as exc:  # noqa: BLE001 - a test must report, never take the window down
            ok, message, ms = False, str(exc) or type(exc).__name__, 0
        message = scrub_key(message, key)
        if not ok and ms:
            message += f" (after {ms} ms)"
        self.show_text(("✓ " if ok else "✗ ") + message, OK_STYLE if ok else ERROR_STYLE)
        self._set_busy(False)

    def cancel(self) -> None:
        if self.task is not None and self.running:
            self.task.cancel()

    def show_text(self, text: str, style: str = "") -> None:
        self.result.setVisible(bool(text))
        self.result.setText(text)
        self.result.setStyleSheet(style)

    def _set_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.button.setEnabled(not busy)


class ProfileEditor(QDialog):
    """Add or edit one connection profile. After `accepted`: `profile()`, `new_key` (typed, or None)
    and `clear_key` (the stored key is to be removed)."""

    def __init__(
        self,
        profile: ProfileConfig | None,
        *,
        taken_names: set[str],
        taken_ids: set[str],
        key_state: str,
        persistent: bool,
        tester: Tester | None = None,
        pending_key: str | None = None,
        parent=None,
        key_location: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit connection profile" if profile else "New connection profile")
        self.setMinimumWidth(560)
        self.tester = tester
        self.taken_names = {n.lower() for n in taken_names}
        self.pid = profile.id if profile else new_profile_id("profile", taken_ids)
        self._id_from_name = profile is None  # a new profile's id follows its name until saved
        self._taken_ids = taken_ids
        self.key_state = key_state
        self.persistent = persistent
        self.key_location = key_location
        self.pending_key = pending_key
        self.clear_key = False
        self.new_key: str | None = None
        p = profile or ProfileConfig(id=self.pid, name="", provider="openai", flavor="custom")
        self._url_auto = not p.base_url or p.base_url == default_base_url(p.provider, p.flavor)

        self.name = QLineEdit(p.name)
        self.name.setPlaceholderText("e.g. OpenRouter Haiku, Local llama.cpp")
        self.provider = QComboBox()
        for prov in PROVIDERS:
            self.provider.addItem(PROVIDER_LABELS[prov], prov)
        self.provider.setCurrentIndex(PROVIDERS.index(p.provider))
        self.flavor = QComboBox()
        for fl in OPENAI_FLAVORS:
            self.flavor.addItem(FLAVOR_LABELS.get(fl, fl), fl)
        self.flavor.setCurrentIndex(
            OPENAI_FLAVORS.index(p.flavor) if p.flavor in OPENAI_FLAVORS else OPENAI_FLAVORS.index("custom")
        )
        self.base_url = QLineEdit(p.base_url or default_base_url(p.provider, p.flavor))
        self.model = QLineEdit(p.model)
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setAttribute(Qt.WidgetAttribute.WA_InputMethodEnabled, False)
        self.clear_key_button = QPushButton("Clear key")
        self.clear_key_button.setToolTip("Remove the stored key when you apply")
        self.key_note = note()
        self.key_note.setMinimumWidth(400)  # so the form does not reserve lines for a narrow wrap
        self.timeout = QDoubleSpinBox(minimum=1.0, maximum=1000.0, decimals=1, suffix=" s")
        self.timeout.setValue(p.timeout_s)
        self.timeout.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.timeout.setToolTip("How long Test connection waits; each channel has its own timeout for its calls")
        self.thinking = QCheckBox("Extended thinking (Anthropic and Gemini)")
        self.thinking.setChecked(p.thinking)
        self.thinking.setToolTip("Let the model reason before answering: slower and costs more tokens")
        self.api_version = QLineEdit(p.api_version)
        self.api_version.setPlaceholderText(AZURE_DEFAULT_API_VERSION)
        self.headers = QTableWidget(0, 2)
        self.headers.setHorizontalHeaderLabels(["Header", "Value"])
        self.headers.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.headers.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.headers.setColumnWidth(0, 160)
        self.headers.verticalHeader().hide()
        self.headers.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.headers.setFixedHeight(96)
        for k, v in p.extra_headers:
            self._add_header_row(k, v)
        add_header = QPushButton("Add header")
        remove_header = QPushButton("Remove")
        add_header.clicked.connect(lambda *_: self._add_header_row("", "", edit=True))
        remove_header.clicked.connect(lambda *_: self._remove_header_row())

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("&Name", self.name)
        form.addRow("&Provider", self.provider)
        form.addRow("&Server kind", self.flavor)
        form.addRow("Server &URL", self.base_url)
        form.addRow("&Model", self.model)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.clear_key_button)
        form.addRow("API key", key_row)
        form.addRow("", self.key_note)
        form.addRow("Azure API &version", self.api_version)
        form.addRow("", self.thinking)
        form.addRow("&Timeout", self.timeout)
        header_buttons = QVBoxLayout()
        header_buttons.addWidget(add_header)
        header_buttons.addWidget(remove_header)
        header_buttons.addStretch(1)
        header_row = QHBoxLayout()
        header_row.addWidget(self.headers, 1)
        header_row.addLayout(header_buttons)
        form.addRow("Extra headers", header_row)
        header_note = note(
            "Header values are saved in settings.json: put API keys in the key field, "
            "which is kept out of settings.json (in the system keyring, or a private file without one).",
            MUTED_STYLE,
        )
        header_note.setMinimumWidth(400)
        form.addRow("", header_note)
        self.form = form

        self.problem = note(style=ERROR_STYLE)
        self.test = TestStrip()
        self.test.button.setToolTip("Send a tiny request (8 tokens) with these settings and the key typed here")
        self.test.button.clicked.connect(lambda *_: self.run_test())
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(self.test)
        layout.addStretch(1)
        layout.addWidget(self.buttons)

        self.name.textChanged.connect(lambda *_: self.validate())
        self.provider.currentIndexChanged.connect(lambda *_: self._kind_changed())
        self.flavor.currentIndexChanged.connect(lambda *_: self._kind_changed())
        self.base_url.textEdited.connect(self._url_edited)
        self.base_url.textChanged.connect(lambda *_: self.validate())
        for w in (self.model, self.api_version):
            w.textChanged.connect(lambda *_: self.validate())
        self.key.textChanged.connect(lambda *_: self._key_changed())
        self.timeout.valueChanged.connect(lambda *_: self.validate())
        self.headers.itemChanged.connect(lambda *_: self.validate())
        self.clear_key_button.clicked.connect(lambda *_: self._clear_key())
        self.finished.connect(lambda *_: self.test.cancel())
        self._kind_changed(initial=True)
        self._show_key_state()
        self.resize(self.sizeHint().width(), self.sizeHint().height() + 30)

    # -- reading the fields ---------------------------------------------------------------------
    @property
    def provider_name(self) -> str:
        return self.provider.currentData()

    @property
    def flavor_name(self) -> str:
        return self.flavor.currentData() if self.provider_name == "openai" else self.provider_name

    def _headers(self) -> dict[str, str]:
        out = {}
        for r in range(self.headers.rowCount()):
            k = (key.text() if (key := self.headers.item(r, 0)) else "").strip()
            v = (value.text() if (value := self.headers.item(r, 1)) else "").strip()
            if k:
                out[k] = v
        return out

    def raw(self) -> dict:
        url = self.base_url.text().strip()
        if url and url.rstrip("/") == default_base_url(self.provider_name, self.flavor_name):
            url = ""  # the built-in address: follows the default
        return {
            "id": self.pid,
            "name": self.name.text().strip(),
            "provider": self.provider_name,
            "flavor": self.flavor_name,
            "base_url": url,
            "model": self.model.text().strip(),
            "extra_headers": self._headers(),
            "timeout_s": self.timeout.value(),
            "thinking": self.thinking.isChecked() and self.provider_name in ("anthropic", "gemini"),
            "api_version": self.api_version.text().strip() if self.flavor_name == "azure" else "",
        }

    def profile(self) -> ProfileConfig:
        """The profile as edited; raises DleError with a message for the user when it is not valid."""
        config = ProfileConfig.from_json(self.raw())
        connection_profile(config)  # the provider layer's checks (URL shape, model, headers)
        return config

    def validate(self) -> str | None:
        """Show what is wrong (if anything) under the form, and allow Save only when nothing is."""
        problem = None
        name = self.name.text().strip()
        if not name:
            problem = "Give the profile a name."
        elif name.lower() in self.taken_names:
            problem = f"Another profile is already called '{name}'."
        else:
            try:
                self.profile()
            except DleError as exc:
                problem = str(exc)
        self.problem.setText(problem or "")
        self.problem.setVisible(bool(problem))
        self.save_button.setEnabled(problem is None)
        self.test.button.setEnabled(problem is None and self.tester is not None and not self.test.running)
        return problem

    # -- reacting to edits -----------------------------------------------------------------------
    def _set_row_visible(self, field: QWidget, visible: bool) -> None:
        self.form.setRowVisible(field, visible)

    def _kind_changed(self, initial: bool = False) -> None:
        provider, flavor = self.provider_name, self.flavor_name
        default = default_base_url(provider, flavor)
        if self._url_auto and not initial:
            self.base_url.setText(default)
        self.base_url.setPlaceholderText(default or URL_HINTS.get(flavor, "https://…"))
        self._set_row_visible(self.flavor, provider == "openai")
        self._set_row_visible(self.api_version, flavor == "azure")
        self._set_row_visible(self.thinking, provider in ("anthropic", "gemini"))
        if flavor == "azure":
            self.model.setPlaceholderText("the deployment name")
        elif model_optional(provider, flavor):
            self.model.setPlaceholderText(LOADED_MODEL_HINT)
        else:
            self.model.setPlaceholderText(
                "e.g. "
                + {
                    "anthropic": "claude-haiku-4-5",
                    "gemini": "gemini-2.5-flash",
                    "ollama": "llama3.1:8b",
                    "openrouter": "anthropic/claude-haiku-4.5",
                }.get(flavor if provider == "openai" else provider, "the model name")
            )
        self.validate()

    def _url_edited(self, text: str) -> None:
        text = text.strip().rstrip("/")
        self._url_auto = not text or text == default_base_url(self.provider_name, self.flavor_name)

    def _add_header_row(self, key: str, value: str, edit: bool = False) -> None:
        r = self.headers.rowCount()
        self.headers.blockSignals(True)
        self.headers.insertRow(r)
        self.headers.setItem(r, 0, QTableWidgetItem(key))
        self.headers.setItem(r, 1, QTableWidgetItem(value))
        self.headers.blockSignals(False)
        if edit:
            self.headers.setCurrentCell(r, 0)
            item = self.headers.item(r, 0)
            assert item is not None  # set just above
            self.headers.editItem(item)

    def _remove_header_row(self) -> None:
        r = self.headers.currentRow()
        if r < 0:
            r = self.headers.rowCount() - 1
        if r >= 0:
            self.headers.removeRow(r)
            self.validate()

    def _key_changed(self) -> None:
        self._show_key_state()

    def _clear_key(self) -> None:
        self.key.clear()
        self.clear_key = self.key_state in ("stored", "pending", "cleared")
        self.pending_key = None
        self.key_state = "cleared" if self.clear_key else "none"
        self._show_key_state()

    def _show_key_state(self) -> None:
        typed = bool(self.key.text().strip())
        if typed:
            text, style = key_status_text("pending", self.persistent, self.key_location)
        else:
            text, style = key_status_text(self.key_state, self.persistent, self.key_location)
        self.key_note.setText(text)
        self.key_note.setStyleSheet(style)
        self.key.setPlaceholderText(
            "•••••••• (stored; type to replace)"
            if self.key_state in ("stored", "pending")
            else "paste the API key, if the server needs one"
        )
        self.clear_key_button.setEnabled(typed or self.key_state in ("stored", "pending"))

    # -- test and save ---------------------------------------------------------------------------
    def test_key(self) -> str | None:
        """The key a test should send: typed, else the unsaved one, else "" when cleared, else None
        (the stored key, looked up on the engine side)."""
        typed = self.key.text().strip()
        if typed:
            return typed
        if self.pending_key:
            return self.pending_key
        return "" if self.key_state in ("cleared", "none") else None

    def run_test(self) -> asyncio.Task | None:
        if self.tester is None or self.validate() is not None:
            return None
        key = self.test_key()
        task = self.test.start(self.tester(self.profile(), key), key)
        self.validate()
        task.add_done_callback(lambda *_: self.validate())
        return task

    def _accept(self) -> None:
        if self.validate() is not None:
            return
        if self._id_from_name:
            self.pid = new_profile_id(self.name.text().strip(), self._taken_ids)
        typed = self.key.text().strip()
        self.new_key = typed or None
        if typed:
            self.clear_key = False
        self.key.clear()  # the key leaves the widget; the view hands it to the keyring on Apply
        self.test.cancel()
        self.accept()
