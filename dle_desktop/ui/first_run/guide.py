"""The first-run guide: three steps (your vault, the embedding model, SillyTavern), each one
skippable and revisitable. Next (or Finish) applies a step's choice at once through the app's
normal settings path (`DesktopApp.apply_settings`: saved, keys to the secrets store, applied in
the background), so closing the guide at any point keeps what was already applied.

Whether it was seen lives in ui-state.ini (the window's QSettings), not in settings.json: it is a
fact about this window's user, like "told about the tray", and every settings field is something
the engine may act on (an unknown one makes `settings_apply.plan` start a new engine)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import cast

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QWizard

from dle_desktop.ui.first_run.pages import ModelPage, SillyTavernPage
from dle_desktop.ui.first_run.vault_page import VaultPage

log = logging.getLogger(__name__)

SEEN_KEY = "guide/seen"
SKIP = QWizard.WizardButton.CustomButton1


def guide_seen(ui_state: QSettings) -> bool:
    return bool(ui_state.value(SEEN_KEY, False, type=bool))


def mark_guide_seen(ui_state: QSettings) -> None:
    ui_state.setValue(SEEN_KEY, True)
    ui_state.sync()  # a crash later must not bring it back at the next start


def is_first_start(ui_state: QSettings, settings) -> bool:
    """Nobody has closed the guide yet, and no vault is saved (someone who set DLE up before the
    guide existed needs no introduction)."""
    return not guide_seen(ui_state) and not settings.vaults


def offered_at_start(minimized: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this start may show the guide: not in the tray at login (nobody is looking), not
    in the packaged build's smoke test (it waits for the window alone, then quits)."""
    return not minimized and environ.get("DLE_DESKTOP_EXIT_WHEN_SHOWN") != "1"


class FirstRunGuide(QWizard):
    VAULT, MODEL, SILLYTAVERN = 0, 1, 2

    def __init__(self, app) -> None:
        """`app`: the DesktopApp; its settings when the guide opens are what a step's choice is
        added to, so choosing again on a revisited step replaces the earlier choice."""
        super().__init__(app.window)
        self.app = app
        self.base_settings = app.runtime.ctx.settings
        self.apply_tasks: list[asyncio.Task] = []
        self.applied: dict[int, tuple] = {}  # step -> the changes it last applied
        self._skipping = False
        self.setWindowTitle("Getting started with DLE Desktop")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)  # the same look on every platform (and in the screenshots)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage, True)
        self.setOption(QWizard.WizardOption.HaveCustomButton1, True)
        self.setButtonText(SKIP, "&Skip")
        self.button(SKIP).setToolTip("Go on without this step; it stays as it was")
        self.button(SKIP).clicked.connect(lambda *_: self.skip())
        self.setButtonText(QWizard.WizardButton.CancelButton, "&Close")
        self.setButtonLayout(
            [
                QWizard.WizardButton.Stretch,
                SKIP,
                QWizard.WizardButton.BackButton,
                QWizard.WizardButton.NextButton,
                QWizard.WizardButton.FinishButton,
                QWizard.WizardButton.CancelButton,
            ]
        )
        self.vault_page = VaultPage(self)
        self.model_page = ModelPage(self)
        self.sillytavern_page = SillyTavernPage(self)
        for step, page in (
            (self.VAULT, self.vault_page),
            (self.MODEL, self.model_page),
            (self.SILLYTAVERN, self.sillytavern_page),
        ):
            self.setPage(step, page)
        self.currentIdChanged.connect(self._step_changed)
        self.finished.connect(lambda *_: mark_guide_seen(app.window.ui_state))
        self.resize(720, 560)

    def _step_changed(self, step: int) -> None:
        # The last step applies nothing, so there is nothing to skip: Finish or Close.
        self.button(SKIP).setVisible(step != self.SILLYTAVERN)

    # -- moving on ----------------------------------------------------------------------------
    def skip(self) -> None:
        self._skipping = True
        try:
            self.next()
        finally:
            self._skipping = False

    def validateCurrentPage(self) -> bool:
        """Next and Finish come here: apply the step's choice (Skip passes without applying)."""
        if self._skipping:
            return True
        step = self.currentId()
        page = self.currentPage()
        if step == self.VAULT and not page.isComplete():
            return False
        if step == self.MODEL and cast(ModelPage, page).problem():  # said under the file field
            return False
        if hasattr(page, "changes"):
            self.apply_step(step, *page.changes())
        return True

    def apply_step(self, step: int, changes: dict, keys: dict[str, str]) -> asyncio.Task | None:
        applied = (changes, keys)
        if self.applied.get(step) == applied:  # Back, then Next with the same choice
            return None
        ctx = self.app.runtime.ctx
        if step == self.VAULT and ctx.session and ctx.session.replaces_saved:
            folder = self.vault_page.session_folder()
            if folder:
                from dle_desktop.ui.bridge import ADDED

                ctx.session.add(folder, ADDED)
        new = ctx.settings.replace(**changes)
        if new == ctx.settings and not keys:
            self.applied[step] = applied
            return None
        task = self.app.apply_settings(new, keys)
        if task is not None:  # None: it could not be saved (the app said so); the step stays unapplied
            self.applied[step] = applied
            self.apply_tasks.append(task)
        return task

    def open_sillytavern(self) -> None:
        """Close the guide (it is modal, the view behind it could not be used) and show the view."""
        if self.validateCurrentPage():
            self.accept()
        window = self.app.window
        window.tabs.setCurrentWidget(window.sillytavern_view)
        window.bring_forward()

    async def settled(self) -> None:
        """Until every choice applied so far has been applied (tests; quitting)."""
        for task in list(self.apply_tasks):
            await task


def open_guide(app) -> FirstRunGuide:
    guide = FirstRunGuide(app)
    guide.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    guide.open()  # window-modal, not exec(): engine events keep flowing while it is open
    return guide
