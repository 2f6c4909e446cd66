"""Issue 22: SillyTavern's /dle-graph and /dle-librarian bring the app's window up (POST
/api/dle/v1/app/show over real HTTP to the app's own server): at the view asked for, with the
entry or gap selected, from the tray too, and still after a settings change makes a new engine."""

from __future__ import annotations

import asyncio

import httpx

from tests.ui.conftest import wait_for


def _post(desk, body: dict) -> httpx.Response:
    server = desk.runtime.server
    with httpx.Client(base_url=server.url, timeout=30) as client:
        return client.post("/api/dle/v1/app/show", json=body, headers={"X-DLE-Token": desk.runtime.server_token()})


async def _show(desk, body: dict) -> httpx.Response:
    return await asyncio.to_thread(_post, desk, body)


def test_each_view_is_brought_up_with_its_entry_selected(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    win.tabs.setCurrentWidget(win.sillytavern_view)

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        for view, widget in (("graph", win.graph_view), ("channels", win.channels_view)):
            r = await _show(desk, {"view": view})
            assert r.status_code == 200 and r.json() == {"view": view, "shown": True}
            await wait_for(lambda w=widget: win.tabs.currentWidget() is w, what=f"the {view} view")

        r = await _show(desk, {"view": "vault", "entry": "lantern quay"})  # a title, any case
        assert r.status_code == 200
        await wait_for(lambda: win.tabs.currentWidget() is win.vault_view, what="the vault view")
        await wait_for(lambda: win.vault_view.current_uid() is not None, what="a selected entry")
        chosen = win.vault_view.snapshot.by_uid[win.vault_view.current_uid()]
        assert chosen.title == "Lantern Quay"
        assert win.vault_view.right_tabs.currentWidget() is win.vault_view.detail

        # A title the vault lacks: the view comes up, the selection stays, the status bar says why.
        assert (await _show(desk, {"view": "vault", "entry": "No Such Place"})).status_code == 200
        await wait_for(lambda: "No Such Place" in win.statusBar().currentMessage(), what="the note")
        assert "no entry has that title" in win.statusBar().currentMessage()
        assert win.vault_view.snapshot.by_uid[win.vault_view.current_uid()].title == "Lantern Quay"

        # A view the server does not know is refused there; the window stays as it was.
        r = await _show(desk, {"view": "sideways"})
        assert r.status_code == 400 and "view" in r.json()["error"]
        await asyncio.sleep(0.2)
        assert win.tabs.currentWidget() is win.vault_view

    qloop.run_until_complete(scenario())


def test_a_window_hidden_in_the_tray_is_shown(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    win.hide()  # as closing to the tray leaves it
    assert not win.isVisible()

    async def scenario() -> None:
        assert (await _show(desk, {"view": "graph"})).status_code == 200
        await wait_for(win.isVisible, what="the window shown")
        assert win.tabs.currentWidget() is win.graph_view
        assert not win.isMinimized()

    qloop.run_until_complete(scenario())


def test_a_gap_is_opened_in_the_gaps_tab_and_a_hidden_one_comes_back(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    lists = win.librarian_view.lists

    async def scenario() -> None:
        gaps = desk.bridge.librarian.gaps
        first = await desk.bridge.run(gaps.record_search_miss, "the sunken chapel")
        second = await desk.bridge.run(gaps.flag, "Harbour tolls", "the toll rates changed")
        await desk.bridge.run(gaps.hide, second.id)

        assert (await _show(desk, {"view": "librarian", "gap": first.id})).status_code == 200
        await wait_for(lambda: lists.gaps.currentItem() is not None, what="the gap selected")
        assert win.tabs.currentWidget() is win.librarian_view
        assert lists.currentIndex() == 1 and lists.tabText(1).startswith("Gaps")
        assert "the sunken chapel" in lists.gaps.currentItem().text()

        assert (await _show(desk, {"view": "librarian", "gap": second.id})).status_code == 200
        await wait_for(
            lambda: lists.gaps.currentItem() is not None and "Harbour tolls" in lists.gaps.currentItem().text(),
            what="the hidden gap shown and selected",
        )
        assert "shown again" in win.statusBar().currentMessage()
        assert not (await desk.bridge.run(gaps.get, second.id)).hidden

        assert (await _show(desk, {"view": "librarian", "gap": "gap-000000000000"})).status_code == 200
        await wait_for(lambda: "not recorded" in win.statusBar().currentMessage(), what="the unknown gap's note")
        assert "Harbour tolls" in lists.gaps.currentItem().text()  # the selection stays

    qloop.run_until_complete(scenario())


def test_review_and_audit_without_an_ai_connection_open_the_librarian_with_a_note(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window

    async def scenario() -> None:
        assert (await _show(desk, {"view": "librarian", "mode": "review"})).status_code == 200
        await wait_for(lambda: win.tabs.currentWidget() is win.librarian_view, what="the librarian")
        await wait_for(lambda: "Review a chat" in win.statusBar().currentMessage(), what="the review note")
        assert (await _show(desk, {"view": "librarian", "mode": "audit"})).status_code == 200
        await wait_for(lambda: "audit" in win.statusBar().currentMessage(), what="the audit note")
        assert "AI connection" in win.statusBar().currentMessage()
        assert win.librarian_view.session is None  # nothing was started without a connection
        assert (await _show(desk, {"view": "librarian", "mode": "sometimes"})).status_code == 400

    qloop.run_until_complete(scenario())


def test_a_new_engine_still_answers_and_quitting_tells_the_server_there_is_no_window(
    make_desktop, vault_copy, tmp_path, qloop
):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    old = desk.runtime.engine
    other = tmp_path / "other"
    other.mkdir()
    settings = desk.runtime.ctx.settings.replace(vaults=[{"name": "other", "kind": "folder", "path": str(other)}])

    async def scenario() -> None:
        task = desk.apply_settings(settings, {})
        assert task is not None
        await task
        assert desk.runtime.engine is not old  # a new vault: a new engine
        assert not old.window.attached and desk.runtime.engine.window.attached
        assert (await _show(desk, {"view": "graph"})).status_code == 200
        await wait_for(lambda: win.tabs.currentWidget() is win.graph_view, what="the graph view")

    qloop.run_until_complete(scenario())
    engine = desk.runtime.engine
    desk.window.prepare_quit()
    assert not engine.window.attached
    r = _post(desk, {"view": "graph"})
    assert r.status_code == 409 and "not running" in r.json()["error"]


def test_summarize_optimize_keys_a_session_note_and_a_suggestion_asked_from_sillytavern(
    make_desktop, vault_copy, qloop
):
    """/dle-summarize and /dle-optimize-keys without an AI connection say what is missing (and
    propose nothing); /dle-scribe-history's Open shows a session note (not a lore entry) read-only;
    a suggestion no longer waiting is said so."""
    from dle_desktop.ui.sillytavern.chat_writers import NoteDialog

    note = vault_copy / "Sessions" / "Ann - 2026-01-01 10-00-00.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("---\ntags: [lorebook-session]\n---\n# Session: Ann\n\nSESSION-TEXT\n", encoding="utf-8")
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    win = desk.window
    vault = win.vault_view

    async def scenario() -> None:
        await wait_for(lambda: vault.model.rowCount() == 61, what="61 entries")
        for body in (
            {"view": "librarian", "mode": "summarize"},
            {"view": "librarian", "mode": "optimize-keys", "entry": "lantern quay"},
        ):
            status = win.statusBar()
            status.clearMessage()
            assert (await _show(desk, body)).status_code == 200
            await wait_for(lambda s=status: "SillyTavern asked for" in s.currentMessage(), what="the note")
            assert "connection" in status.currentMessage().lower() or "profile" in status.currentMessage().lower()
        r = await _show(desk, {"view": "librarian", "mode": "optimize-keys", "entry": "No Such Entry"})
        assert r.status_code == 404 and "no entry is titled" in r.json()["error"]

        vault_name = vault.snapshot.entries[0].vault
        path = "Sessions/Ann - 2026-01-01 10-00-00.md"
        assert (await _show(desk, {"view": "vault", "vault": vault_name, "path": path})).status_code == 200
        await wait_for(lambda: vault.findChildren(NoteDialog), what="the note shown")
        (shown,) = vault.findChildren(NoteDialog)
        assert "SESSION-TEXT" in shown.text.toPlainText()
        shown.close()

        assert (await _show(desk, {"view": "librarian", "suggestion": "abc"})).status_code == 200
        await wait_for(lambda: "not waiting" in win.statusBar().currentMessage(), what="the suggestion note")
        assert win.tabs.currentWidget() is win.librarian_view

    qloop.run_until_complete(scenario())
