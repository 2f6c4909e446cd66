"""Issue 24: the window comes up with the view in front only; every other view is made the first
time it is shown (a click on its tab, Ctrl+3, a request from SillyTavern) or asked for, gets the
index that came before it, and takes its place at the same tab."""

from __future__ import annotations

from tests.ui.conftest import wait_for


def probe_module(tmp_path, monkeypatch, name: str, source: str) -> str:
    """A module of `source` that is importable and not imported yet (a view's code not loaded)."""
    import sys

    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def add_probe_tab(win, probe: str) -> list[str]:
    """A "Probe" tab whose view shows the thread its module was imported on; returns the list of
    threads the view was made on."""
    import sys
    import threading

    from PySide6.QtWidgets import QLabel

    made_on: list[str] = []

    def make_probe():
        made_on.append(threading.current_thread().name)
        return QLabel(sys.modules[probe].IMPORTED_ON)

    win.lazy.add("probe", "Probe", make_probe, probe)
    return made_on


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
        win.graph_view_action.trigger()  # Ctrl+3: made at once, or once its code is loaded
        await wait_for(lambda: lazy.made_view("graph") is not None, what="the Graph view made")
        graph = lazy.made_view("graph")
        assert graph is not None and win.tabs.currentWidget() is graph and win.tabs.indexOf(graph) == 2
        assert graph.snapshot is win.vault_view.snapshot  # the index that came before it
        await wait_for(lambda: graph.graph is not None, what="the graph drawn", timeout=30)
        win.tabs.setCurrentIndex(3)  # a click on the Librarian tab
        await wait_for(lambda: lazy.made_view("librarian") is not None, what="the Librarian view made")
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


def test_the_views_modules_are_loaded_in_the_background_once_the_entries_are_shown(
    make_desktop, vault_copy, tmp_path, monkeypatch, qloop
):
    """Their code, not their widgets: the module is imported on a background thread, the view is
    still made only when shown, on the GUI thread."""
    import sys
    import threading

    probe = probe_module(
        tmp_path,
        monkeypatch,
        "dle_preload_probe_module",
        "import threading\nIMPORTED_ON = threading.current_thread().name\n",
    )
    desk = make_desktop(vault_copy)
    win = desk.window
    made_on = add_probe_tab(win, probe)

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: win.lazy._preloading is not None, what="the preload started", timeout=10)
        win.lazy._preloading.join(30)
        assert sys.modules[probe].IMPORTED_ON == "dle-preload-views"
        assert win.lazy.made_view("probe") is None and made_on == []
        assert win.lazy.preload() is None  # once per window
        view = win.lazy.view("probe")
        assert made_on == [threading.main_thread().name] and view.text() == "dle-preload-views"

    qloop.run_until_complete(scenario())


def test_a_tab_whose_code_is_not_loaded_says_loading_and_loads_it_off_the_gui_thread(
    make_desktop, vault_copy, tmp_path, monkeypatch, qloop
):
    """A click on a tab whose view's code is not in yet: the tab says "Loading…", the code is
    imported on a thread while the window goes on answering, then the view is made on the GUI
    thread and shown in the tab's place."""
    import threading

    from PySide6.QtWidgets import QLabel

    probe = probe_module(
        tmp_path,
        monkeypatch,
        "dle_lazy_tab_probe_module",
        "import threading, time\ntime.sleep(0.3)\nIMPORTED_ON = threading.current_thread().name\n",
    )
    desk = make_desktop(vault_copy)
    win = desk.window
    made_on = add_probe_tab(win, probe)
    loading: list[str] = []
    win.lazy.loading.connect(loading.append)

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        win.lazy.show("probe")
        assert loading == ["probe"]
        holder = win.tabs.currentWidget()
        assert win.lazy.made_view("probe") is None and made_on == [], "nothing made while its code loads"
        assert "Loading the Probe view" in " ".join(label.text() for label in holder.findChildren(QLabel))
        win.lazy.show("probe")  # a second click meanwhile starts no second load
        await wait_for(lambda: win.lazy.made_view("probe") is not None, what="the view made", timeout=30)
        view = win.lazy.made_view("probe")
        assert view.text() == "dle-load-probe", "imported on its own thread"
        assert made_on == [threading.main_thread().name]
        assert win.tabs.currentWidget() is view

    qloop.run_until_complete(scenario())


def test_a_view_whose_code_loads_while_the_user_moves_on_is_made_without_taking_the_front(
    make_desktop, vault_copy, tmp_path, monkeypatch, qloop
):

    from PySide6.QtWidgets import QLabel

    probe = probe_module(tmp_path, monkeypatch, "dle_lazy_tab_probe_module_two", "import time\ntime.sleep(0.3)\n")
    desk = make_desktop(vault_copy)
    win = desk.window
    win.lazy.add("probe", "Probe", lambda: QLabel("probe"), probe)

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        win.lazy.show("probe")
        win.tabs.setCurrentWidget(win.vault_view)  # the user went back before it loaded
        await wait_for(lambda: win.lazy.made_view("probe") is not None, what="the view made", timeout=30)
        assert win.tabs.currentWidget() is win.vault_view

    qloop.run_until_complete(scenario())
