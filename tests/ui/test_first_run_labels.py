"""Issue 21.12: what the first-run guide's labels say matches what it does. Started with
`--vault FOLDER`, step 1 shows that folder chosen from its first paint; step 2's Skip says what
it leaves (keyword retrieval only, or semantic search on with its model) and does that; a folder
that does not exist is refused as it is typed, and the refusal goes when the sample is chosen
again. The real app and engine, real folders, a tiny real GGUF model."""

from __future__ import annotations

from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWizard

from dle_desktop.state.settings import SettingsStore
from dle_desktop.ui.first_run.guide import SKIP, FirstRunGuide
from dle_desktop.ui.first_run.vault_page import ERROR_STYLE, count_notes
from tests.ui.conftest import wait_for
from tests.ui.semantic_support import settings_for, tiny_model  # noqa: F401 - fixture


def next_enabled(guide: FirstRunGuide) -> bool:
    return guide.button(QWizard.WizardButton.NextButton).isEnabled()


def saved(desk):
    return SettingsStore(desk.runtime.ctx.paths.settings_file).load()


def test_started_with_vault_the_first_step_shows_that_folder_chosen(make_desktop, vault_copy, qloop):
    desk = make_desktop(None, command_line=[str(vault_copy)])  # `dle-desktop --vault FOLDER`
    guide = desk.open_guide()  # as the first start opens it: before the folder's index is in
    page = guide.vault_page
    folder = str(vault_copy.resolve())
    assert page.use_folder.isChecked() and not page.keep.isChecked()
    assert page.folder.text() == folder and page.folder.isEnabled()
    assert "sample vault for now" not in page.keep.text()  # the sample is not what this session reads
    assert "--vault" in page.keep.text()
    assert next_enabled(guide)
    qloop.run_until_complete(page.counted())
    assert page.folder_message.text() == f"✔ {count_notes(vault_copy)} notes found."

    guide.next()  # Next keeps reading it, now at every start
    qloop.run_until_complete(guide.settled())
    assert [v.path for v in saved(desk).vaults] == [folder]
    assert [s.describe() for s in desk.runtime.engine.sources] == [folder]
    guide.reject()


def test_started_with_vault_keep_saves_nothing_and_the_folder_stays_open(make_desktop, vault_copy, qloop):
    desk = make_desktop(None, command_line=[str(vault_copy)])
    guide = desk.open_guide()
    guide.vault_page.keep.setChecked(True)
    guide.next()
    qloop.run_until_complete(guide.settled())
    assert not desk.runtime.ctx.paths.settings_file.exists()
    assert [s.describe() for s in desk.runtime.engine.sources] == [str(vault_copy.resolve())]
    guide.reject()


def test_skip_on_the_model_step_says_keyword_only_when_semantic_search_is_off(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    guide = desk.open_guide()
    guide.button(SKIP).click()
    note = guide.model_page.note.text()
    assert "<b>Skip</b> keeps keyword retrieval only" in note
    guide.button(SKIP).click()
    assert guide.currentId() == guide.SILLYTAVERN and guide.apply_tasks == []
    assert not desk.runtime.engine.semantic_enabled
    guide.reject()


def test_skip_on_a_second_run_says_and_leaves_semantic_search_on(make_desktop, vault_copy, tiny_model, qloop):
    settings = settings_for(vault_copy, semantic_enabled=True, embedding_model_path=str(tiny_model))
    desk = make_desktop(vault_copy, settings=settings)
    guide = desk.open_guide()  # Help → Getting started…, semantic search already on
    guide.button(SKIP).click()
    note = guide.model_page.note.text()
    assert "keyword retrieval only" not in note
    assert "<b>Skip</b> leaves semantic search on (model tiny)" in note
    assert "Settings → Embeddings" in note  # where it is turned off
    guide.button(SKIP).click()
    assert guide.currentId() == guide.SILLYTAVERN and guide.apply_tasks == []
    assert desk.runtime.engine.semantic_enabled and desk.runtime.ctx.settings.semantic_enabled
    guide.reject()


def test_a_missing_folder_is_refused_as_it_is_typed_and_the_error_goes_with_the_sample(
    make_desktop, vault_copy, qloop, tmp_path
):
    desk = make_desktop(None, command_line=[])  # the bundled sample, as on a first start
    guide = desk.open_guide()
    page = guide.vault_page
    assert page.keep.isChecked()
    page.use_folder.click()
    page.folder.setFocus()
    QTest.keyClicks(page.folder, str(tmp_path / "nowher"))  # typed: the field keeps the focus
    assert not next_enabled(guide)
    message = page.folder_message.text()
    assert message.startswith("✖") and "does not exist" in message and "nowher" in message
    assert page.folder_message.styleSheet() == ERROR_STYLE and page.folder_message.isVisible()
    QTest.keyClicks(page.folder, "e")  # the next keystroke: the message follows the text
    assert f"{tmp_path / 'nowhere'} does not exist" in page.folder_message.text()

    page.keep.setChecked(True)  # back to the sample: nothing is wrong any more
    assert next_enabled(guide)
    assert not page.folder_message.text().startswith("✖") and page.folder_message.styleSheet() != ERROR_STYLE

    page.use_folder.setChecked(True)  # the same missing folder again: refused again
    assert page.folder_message.text().startswith("✖") and not next_enabled(guide)
    page.folder.selectAll()
    QTest.keyClicks(page.folder, str(vault_copy))  # fixed
    assert not page.folder_message.text().startswith("✖") and next_enabled(guide)
    qloop.run_until_complete(page.counted())
    assert page.folder_message.text() == f"✔ {count_notes(vault_copy)} notes found."
    guide.reject()


def test_typing_a_path_counts_only_the_folder_the_typing_stopped_at(make_desktop, vault_copy, qloop, tmp_path):
    """Each keystroke is looked up at once, but notes are counted once the typing pauses: typing
    "/" on the way to a vault must not start a walk of the whole disk."""
    desk = make_desktop(None, command_line=[])
    page = desk.open_guide().vault_page
    walked: list[str] = []
    page.countStarted.connect(walked.append)
    page.use_folder.click()
    QTest.keyClicks(page.folder, str(vault_copy))  # "/", "/t", "/tm", "/tmp" … all exist on the way
    assert next_enabled(page.guide)
    qloop.run_until_complete(page.counted())
    qloop.run_until_complete(wait_for(lambda: walked, what="the count"))
    assert walked == [str(vault_copy)]
    assert page.folder_message.text() == f"✔ {count_notes(vault_copy)} notes found."


def test_started_with_an_obsidian_rest_vault_the_first_step_shows_it_chosen_and_tested(make_desktop, qloop, tmp_path):
    from tests.fakes.obsidian_server import FakeObsidian

    notes = tmp_path / "obsidian"
    notes.mkdir()
    (notes / "Eldoria.md").write_text("---\ntags: [lorebook]\nkeys: [Eldoria]\n---\n# Eldoria\n", encoding="utf-8")
    key = "olra-key-PLANTED-0123456789abcdef"
    with FakeObsidian(notes, api_key=key) as olra:
        desk = make_desktop(None, command_line=[f"http://{key}@127.0.0.1:{olra.port}"])
        guide = desk.open_guide()
        page = guide.vault_page
        assert page.use_rest.isChecked() and not page.keep.isChecked()
        assert page.url.text() == f"http://127.0.0.1:{olra.port}" and key not in page.url.text()
        assert page.key.text() == key
        assert qloop.run_until_complete(page.test_task)  # tested at once, as a folder is counted
        assert page.rest_message.text().startswith("✔ Connected to") and next_enabled(guide)
        guide.reject()
