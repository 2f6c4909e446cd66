"""Help → Copy diagnostics… and Open log folder, and Settings' "Start with the system" box, in
the real window (offscreen)."""

from __future__ import annotations

import json
import zipfile

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from dle_desktop.ui import help_menu
from tests.ui.conftest import wait_for

PLANTED = "srvtoken-PLANTED-in-the-ui-0123456789"


def help_texts(window) -> list[str]:
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    return [a.text() for a in menu.actions() if a.text()]


def test_copy_diagnostics_writes_the_zip_and_says_where(make_desktop, vault_copy, tmp_path, qloop, monkeypatch):
    desk = make_desktop(vault_copy)
    desk.runtime.ctx.secrets.set("server-token", PLANTED)
    assert help_texts(desk.window)[:2] == ["Copy diagnostics…", "Open log folder"]
    opened = []
    monkeypatch.setattr(help_menu, "open_folder", lambda path: opened.append(path) or True)
    actions = desk.window.help_actions

    async def scenario():
        await wait_for(lambda: desk.runtime.engine.snapshot is not None, what="the first index")
        return await actions.write_diagnostics(tmp_path / "out")

    path = qloop.run_until_complete(scenario())
    assert path.parent == tmp_path / "out" and path.suffix == ".zip"
    assert PLANTED.encode() not in path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        data = json.loads(zf.read("dle-desktop-diagnostics/diagnostics.json"))
        assert all(PLANTED.encode() not in zf.read(n) for n in names)
    assert data["index"]["running"]["entries"] == 61  # the running engine's own count
    assert data["runtime"]["server_error"] is None
    assert QGuiApplication.clipboard().text() == str(path)
    box = actions.last_box
    assert box.isVisible() and str(path) in box.text()
    button = next(b for b in box.buttons() if b.text() == "Open folder")
    button.click()
    assert opened == [path.parent]
    box.done(QMessageBox.Close)
    assert actions.diagnostics_action.isEnabled()


def test_open_log_folder(make_desktop, vault_copy, qloop, monkeypatch):
    desk = make_desktop(vault_copy)
    opened = []
    monkeypatch.setattr(help_menu, "open_folder", lambda path: opened.append(path) or True)
    desk.window.help_actions.log_folder_action.trigger()
    assert opened == [desk.runtime.ctx.paths.logs_dir]


def test_start_with_the_system_box_follows_and_writes_the_login_item(
    make_desktop, vault_copy, tmp_path, qloop, monkeypatch
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    entry = tmp_path / "config" / "autostart" / "dle-desktop.desktop"
    desk = make_desktop(vault_copy)
    dlg = desk.open_settings(page="general")
    assert not dlg.start_with_system.isChecked()
    dlg.start_with_system.setChecked(True)
    dlg._accept()
    assert entry.is_file()
    text = entry.read_text(encoding="utf-8")
    assert "--minimized" in text and str(desk.runtime.ctx.paths.data_dir) in text  # this run's data folder
    dlg = desk.open_settings(page="general")
    assert dlg.start_with_system.isChecked()  # read back from the file
    dlg.start_with_system.setChecked(False)
    dlg._accept()
    assert not entry.exists()
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(text, encoding="utf-8")  # added behind the app's back: the box shows it
    dlg = desk.open_settings(page="general")
    assert dlg.start_with_system.isChecked()
    dlg.reject()
    assert entry.exists()


def test_a_failure_is_said_without_blocking(make_desktop, vault_copy, tmp_path, qloop, monkeypatch):
    desk = make_desktop(vault_copy)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(help_menu.diagnostics, "collect", broken)
    actions = desk.window.help_actions
    assert qloop.run_until_complete(actions.write_diagnostics(tmp_path / "out")) is None
    assert actions.last_box.isVisible() and "disk full" in actions.last_box.text()
    assert actions.diagnostics_action.isEnabled()
    actions.last_box.done(QMessageBox.Close)
