"""Settings → Writers, driven like a user would: every Session Scribe, Auto Lorebook and AI Notepad
setting loads into its editor and comes back out, ranges and choices are the declarations', a
prompt left empty (or the default unchanged) is the default, a folder outside the vault is
refused, and OK saves the values into settings.json and the running engine."""

from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import QCheckBox, QComboBox, QDialogButtonBox, QLineEdit, QMessageBox, QSpinBox

from dle_desktop.core.writers.prompts import NOTEPAD_EXTRACT_PROMPT, SCRIBE_PROMPT
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.ui.settings.writers import SKIP_REVIEW_WARNING, WritersPage
from tests.ui.conftest import wait_for

#: Every setting the page edits, each set away from its default.
CHANGED = dict(
    scribe_enabled=True,
    scribe_interval=7,
    scribe_scan_depth=30,
    scribe_folder="Notes/Sessions",
    scribe_informed_retrieval=True,
    scribe_prompt="Summarise tersely.",
    auto_suggest_enabled=True,
    auto_suggest_interval=4,
    auto_suggest_folder="Lore/New",
    auto_suggest_skip_review=True,
    auto_suggest_prompt="Suggest entries as JSON.",
    ai_notepad_enabled=True,
    ai_notepad_mode="extract",
    ai_notepad_position=2,
    ai_notepad_depth=9,
    ai_notepad_role=1,
    ai_notepad_prompt="Keep <dle-notes>.",
    ai_notepad_extract_prompt="Pick notes out.",
)


def _field(name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(Settings) if f.name == name)


def press_ok(dlg) -> None:
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok).click()


def test_every_field_loads_and_comes_back(qapp):
    assert set(WritersPage(Settings()).values()) == set(CHANGED)
    defaults = WritersPage(Settings()).values()
    assert defaults == {name: _field(name).default for name in CHANGED}
    assert not defaults["scribe_enabled"] and not defaults["auto_suggest_enabled"]
    assert not defaults["ai_notepad_enabled"] and not defaults["auto_suggest_skip_review"]

    page = WritersPage(Settings().replace(**CHANGED))
    assert page.values() == CHANGED
    assert page.editors["ai_notepad_position"].currentText() == "Before the main prompt"
    assert page.editors["ai_notepad_role"].currentText() == "User"


def test_ranges_and_choices_come_from_the_declarations(qapp):
    page = WritersPage(Settings())
    for name in ("scribe_interval", "scribe_scan_depth", "auto_suggest_interval", "ai_notepad_depth"):
        spin = page.editors[name]
        meta = _field(name).metadata
        assert isinstance(spin, QSpinBox) and (spin.minimum(), spin.maximum()) == (meta["lo"], meta["hi"])
        spin.setValue(meta["hi"] + 100)  # what typing past the end does: the highest allowed
        assert page.values()[name] == meta["hi"]
        spin.setValue(meta["lo"] - 100)
        assert page.values()[name] == meta["lo"]
    mode = page.editors["ai_notepad_mode"]
    assert isinstance(mode, QComboBox)
    assert [mode.itemData(i) for i in range(mode.count())] == list(_field("ai_notepad_mode").metadata["choices"])
    for name in ("ai_notepad_position", "ai_notepad_role"):
        combo = page.editors[name]
        meta = _field(name).metadata
        assert sorted(combo.itemData(i) for i in range(combo.count())) == list(range(meta["lo"], meta["hi"] + 1))
    assert isinstance(page.editors["scribe_enabled"], QCheckBox)
    assert isinstance(page.editors["scribe_folder"], QLineEdit)


def test_depth_follows_the_position_and_the_mode_line_the_mode(qapp):
    page = WritersPage(Settings())
    position = page.editors["ai_notepad_position"]
    assert position.currentData() == 1 and page.editors["ai_notepad_depth"].isEnabled()
    position.setCurrentIndex(position.findData(0))
    assert not page.editors["ai_notepad_depth"].isEnabled()
    assert page.mode_lines["tag"].styleSheet() == "" and page.mode_lines["extract"].styleSheet() != ""
    page.editors["ai_notepad_mode"].setCurrentIndex(page.editors["ai_notepad_mode"].findData("extract"))
    assert page.mode_lines["extract"].styleSheet() == "" and page.mode_lines["tag"].styleSheet() != ""


def test_write_without_review_says_plainly_what_it_does(qapp):
    page = WritersPage(Settings())
    page.show()
    assert page.skip_warning.isHidden()
    page.editors["auto_suggest_skip_review"].setChecked(True)
    assert not page.skip_warning.isHidden()
    assert page.skip_warning.text() == SKIP_REVIEW_WARNING
    assert "written to the vault with no review" in SKIP_REVIEW_WARNING
    page.close()


def test_an_empty_prompt_is_the_default_shown_greyed(qapp):
    page = WritersPage(Settings())
    scribe = page.prompts["scribe_prompt"]
    assert scribe.text.toPlainText() == "" and scribe.text.placeholderText() == SCRIBE_PROMPT
    assert scribe.state.text() == "The built-in prompt" and not scribe.reset.isEnabled()
    scribe.show_default.click()  # the default in the box, to edit
    assert scribe.text.toPlainText() == SCRIBE_PROMPT and page.values()["scribe_prompt"] == ""
    scribe.text.setPlainText(SCRIBE_PROMPT + "\nAlso list the open threads.")
    assert page.values()["scribe_prompt"] == SCRIBE_PROMPT + "\nAlso list the open threads."
    assert scribe.state.text() == "Your own prompt"
    scribe.reset.click()
    assert page.values()["scribe_prompt"] == "" and scribe.text.toPlainText() == ""
    assert page.prompts["ai_notepad_extract_prompt"].text.placeholderText() == NOTEPAD_EXTRACT_PROMPT
    # channels: each group names its channel and where it is set
    assert all("Channels view" in label.text() for label in page.channel_notes.values())
    assert set(page.channel_notes) == {"scribe", "auto_suggest", "ai_notepad"}


def test_a_folder_outside_the_vault_is_refused(qapp):
    page = WritersPage(Settings())
    assert page.problem() is None
    page.editors["auto_suggest_folder"].setText("../elsewhere")
    problem = page.problem()
    assert problem is not None and problem.startswith("Auto Lorebook folder: '../elsewhere' cannot hold a note")


def test_ok_saves_every_field_and_the_engine_takes_them(make_desktop, vault_copy, qloop, monkeypatch):
    desk = make_desktop(vault_copy)
    engine = desk.runtime.engine
    qloop.run_until_complete(wait_for(lambda: engine.last_sync is not None, what="the first sync"))
    dlg = desk.open_settings(page="writers")
    assert dlg.current_page() == "writers"
    page = dlg.writers
    assert "Now: not set up" in page.channel_notes["scribe"].text()  # no connection in this app yet
    for name, value in CHANGED.items():
        if name in page.prompts:
            page.prompts[name].text.setPlainText(value)
            continue
        editor = page.editors[name]
        if isinstance(editor, QCheckBox):
            editor.setChecked(value)
        elif isinstance(editor, QComboBox):
            editor.setCurrentIndex(editor.findData(value))
        elif isinstance(editor, QSpinBox):
            editor.setValue(value)
        else:
            editor.setText(value)
    warned: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    page.editors["scribe_folder"].setText("../out")
    press_ok(dlg)  # refused: the page says why and stays open
    assert warned and warned[0].startswith("Session Scribe folder") and dlg.isVisible()
    page.editors["scribe_folder"].setText(CHANGED["scribe_folder"])
    press_ok(dlg)

    saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
    assert {k: getattr(saved, k) for k in CHANGED} == CHANGED
    status = desk.window.statusBar()
    qloop.run_until_complete(wait_for(lambda: status.currentMessage().startswith("Settings saved"), what="applied"))
    assert desk.runtime.engine is engine  # in place: the writers read the settings at each run
    assert {k: getattr(engine.settings, k) for k in CHANGED} == CHANGED

    again = desk.open_settings(page="writers").writers
    assert again.values() == CHANGED
    again.window().reject()
