"""Issue 21.15: once every entry is embedded there is nothing to pause, so the strip offers no
Pause at "ready, N of N"; Pause is there while entries are being embedded, Resume while paused.
The real engine embeds the test vault with a tiny real GGUF model."""

from __future__ import annotations

from tests.ui.conftest import wait_for
from tests.ui.semantic_support import embeddable_entries, settings_for, tiny_model  # noqa: F401 - fixture


def test_ready_offers_no_pause_while_embedding_and_paused_offer_pause_and_resume(
    make_desktop, vault_copy, tiny_model, qloop
):
    desk = make_desktop(
        vault_copy,
        settings=settings_for(
            vault_copy, semantic_enabled=True, semantic_paused=True, embedding_model_path=str(tiny_model)
        ),
    )
    strip = desk.window.vault_view.semantic_strip
    offered: list[tuple[str, bool, str]] = []  # (state, button shown, its text) after each event
    desk.bridge.semantic.connect(
        lambda *_: offered.append((strip.state, not strip.pause_button.isHidden(), strip.pause_button.text()))
    )

    async def scenario():
        await wait_for(lambda: strip.state == "paused", timeout=60, what="the pass, paused from the start")
        assert not strip.pause_button.isHidden() and strip.pause_button.isEnabled()
        assert strip.pause_button.text() == "Resume"
        strip.pause_button.click()
        await wait_for(lambda: strip.state == "ready", timeout=60, what="embedding resumed and finished")
        n = embeddable_entries(desk)
        assert strip.label.full_text == f"Semantic index: ready, {n} of {n} entries embedded (tiny)"
        assert strip.pause_button.isHidden()  # nothing left to pause

    qloop.run_until_complete(scenario())
    embedding = [(shown, text) for state, shown, text in offered if state == "embedding"]
    assert embedding and all(shown and text == "Pause" for shown, text in embedding)


def test_paused_at_ready_still_offers_resume(make_desktop, vault_copy, tiny_model, qloop):
    """Paused after the last batch: new and changed entries wait, and Resume lets them through."""
    desk = make_desktop(
        vault_copy,
        settings=settings_for(vault_copy, semantic_enabled=True, embedding_model_path=str(tiny_model)),
    )
    strip = desk.window.vault_view.semantic_strip

    async def scenario():
        await wait_for(lambda: strip.state == "ready", timeout=60, what="semantic index ready")
        assert strip.pause_button.isHidden()
        strip.toggle_pause()  # as the engine's remembered pause, or a Pause clicked as the last batch ended
        assert "paused" in strip.label.full_text
        assert not strip.pause_button.isHidden() and strip.pause_button.text() == "Resume"
        await wait_for(lambda: desk.runtime.engine.semantic.paused, what="the engine paused")
        strip.pause_button.click()
        assert strip.pause_button.isHidden()
        await wait_for(lambda: not desk.runtime.engine.semantic.paused, what="the engine resumed")

    qloop.run_until_complete(scenario())
