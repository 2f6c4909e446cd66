from __future__ import annotations

from dle_desktop.core.changes import ChangeSet
from dle_desktop.ui.single_instance import InstanceServer, ask_running_instance, instance_name
from dle_desktop.ui.tray import ChangeNotifier, TrayController


def test_notifier_batches_changes_into_one_message(qtbot):
    n = ChangeNotifier(interval_s=0.3)
    got = []
    n.notify.connect(lambda title, msg: got.append(msg))
    n.add(ChangeSet(added=("v:a.md",), first_build=True))  # the first build is not news
    n.add(ChangeSet())  # nothing changed
    assert got == []
    n.add(ChangeSet(modified=("v:a.md",)))
    assert got == ["1 modified"]  # the first change is shown at once
    for i in range(5):
        n.add(ChangeSet(added=(f"v:n{i}.md",)))
    n.add(ChangeSet(removed=("v:x.md",), modified=("v:y.md",)))
    assert got == ["1 modified"]  # the burst waits for the interval
    qtbot.waitUntil(lambda: len(got) == 2, timeout=3000)
    assert got[1] == "5 added, 1 removed, 1 modified"


def test_notifier_can_be_silenced(qtbot):
    n = ChangeNotifier(interval_s=0)
    got = []
    n.notify.connect(lambda *a: got.append(a))
    n.enabled = False
    n.add(ChangeSet(added=("v:a.md",)))
    assert got == []


def test_tray_menu_actions_emit(qtbot):
    tray = TrayController(available=False)  # the offscreen platform has no tray
    seen = []
    tray.openRequested.connect(lambda: seen.append("open"))
    tray.syncRequested.connect(lambda: seen.append("sync"))
    tray.pauseToggled.connect(lambda on: seen.append(f"pause={on}"))
    tray.quitRequested.connect(lambda: seen.append("quit"))
    labels = [a.text() for a in tray.menu.actions() if a.text()]
    assert labels == ["Open DLE Desktop", "Sync now", "Pause sync", "Quit"]
    for a in tray.menu.actions():
        if a.text():
            a.trigger()
    assert seen == ["open", "sync", "pause=True", "quit"]
    assert tray.show_message("t", "m") is False  # no tray: the caller falls back to the status bar


def test_second_launch_reaches_first_instance(qtbot, tmp_path):
    name = instance_name(str(tmp_path))
    assert ask_running_instance(name, timeout_ms=200) is False
    server = InstanceServer(name)
    got = []
    server.messageReceived.connect(got.append)
    assert ask_running_instance(name) is True
    qtbot.waitUntil(lambda: got == ["show"], timeout=3000)
    server.close()
