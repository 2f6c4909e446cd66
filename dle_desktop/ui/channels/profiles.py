"""The Channels view's connection profiles: the list, and Add / Edit / Duplicate / Delete. Every
change goes into the view's draft (keys typed in wait in the view until Apply)."""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractButton,
    QGroupBox,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
)

from dle_desktop.ai.channels import LABELS, resolve_channel
from dle_desktop.state.settings import CHANNELS, ProfileConfig
from dle_desktop.ui.channels.common import profile_kind
from dle_desktop.ui.channels.profile_editor import WARN_STYLE, ProfileEditor, new_profile_id, note


class ProfilesPanel(QGroupBox):
    def __init__(self, view) -> None:
        super().__init__("Connection profiles")
        self.view = view
        self.editor: ProfileEditor | None = None
        self.question: QMessageBox | None = None
        self.profile_list = QListWidget()
        self.profile_list.setAlternatingRowColors(True)
        self.profile_list.setMinimumHeight(90)
        self.profile_list.itemActivated.connect(lambda *_: self.edit_profile())
        self.profile_list.currentRowChanged.connect(lambda *_: self._buttons())
        self.add_button = QPushButton("Add…")
        self.edit_button = QPushButton("Edit…")
        self.duplicate_button = QPushButton("Duplicate")
        self.delete_button = QPushButton("Delete")
        self.add_button.setToolTip("A new named connection: provider, server, model and API key")
        self.delete_button.setToolTip("Delete the selected profile (Del); its key leaves the keyring on Apply")
        self.add_button.clicked.connect(lambda *_: self.add_profile())
        self.edit_button.clicked.connect(lambda *_: self.edit_profile())
        self.duplicate_button.clicked.connect(lambda *_: self.duplicate_profile())
        self.delete_button.clicked.connect(lambda *_: self.delete_profile())
        delete_key = QShortcut(QKeySequence.StandardKey.Delete, self.profile_list)
        delete_key.setContext(Qt.ShortcutContext.WidgetShortcut)
        delete_key.activated.connect(lambda: self.delete_profile())
        row = QHBoxLayout()
        for b in (self.add_button, self.edit_button, self.duplicate_button, self.delete_button):
            row.addWidget(b)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.profile_list, 1)
        layout.addLayout(row)
        if view.secrets.problem:
            layout.addWidget(note(view.secrets.problem, WARN_STYLE))

    def fill(self) -> None:
        view = self.view
        current = self.selected_profile_id()
        settings = view.draft_or_current()
        users: dict[str, list[str]] = {}
        for c in CHANNELS:
            r = resolve_channel(settings, c)
            if r.profile is not None and r.mode == "profile":
                users.setdefault(r.profile.id, []).append(LABELS[c])
        self.profile_list.blockSignals(True)
        self.profile_list.clear()
        for p in view.profiles():
            key = {
                "stored": "key stored",
                "pending": "key saved on Apply",
                "cleared": "key removed on Apply",
                "none": "no key",
            }[view.key_state(p.secret_id)]
            item = QListWidgetItem(f"{p.name}\n{profile_kind(p)} · {p.model or 'server default'} · {key}")
            item.setData(Qt.ItemDataRole.UserRole, p.id)
            used = users.get(p.id)
            item.setToolTip(f"Used by {', '.join(used)}" if used else "Not used by any channel")
            self.profile_list.addItem(item)
            if p.id == current:
                self.profile_list.setCurrentItem(item)
        if not view.profiles():
            item = QListWidgetItem("No profiles yet: Add… one for your AI provider\nor local server.")
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.profile_list.addItem(item)
        elif self.profile_list.currentRow() < 0:
            self.profile_list.setCurrentRow(0)
        self.profile_list.blockSignals(False)
        self._buttons()

    def _buttons(self) -> None:
        has = self.selected_profile_id() is not None
        for b in (self.edit_button, self.duplicate_button, self.delete_button):
            b.setEnabled(has)

    def selected_profile_id(self) -> str | None:
        item = self.profile_list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _select_profile(self, pid: str) -> None:
        for r in range(self.profile_list.count()):
            if self.profile_list.item(r).data(Qt.ItemDataRole.UserRole) == pid:
                self.profile_list.setCurrentRow(r)
                return

    # -- editing -----------------------------------------------------------------------------------
    def _tester(self):
        bridge = self.view.bridge
        return lambda config, key: bridge.test_ai_profile(config, key)

    def _open_editor(self, profile: ProfileConfig | None, on_save) -> ProfileEditor:
        view = self.view
        others = [p for p in view.profiles() if profile is None or p.id != profile.id]
        secret_id = profile.secret_id if profile else ""
        editor = ProfileEditor(
            profile,
            taken_names={p.name for p in others},
            taken_ids={p.id for p in view.profiles()},
            key_state=view.key_state(secret_id) if profile else "none",
            persistent=view.secrets.persistent,
            key_location=getattr(view.secrets, "location", None),
            tester=self._tester(),
            pending_key=view.new_keys.get(secret_id),
            parent=view,
        )
        editor.accepted.connect(lambda: on_save(editor))
        editor.finished.connect(lambda *_: editor.deleteLater())
        self.editor = editor
        editor.open()
        return editor

    def add_profile(self) -> ProfileEditor:
        return self._open_editor(None, self._added)

    def _added(self, editor: ProfileEditor) -> None:
        view = self.view
        cfg = editor.profile()
        values: dict[str, Any] = {"connection_profiles": (*view.profiles(), cfg)}
        for c in CHANNELS:  # a channel set to use a profile but with none chosen takes the first one added
            if view.draft[f"{c}_connection_mode"] == "profile" and view.profile(view.draft[f"{c}_profile_id"]) is None:
                values[f"{c}_profile_id"] = cfg.id
        self._take_key(cfg.secret_id, editor)
        view.set_draft(**values)
        self._select_profile(cfg.id)
        view.channel_panel.fill_detail()

    def edit_profile(self, pid: str | None = None) -> ProfileEditor | None:
        pid = pid or self.selected_profile_id()
        profile = self.view.profile(pid) if pid else None
        if profile is None:
            return None
        return self._open_editor(profile, self._edited)

    def _edited(self, editor: ProfileEditor) -> None:
        cfg = editor.profile()
        self._take_key(cfg.secret_id, editor)
        self.view.set_draft(connection_profiles=tuple(cfg if p.id == cfg.id else p for p in self.view.profiles()))
        self._select_profile(cfg.id)

    def _take_key(self, secret_id: str, editor: ProfileEditor) -> None:
        view = self.view
        if editor.new_key:
            view.new_keys[secret_id] = editor.new_key
            view.forget_keys.discard(secret_id)
        elif editor.clear_key:
            view.new_keys.pop(secret_id, None)
            if view.key_state(secret_id) == "stored":
                view.forget_keys.add(secret_id)

    def duplicate_profile(self) -> ProfileConfig | None:
        view = self.view
        source = view.profile(self.selected_profile_id() or "")
        if source is None:
            return None
        taken = {p.name.lower() for p in view.profiles()}
        name, n = f"{source.name} (copy)", 2
        while name.lower() in taken:
            name, n = f"{source.name} (copy {n})", n + 1
        copy = dataclasses.replace(source, id=new_profile_id(name, {p.id for p in view.profiles()}), name=name)
        state = view.key_state(source.secret_id)
        key = view.new_keys.get(source.secret_id) or (view.secrets.get(source.secret_id) if state == "stored" else None)
        if key:
            view.new_keys[copy.secret_id] = key
        view.set_draft(connection_profiles=(*view.profiles(), copy))
        self._select_profile(copy.id)
        return copy

    def _users_of(self, pid: str) -> list[str]:
        view = self.view
        settings = view.draft_or_current()
        users = []
        for c in CHANNELS:
            r = resolve_channel(settings, c)
            if view.draft[f"{c}_profile_id"] == pid and view.draft[f"{c}_connection_mode"] == "profile":
                users.append(LABELS[c])
            elif r.profile is not None and r.profile.id == pid and r.mode == "profile":
                users.append(f"{LABELS[c]} (through AI search)")
        return users

    def delete_profile(self, pid: str | None = None) -> QMessageBox | None:
        pid = pid or self.selected_profile_id()
        profile = self.view.profile(pid) if pid else None
        if not pid or profile is None:
            return None
        chosen = pid
        users = self._users_of(chosen)
        if users:
            text = (
                f"'{profile.name}' is used by {', '.join(users)}. Delete it anyway? Those channels have no "
                "connection until you choose another profile."
            )
        else:
            text = f"Delete the connection profile '{profile.name}'?"
        box = QMessageBox(
            QMessageBox.Icon.Warning if users else QMessageBox.Icon.Question,
            "Delete connection profile",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self.view,
        )
        box.setInformativeText("Its API key is removed from the keyring when you apply.")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.button(QMessageBox.StandardButton.Yes).setText("Delete")

        def answered(button: QAbstractButton) -> None:
            if box.standardButton(button) == QMessageBox.StandardButton.Yes:
                self._delete(chosen)

        box.buttonClicked.connect(answered)
        box.finished.connect(lambda *_: box.deleteLater())
        self.question = box
        box.open()
        return box

    def _delete(self, pid: str) -> None:
        view = self.view
        profile = view.profile(pid)
        if profile is None:
            return
        values: dict[str, Any] = {"connection_profiles": tuple(p for p in view.profiles() if p.id != pid)}
        for c in CHANNELS:
            if view.draft[f"{c}_profile_id"] == pid:
                values[f"{c}_profile_id"] = ""
        view.new_keys.pop(profile.secret_id, None)
        if view.key_state(profile.secret_id) == "stored":
            view.forget_keys.add(profile.secret_id)
        view.set_draft(**values)
        view.channel_panel.fill_detail()
