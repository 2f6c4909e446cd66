"""The "Test a chat" panel against the real engine: a dry run with verdicts and injected text."""

from __future__ import annotations

import json

from tests.ui.conftest import wait_for


def test_panel_runs_pipeline_and_shows_verdicts(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    panel = view.test_panel

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        ok = await panel.run_async()
        assert ok, panel.status.text()
        rows = panel.verdict_rows()
        titles = {r[0] for r in rows}
        assert "Lantern Quay" in titles and "Tidewriting" in titles
        assert any(r[0] == "Tidewriting" and r[2] == "injected" for r in rows)
        assert "dry run" in panel.status.text()
        html = panel.prompt.toPlainText()
        assert "<Tidewriting>" in html  # the injection template with the entry title
        assert "entries" in panel.generation.currentText()
        # A dry run: the engine's stored chat state is untouched.
        assert desk.runtime.engine.retrieval._store is None

    qloop.run_until_complete(scenario())


def test_panel_replay_gives_one_generation_per_user_message(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel
    chat = [
        {"name": "Mira", "mes": "Lantern Quay at dusk.", "is_user": True},
        {"name": "Narrator", "mes": "The quay glitters."},
        {"name": "Mira", "mes": "Again to Lantern Quay.", "is_user": True},
    ]

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        panel.input.setPlainText(json.dumps(chat))
        panel.replay.setChecked(True)
        assert await panel.run_async()
        assert panel.generation.count() == 2
        rows = panel.verdict_rows()  # the last generation: Lantern Quay was injected one generation ago
        assert any(r[0] == "Lantern Quay" and r[1] == "strip duplicates" and r[2] == "removed" for r in rows)
        panel.generation.setCurrentIndex(0)
        assert any(r[0] == "Lantern Quay" and r[2] == "injected" for r in panel.verdict_rows())

    qloop.run_until_complete(scenario())


def test_panel_reports_bad_chat_without_running(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        panel.input.setPlainText('[{"name": "A", "mes": 5}]')
        assert not await panel.run_async()
        assert "messages[0].mes must be text" in panel.status.text()
        panel.input.setPlainText("   ")
        assert not await panel.run_async()
        assert "empty" in panel.status.text()

    qloop.run_until_complete(scenario())


def test_verdict_double_click_selects_entry(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view
    panel = view.test_panel

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        assert await panel.run_async()
        row = next(r for r in range(panel.proxy.rowCount()) if panel.proxy.index(r, 0).data() == "Lantern Quay")
        panel.verdicts.doubleClicked.emit(panel.proxy.index(row, 0))
        uid = view.current_uid()
        assert view.snapshot.by_uid[uid].title == "Lantern Quay"
        assert view.right_tabs.currentWidget() is view.detail

    qloop.run_until_complete(scenario())


def _ai_settings(url: str):
    from dle_desktop.state.settings import settings_from_mapping

    return settings_from_mapping(
        {
            "connection_profiles": [
                {
                    "id": "f",
                    "name": "Fake",
                    "provider": "openai",
                    "flavor": "custom",
                    "base_url": url + "/v1",
                    "model": "m",
                }
            ],
            "aiSearchProfileId": "f",
            "aiSearchTimeout": 60000,
        }
    )


def test_panel_runs_with_ai_search_on_and_shows_its_notes(make_desktop, vault_copy, qloop):
    from tests.fakes.ai_provider import FakeAiProvider

    with FakeAiProvider() as fake:
        desk = make_desktop(vault_copy, settings=_ai_settings(fake.url))
        view = desk.window.vault_view
        panel = view.test_panel
        fake.reply(
            structured={
                "selected": [{"title": "Guild of Lamplighters", "confidence": "high", "reason": "they keep the lamps"}]
            }
        )
        fake.reply(structured={"selected": []})

        async def scenario():
            await wait_for(lambda: view.model.rowCount() == 61)
            panel.ai_mode.setCurrentIndex(2)  # two-stage for this run only
            assert await panel.run_async(), panel.status.text()
            rows = panel.verdict_rows()
            assert any(r[0] == "Guild of Lamplighters" and r[1] == "ai search" and r[2] == "matched" for r in rows)
            assert "AI search" in panel.summary.text()
            panel.input.setPlainText(panel.input.toPlainText() + "\nMira: And the tolls?")
            assert await panel.run_async()
            assert "the AI picked no entries; fallback: constants" in panel.notes.text()
            panel.ai_mode.setCurrentIndex(1)  # off: no call
            assert await panel.run_async()
            assert len(fake.requests) == 2 and not panel.notes.isVisible()

        qloop.run_until_complete(scenario())


def test_cancel_stops_a_hanging_ai_call(make_desktop, vault_copy, qloop):
    import asyncio

    from tests.fakes.ai_provider import FakeAiProvider

    with FakeAiProvider() as fake:
        desk = make_desktop(vault_copy, settings=_ai_settings(fake.url))
        view = desk.window.vault_view
        panel = view.test_panel
        fake.hang()

        async def scenario():
            await wait_for(lambda: view.model.rowCount() == 61)
            panel.ai_mode.setCurrentIndex(3)  # AI only
            panel.run()
            await wait_for(lambda: fake.waiting == 1)
            assert panel.cancel_button.isEnabled() and not panel.run_button.isEnabled()
            panel.cancel()
            await wait_for(lambda: panel.run_button.isEnabled())
            assert panel.status.text().startswith("Cancelled")
            await asyncio.to_thread(fake.wait_for_disconnect)
            assert fake.disconnects == 1

        qloop.run_until_complete(scenario())


def test_the_status_bar_says_when_the_ai_breaker_pauses_calls(make_desktop, vault_copy, qloop):
    from tests.fakes.ai_provider import FakeAiProvider

    with FakeAiProvider() as fake:
        desk = make_desktop(vault_copy, settings=_ai_settings(fake.url))
        window = desk.window
        panel = window.vault_view.test_panel
        fake.fail(500)
        fake.fail(502)

        async def scenario():
            await wait_for(lambda: window.vault_view.model.rowCount() == 61)
            panel.ai_mode.setCurrentIndex(2)
            assert not window.ai_label.isVisibleTo(window)
            for extra in ("", "\nMira: And the tolls?"):
                panel.input.setPlainText(panel.input.toPlainText() + extra)
                assert await panel.run_async()
            await wait_for(lambda: window.ai_label.isVisibleTo(window))
            assert "circuit breaker" in window.ai_label.text() and "Channels view" in window.ai_label.toolTip()
            await window.bridge.run(window.bridge.engine.ai.reset_breaker)
            await wait_for(lambda: not window.ai_label.isVisibleTo(window))

        qloop.run_until_complete(scenario())


EXAMPLE_TWO = "Mira: Lantern Quay at dusk.\nNarrator: The quay glitters.\n"


def test_status_counts_one_message_in_the_singular(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        panel.input.setPlainText("Mira: We come ashore at Lantern Quay.")
        assert await panel.run_async()
        assert panel.status.text().startswith("1 message · dry run")
        panel.input.setPlainText(EXAMPLE_TWO)
        assert await panel.run_async()
        assert panel.status.text().startswith("2 messages · dry run")

    qloop.run_until_complete(scenario())


def test_an_input_error_clears_the_previous_results(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        assert await panel.run_async()
        assert panel.verdict_rows() and panel.generation.count() == 1 and panel.summary.text()
        panel.input.setPlainText('[{"name": "A", "mes": 5}]')
        assert not await panel.run_async()
        assert "messages[0].mes must be text" in panel.status.text()
        # Nothing from the earlier run is left to be taken for this chat's result
        assert panel.verdict_rows() == [] and panel.generation.count() == 0
        assert panel.summary.text() == "" and panel.notes.isHidden()
        assert panel.prompt.toPlainText() == ""

    qloop.run_until_complete(scenario())


def test_a_verdict_filter_that_finds_nothing_says_so(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        assert await panel.run_async()
        assert panel.no_matches.isHidden()
        panel.verdict_filter.setText("zzz-nothing")
        assert panel.proxy.rowCount() == 0 and not panel.no_matches.isHidden()
        assert "No verdict matches “zzz-nothing”" in panel.no_matches.text()
        panel.verdict_filter.clear()
        assert panel.no_matches.isHidden()

    qloop.run_until_complete(scenario())


def test_a_chat_file_loads_into_the_box_and_one_that_cannot_be_read_says_why(make_desktop, vault_copy, qloop, tmp_path):
    desk = make_desktop(vault_copy)
    panel = desk.window.vault_view.test_panel
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        '{"user_name":"You","character_name":"Mira"}\n{"name":"You","is_user":true,"mes":"Hello"}\n', encoding="utf-8"
    )
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("Caf\xe9: bonjour\n".encode("latin-1"))

    async def scenario():
        await panel.load_path(str(chat))
        assert panel.input.toPlainText() == chat.read_text(encoding="utf-8")
        assert panel.status.text() == f"Loaded {chat}"
        await panel.load_path(str(latin))
        assert panel.status.text().startswith(f"Could not read {latin}")
        assert panel.input.toPlainText() == chat.read_text(encoding="utf-8")  # nothing lost
        await panel.load_path(str(tmp_path / "missing.jsonl"))
        assert panel.status.text().startswith("Could not read") and "missing.jsonl" in panel.status.text()

    qloop.run_until_complete(scenario())
