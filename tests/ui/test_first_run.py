"""The first-run guide, driven like a new user would: the real app and engine on a fresh data
folder (the bundled sample vault open), real folders of notes, a real loopback Obsidian REST
server, the model download from a loopback HTTP server, a tiny real GGUF and a SillyTavern folder
in tmp_path. Screenshots of its three steps go to docs/screenshots/."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QWizard

from dle_desktop.state.settings import SettingsStore
from dle_desktop.ui.first_run.guide import SEEN_KEY, SKIP, FirstRunGuide, offered_at_start
from dle_desktop.ui.first_run.vault_page import check_folder, count_notes, locate_folder
from tests.fakes.obsidian_server import FakeObsidian
from tests.ui.conftest import wait_for
from tests.ui.semantic_support import model_server, serve_default_model, tiny_model  # noqa: F401 - fixtures
from tests.ui.test_sillytavern_view import make_st

# docs/screenshots only when asked (DLE_UPDATE_SCREENSHOTS=1): a test run must not change the tree.
SHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("DLE_UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "dle-desktop-screenshots"
)


@pytest.fixture
def start_app(tmp_path, qapp):
    """Start the app as `dle-desktop` does on a data folder (offer_guide as run_gui passes it for a
    normal start); the same data folder again is the second start."""
    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.ui.launch import DesktopApp

    made = []
    secrets = SecretStore(use_keyring=False)  # one store across starts, as the keyring would be

    def start(offer_guide: bool = True, data_dir: Path | None = None, **options):
        for d in made:  # one instance per data folder, as the real app enforces
            if not d.done.is_set():
                d.quit()
        paths = resolve_paths(data_dir or tmp_path / "data").ensure()
        store = SettingsStore(paths.settings_file)
        settings = store.load()
        ctx = AppContext(paths, store, settings, secrets)
        runtime = Runtime(ctx, Engine(paths, settings, secrets), serve=False, port=0)
        ui_state = QSettings(str(paths.config_dir / "ui-state.ini"), QSettings.IniFormat)
        desk = DesktopApp(qapp, runtime, ui_state, offer_guide=offer_guide, **{"tray_available": False, **options})
        runtime.start()
        desk.start()
        made.append(desk)
        st_home = tmp_path / "home"  # never the real home's SillyTavern
        desk.window.sillytavern_view.installs_panel.home = st_home
        if desk.guide is not None:
            desk.guide.sillytavern_page.home = st_home
        return desk

    yield start
    for d in made:
        if not d.done.is_set():
            d.quit()


def saved(desk):
    return SettingsStore(desk.runtime.ctx.paths.settings_file).load()


def seen(desk) -> bool:
    state = QSettings(str(desk.runtime.ctx.paths.config_dir / "ui-state.ini"), QSettings.IniFormat)
    return state.value(SEEN_KEY, False, type=bool)


def next_enabled(guide: FirstRunGuide) -> bool:
    return guide.button(QWizard.NextButton).isEnabled()


def shoot(guide: FirstRunGuide, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert guide.grab().save(str(SHOTS / name))


async def settled(desk) -> None:
    """Until the guide's applied choices are in, and the window shows the running engine's index."""
    if desk.apply_task is not None:
        await desk.apply_task
    await wait_for(
        lambda: (snap := desk.runtime.engine.snapshot) is not None and desk.window.vault_view.snapshot is snap,
        timeout=60,
        what="the engine's index in the window",
    )


def test_first_start_shows_the_guide_keeping_the_sample_applies_nothing_and_the_next_start_skips_it(
    start_app, qloop, tmp_path
):
    desk = start_app()
    guide = desk.guide
    assert guide is not None and guide.isVisible() and guide.currentId() == guide.VAULT
    page = guide.vault_page
    assert page.keep.isChecked() and "sample" in page.keep.text() and next_enabled(guide)
    assert not guide.button(QWizard.BackButton).isVisible() and guide.button(SKIP).isVisible()

    guide.next()  # Next with "keep the sample": nothing to save
    assert guide.currentId() == guide.MODEL and guide.apply_tasks == []
    guide.button(SKIP).click()
    assert guide.currentId() == guide.SILLYTAVERN and not guide.button(SKIP).isVisible()
    qloop.run_until_complete(guide.sillytavern_page.scan_task)
    guide.button(QWizard.FinishButton).click()
    assert not guide.isVisible() and desk.guide is None
    assert seen(desk)
    assert not desk.runtime.ctx.paths.settings_file.exists()  # nothing was chosen, nothing written
    assert desk.runtime.engine.using_sample_vault

    again = start_app()
    assert again.guide is None and again.window.isVisible()


def test_a_folder_of_notes_is_counted_an_empty_one_warns_a_missing_one_is_refused(
    start_app, vault_copy, qloop, tmp_path
):
    desk = start_app()
    guide = desk.guide
    page = guide.vault_page

    page.use_folder.setChecked(True)
    assert not next_enabled(guide)  # no folder yet
    page.folder.setText(str(tmp_path / "nowhere"))
    page.folder.editingFinished.emit()
    assert page.folder_message.text().startswith("✖") and "does not exist" in page.folder_message.text()
    assert not next_enabled(guide)
    guide.next()  # refused even when asked directly
    assert guide.currentId() == guide.VAULT and guide.apply_tasks == []

    empty = tmp_path / "empty"
    (empty / ".obsidian").mkdir(parents=True)
    (empty / ".obsidian" / "hidden.md").write_text("# not lore\n", encoding="utf-8")
    (empty / "readme.txt").write_text("no notes here\n", encoding="utf-8")
    page.set_folder(str(empty))
    qloop.run_until_complete(page.counted())  # the notes are counted off the GUI thread
    assert page.folder_message.text().startswith("⚠ No Markdown notes") and next_enabled(guide)

    chooser = page.browse()  # the folder picker, as a user would use it
    chooser.selectFile(str(vault_copy))
    chooser.accept()
    qloop.run_until_complete(page.counted())
    notes = count_notes(vault_copy)
    assert notes == sum(
        1 for p in vault_copy.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(vault_copy).parts)
    )
    assert page.folder.text() == str(vault_copy) and page.folder_message.text() == f"✔ {notes} notes found."
    shoot(guide, "first-run-1-vault.png")

    guide.next()
    assert guide.currentId() == guide.MODEL

    async def scenario():
        await guide.settled()
        await settled(desk)

    qloop.run_until_complete(scenario())
    assert [(v.kind, v.path) for v in saved(desk).vaults] == [("folder", str(vault_copy.resolve()))]
    assert not desk.runtime.engine.using_sample_vault
    assert str(vault_copy.resolve()) in desk.runtime.engine.sources[0].describe()


def test_an_obsidian_rest_vault_is_tested_and_its_key_goes_to_the_secrets_store(start_app, qloop, tmp_path):
    notes = tmp_path / "obsidian"
    notes.mkdir()
    (notes / "Eldoria.md").write_text(
        "---\ntags: [lorebook]\nkeys: [Eldoria]\n---\n# Eldoria\n\nA kingdom of rivers.\n", encoding="utf-8"
    )
    key = "olra-key-PLANTED-0123456789abcdef"
    desk = start_app()
    guide = desk.guide
    page = guide.vault_page
    with FakeObsidian(notes, api_key=key) as olra:
        port = olra.port
        page.use_rest.setChecked(True)
        page.url.setText(f"http://127.0.0.1:{olra.port}")
        page.key.setText("a-wrong-key")
        assert not next_enabled(guide)  # untested
        assert "memory for this session only" in page.rest_message.text()  # where this store keeps keys
        assert not qloop.run_until_complete(page.start_test())
        assert page.rest_message.text().startswith("✖") and not next_enabled(guide)

        page.key.setText(key)
        page._rest_edited()  # as typing does
        assert "Test the connection" in page.rest_message.text()
        assert qloop.run_until_complete(page.start_test())
        assert page.rest_message.text().startswith("✔ Connected to") and next_enabled(guide)
        guide.next()

        async def scenario():
            await guide.settled()
            await settled(desk)
            await wait_for(
                lambda: any(e.title == "Eldoria" for e in desk.runtime.engine.snapshot.entries),
                timeout=30,
                what="the REST vault's note in the index",
            )

        qloop.run_until_complete(scenario())

    vault = saved(desk).vaults[0]
    assert (vault.kind, vault.host, vault.port) == ("obsidian-rest", "127.0.0.1", port)
    assert desk.runtime.ctx.secrets.get(vault.secret_id) == key
    text = desk.runtime.ctx.paths.settings_file.read_text(encoding="utf-8")
    assert key not in text and "a-wrong-key" not in text
    assert "api_key" not in json.dumps(json.loads(text)["vaults"])


def test_the_model_download_starts_shows_progress_and_cancels_and_skip_changes_nothing(
    start_app, tiny_model, model_server, qloop
):
    desk = start_app()
    guide = desk.guide
    payload = tiny_model.read_bytes()
    spec = serve_default_model(desk, model_server, payload)
    model_server.behaviour.chunk_delay = 0.05
    guide.button(SKIP).click()
    assert guide.currentId() == guide.MODEL
    page = guide.model_page
    facts = page.facts.text()
    assert "Qwen3-Embedding-0.6B" in facts and "640 MB" in facts and "Apache-2.0" in facts and "SHA-256" in facts
    shoot(guide, "first-run-2-model.png")
    emb = page.embeddings
    assert emb.use_default.isChecked() and emb.model_state.text().startswith("Not downloaded yet")
    assert not emb.semantic.isVisible() and not emb.ann_threshold.isVisible()  # tuning stays in Settings
    download = desk.model_download

    async def scenario():
        emb.download_button.click()
        assert download.running and not emb.cancel_button.isHidden() and not emb.progress.isHidden()
        await wait_for(
            lambda: download.last_progress is not None and download.last_progress.downloaded >= 32768, what="some bytes"
        )
        assert " of " in emb.download_message.text() and "%" in emb.download_message.text()
        emb.cancel_button.click()
        await wait_for(lambda: not download.running, what="cancelled")

    qloop.run_until_complete(scenario())
    kept = download.manager.part_path(spec).stat().st_size
    assert 0 < kept < len(payload) and not download.is_available()
    assert emb.download_message.text().startswith("Download cancelled; ") and "kept" in emb.download_message.text()
    assert emb.download_button.text().replace("&", "") == "Resume download"

    guide.button(SKIP).click()  # keyword retrieval only
    assert guide.currentId() == guide.SILLYTAVERN and guide.apply_tasks == []
    assert not desk.runtime.ctx.paths.settings_file.exists()


def test_a_local_gguf_is_checked_and_turns_semantic_search_on(start_app, tiny_model, qloop, tmp_path):
    desk = start_app()
    guide = desk.guide
    guide.button(SKIP).click()
    emb = guide.model_page.embeddings
    bad = tmp_path / "notes.gguf"
    bad.write_text("<html>a login page, not a model</html>", encoding="utf-8")
    chooser = emb.browse()
    chooser.selectFile(str(bad))
    chooser.accept()
    assert "not a GGUF model file" in emb.file_message.text()
    guide.next()
    assert guide.currentId() == guide.MODEL and guide.apply_tasks == []  # refused, said under the field

    emb.set_model_file(str(tiny_model))
    assert emb.file_message.text().startswith("✔ tiny.gguf")
    guide.next()
    assert guide.currentId() == guide.SILLYTAVERN

    async def scenario():
        await guide.settled()
        await settled(desk)

    qloop.run_until_complete(scenario())
    s = saved(desk)
    assert s.semantic_enabled and s.embedding_model_path == str(tiny_model)
    assert desk.runtime.engine.semantic_enabled


def test_the_sillytavern_step_finds_installs_and_opens_the_sillytavern_view(start_app, qloop, tmp_path):
    st_root = make_st(tmp_path / "home" / "SillyTavern")
    desk = start_app()
    guide = desk.guide
    guide.button(SKIP).click()
    guide.button(SKIP).click()
    page = guide.sillytavern_page
    found = qloop.run_until_complete(page.scan_task)
    assert [st.root for st, _ in found] == [st_root.resolve()]
    assert page.found_label.text() == f"✔ {st_root.resolve()} (SillyTavern 1.19.0): the bridge is not installed yet"
    shoot(guide, "first-run-3-sillytavern.png")
    guide.button(QWizard.BackButton).click()
    guide.next()  # back to the last step: no second scan of its own
    assert page.scan_task.done()

    page.open_button.click()
    assert not guide.isVisible() and desk.guide is None and seen(desk)
    window = desk.window
    assert window.tabs.currentWidget() is window.sillytavern_view
    qloop.run_until_complete(window.sillytavern_view.idle())
    assert window.sillytavern_view.installs_panel.installs()[0].root == st_root.resolve()


def test_back_revisits_a_step_and_a_new_choice_replaces_the_old_one(start_app, vault_copy, qloop, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "Note.md").write_text("# Note\n", encoding="utf-8")
    desk = start_app()
    guide = desk.guide
    page = guide.vault_page

    def vaults():
        qloop.run_until_complete(guide.settled())
        return [v.path for v in saved(desk).vaults]

    page.set_folder(str(vault_copy))
    guide.next()
    assert vaults() == [str(vault_copy.resolve())]
    guide.back()
    assert guide.currentId() == guide.VAULT and page.folder.text() == str(vault_copy)  # still as chosen
    guide.next()  # the same choice again: applied once
    assert len(guide.apply_tasks) == 1
    guide.back()
    page.set_folder(str(other))
    guide.next()
    assert vaults() == [str(other.resolve())]
    guide.back()
    page.keep.setChecked(True)
    guide.next()
    assert vaults() == []  # back to the sample
    qloop.run_until_complete(settled(desk))
    assert desk.runtime.engine.using_sample_vault


def test_closing_midway_keeps_what_was_applied_and_marks_it_seen(start_app, vault_copy, qloop):
    desk = start_app()
    guide = desk.guide
    guide.vault_page.set_folder(str(vault_copy))
    guide.next()
    guide.button(QWizard.CancelButton).click()  # "Close" on the model step
    assert not guide.isVisible() and seen(desk)
    qloop.run_until_complete(guide.settled())
    qloop.run_until_complete(settled(desk))
    assert [v.path for v in saved(desk).vaults] == [str(vault_copy.resolve())]


def test_help_getting_started_reopens_it_and_it_never_opens_unasked_in_tests(
    start_app, make_desktop, vault_copy, qloop, tmp_path
):
    quiet = make_desktop(vault_copy, data_dir=tmp_path / "other-data")  # how every other UI test builds the app
    assert quiet.guide is None and not seen(quiet)
    quiet.quit()

    desk = start_app()
    desk.guide.reject()  # Escape
    assert desk.guide is None and seen(desk)
    desk.window.help_actions.guide_action.trigger()
    guide = desk.guide
    assert guide is not None and guide.isVisible() and guide.currentId() == guide.VAULT
    desk.window.help_actions.guide_action.trigger()  # asked twice: the same guide
    assert desk.guide is guide
    guide.vault_page.set_folder(str(vault_copy))
    guide.next()
    qloop.run_until_complete(guide.settled())
    qloop.run_until_complete(settled(desk))
    guide.reject()

    reopened = desk.open_guide()  # with a vault saved, the first choice keeps it
    assert reopened.vault_page.keep.text().replace("&", "") == "Keep the vaults you have (1)"
    reopened.next()
    assert reopened.apply_tasks == []
    reopened.reject()
    assert [v.path for v in saved(desk).vaults] == [str(vault_copy.resolve())]


def test_not_offered_in_the_tray_at_login_nor_in_the_packaged_smoke_test(start_app):
    assert offered_at_start(False, {})
    assert not offered_at_start(True, {})  # --minimized, as "Start with the system" starts it
    assert not offered_at_start(False, {"DLE_DESKTOP_EXIT_WHEN_SHOWN": "1"})
    desk = start_app(start_hidden=True, tray_available=True)  # in the tray: nobody is looking
    assert not desk.window.isVisible() and desk.guide is None and not seen(desk)
    later = start_app()  # the next start with its window is still a first start
    assert later.guide is not None and later.guide.isVisible()


def test_the_gui_thread_only_looks_the_folder_up_and_a_worker_counts_its_notes(tmp_path):
    (tmp_path / "Mira.md").write_text("# Mira\n", encoding="utf-8")
    assert locate_folder(str(tmp_path)) == (tmp_path.resolve(), "Counting the notes…", "")
    assert locate_folder(str(tmp_path / "nowhere"))[0] is None
    assert check_folder(str(tmp_path))[1] == "✔ 1 note found."
