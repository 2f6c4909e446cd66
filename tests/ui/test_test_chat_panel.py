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
