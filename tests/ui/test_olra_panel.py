"""The SillyTavern view's "DeepLore Enhanced (Obsidian REST)" tab, driven like a user would: the
real app and engine on a copy of the sample vault, the real Obsidian REST emulation on a free
port, reached with httpx as DeepLore Enhanced reaches it."""

from __future__ import annotations

import socket

import httpx
import pytest
from PySide6.QtGui import QGuiApplication

from dle_desktop.olra import cert_path, olra_key
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.ui.sillytavern.olra_key import MASK
from dle_desktop.ui.sillytavern.olra_panel import MERGED


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def saved(desk) -> Settings:
    return SettingsStore(desk.runtime.ctx.paths.settings_file).load()


@pytest.fixture
def make(make_desktop, vault_copy, tmp_path):
    """A desktop allowed to serve (the lore server stays off), on these OLRA settings."""

    def build(**olra):
        desk = make_desktop(
            vault_copy, settings=Settings(server_enabled=False, **olra), runtime_options={"serve": True}
        )
        desk.window.sillytavern_view.installs_panel.home = tmp_path / "home"  # never the real home's SillyTavern
        return desk

    return build


def open_tab(desk, qloop):
    view = desk.window.sillytavern_view
    desk.window.tabs.setCurrentWidget(view)
    view.inner_tabs.setCurrentIndex(2)
    qloop.run_until_complete(view.idle())
    return view.olra_panel


def applied(desk, qloop) -> None:
    qloop.run_until_complete(desk.apply_task)


def get_vault(runner, key: str) -> httpx.Response:
    return httpx.get(
        f"{runner.url}/vault/", headers={"Authorization": f"Bearer {key}", "Accept": "application/json"}, timeout=10
    )


def test_the_tab_is_beside_the_bridge_and_off_by_default(make, qloop):
    desk = make()
    view = desk.window.sillytavern_view
    assert [view.inner_tabs.tabText(i) for i in range(view.inner_tabs.count())] == [
        "SillyTavern bridge",
        "Chats",
        "DeepLore Enhanced (Obsidian REST)",
    ]
    panel = open_tab(desk, qloop)
    assert not panel.enabled.isChecked()
    assert panel.status.text().startswith("Off")
    assert desk.runtime.olra is None
    assert panel.steps.values["port"].text() == "27123"  # what DLE's new vault suggests
    assert "Tick “Serve vaults to DeepLore Enhanced”" in panel.steps.step_off.text()


def test_toggling_on_serves_the_vault_with_the_shown_key_and_off_stops_it(make, qloop):
    port = free_port()
    desk = make(olra_port=port)
    engine = desk.runtime.engine
    panel = open_tab(desk, qloop)

    panel.enabled.setChecked(True)  # the user ticks the box: saved through the app, applied in the background
    assert saved(desk).olra_enabled
    applied(desk, qloop)
    runner = desk.runtime.olra
    assert runner is not None and runner.running
    assert desk.runtime.engine is engine  # no new engine for the emulation
    assert f"Running at <b>http://127.0.0.1:{port}</b>" in panel.status.text()
    assert "serving vault “vault”" in panel.status.text()
    assert "Obsidian REST emulation restarted" in desk.window.statusBar().currentMessage()

    panel.key_box.show_button.setChecked(True)
    shown = panel.key_box.key_field.text()
    assert shown != MASK and len(shown) == 64
    answer = get_vault(runner, shown)
    assert answer.status_code == 200
    assert {"Factions/", "Characters/", "Arrival at Lantern Quay.md"} <= set(answer.json()["files"])
    panel.refresh()
    assert "1 request served" in panel.stats.text()
    get_vault(runner, shown)
    panel.refresh()
    assert "2 requests served" in panel.stats.text() and "last request" in panel.stats.text()
    panel.key_box.show_button.setChecked(False)
    assert panel.key_box.key_field.text() == MASK

    panel.enabled.setChecked(False)
    applied(desk, qloop)
    assert desk.runtime.olra is None and not saved(desk).olra_enabled
    assert desk.runtime.engine is engine
    assert panel.status.text().startswith("Off")
    with pytest.raises(httpx.TransportError):
        get_vault(runner, shown)


def test_settings_ok_starts_and_stops_it_without_a_new_engine(make, qloop):
    desk = make()
    engine = desk.runtime.engine
    port = free_port()
    desk.apply_settings(desk.runtime.ctx.settings.replace(olra_enabled=True, olra_port=port), {})
    applied(desk, qloop)
    assert desk.runtime.olra.running and desk.runtime.olra.port == port
    assert desk.runtime.engine is engine
    assert desk.window.sillytavern_view.olra_panel.enabled.isChecked()
    desk.apply_settings(desk.runtime.ctx.settings.replace(olra_enabled=False), {})
    applied(desk, qloop)
    assert desk.runtime.olra is None
    assert desk.runtime.engine is engine


def test_copy_buttons_put_the_values_dle_needs_on_the_clipboard(make, qloop):
    port = free_port()
    desk = make(olra_enabled=True, olra_port=port)
    panel = open_tab(desk, qloop)
    clipboard = QGuiApplication.clipboard()
    key = olra_key(desk.runtime.ctx.secrets)
    steps = panel.steps
    steps.copy_buttons["host"].click()
    assert clipboard.text() == "127.0.0.1"
    steps.copy_buttons["port"].click()
    assert clipboard.text() == str(port) == str(desk.runtime.olra.port)
    steps.copy_buttons["key"].click()
    assert clipboard.text() == key
    assert key not in steps.values["key"].text()  # masked in the steps
    clipboard.clear()
    panel.key_box.copy_button.click()
    assert clipboard.text() == key
    assert "unticked" in steps.https_label.text()
    assert "Close Obsidian, or change one of the two ports" in steps.step_ports.text()
    assert "Session Scribe, Auto Lorebook, Librarian, imports" in steps.step_done.text()
    assert str(desk.runtime.engine.sources[0].root) in steps.step_done.text()


def test_rotating_the_key_shows_the_new_one_and_refuses_the_old(make, qloop):
    desk = make(olra_enabled=True, olra_port=free_port())
    panel = open_tab(desk, qloop)
    runner = desk.runtime.olra
    old = olra_key(desk.runtime.ctx.secrets)
    assert get_vault(runner, old).status_code == 200
    panel.key_box.show_button.setChecked(True)
    new = qloop.run_until_complete(panel.key_box.rotate(ask=False))
    assert new and new != old
    assert panel.key_box.key_field.text() == new
    assert "DeepLore Enhanced needs the new key" in panel.key_box.message.text()
    answer = get_vault(runner, old)
    assert answer.status_code == 401 and answer.json()["errorCode"] == 40101
    assert get_vault(runner, new).status_code == 200
    panel.steps.copy_buttons["key"].click()
    assert QGuiApplication.clipboard().text() == new


def test_a_busy_port_is_said_in_words_and_retry_starts_it_once_free(make, qloop):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        desk = make(olra_enabled=True, olra_port=port)
        panel = open_tab(desk, qloop)
        assert not desk.runtime.olra.running
        text = panel.status.text()
        assert text.startswith("Not running:") and f"cannot listen on 127.0.0.1:{port}" in text
        assert "close it or choose another port" in text and "Obsidian" in text
        assert panel.retry_button.isVisibleTo(panel)
    finally:
        busy.close()
    panel.retry()
    applied(desk, qloop)
    assert desk.runtime.olra.running
    assert "Running at" in panel.status.text()
    assert not panel.retry_button.isVisibleTo(panel)


def test_choosing_a_vault_saves_olra_vault(make, qloop):
    desk = make(olra_enabled=True, olra_port=free_port())
    panel = open_tab(desk, qloop)
    labels = [panel.vault.itemText(i) for i in range(panel.vault.count())]
    assert labels == [MERGED, "vault"]
    panel.vault.setCurrentIndex(1)
    panel.vault.activated.emit(1)  # as a user's choice does
    assert saved(desk).olra_vault == "vault"
    applied(desk, qloop)
    assert desk.runtime.olra.vault == "vault" and desk.runtime.olra.running
    assert panel.vault.currentText() == "vault"
    panel.vault.setCurrentIndex(0)
    panel.vault.activated.emit(0)
    assert saved(desk).olra_vault == ""


def test_changing_the_port_restarts_it_there(make, qloop):
    desk = make(olra_enabled=True, olra_port=free_port())
    panel = open_tab(desk, qloop)
    port = free_port()
    panel.port.setValue(port)
    assert saved(desk).olra_port == port
    applied(desk, qloop)
    assert desk.runtime.olra.port == port and desk.runtime.olra.running
    assert panel.steps.values["port"].text() == str(port)


def test_https_and_exporting_the_certificate(make, qloop, tmp_path):
    desk = make(olra_enabled=True, olra_port=free_port(), olra_https_port=free_port())
    panel = open_tab(desk, qloop)
    assert not panel.https_port.isEnabled()
    assert panel.export_certificate(str(tmp_path / "none.crt")) is None  # none made yet: said so
    assert "no certificate yet" in panel.message.text()
    panel.https.setChecked(True)
    applied(desk, qloop)
    runner = desk.runtime.olra
    assert runner.running and runner.https_url
    assert f"<b>{runner.https_url}</b>" in panel.status.text()
    assert panel.steps.values["port"].text() == str(runner.https_port)
    assert "ticked" in panel.steps.https_label.text() and panel.steps.cert_note.isVisibleTo(panel)
    target = tmp_path / "export" / "obsidian-local-rest-api.crt"
    target.parent.mkdir()
    assert panel.export_certificate(str(target)) == target
    assert target.read_bytes() == cert_path(desk.runtime.ctx.paths).read_bytes()
    assert target.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    assert "accepting it in the browser is not enough" in panel.message.text()
