"""Settings → Embeddings, driven like a user would: the real app and engine on a copy of the
sample vault, a tiny real GGUF model, and a loopback HTTP server for the model download."""

from __future__ import annotations

import re
import socket

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from dle_desktop.state.settings import SettingsStore
from tests.ui.conftest import wait_for
from tests.ui.semantic_support import (  # noqa: F401 - fixtures
    embeddable_entries,
    model_server,
    serve_default_model,
    settings_for,
    tiny_model,
)


def press_ok(dlg) -> None:
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok).click()


def plain(text: str) -> str:
    return text.replace("&", "")


async def settled(desk) -> None:
    """Until the window shows the current engine's index (after "OK" swapped engines), so no
    engine event is still on its way when the test's event loop closes."""
    if desk.apply_task is not None:  # settings are applied in the background
        await desk.apply_task
    view = desk.window.vault_view
    await wait_for(
        lambda: (snap := desk.runtime.engine.snapshot) is not None and view.snapshot is snap,
        timeout=60,
        what="the new engine's index in the window",
    )


def test_page_round_trips_settings_through_save_and_a_new_engine(make_desktop, vault_copy, tiny_model, qloop):
    desk = make_desktop(
        vault_copy,
        settings=settings_for(
            vault_copy,
            semantic_top_k=7,
            semantic_min_score=0.5,
            semantic_rrf_k=80,
            embedding_model_path=str(tiny_model),
            vector_ann_threshold=5000,
        ),
    )
    strip = desk.window.vault_view.semantic_strip
    assert strip.isHidden()  # semantic search is off

    dlg = desk.open_settings(page="embeddings")
    page = dlg.embeddings
    assert dlg.current_page() == "embeddings"
    assert not page.semantic.isChecked() and not page.top_k.isEnabled()
    assert (page.top_k.value(), page.min_score.value(), page.rrf_k.value(), page.ann_threshold.value()) == (
        7,
        0.5,
        80,
        5000,
    )
    assert page.use_file.isChecked() and page.path.text() == str(tiny_model)
    assert page.file_message.text().startswith("✔ tiny.gguf")

    page.semantic.setChecked(True)
    assert page.top_k.isEnabled()
    page.top_k.setValue(12)
    page.min_score.setValue(-0.25)
    page.rrf_k.setValue(1)
    page.ann_threshold.setValue(123456)
    press_ok(dlg)

    saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
    assert (
        saved.semantic_enabled,
        saved.semantic_top_k,
        saved.semantic_min_score,
        saved.semantic_rrf_k,
        saved.embedding_model_path,
        saved.vector_ann_threshold,
    ) == (True, 12, -0.25, 1, str(tiny_model), 123456)
    assert saved.server_port == desk.runtime.ctx.settings.server_port  # the other pages' values are kept

    async def scenario():
        # The new engine embeds the vault with the chosen model, and the strip says so.
        await desk.apply_task  # applied in the background
        assert desk.runtime.engine.semantic_enabled
        assert not strip.isHidden()
        await wait_for(lambda: strip.state == "ready", timeout=60, what="semantic index ready")
        assert "(tiny)" in strip.label.full_text

    qloop.run_until_complete(scenario())

    again = desk.open_settings(page="embeddings").embeddings
    assert again.semantic.isChecked() and again.top_k.value() == 12 and again.min_score.value() == -0.25
    again.use_default.setChecked(True)
    assert again.values()["embedding_model_path"] == ""  # "" = the default model
    again.window().reject()


def test_browsing_to_a_file_that_is_not_a_gguf_says_so_and_blocks_saving(
    make_desktop, vault_copy, tiny_model, tmp_path, qloop
):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    dlg = desk.open_settings(page="embeddings")
    page = dlg.embeddings
    assert page.use_default.isChecked() and page.file_message.text() == ""

    async def scenario():
        bad = tmp_path / "notes.gguf"
        bad.write_text("<html>a login page, not a model</html>", encoding="utf-8")
        chooser = page.browse()
        chooser.selectFile(str(bad))
        chooser.accept()
        assert page.use_file.isChecked() and page.path.text() == str(bad)
        assert "not a GGUF model file" in page.file_message.text()

        press_ok(dlg)
        assert dlg.result_settings is None and dlg.isVisible()  # nothing saved, nothing lost
        assert dlg.current_page() == "embeddings"
        assert not desk.runtime.ctx.paths.settings_file.exists()

        page.path.setText(str(tmp_path / "missing.gguf"))
        page.path.editingFinished.emit()
        assert "does not exist" in page.file_message.text()
        page.path.clear()
        press_ok(dlg)
        assert "Choose a model file" in page.file_message.text() and dlg.result_settings is None

        page.set_model_file(str(tiny_model))
        assert page.file_message.text().startswith("✔")
        press_ok(dlg)
        assert dlg.result_settings is not None
        assert SettingsStore(desk.runtime.ctx.paths.settings_file).load().embedding_model_path == str(tiny_model)
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_download_shows_progress_and_makes_the_default_model_available(
    make_desktop, vault_copy, tiny_model, model_server, qloop
):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy, semantic_enabled=True))
    serve_default_model(desk, model_server, tiny_model.read_bytes())
    model_server.behaviour.chunk_delay = 0.005
    strip = desk.window.vault_view.semantic_strip
    page = desk.open_settings(page="embeddings").embeddings
    seen: list[tuple[str, int, str]] = []
    desk.model_download.progressed.connect(
        lambda *_: seen.append((page.download_message.text(), page.progress.value(), strip.label.full_text))
    )

    async def scenario():
        await wait_for(lambda: strip.state == "error", timeout=60, what="no model yet")
        assert strip.label.full_text.startswith("Semantic search unavailable: no local embedding model")
        assert page.model_state.text().startswith("Not downloaded yet")
        assert not page.need_model_note.isHidden()

        page.download_button.click()
        assert desk.model_download.running and not page.download_button.isEnabled()
        assert not page.cancel_button.isHidden() and not page.progress.isHidden()
        await wait_for(lambda: not desk.model_download.running, timeout=30, what="download done")

        size = tiny_model.stat().st_size
        assert len(seen) > 3
        assert seen[-1][0].startswith(f"{size / 1e3:.0f} kB of {size / 1e3:.0f} kB (100%)")
        assert seen[-1][1] == 1000
        assert [v for _, v, _ in seen] == sorted(v for _, v, _ in seen)
        assert any(re.fullmatch(r"Model download: \d+ kB / \d+ kB", text) for *_, text in seen)
        assert page.download_message.text() == "Download complete and verified."
        assert page.model_state.text().startswith("✔ Downloaded")
        assert page.download_button.isHidden() and page.cancel_button.isHidden()
        assert page.need_model_note.isHidden()
        assert desk.model_download.is_available()
        assert desk.model_download.model_path().read_bytes() == tiny_model.read_bytes()

        # Semantic search was waiting for this model: the engine takes it up without a restart.
        await wait_for(lambda: strip.state == "ready", timeout=60, what="embedded with the downloaded model")
        n = embeddable_entries(desk)
        assert f"ready, {n} of {n} entries embedded" in strip.label.full_text

    qloop.run_until_complete(scenario())


def test_cancelled_download_keeps_its_bytes_and_resumes(make_desktop, vault_copy, tiny_model, model_server, qloop):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    payload = tiny_model.read_bytes()
    spec = serve_default_model(desk, model_server, payload)
    model_server.behaviour.chunk_delay = 0.05
    page = desk.open_settings(page="embeddings").embeddings
    download = desk.model_download
    messages: list[str] = []
    download.started.connect(lambda *_: messages.append(page.download_message.text()))

    async def scenario():
        page.download_button.click()
        await wait_for(
            lambda: download.last_progress is not None and download.last_progress.downloaded >= 32768, what="some bytes"
        )
        page.cancel_button.click()
        await wait_for(lambda: not download.running, what="cancelled")
        part = download.manager.part_path(spec)
        kept = part.stat().st_size
        assert 0 < kept < len(payload)
        assert not download.is_available()
        assert (
            page.download_message.text().startswith("Download cancelled; ") and "kept" in page.download_message.text()
        )
        assert page.model_state.text().startswith("Partly downloaded: ") and "resumes" in page.model_state.text()
        assert plain(page.download_button.text()) == "Resume download" and page.download_button.isEnabled()
        assert page.cancel_button.isHidden()

        # Reopening Settings later shows the same partial download.
        later = desk.open_settings(page="embeddings").embeddings
        assert plain(later.download_button.text()) == "Resume download"
        model_server.behaviour.chunk_delay = 0.0
        later.download_button.click()
        assert messages[-1].startswith("Resuming from ")
        await wait_for(lambda: not download.running, what="resumed download done")
        assert download.is_available() and download.model_path().read_bytes() == payload
        ranges = [r["range"] for r in model_server.behaviour.requests if r["path"].startswith("/cdn/")]
        assert ranges[0] is None and ranges[-1].startswith("bytes=") and int(ranges[-1][6:-1]) >= 32768
        assert later.model_state.text().startswith("✔ Downloaded")

    qloop.run_until_complete(scenario())


@pytest.mark.parametrize("failure, words", [("checksum", "is corrupt"), ("no-network", "no network")])
def test_download_errors_are_plain_and_lose_nothing(
    make_desktop, vault_copy, tiny_model, model_server, qloop, failure, words
):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    spec = serve_default_model(
        desk, model_server, tiny_model.read_bytes(), sha256="0" * 64 if failure == "checksum" else None
    )
    if failure == "no-network":
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        desk.model_download.spec = type(spec)(filename=spec.filename, url=f"http://127.0.0.1:{port}/model.gguf")
    dlg = desk.open_settings(page="embeddings")
    page = dlg.embeddings
    page.semantic.setChecked(True)
    page.top_k.setValue(9)

    async def scenario():
        page.download_button.click()
        await wait_for(lambda: not desk.model_download.running, what="download ended")
        message = page.download_message.text()
        assert message.startswith("✖ The download failed: ") and words in message
        assert not desk.model_download.is_available()
        assert page.download_button.isEnabled() and not page.download_button.isHidden()
        # What the user had typed is still there and saves.
        assert page.semantic.isChecked() and page.top_k.value() == 9 and page.use_default.isChecked()
        press_ok(dlg)
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert saved.semantic_enabled and saved.semantic_top_k == 9
        await settled(desk)

    qloop.run_until_complete(scenario())
