"""The vault view's semantic strip, fed by the real engine's "semantic" events: progress while the
entries are embedded with a tiny real GGUF model, then the counts; Pause/Resume that reaches the
engine and survives a restart; the reason when semantic search is unavailable."""

from __future__ import annotations

import re

from dle_desktop.state.settings import SettingsStore
from tests.ui.conftest import wait_for
from tests.ui.semantic_support import embeddable_entries, settings_for, tiny_model  # noqa: F401 - fixture


def watch(desk) -> list[tuple[str, str, bool]]:
    """(state, text, bar shown) as the strip showed them after each semantic event."""
    strip = desk.window.vault_view.semantic_strip
    seen: list[tuple[str, str, bool]] = []
    # Connected after the strip's own slot, so this sees what the strip made of the event.
    desk.bridge.semantic.connect(lambda *_: seen.append((strip.state, strip.label.full_text, not strip.bar.isHidden())))
    return seen


def test_strip_shows_embedding_progress_then_ready_counts(make_desktop, vault_copy, tiny_model, qloop):
    desk = make_desktop(
        vault_copy, settings=settings_for(vault_copy, semantic_enabled=True, embedding_model_path=str(tiny_model))
    )
    strip = desk.window.vault_view.semantic_strip
    seen = watch(desk)
    assert not strip.isHidden()

    async def scenario():
        await wait_for(lambda: strip.state == "ready", timeout=60, what="semantic index ready")
        n = embeddable_entries(desk)
        progress = [(text, bar) for state, text, bar in seen if state == "embedding" and " / " in text]
        assert progress, seen
        assert all(bar for _, bar in progress)
        assert re.fullmatch(rf"Semantic index: embedding \d+ / {n} entries \(tiny\)", progress[-1][0])
        assert strip.label.full_text == f"Semantic index: ready, {n} of {n} entries embedded (tiny)"
        assert strip.bar.isHidden() and strip.settings_button.isHidden()
        assert strip.pause_button.isHidden()  # all embedded: nothing to pause (issue 21.15)

    qloop.run_until_complete(scenario())


def test_pause_and_resume_reach_the_engine_and_survive_a_restart(make_desktop, vault_copy, tiny_model, tmp_path, qloop):
    data = tmp_path / "data"
    desk = make_desktop(
        vault_copy,
        data_dir=data,
        settings=settings_for(vault_copy, semantic_enabled=True, embedding_model_path=str(tiny_model)),
    )
    strip = desk.window.vault_view.semantic_strip
    store = SettingsStore(desk.runtime.ctx.paths.settings_file)

    def pause_while_embedding(*_args) -> None:
        # Pause is offered only while entries are being embedded: click it at the first progress.
        if strip.state == "embedding" and not strip.pause_button.isHidden() and not strip.paused:
            strip.pause_button.click()

    desk.bridge.semantic.connect(pause_while_embedding)

    async def pause_then_edit():
        await wait_for(lambda: desk.runtime.engine.semantic.paused, timeout=60, what="engine paused")
        await wait_for(lambda: strip.state in ("paused", "ready"), timeout=60, what="the pass stopped")
        assert store.load().semantic_paused is True
        assert strip.pause_button.text() == "Resume" and "paused" in strip.label.full_text
        # An edit now waits: the new pass starts paused.
        note = vault_copy / "Places" / "Lantern Quay.md"
        note.write_text(note.read_text(encoding="utf-8") + "\nNew gossip on the quay.\n", encoding="utf-8")
        await wait_for(lambda: strip.state == "paused", timeout=30, what="the pass for the edit, paused")
        assert strip.label.full_text.startswith("Semantic index: paused")
        assert not strip.bar.isHidden()

    qloop.run_until_complete(pause_then_edit())
    desk.quit()

    again = make_desktop(vault_copy, data_dir=data, settings=store.load())
    strip = again.window.vault_view.semantic_strip
    assert strip.paused and strip.pause_button.text() == "Resume"

    async def resume_after_restart():
        await wait_for(lambda: strip.state == "paused", timeout=60, what="the held-back entry, still paused")
        assert again.runtime.engine.semantic.paused
        # Paused before the first batch, it still says how far it is (the entries the first run
        # left when it paused, and the edited one)
        await wait_for(
            lambda: re.fullmatch(r"Semantic index: paused at 0 / [1-9]\d* entries \(tiny\)", strip.label.full_text),
            what="the counts of the paused pass",
        )
        assert not strip.bar.isHidden()
        strip.pause_button.click()
        await wait_for(lambda: strip.state == "ready", timeout=60, what="embedding resumed and finished")
        n = embeddable_entries(again)
        assert f"ready, {n} of {n} entries embedded" in strip.label.full_text
        assert store.load().semantic_paused is False and not again.runtime.engine.semantic.paused
        assert strip.pause_button.isHidden()  # all embedded: nothing to pause

    qloop.run_until_complete(resume_after_restart())


def test_unavailable_semantic_search_says_why_and_leads_to_its_settings(make_desktop, vault_copy, tmp_path, qloop):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    desk = make_desktop(
        vault_copy, settings=settings_for(vault_copy, semantic_enabled=True, embedding_model_path=str(broken))
    )
    strip = desk.window.vault_view.semantic_strip

    async def scenario():
        await wait_for(lambda: strip.state == "error", timeout=60, what="the model error")
        reason = desk.runtime.engine.semantic.status.error
        assert reason and strip.label.full_text.startswith("Semantic search unavailable: ")
        assert strip.label.full_text.removeprefix("Semantic search unavailable: ") in reason
        assert strip.label.toolTip() == reason  # the whole of it, details included
        assert strip.pause_button.isHidden() and strip.bar.isHidden()
        assert not strip.settings_button.isHidden()
        strip.settings_button.click()
        dlg = desk.settings_dialog
        assert dlg is not None and dlg.isVisible()
        assert dlg.current_page() == "embeddings"
        assert dlg.embeddings.path.text() == str(broken)
        dlg.reject()

    qloop.run_until_complete(scenario())


def test_with_every_vault_disabled_the_strip_offers_no_resume(make_desktop, vault_copy, tiny_model, qloop):
    desk = make_desktop(
        vault_copy,
        enabled=False,
        settings=settings_for(
            vault_copy, semantic_enabled=True, semantic_paused=True, embedding_model_path=str(tiny_model)
        ),
    )
    strip = desk.window.vault_view.semantic_strip

    async def scenario():
        await wait_for(lambda: strip.state == "ready", timeout=60, what="the (empty) semantic index")
        assert strip.label.full_text == "Semantic index: no entries to embed"
        assert strip.pause_button.isHidden() and strip.bar.isHidden()

    qloop.run_until_complete(scenario())
