"""The first-run guide's first step: which vault to read. A folder of Markdown notes (checked for
notes before it is taken), an Obsidian vault through the Local REST API plugin (its connection
tested first; the key goes to the secrets store with the vault, never to settings.json), or the
vaults already open (the bundled sample on a first start). Started with `--vault`, the vault given
there is the one shown chosen.

A typed folder is looked up at each keystroke (a quick check on the GUI thread: the reason shows at
once), but its notes are counted in a worker once the typing pauses, and a count the typing has
left behind stops: typing "/" on the way to a vault must not walk the whole disk."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QWizardPage,
)

from dle_desktop.errors import DleError
from dle_desktop.state.settings import VaultConfig
from dle_desktop.ui.widgets.async_util import soon

OK_STYLE = "color: #2e7d32"
WARN_STYLE = "color: #a15c00"
ERROR_STYLE = "color: #b3261e"

KEEP, FOLDER, REST = "keep", "folder", "rest"
#: How long the typing must pause before the folder's notes are counted.
COUNT_DELAY_MS = 400


class CountAbandoned(Exception):
    """The folder being counted is no longer the one in the field."""


def count_notes(folder: Path, still_wanted: Callable[[], bool] = lambda: True) -> int:
    """Markdown notes under `folder` as a sync would find them: hidden folders (.obsidian,
    .trash, .git) hold no lore. Raises CountAbandoned once `still_wanted()` is False."""
    n = 0
    for _root, dirs, files in os.walk(folder):
        if not still_wanted():
            raise CountAbandoned(str(folder))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        n += sum(1 for f in files if f.lower().endswith(".md"))
    return n


def locate_folder(text: str) -> tuple[Path | None, str, str]:
    """The quick part of the check, fit for the GUI thread: (the folder when it exists, what to
    say while its notes are counted, its style)."""
    if not text.strip():
        return None, "Choose the folder that holds your lore notes.", ""
    path = Path(text.strip()).expanduser()
    if not path.is_dir():
        return None, f"✖ {path} does not exist (or is not a folder).", ERROR_STYLE
    return path.resolve(), "Counting the notes…", ""


def check_folder(text: str, still_wanted: Callable[[], bool] = lambda: True) -> tuple[Path | None, str, str]:
    """(the folder when it can be used, what to say, its style), its notes counted: a walk of the
    whole folder, so it runs in a worker thread (CountAbandoned when no longer wanted)."""
    path, message, style = locate_folder(text)
    if path is None:
        return path, message, style
    try:
        notes = count_notes(path, still_wanted)
    except OSError as exc:
        return None, f"✖ {path} cannot be read: {exc.strerror or exc}", ERROR_STYLE
    if not notes:
        return (
            path.resolve(),
            (
                "⚠ No Markdown notes (.md) in this folder. You can still use it and add notes "
                "later, but nothing will be found until then."
            ),
            WARN_STYLE,
        )
    return path.resolve(), f"✔ {notes} note{'s' if notes != 1 else ''} found.", OK_STYLE


def _label(text: str = "", style: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet(style)
    return label


class VaultPage(QWizardPage):
    countStarted = Signal(str)  # the folder text whose notes a worker starts counting

    def __init__(self, guide) -> None:
        super().__init__()
        self.guide = guide
        self.setTitle("Step 1 of 3: Your vault")
        # Short: the header does not grow, a third line would be cut off.
        self.setSubTitle("Where DLE reads your lore: Markdown notes in a folder or in an Obsidian vault.")
        self.file_dialog: QFileDialog | None = None
        self.test_task: asyncio.Future | None = None
        self._tested: tuple[str, str] | None = None  # the address and key that last passed the test
        self._folder: Path | None = None
        self.count_task: asyncio.Future[None] | None = None  # counting the chosen folder's notes
        self._count_generation = 0  # a walk whose generation is no longer this one stops
        self._count_timer = QTimer(self)
        self._count_timer.setSingleShot(True)
        self._count_timer.setInterval(COUNT_DELAY_MS)
        self._count_timer.timeout.connect(self._start_count)

        self.keep = QRadioButton(self._keep_text())
        self.use_folder = QRadioButton("A &folder of notes on this computer (an Obsidian vault folder works)")
        self.use_rest = QRadioButton("An &Obsidian vault through the Local REST API plugin")
        self.choice = QButtonGroup(self)
        for b in (self.keep, self.use_folder, self.use_rest):
            self.choice.addButton(b)
        self.keep.setChecked(True)
        self.choice.buttonToggled.connect(lambda *_: self._changed())

        self.folder = QLineEdit()
        self.folder.setPlaceholderText("e.g. ~/Documents/My Lore")
        self.folder.setClearButtonEnabled(True)
        self.folder.textEdited.connect(lambda *_: self.use_folder.setChecked(True))
        self.folder.textChanged.connect(lambda *_: self._folder_typed())
        self.browse_button = QPushButton("&Browse…")
        self.browse_button.clicked.connect(lambda *_: self.browse())
        self.folder_message = _label()

        self.url = QLineEdit("http://127.0.0.1:27123")
        self.url.setToolTip("The plugin's address: http on port 27123, or https on 27124")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("from Obsidian → Settings → Local REST API")
        for edit in (self.url, self.key):
            edit.textEdited.connect(lambda *_: self._rest_edited())
        self.test_button = QPushButton("&Test connection")
        self.test_button.clicked.connect(lambda *_: self.start_test())
        where = getattr(guide.app.runtime.ctx.secrets, "location", "the system keyring")
        self.rest_message = _label(f"The key is kept in {where}, never in the settings file.")

        indent = 22  # a choice's fields sit under its text, not under its radio dot
        grid = QGridLayout(self)
        grid.setColumnMinimumWidth(0, indent)
        grid.setColumnStretch(1, 1)
        grid.addWidget(self.keep, 0, 0, 1, 3)
        grid.addWidget(self.use_folder, 1, 0, 1, 3)
        grid.addWidget(self.folder, 2, 1)
        grid.addWidget(self.browse_button, 2, 2)
        grid.addWidget(self.folder_message, 3, 1, 1, 2)
        grid.addWidget(self.use_rest, 4, 0, 1, 3)
        form = QFormLayout()
        form.addRow("Address", self.url)
        form.addRow("API key", self.key)
        grid.addLayout(form, 5, 1, 1, 2)
        row = QHBoxLayout()
        row.addWidget(self.test_button)
        row.addWidget(self.rest_message, 1)
        grid.addLayout(row, 6, 1, 1, 2)
        grid.setRowStretch(7, 1)
        grid.addWidget(_label("More vaults can be added later in Settings → Vaults (Ctrl+,)."), 8, 0, 1, 3)
        if not self._choose_command_line_vault():  # choosing it updated the page already
            self._changed()

    # -- what this session reads ---------------------------------------------------------------
    def _command_line_vault(self) -> str | None:
        """The vault given with `--vault` (the first, when several were), unless it is saved already:
        what this session reads in place of the saved vaults and the sample."""
        from dle_desktop.ui.bridge import COMMAND_LINE, spec_location

        session = self.guide.app.runtime.ctx.session
        if not session or not session.replaces_saved:
            return None
        saved = set()
        for v in self.guide.base_settings.vaults:
            if v.kind == "folder":
                saved.add(spec_location(v.path))
            else:
                host = f"[{v.host}]" if ":" in v.host else v.host
                saved.add(f"{'https' if v.https else 'http'}://{host}:{v.port}")
        for v in session.vaults:
            if v.origin == COMMAND_LINE and spec_location(v.spec) not in saved:
                return v.spec
        return None

    def _keep_text(self) -> str:
        saved = len(self.guide.base_settings.vaults)
        if self._command_line_vault() is None:
            return (
                f"&Keep the vaults you have ({saved})"
                if saved
                else "&Keep the bundled sample vault for now (a small world to try DLE on)"
            )
        if saved:
            return (
                f"&Keep the vaults you have ({saved}) for later starts; this session reads the one given with --vault"
            )
        return "&Save no vault now: this session reads the one given with --vault, later starts the bundled sample"

    def _choose_command_line_vault(self) -> bool:
        """Show the `--vault` vault as the choice from the first paint: its folder (counted), or
        its address and key (tested)."""
        spec = self._command_line_vault()
        if spec is None:
            return False
        if not spec.startswith(("http://", "https://")):
            self.folder.setText(spec)
            self.use_folder.setChecked(True)
            return True
        from dle_desktop.ui.bridge import spec_location
        from dle_desktop.vault.obsidian_rest import parse_vault_spec

        self.url.setText(spec_location(spec))
        self.key.setText(parse_vault_spec(spec).reveal_api_key() or "")
        self.use_rest.setChecked(True)
        self.test_task = soon(self.test_connection)
        return True

    # -- the folder ---------------------------------------------------------------------------
    def browse(self) -> QFileDialog:
        start = self.folder.text().strip() or str(Path.home())
        dlg = QFileDialog(self, "Choose your vault folder", start)
        dlg.setFileMode(QFileDialog.FileMode.Directory)
        dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dlg.fileSelected.connect(self.set_folder)
        self.file_dialog = dlg
        dlg.open()
        return dlg

    def set_folder(self, folder: str) -> None:
        self.folder.setText(folder)
        self.use_folder.setChecked(True)
        self._check_folder()

    def _folder_typed(self) -> None:
        if self.use_folder.isChecked():  # otherwise choosing the folder checks it
            self._check_folder(count_now=False)

    def _check_folder(self, count_now: bool = True) -> None:
        """Look the folder up now (the reason it cannot be used shows at once); count its notes
        now, or once the typing pauses."""
        self._count_generation += 1  # the walk of an earlier text stops
        self._count_timer.stop()
        self._folder, message, style = locate_folder(self.folder.text())
        self._say_folder(message, style)
        if self._folder is None:
            return
        if count_now:
            self._start_count()
        else:
            self._count_timer.start()

    def _start_count(self) -> None:
        self._count_timer.stop()
        text, generation = self.folder.text(), self._count_generation
        self.countStarted.emit(text)
        self.count_task = soon(lambda: self._count_notes(text, generation))

    async def _count_notes(self, text: str, generation: int) -> None:
        def still_wanted() -> bool:
            return generation == self._count_generation

        try:
            checked = await asyncio.to_thread(check_folder, text, still_wanted)
        except CountAbandoned:
            return
        if not still_wanted() or text != self.folder.text():  # another folder meanwhile: its own count follows
            return
        self._folder, message, style = checked
        self._say_folder(message, style)

    async def counted(self) -> None:
        """Until the note count of the folder shown is in its message (a count waiting for the
        typing to pause starts now)."""
        if self._count_timer.isActive():
            self._start_count()
        while self.count_task is not None and not self.count_task.done():
            await asyncio.wait({self.count_task})

    def _say_folder(self, message: str, style: str) -> None:
        self.folder_message.setText(message)
        self.folder_message.setStyleSheet(style)
        self.completeChanged.emit()

    # -- the Obsidian REST vault --------------------------------------------------------------
    def _rest_edited(self) -> None:
        self.use_rest.setChecked(True)
        if self._tested != self._rest_values():
            self.rest_message.setStyleSheet("")
            self.rest_message.setText("Test the connection to use this vault.")
        self.completeChanged.emit()

    def _rest_values(self) -> tuple[str, str]:
        return self.url.text().strip(), self.key.text().strip()

    def rest_source(self):
        """The vault the fields describe (a key typed into the address moves to the key field's role)."""
        from dle_desktop.vault.obsidian_rest import ObsidianRestSource, parse_vault_spec

        url, key = self._rest_values()
        parsed = parse_vault_spec(url)
        return ObsidianRestSource(
            parsed.name, parsed.host, parsed.port, key or parsed.reveal_api_key(), https=parsed.https, timeout=10.0
        )

    def start_test(self) -> asyncio.Future:
        self.test_task = asyncio.ensure_future(self.test_connection())
        return self.test_task

    async def test_connection(self) -> bool:
        values = self._rest_values()
        self.use_rest.setChecked(True)
        self.test_button.setEnabled(False)
        self.rest_message.setStyleSheet("")
        self.rest_message.setText("Testing…")
        bridge = self.guide.app.bridge
        try:
            source = self.rest_source()
            try:  # on the engine's loop, where the vault's HTTP clients live
                result = await bridge.call(source.test_connection())
            finally:
                await bridge.call(source.close())
            ok, message = bool(result.get("ok")), str(result.get("message", ""))
        except DleError as exc:
            ok, message = False, str(exc)
        finally:
            self.test_button.setEnabled(True)
        self._tested = values if ok else None
        if values != self._rest_values():  # edited while testing: this answer is about the old values
            self._rest_edited()
            return False
        self.rest_message.setStyleSheet(OK_STYLE if ok else ERROR_STYLE)
        self.rest_message.setText(("✔ " if ok else "✖ ") + message[:1].upper() + message[1:])
        self.completeChanged.emit()
        return ok

    # -- the step -----------------------------------------------------------------------------
    def chosen(self) -> str:
        return FOLDER if self.use_folder.isChecked() else REST if self.use_rest.isChecked() else KEEP

    def _changed(self) -> None:
        folder, rest = self.use_folder.isChecked(), self.use_rest.isChecked()
        for w in (self.folder, self.browse_button, self.folder_message):
            w.setEnabled(folder)
        for w in (self.url, self.key, self.test_button, self.rest_message):
            w.setEnabled(rest)
        if folder and self.folder.text().strip():
            self._check_folder()
        elif folder:
            self._say_folder("Choose the folder that holds your lore notes.", "")
        else:  # what was said about the folder is no longer about the choice
            self._count_generation += 1
            self._count_timer.stop()
            self._say_folder("", "")
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        choice = self.chosen()
        if choice == FOLDER:
            return self._folder is not None and self._folder.is_dir()
        if choice == REST:
            return self._tested is not None and self._tested == self._rest_values()
        return True

    def changes(self) -> tuple[dict, dict[str, str]]:
        """The settings this step changes (vaults: the ones there were when the guide opened,
        plus the chosen one, so a revisited step replaces its earlier choice) and the keys to store."""
        base = [v.to_json() for v in self.guide.base_settings.vaults]
        choice = self.chosen()
        if choice == KEEP:
            return {"vaults": base}, {}
        from dle_desktop.ui.settings.dialog import unique_name

        taken = {v["name"].lower() for v in base}
        if choice == FOLDER:
            assert self._folder is not None  # the page is complete (isComplete) only with a folder
            path = str(self._folder)
            if any(v.get("path") == path for v in base):
                return {"vaults": base}, {}
            return {
                "vaults": [*base, {"name": unique_name(self._folder.name, taken), "kind": "folder", "path": path}]
            }, {}
        source = self.rest_source()
        cfg = VaultConfig(
            name=unique_name(f"Obsidian {source.port}", taken),
            kind="obsidian-rest",
            host=source.host,
            port=source.port,
            https=source.https,
        )
        key = source.reveal_api_key()
        return {"vaults": [*base, cfg.to_json()]}, ({cfg.secret_id: key} if key else {})

    def session_folder(self) -> str | None:
        """The chosen folder, for a session whose vaults the command line chose: it opens there now
        too, as File → Add vault folder… does (a REST vault opens from the next start)."""
        return str(self._folder) if self.chosen() == FOLDER else None
