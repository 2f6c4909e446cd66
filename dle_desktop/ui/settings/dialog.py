"""Settings: the vaults (folders and Obsidian REST), how they merge, and the app's own options.
API keys typed here go to the keyring (or the private key file without one), never to settings.json."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dle_desktop.desktop.autostart import for_paths
from dle_desktop.errors import DleError
from dle_desktop.state.settings import Settings, VaultConfig
from dle_desktop.ui.bridge import ADDED, COMMAND_LINE, SAMPLE, SAVED, SECOND_LAUNCH, SessionVaults, VaultRow
from dle_desktop.ui.settings.embeddings import EmbeddingsPage
from dle_desktop.ui.settings.model_download import ModelDownload
from dle_desktop.ui.settings.retrieval import RetrievalPage
from dle_desktop.ui.settings.writers import WritersPage, channel_state


def unique_name(base: str, taken: set[str]) -> str:
    name, n = base or "Vault", 2
    while name.lower() in taken:
        name = f"{base} {n}"
        n += 1
    return name


def source_text(row: VaultRow) -> str:
    """The Source column: where a vault came from, and whether this session uses it."""
    return {
        SAVED: "saved" if row.in_use else "saved · not in use now",
        COMMAND_LINE: "command line · this session",
        SECOND_LAUNCH: "second launch · this session",
        ADDED: "added · this session",
        SAMPLE: "bundled sample",
    }.get(row.origin, row.origin)


def source_tooltip(row: VaultRow) -> str:
    if row.origin == SAVED:
        return (
            "Saved in settings.json; opens at every start."
            if row.in_use
            else "Saved in settings.json, but this session uses the vaults given with --vault instead; "
            "it opens at the next start without --vault."
        )
    if row.origin == SAMPLE:
        return "The bundled sample world opens while no vault is saved: add your own folder to replace it."
    return "Open for this session only (not saved); it closes when DLE Desktop quits."


class RestVaultDialog(QDialog):
    """Name, address and key of an Obsidian Local REST API vault, with a connection test."""

    def __init__(self, parent=None, cfg: VaultConfig | None = None, key: str | None = None, bridge=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Obsidian REST vault")
        self.bridge = bridge
        self.name = QLineEdit(cfg.name if cfg else "Obsidian")
        self.host = QLineEdit(cfg.host if cfg else "127.0.0.1")
        self.port = QSpinBox(minimum=1, maximum=65535, value=cfg.port if cfg else 27123)
        self.https = QCheckBox("Use HTTPS (the plugin's self-signed certificate must be trusted)")
        self.https.setChecked(bool(cfg and cfg.https))
        self.https.toggled.connect(
            lambda on: self.port.setValue(
                27124
                if on and self.port.value() == 27123
                else 27123
                if not on and self.port.value() == 27124
                else self.port.value()
            )
        )
        self.key = QLineEdit(key or "")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("from Obsidian → Settings → Local REST API")
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        test = QPushButton("Test connection")
        test.clicked.connect(lambda: asyncio.ensure_future(self._test()))
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Host", self.host)
        form.addRow("Port", self.port)
        form.addRow("", self.https)
        form.addRow("API key", self.key)
        store_problem = getattr(getattr(parent, "secrets", None), "problem", None)
        if store_problem:
            note = QLabel(store_problem)
            note.setWordWrap(True)
            note.setStyleSheet("color: #a15c00")
            form.addRow("", note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        row = QHBoxLayout()
        row.addWidget(test)
        row.addWidget(self.result_label, 1)
        layout.addLayout(row)
        layout.addWidget(buttons)

    def config(self, enabled: bool = True) -> VaultConfig:
        return VaultConfig(
            name=self.name.text().strip(),
            kind="obsidian-rest",
            host=self.host.text().strip(),
            port=self.port.value(),
            https=self.https.isChecked(),
            enabled=enabled,
        )

    def _source(self):
        from dle_desktop.vault.obsidian_rest import ObsidianRestSource, check_host_allowed

        check_host_allowed(self.host.text().strip())
        return ObsidianRestSource(
            self.name.text().strip() or "test",
            self.host.text().strip(),
            self.port.value(),
            self.key.text().strip(),
            https=self.https.isChecked(),
            timeout=10.0,
        )

    async def _test(self) -> None:
        self.result_label.setText("Testing…")
        try:
            source = self._source()
            if self.bridge is not None:
                result = await self.bridge.call(source.test_connection())
                await self.bridge.call(source.close())
            else:
                result = await source.test_connection()
                await source.close()
            self.result_label.setText(("✔ " if result.get("ok") else "✖ ") + str(result.get("message", "")))
        except DleError as exc:
            self.result_label.setText(f"✖ {exc}")

    def _accept(self) -> None:
        if not self.name.text().strip():
            QMessageBox.warning(self, "Obsidian REST vault", "Give the vault a name.")
            return
        try:
            from dle_desktop.vault.obsidian_rest import check_host_allowed

            check_host_allowed(self.host.text().strip())
        except DleError as exc:
            QMessageBox.warning(self, "Obsidian REST vault", str(exc))
            return
        self.accept()


class SettingsDialog(QDialog):
    PAGES = ("vaults", "general", "retrieval", "embeddings", "writers")

    def __init__(
        self,
        settings: Settings,
        secrets,
        parent=None,
        bridge=None,
        model_download: ModelDownload | None = None,
        session: SessionVaults | None = None,
        sample_folder: str | None = None,
    ) -> None:
        """`session`: vaults this run opened (shown, not editable here); `sample_folder`: the
        bundled sample's folder while it is the open vault."""
        super().__init__(parent)
        self.session = session or SessionVaults()
        self.sample_folder = sample_folder
        self.setWindowTitle("Settings")
        self.resize(780, 600)
        self.settings = settings
        self.secrets = secrets
        self.bridge = bridge
        self.vaults: list[VaultConfig] = list(settings.vaults)
        self.new_keys: dict[str, str] = {}
        self.result_settings: Settings | None = None

        if model_download is None:  # the app passes its own, which outlives this dialog
            model_download = ModelDownload(bridge.runtime.thread, bridge.paths.models_dir, parent=self)
        self.embeddings = EmbeddingsPage(settings, model_download)
        scroll = QScrollArea()  # long download errors must never squeeze the fields out of sight
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(self.embeddings)
        self.tabs = tabs = QTabWidget()
        tabs.addTab(self._vaults_tab(), "Vaults")
        tabs.addTab(self._general_tab(), "General")
        self.retrieval = RetrievalPage(settings)
        self.retrieval.pageRequested.connect(self.show_page)
        tabs.addTab(self.retrieval, "Retrieval")
        tabs.addTab(scroll, "Embeddings")
        self.writers = WritersPage(
            settings, (lambda channel: channel_state(bridge.ai_channel(channel))) if bridge is not None else None
        )
        tabs.addTab(self.writers, "Writers")
        # Retrieval shows the Embeddings page's values, as edited here so far
        tabs.currentChanged.connect(lambda *_: self.retrieval.show_current(self.embeddings.values()))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(buttons)
        self._fill_table()

    def show_page(self, name: str) -> None:
        self.tabs.setCurrentIndex(self.PAGES.index(name))

    def current_page(self) -> str:
        return self.PAGES[self.tabs.currentIndex()]

    # -- vaults -----------------------------------------------------------------------------
    def _vaults_tab(self) -> QWidget:
        w = QWidget()
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Enabled", "Name", "Kind", "Location", "Source"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        self.table.itemChanged.connect(self._enabled_changed)
        self.table.doubleClicked.connect(lambda *_: self.edit_selected())
        buttons = QVBoxLayout()
        for label, slot in (
            ("Add folder…", self.add_folder_dialog),
            ("Add Obsidian REST…", self.add_rest),
            ("Edit…", self.edit_selected),
            ("Remove", self.remove_selected),
            ("Move up", lambda: self.move_selected(-1)),
            ("Move down", lambda: self.move_selected(1)),
        ):
            b = QPushButton(label)
            b.clicked.connect(lambda *_, s=slot: s())
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.conflict = QComboBox()
        self.conflict.addItems(["all", "first", "last", "merge"])
        self.conflict.setCurrentText(self.settings.multi_vault_conflict_resolution)
        self.conflict.setToolTip(
            "Entries with the same title in several vaults: keep all copies, the first or last "
            "vault's copy, or merge them into one"
        )
        row = QHBoxLayout()
        row.addWidget(self.table, 1)
        row.addLayout(buttons)
        form = QFormLayout()
        form.addRow("Same title in several vaults", self.conflict)
        hint = QLabel(
            "The first enabled vault is the primary one: it supplies DeepLore/field-definitions.yaml. "
            "With no vault, the bundled sample vault opens."
        )
        hint.setWordWrap(True)
        layout = QVBoxLayout(w)
        self.session_note: QLabel | None = None
        if self.session:
            self.session_note = QLabel(self._session_note())
            self.session_note.setWordWrap(True)
            self.session_note.setStyleSheet("color: #a15c00")
            layout.addWidget(self.session_note)
        layout.addLayout(row)
        layout.addLayout(form)
        layout.addWidget(hint)
        return w

    def _session_note(self) -> str:
        if self.session.replaces_saved:
            return (
                "This session uses the vaults given on the command line (--vault) instead of the saved ones. "
                "They stay open until DLE Desktop quits and are not saved; changes to the saved vaults apply "
                "from the next start without --vault."
            )
        return "This session also has vaults open that are not saved; they stay open until DLE Desktop quits."

    def _fill_table(self) -> None:
        """Saved vaults (editable, row i = saved vault i), then the ones this session opened besides them."""
        rows = self.session.rows(self.vaults, self.sample_folder)
        self.table.blockSignals(True)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            saved = r < len(self.vaults)
            check = QTableWidgetItem()
            if saved:
                check.setFlags(
                    Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                )
                check.setCheckState(Qt.CheckState.Checked if self.vaults[r].enabled else Qt.CheckState.Unchecked)
            cells = [
                check,
                QTableWidgetItem(row.name),
                QTableWidgetItem("folder" if row.kind == "folder" else "Obsidian REST"),
                QTableWidgetItem(row.location),
                QTableWidgetItem(source_text(row)),
            ]
            for c, item in enumerate(cells):
                if not saved:  # shown so the page says what is open, but there is nothing to edit
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                    item.setForeground(self.palette().placeholderText())
                if c:
                    item.setToolTip(source_tooltip(row))
                self.table.setItem(r, c, item)
        self.table.resizeColumnToContents(4)
        self.table.blockSignals(False)

    def _enabled_changed(self, item: QTableWidgetItem) -> None:
        if item.column() == 0 and item.row() < len(self.vaults):
            r = item.row()
            v = self.vaults[r]
            self.vaults[r] = VaultConfig(**{**v.to_json(), "enabled": item.checkState() == Qt.CheckState.Checked})

    def _selected(self) -> int | None:
        """The selected saved vault's index; rows of session vaults are not editable."""
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows and rows[0].row() < len(self.vaults) else None

    def add_folder(self, folder: str) -> VaultConfig:
        path = Path(folder).expanduser().resolve()
        cfg = VaultConfig(
            name=unique_name(path.name, {v.name.lower() for v in self.vaults}), kind="folder", path=str(path)
        )
        self.vaults.append(cfg)
        self._fill_table()
        return cfg

    def add_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a vault folder")
        if folder:
            self.add_folder(folder)

    def add_rest(self) -> None:
        dlg = RestVaultDialog(self, bridge=self.bridge)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            cfg = dlg.config()
            cfg = VaultConfig(**{**cfg.to_json(), "name": unique_name(cfg.name, {v.name.lower() for v in self.vaults})})
            self.vaults.append(cfg)
            if dlg.key.text().strip():
                self.new_keys[cfg.secret_id] = dlg.key.text().strip()
            self._fill_table()

    def edit_selected(self) -> None:
        r = self._selected()
        if r is None:
            return
        v = self.vaults[r]
        if v.kind == "folder":
            folder = QFileDialog.getExistingDirectory(self, "Choose the vault folder", v.path)
            if folder:
                self.vaults[r] = VaultConfig(**{**v.to_json(), "path": str(Path(folder).resolve())})
        else:
            dlg = RestVaultDialog(self, v, self.new_keys.get(v.secret_id) or self.secrets.get(v.secret_id), self.bridge)
            if dlg.exec() == QDialog.DialogCode.Accepted:
                self.vaults[r] = dlg.config(enabled=v.enabled)
                key = dlg.key.text().strip()
                if key:
                    self.new_keys[self.vaults[r].secret_id] = key
        self._fill_table()

    def remove_selected(self) -> None:
        r = self._selected()
        if r is not None:
            del self.vaults[r]
            self._fill_table()

    def move_selected(self, delta: int) -> None:
        r = self._selected()
        if r is None or not 0 <= r + delta < len(self.vaults):
            return
        self.vaults[r], self.vaults[r + delta] = self.vaults[r + delta], self.vaults[r]
        self._fill_table()
        self.table.selectRow(r + delta)

    # -- general ----------------------------------------------------------------------------
    def _general_tab(self) -> QWidget:
        s = self.settings
        w = QWidget()
        form = QFormLayout(w)
        self.port = QSpinBox(minimum=0, maximum=65535, value=s.server_port)
        self.port.setToolTip("SillyTavern connects to http://127.0.0.1:<port>; 0 picks a free port")
        self.server_enabled = QCheckBox("Run the local HTTP server for SillyTavern")
        self.server_enabled.setChecked(s.server_enabled)
        self.close_to_tray = QCheckBox("Closing the window keeps DLE Desktop running in the tray")
        self.close_to_tray.setChecked(s.close_to_tray)
        self.toasts = QCheckBox("Show a notification when vault notes change")
        self.toasts.setChecked(s.show_sync_toasts)
        self.watch = QCheckBox("Watch folder vaults for changes")
        self.watch.setChecked(s.watch_folders)
        self.poll = QSpinBox(minimum=0, maximum=3600, value=s.sync_polling_interval, suffix=" s")
        self.poll.setToolTip("How often Obsidian REST vaults are re-read (0 = only on Sync now)")
        self.lenient = QCheckBox("Lenient authoring (accept Keys:, scandepth:, comma-separated keys…)")
        self.lenient.setChecked(s.lenient_authoring)
        self.fields_path = QLineEdit(s.field_definitions_path)
        # Not a setting: the login item itself is the state (autostart.py), read afresh here.
        self.autostart = for_paths(self.bridge.paths if self.bridge is not None else None)
        self.start_with_system = QCheckBox("Start with the system (in the tray)")
        self.start_with_system.setChecked(self.autostart.is_enabled())
        self.start_with_system.setToolTip(
            f"At login DLE Desktop starts in the tray, without its window.\nLogin item: {self.autostart.describe()}"
        )
        form.addRow("Server port", self.port)
        form.addRow("", self.server_enabled)
        form.addRow("", self.start_with_system)
        form.addRow("", self.close_to_tray)
        form.addRow("", self.toasts)
        form.addRow("", self.watch)
        form.addRow("Poll REST vaults every", self.poll)
        form.addRow("", self.lenient)
        form.addRow("Field definitions file", self.fields_path)
        return w

    def build_settings(self) -> Settings:
        return self.settings.replace(
            vaults=[v.to_json() for v in self.vaults],
            multi_vault_conflict_resolution=self.conflict.currentText(),
            server_port=self.port.value(),
            server_enabled=self.server_enabled.isChecked(),
            close_to_tray=self.close_to_tray.isChecked(),
            show_sync_toasts=self.toasts.isChecked(),
            watch_folders=self.watch.isChecked(),
            sync_polling_interval=self.poll.value(),
            lenient_authoring=self.lenient.isChecked(),
            field_definitions_path=self.fields_path.text().strip(),
            **self.embeddings.values(),
            **self.retrieval.values(),
            **self.writers.values(),
        )

    def _accept(self) -> None:
        if self.embeddings.problem():  # said under the model field; show it there
            self.show_page("embeddings")
            self.embeddings.path.setFocus()
            return
        problem = self.retrieval.problem()
        if problem:
            self.show_page("retrieval")
            QMessageBox.warning(self, "Settings", problem)
            return
        problem = self.writers.problem()
        if problem:
            self.show_page("writers")
            QMessageBox.warning(self, "Settings", problem)
            return
        try:
            self.result_settings = self.build_settings()
            if self.start_with_system.isChecked() != self.autostart.is_enabled():
                self.autostart.set_enabled(self.start_with_system.isChecked())
        except DleError as exc:
            QMessageBox.warning(self, "Settings", str(exc))
            return
        self.accept()
