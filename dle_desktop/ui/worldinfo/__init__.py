"""SillyTavern World Info in and out: the import, export and sync dialogs, and the menu that opens
them (`WorldInfoActions`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence


class WorldInfoActions(QObject):
    """The World Info menu. Dialogs are imported when first opened: most sessions never open them."""

    applyRequested = Signal(object, dict)  # settings, new keys: the sync dialog's changes
    summarizeRequested = Signal()  # after an import: summarize the entries without a summary

    def __init__(self, window: Any, bridge: Any) -> None:
        super().__init__(window)
        self.window = window
        self.bridge = bridge
        self.dialog: Any = None
        self.import_action = QAction("Import World Info…", window)
        self.import_action.setShortcut(QKeySequence("Ctrl+Shift+I"))
        self.import_action.setStatusTip(
            "Turn SillyTavern lorebooks (installed books, files, character cards) into notes (Ctrl+Shift+I)"
        )
        self.import_action.triggered.connect(lambda *_: self.open_import())
        self.export_action = QAction("Export as World Info…", window)
        self.export_action.setShortcut(QKeySequence("Ctrl+Shift+E"))
        self.export_action.setStatusTip("Save the vault, a folder or a tag as a SillyTavern World Info book")
        self.export_action.triggered.connect(lambda *_: self.open_export())
        self.imports_action = QAction("Undo an import…", window)
        self.imports_action.setStatusTip("The World Info imports made so far; each one undone as a whole")
        self.imports_action.triggered.connect(lambda *_: self.open_imports())
        self.sync_action = QAction("Sync with SillyTavern…", window)
        self.sync_action.setStatusTip("Mirror vault folders into SillyTavern World Info books")
        self.sync_action.triggered.connect(lambda *_: self.open_sync())

    def add_to(self, menu: Any) -> None:
        for action in (self.import_action, self.imports_action, self.export_action, self.sync_action):
            menu.addAction(action)

    def _show(self, dialog: Any) -> Any:
        self.dialog = dialog
        dialog.setModal(False)
        dialog.show()
        dialog.raise_()
        return dialog

    def open_import(self, folder: str = "") -> Any:
        from dle_desktop.ui.widgets.async_util import soon
        from dle_desktop.ui.worldinfo.import_dialog import WorldInfoImportDialog

        dialog = WorldInfoImportDialog(self.bridge, self.window, folder=folder)
        dialog.summarizeRequested.connect(self.summarizeRequested)
        soon(dialog.load_books)
        return self._show(dialog)

    def open_export(self, folder: str = "") -> Any:
        from dle_desktop.ui.widgets.async_util import soon
        from dle_desktop.ui.worldinfo.export_dialog import WorldInfoExportDialog

        dialog = WorldInfoExportDialog(self.bridge, self.window, folder=folder)
        soon(dialog.load_folders)
        return self._show(dialog)

    def open_imports(self) -> Any:
        from dle_desktop.ui.widgets.async_util import soon
        from dle_desktop.ui.worldinfo.imports_dialog import WorldInfoImportsDialog

        dialog = WorldInfoImportsDialog(self.bridge, self.window)
        soon(dialog.load)
        return self._show(dialog)

    def open_sync(self) -> Any:
        from dle_desktop.ui.worldinfo.sync_dialog import WorldInfoSyncDialog

        dialog = WorldInfoSyncDialog(self.bridge, self.window)
        dialog.applyRequested.connect(self.applyRequested)
        return self._show(dialog)
