"""The window tells the engine when its user acts, so the engine's background work gives way
(`core.user_activity`): typing in the Vault view's filter, sorting, choosing a row, opening a
view, the Graph view at work; and a window that shows the cached index holds the server's
imports back while its user acts."""

from __future__ import annotations

import math

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from tests.ui.conftest import wait_for


def acted_at(desk) -> float:
    return desk.window.bridge.engine.activity._acted_at


def test_the_vault_views_input_reaches_the_engine(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win, vault = desk.window, desk.window.vault_view

    async def scenario() -> None:
        await wait_for(lambda: vault.model.rowCount() == 61, what="61 entries")
        seen: list[str] = []
        vault.userActed.connect(lambda: seen.append("acted"))

        def acts(action) -> bool:
            before, count = acted_at(desk), len(seen)
            action()
            return len(seen) > count and acted_at(desk) > before

        vault.filter.setFocus()
        assert acts(lambda: QTest.keyClick(vault.filter, "a")), "a key in the filter"
        assert acts(lambda: QTest.keyClick(vault.filter, Qt.Key.Key_Escape)), "Esc clears the filter"
        header = vault.table.horizontalHeader()
        x = header.sectionViewportPosition(3) + 5
        assert acts(lambda: QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))), "a sort"
        assert acts(lambda: vault.table.selectRow(5)), "a row chosen"
        before = acted_at(desk)
        win.tabs.setCurrentIndex(1)
        assert acted_at(desk) > before, "another view opened"
        before = len(seen)
        vault.filter.setText("set by the program")
        assert len(seen) == before, "text the program sets is not the user's"

    qloop.run_until_complete(scenario())


def test_the_graph_view_at_work_counts_as_the_user_waiting(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win = desk.window

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        graph = win.graph_view
        busy: list[int] = []
        graph.busy.connect(lambda: busy.append(1))
        before = acted_at(desk)
        graph.relayout()
        assert busy and acted_at(desk) > before
        await wait_for(lambda: graph.graph is not None, what="the graph drawn", timeout=30)

    qloop.run_until_complete(scenario())


def test_an_index_on_its_way_to_the_window_holds_the_engines_work_after_it_back(make_desktop, vault_copy, qloop):
    """The bridge says so on the engine thread as the index leaves the engine: the work that
    follows (backlinks, the keyword automaton, the cache; the server's imports after the cached
    index) starts after the window has shown it."""
    desk = make_desktop(vault_copy)
    qloop.run_until_complete(wait_for(lambda: desk.window.vault_view.model.rowCount() == 61, what="61 entries"))
    assert math.isfinite(acted_at(desk)), "the first index went to the window"
    before = acted_at(desk)
    qloop.run_until_complete(desk.bridge.call(desk.bridge.engine.sync_now(force=True)))
    assert acted_at(desk) > before


def test_the_server_gives_way_before_its_imports_and_nothing_waits_without_a_window(tmp_path, make_vault, lore):
    from dle_desktop.app.context import AppContext
    from dle_desktop.app.runtime import Runtime
    from dle_desktop.core.user_activity import UserActivity
    from dle_desktop.engine.engine import Engine
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings, SettingsStore
    from dle_desktop.vault.sources import FolderSource

    root = make_vault({"A.md": lore("A", keys=["a"])})
    waits = []
    for window_acted in (False, True):
        paths = resolve_paths(tmp_path / f"data-{window_acted}").ensure()
        ctx = AppContext(paths, SettingsStore(paths.settings_file), Settings(), SecretStore(use_keyring=False))
        engine = Engine(paths, ctx.settings, ctx.secrets, vault_override=[FolderSource("v", root)])
        engine.activity = engine.indexer.activity = UserActivity(quiet_s=0.2)
        if window_acted:  # what the window's bridge does as the cached index leaves the engine
            engine.activity.user_acted()
        runtime = Runtime(ctx, engine, port=0)
        try:
            runtime.start()
            assert runtime.server is not None and runtime.server_error is None
            waits.append(engine.activity.waited_s)
        finally:
            runtime.stop()
    assert waits[0] == 0 and waits[1] > 0


def test_the_servers_imports_are_taken_a_piece_at_a_time_each_after_giving_way():
    """Every step names a module that exists (a renamed module fails here, not in a user's start),
    the server's own module comes last, and each step gives way first."""
    import importlib.util

    from dle_desktop.app.runtime import SERVER_IMPORT_STEPS, import_server_in_steps

    assert all(importlib.util.find_spec(name) is not None for name in SERVER_IMPORT_STEPS)
    assert SERVER_IMPORT_STEPS[-1] == "dle_desktop.server.app"
    calls: list[int] = []
    import_server_in_steps(lambda: calls.append(1) or 0.0)
    assert len(calls) == len(SERVER_IMPORT_STEPS)
