"""Issue 24: the window comes up with the view in front only; every other view is made the first
time it is shown (a click on its tab, Ctrl+3, a request from SillyTavern) or asked for, gets the
index that came before it, and takes its place at the same tab."""

from __future__ import annotations

from tests.ui.conftest import wait_for


def test_only_the_view_in_front_is_made_and_the_others_when_shown(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win = desk.window
    lazy = win.lazy
    assert win.tabs.currentWidget() is win.vault_view
    assert lazy.made_views() == {}, "nothing but the Vault view is made at start"
    labels = [win.tabs.tabText(i) for i in range(1, win.tabs.count())]

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        assert lazy.made_view("graph") is None
        win.graph_view_action.trigger()  # Ctrl+3
        graph = lazy.made_view("graph")
        assert graph is not None and win.tabs.currentWidget() is graph and win.tabs.indexOf(graph) == 2
        assert graph.snapshot is win.vault_view.snapshot  # the index that came before it
        await wait_for(lambda: graph.graph is not None, what="the graph drawn", timeout=30)
        win.tabs.setCurrentIndex(3)  # a click on the Librarian tab
        librarian = lazy.made_view("librarian")
        assert librarian is not None and win.tabs.currentWidget() is librarian
        assert set(lazy.made_views()) == {"graph", "librarian"}
        assert (
            [win.tabs.tabText(i) for i in range(1, win.tabs.count())]
            == labels
            == [
                "Channels",
                "Graph",
                "Librarian",
                "SillyTavern",
            ]
        )

    qloop.run_until_complete(scenario())


def test_the_tab_shown_last_is_made_at_the_next_start(make_desktop, vault_copy, tmp_path, qloop):
    first = make_desktop(vault_copy, data_dir=tmp_path / "data")
    first.window.tabs.setCurrentWidget(first.window.sillytavern_view)
    first.quit()
    second = make_desktop(vault_copy, data_dir=tmp_path / "data")
    made = second.window.lazy.made_views()
    assert set(made) == {"sillytavern"} and second.window.tabs.currentWidget() is made["sillytavern"]
