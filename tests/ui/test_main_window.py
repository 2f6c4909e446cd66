"""The desktop app, driven like a user would: real engine thread, real vault folder, offscreen Qt."""

from __future__ import annotations

from tests.ui.conftest import wait_for


def _titles(view) -> list[str]:
    proxy = view.proxy
    return [proxy.index(r, 0).data() for r in range(proxy.rowCount())]


def test_window_lists_sample_entries_and_health(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: view.health.topLevelItemCount() == 4, what="health groups")
        groups = [view.health.topLevelItem(i).text(0) for i in range(4)]
        assert groups[0] == "Errors (3)"
        assert groups[3] == "Not indexed (6)"
        assert "61 entries" in desk.window.index_label.text()
        assert desk.window.tabs.tabText(0) == "Vault (3 errors)"

    qloop.run_until_complete(scenario())


def test_filter_and_detail(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        view.filter.setText("tidewriting")
        titles = _titles(view)
        assert "Tidewriting" in titles and len(titles) < 61
        assert "of 61 entries" in view.count_label.text()
        view.filter.setText("zzz-no-such-thing")
        assert view.proxy.rowCount() == 0
        view.filter.clear()
        uid = next(e.uid for e in view.snapshot.entries if e.title == "Tidewriting")
        assert view.select_uid(uid)
        html = view.detail.toHtml()
        assert "Tidewriting" in html and "Injected text" in html
        assert view.current_uid() == uid

    qloop.run_until_complete(scenario())


def test_health_item_jumps_to_entry(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.health.topLevelItemCount() == 4)
        errors = view.health.topLevelItem(0)
        item = errors.child(0)
        view.health.itemActivated.emit(item, 0)
        uid = view.current_uid()
        assert uid is not None
        assert view.snapshot.by_uid[uid].title == item.text(0)

    qloop.run_until_complete(scenario())


def test_edit_on_disk_updates_table(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        (vault_copy / "Brand New Place.md").write_text(
            "---\ntags: [lorebook]\nkeys: [brand new]\n---\n# Brand New Place\nFresh lore.\n", encoding="utf-8"
        )
        await wait_for(lambda: view.model.rowCount() == 62, what="new entry via watcher")
        (vault_copy / "Brand New Place.md").unlink()
        await wait_for(lambda: view.model.rowCount() == 61, what="deleted entry via watcher")

    qloop.run_until_complete(scenario())


def test_selection_survives_reindex(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        uid = next(e.uid for e in view.snapshot.entries if e.title == "Lantern Quay")
        view.select_uid(uid)
        (vault_copy / "Another.md").write_text("---\ntags: [lorebook]\n---\n# Another\nx\n", encoding="utf-8")
        await wait_for(lambda: view.model.rowCount() == 62)
        assert view.current_uid() == uid

    qloop.run_until_complete(scenario())


def test_sync_now_and_progress_widgets(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win = desk.window

    async def scenario():
        await wait_for(lambda: win.vault_view.model.rowCount() == 61)
        win.on_progress(5, 10, "reading vault")
        assert win.progress.isVisibleTo(win) and win.cancel_button.isVisibleTo(win)
        assert win.progress.value() == 5
        win.on_sync_state({"syncing": False, "reason": "sync now"})
        assert not win.progress.isVisibleTo(win)
        win.sync_action.trigger()
        await wait_for(lambda: "Sync done" in win.statusBar().currentMessage(), what="sync message")

    qloop.run_until_complete(scenario())


def test_state_survives_restart(make_desktop, vault_copy, tmp_path, qloop):
    data = tmp_path / "state-data"
    desk = make_desktop(vault_copy, data_dir=data)
    view = desk.window.vault_view

    async def first():
        await wait_for(lambda: view.model.rowCount() == 61)
        view.filter.setText("house")
        uid = next(e.uid for e in view.snapshot.entries if e.title == "House Orsolo")
        view.select_uid(uid)
        desk.quit()
        return uid

    uid = qloop.run_until_complete(first())
    desk2 = make_desktop(vault_copy, data_dir=data)
    view2 = desk2.window.vault_view

    async def second():
        await wait_for(lambda: view2.model.rowCount() == 61)
        assert view2.filter.text() == "house"
        await wait_for(lambda: view2.current_uid() == uid, what="restored selection")

    qloop.run_until_complete(second())


def test_close_without_tray_quits(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, tray=False)
    quits = []
    desk.window.quitRequested.connect(lambda: quits.append(1))
    desk.window.close()
    assert quits == [1]


def test_close_with_tray_hides_and_keeps_running(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, tray=True)
    win = desk.window

    async def scenario():
        await wait_for(lambda: win.vault_view.model.rowCount() == 61)
        assert win.isVisible()
        win.close()
        assert not win.isVisible()
        assert not desk.done.is_set()
        assert desk.runtime.thread.alive
        # The engine keeps syncing while hidden.
        (desk.runtime.engine.sources[0].root / "Hidden Edit.md").write_text(
            "---\ntags: [lorebook]\n---\n# Hidden Edit\nx\n", encoding="utf-8"
        )
        await wait_for(lambda: len(desk.runtime.engine.snapshot) == 62, what="sync while hidden")
        desk.tray.openRequested.emit()
        assert win.isVisible()
        desk.tray.quitRequested.emit()
        assert desk.done.is_set()
        assert not desk.runtime.thread.alive

    qloop.run_until_complete(scenario())


def test_tray_pause_reaches_engine(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, tray=True)

    async def scenario():
        await wait_for(lambda: desk.window.vault_view.model.rowCount() == 61)
        desk.tray.pause_action.setChecked(True)
        await wait_for(lambda: desk.runtime.engine.sync_paused, what="engine paused")
        assert desk.window.pause_action.isChecked()
        (vault_copy / "While Paused.md").write_text("---\ntags: [lorebook]\n---\n# While Paused\nx\n", encoding="utf-8")
        import asyncio

        await asyncio.sleep(0.8)
        assert len(desk.runtime.engine.snapshot) == 61
        desk.window.pause_action.setChecked(False)
        await wait_for(lambda: len(desk.runtime.engine.snapshot) == 62, what="held change applied on resume")
        assert not desk.tray.pause_action.isChecked()

    qloop.run_until_complete(scenario())


def test_menu_shortcut_actions_work(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, tray=False)
    quits = []
    desk.window.quitRequested.connect(lambda: quits.append(1))
    desk.window.find_action.trigger()
    desk.window.quit_action.trigger()
    assert quits and quits[0] == 1


def test_add_vault_folder_switches_engine_and_persists(make_desktop, vault_copy, tmp_path, qloop):
    from dle_desktop.state.settings import SettingsStore

    desk = make_desktop(vault_copy)
    mine = tmp_path / "my-vault"
    (mine / "People").mkdir(parents=True)
    (mine / "People" / "Ada.md").write_text(
        "---\ntags: [lorebook]\nkeys: [Ada]\n---\n# Ada\nAn engineer.\n", encoding="utf-8"
    )
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        desk.add_vault_folder(str(mine))
        await wait_for(lambda: view.model.rowCount() == 1, what="the new vault's entries")
        assert view.snapshot.entries[0].title == "Ada"
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert [v.name for v in saved.vaults] == ["my-vault"]
        assert saved.vaults[0].path == str(mine.resolve())
        # The new engine is live: edits in the new vault are picked up.
        (mine / "Bob.md").write_text("---\ntags: [lorebook]\n---\n# Bob\nx\n", encoding="utf-8")
        await wait_for(lambda: view.model.rowCount() == 2, what="watcher on the new vault")
        desk.add_vault_folder(str(mine))  # the same folder twice is refused
        assert "already a vault" in desk.window.statusBar().currentMessage()

    qloop.run_until_complete(scenario())


def test_settings_dialog_builds_valid_settings(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    dlg = desk.open_settings(add_folder=str(vault_copy))
    dlg.conflict.setCurrentText("merge")
    dlg.port.setValue(0)
    dlg.close_to_tray.setChecked(False)
    s = dlg.build_settings()
    assert s.multi_vault_conflict_resolution == "merge"
    assert s.server_port == 0 and s.close_to_tray is False
    assert [v.kind for v in s.vaults] == ["folder"]
    dlg.table.selectRow(0)
    dlg.remove_selected()
    assert dlg.build_settings().vaults == ()
    dlg.reject()


def test_ctrl_f_focuses_the_filter(make_desktop, vault_copy, qtbot, qloop):
    """Ctrl+F was bound twice (window action and vault view), so Qt called it ambiguous and did
    nothing: the key went to the table's type-ahead instead."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    desk = make_desktop(vault_copy)
    window, view = desk.window, desk.window.vault_view
    window.show()
    window.activateWindow()
    qtbot.waitExposed(window)

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        view.table.setFocus()
        await wait_for(lambda: view.table.hasFocus(), what="table focus")
        QTest.keyClick(view.table, Qt.Key_F, Qt.ControlModifier)
        await wait_for(lambda: view.filter.hasFocus(), timeout=3, what="filter focus after Ctrl+F")
        # From another tab, Ctrl+F brings the Vault view forward first.
        window.tabs.setCurrentWidget(window.channels_view)
        window.channels_view.setFocus()
        QTest.keyClick(window.channels_view, Qt.Key_F, Qt.ControlModifier)
        await wait_for(
            lambda: window.tabs.currentWidget() is view and view.filter.hasFocus(),
            timeout=3,
            what="Vault tab and filter focus after Ctrl+F on Channels",
        )

    qloop.run_until_complete(scenario())


def test_a_filter_that_finds_nothing_says_so(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        assert view.no_matches.isHidden()
        view.filter.setText("zzz-no-such-thing")
        assert view.proxy.rowCount() == 0
        assert not view.no_matches.isHidden()
        assert "No entry matches “zzz-no-such-thing”" in view.no_matches.text()
        view.filter.setText("tidewriting")
        assert view.no_matches.isHidden()
        view.filter.clear()
        assert view.no_matches.isHidden()

    qloop.run_until_complete(scenario())


def test_paused_sync_says_how_many_changes_it_holds(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    label = window.sync_label

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61)
        assert not label.isVisibleTo(window)
        window.pause_action.setChecked(True)
        await wait_for(lambda: label.isVisibleTo(window), what="the paused sync in the status bar")
        assert label.text() == "Sync paused"
        for name in ("Held One", "Held Two"):
            (vault_copy / f"{name}.md").write_text(f"---\ntags: [lorebook]\n---\n# {name}\nx\n", encoding="utf-8")
        await wait_for(lambda: label.text() == "Sync paused · 2 changes held", what="the held changes counted")
        assert "Resume" in label.toolTip()
        assert len(desk.runtime.engine.snapshot) == 61
        window.pause_action.setChecked(False)
        await wait_for(lambda: len(desk.runtime.engine.snapshot) == 63, what="the held changes applied")
        await wait_for(lambda: not label.isVisibleTo(window), what="the label gone on resume")

    qloop.run_until_complete(scenario())


def test_the_readme_lists_every_shortcut_of_the_main_window():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    source = (root / "dle_desktop" / "ui" / "main_window.py").read_text(encoding="utf-8")
    keys = set(re.findall(r'setShortcut\(QKeySequence\("([^"]+)"\)\)', source))
    readme = (root / "README.md").read_text(encoding="utf-8")
    line = " ".join(readme.split("- Shortcuts:", 1)[1].split("\n\n", 1)[0].split())
    assert keys and {k for k in keys if k not in line} == set()


def test_opening_an_entry_from_the_graph_shows_its_details_even_after_test_a_chat(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    view = window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="61 entries")
        view.right_tabs.setCurrentWidget(view.test_panel)  # the tab the user used last
        window.tabs.setCurrentWidget(window.graph_view)
        uid = view.snapshot.find("Tidewriting").uid
        window.graph_view.openEntryRequested.emit(uid)  # double-click → "open in the Vault view"
        assert window.tabs.currentWidget() is view
        assert view.current_uid() == uid
        assert view.right_tabs.currentWidget() is view.detail

    qloop.run_until_complete(scenario())
