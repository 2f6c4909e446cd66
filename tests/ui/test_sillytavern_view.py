"""The SillyTavern view, driven like a user would: the real app and engine on a copy of the sample
vault, and a real-looking SillyTavern folder in tmp_path that the bridge is installed into."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest

from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.server.security import server_token
from dle_desktop.st_bridge import install as st_install
from dle_desktop.st_bridge.monitor import BridgeMonitor
from dle_desktop.state.settings import SettingsStore
from dle_desktop.ui.sillytavern.connection_panel import NEVER, connection_text
from dle_desktop.ui.sillytavern.installs_panel import COLUMNS
from dle_desktop.ui.sillytavern.view import SillyTavernView
from tests.ui.conftest import wait_for

BRIDGE = st_install.EXTENSION_NAME


def make_st(root: Path, version: str = "1.19.0", port: int = 8123, users=("default-user",)) -> Path:
    """A SillyTavern folder as npm leaves it after its first start."""
    (root / "public" / "scripts" / "extensions" / "third-party").mkdir(parents=True)
    for user in users:
        (root / "data" / user / "chats").mkdir(parents=True)
        (root / "data" / user / "settings.json").write_text("{}", encoding="utf-8")
    (root / "server.js").write_text("// SillyTavern\n", encoding="utf-8")
    (root / "package.json").write_text(json.dumps({"name": "sillytavern", "version": version}), encoding="utf-8")
    (root / "config.yaml").write_text(f"listen: false\nport: {port}\n", encoding="utf-8")
    return root


@pytest.fixture
def st_dir(tmp_path) -> Path:
    return make_st(tmp_path / "SillyTavern", users=("default-user", "alice"))


@pytest.fixture
def desk(make_desktop, vault_copy, tmp_path):
    desk = make_desktop(vault_copy)
    view = desk.window.sillytavern_view
    view.installs_panel.home = tmp_path / "home"  # never the real home's SillyTavern
    return desk


def open_view(desk, qloop) -> SillyTavernView:
    """Show the view and let its first reads (installs, chats) finish."""
    view = desk.window.sillytavern_view
    desk.window.tabs.setCurrentWidget(view)
    qloop.run_until_complete(view.idle())
    return view


def cell(view, row: int, column: str) -> str:
    return view.installs_panel.table.item(row, COLUMNS.index(column)).text()


def saved(desk):
    return SettingsStore(desk.runtime.ctx.paths.settings_file).load()


async def settled(desk) -> None:
    """Until the background apply is done and the window shows the running engine's index."""
    if desk.apply_task is not None:
        await desk.apply_task
    await wait_for(
        lambda: (snap := desk.runtime.engine.snapshot) is not None and desk.window.vault_view.snapshot is snap,
        timeout=60,
        what="the engine's index in the window",
    )


def config_of(copy_dir: Path) -> dict:
    return json.loads((copy_dir / "dle-config.json").read_text(encoding="utf-8"))


def test_ctrl_5_opens_the_view(desk, qloop):
    window = desk.window
    assert window.sillytavern_view_action.shortcut().toString() == "Ctrl+5"
    assert window.tabs.tabText(window.tabs.indexOf(window.sillytavern_view)) == "SillyTavern"
    assert window.sillytavern_view_action in window.menuBar().actions()[1].menu().actions()
    window.activateWindow()
    QTest.keyClick(window, Qt.Key_5, Qt.ControlModifier)
    if window.tabs.currentWidget() is not window.sillytavern_view:  # no focus offscreen: trigger as the menu does
        window.sillytavern_view_action.trigger()
    assert window.tabs.currentWidget() is window.sillytavern_view
    qloop.run_until_complete(window.sillytavern_view.idle())
    assert window.sillytavern_view.timer.isActive()  # live status while shown
    window.tabs.setCurrentWidget(window.vault_view)
    assert not window.sillytavern_view.timer.isActive()


def test_install_update_and_remove_for_a_user(desk, st_dir, qloop):
    view = open_view(desk, qloop)
    panel = view.installs_panel
    copy_dir = st_dir / "data" / "default-user" / "extensions" / BRIDGE

    async def scenario():
        assert await panel.add_folder(str(st_dir))
        assert saved(desk).st_folders == (str(st_dir.resolve()),)
        assert panel.table.rowCount() == 1
        assert cell(view, 0, "Folder") == str(st_dir.resolve())
        assert cell(view, 0, "SillyTavern") == "1.19.0"
        assert cell(view, 0, "Bridge") == "not installed"
        assert [panel.target.itemText(i) for i in range(panel.target.count())] == [
            "user default-user",
            "user alice",
            "all users",
        ]
        assert panel.install_button.text() == "Install"

        panel.set_target("default-user")
        assert await panel.install_selected()
        await settled(desk)
        assert (copy_dir / "manifest.json").is_file()
        config = config_of(copy_dir)
        assert config["server_url"] == view.server_url() == "http://127.0.0.1:8765"
        assert config["token"] == server_token(desk.runtime.ctx.secrets)
        assert "Installed for default-user. Reload SillyTavern's page (F5) to load it." in panel.message.text()
        origins = saved(desk).server_allowed_origins
        assert "http://127.0.0.1:8123" in origins and "http://localhost:8123" in origins
        assert cell(view, 0, "Where") == "user default-user"
        assert cell(view, 0, "Bridge") == st_install.bundled_version()
        assert cell(view, 0, "Status") == "up to date"
        assert panel.install_button.text() == "Reinstall"
        assert panel.remove_button.isEnabled()
        assert not (st_dir / "data" / "alice" / "extensions" / BRIDGE).exists()

        manifest = json.loads((copy_dir / "manifest.json").read_text(encoding="utf-8"))
        manifest["version"] = "0.0.1"  # an older bridge
        (copy_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        await panel.rescan()
        assert cell(view, 0, "Status") == f"update available: 0.0.1 → {st_install.bundled_version()}"
        assert panel.install_button.text() == "Update"
        assert await panel.install_selected()
        await settled(desk)
        assert cell(view, 0, "Status") == "up to date"
        assert panel.message.text().startswith(f"Updated to {st_install.bundled_version()} for default-user.")

        config = config_of(copy_dir)
        config["server_url"] = "http://127.0.0.1:9999"  # written when the server had another port
        (copy_dir / "dle-config.json").write_text(json.dumps(config), encoding="utf-8")
        await panel.rescan()
        assert cell(view, 0, "Status") == "points at http://127.0.0.1:9999: Update to use http://127.0.0.1:8765"
        assert panel.install_button.text() == "Update"

        assert await panel.remove_selected(ask=False)
        assert not copy_dir.exists()
        assert cell(view, 0, "Bridge") == "not installed"
        assert not panel.remove_button.isEnabled()
        assert "Removed" in panel.message.text()

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_install_for_all_users_shows_its_own_row(desk, st_dir, qloop):
    view = open_view(desk, qloop)
    panel = view.installs_panel

    async def scenario():
        assert await panel.add_folder(str(st_dir))
        panel.set_target("alice")
        assert await panel.install_selected()
        panel.set_target(None)
        assert await panel.install_selected()
        await settled(desk)
        assert (st_dir / "public" / "scripts" / "extensions" / "third-party" / BRIDGE / "dle-config.json").is_file()
        rows = {cell(view, r, "Where"): cell(view, r, "Status") for r in range(panel.table.rowCount())}
        assert rows == {"user alice": "up to date", "all users": "up to date"}
        assert panel.target.currentData() is None  # the all-users row stays selected
        assert "for all users" in panel.message.text()

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_a_folder_that_is_not_sillytavern_is_refused_with_the_reason(desk, tmp_path, qloop):
    view = open_view(desk, qloop)
    panel = view.installs_panel
    other = tmp_path / "Documents"
    other.mkdir()
    (other / "package.json").write_text(json.dumps({"name": "something-else"}), encoding="utf-8")

    async def scenario():
        assert not await panel.add_folder(str(other))
        assert "is not a SillyTavern folder" in panel.message.text()
        assert "server.js" in panel.message.text()
        assert not await panel.add_folder(str(tmp_path / "nowhere"))
        assert "no such folder" in panel.message.text()
        assert saved(desk).st_folders == ()
        assert panel.table.rowCount() == 0
        assert not panel.install_button.isEnabled()

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_origins_are_added_validated_and_removed(desk, qloop):
    view = open_view(desk, qloop)
    access = view.access_panel

    async def scenario():
        assert access.add_origin("HTTP://LocalHost:9000/") is False  # a path is not an origin
        assert "is not an origin" in access.message.text()
        access.new_origin.setText("http://LocalHost:9000")
        access.add_button.click()
        await settled(desk)
        assert "http://localhost:9000" in saved(desk).server_allowed_origins
        shown = [access.origins.item(i).text() for i in range(access.origins.count())]
        assert "http://localhost:9000" in shown
        assert access.new_origin.text() == ""
        assert access.add_origin("ftp://127.0.0.1:21") is False
        assert saved(desk).server_allowed_origins.count("http://localhost:9000") == 1

        item = access.origins.findItems("http://localhost:9000", Qt.MatchExactly)[0]
        access.origins.setCurrentItem(item)
        assert access.remove_button.isEnabled()
        access.remove_button.click()
        await settled(desk)
        assert "http://localhost:9000" not in saved(desk).server_allowed_origins
        assert "refused from now on" in access.message.text()

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_copy_buttons_put_the_right_text_on_the_clipboard(desk, qloop):
    view = open_view(desk, qloop)
    clipboard = QGuiApplication.clipboard()
    sources = view.sources_panel
    for name in ("llama.cpp", "vLLM", "Ollama", "KoboldCpp"):
        clipboard.clear()
        sources.copy_buttons[name].click()
        assert clipboard.text() == "http://127.0.0.1:8765"
    sources.model_buttons["Ollama"].click()
    assert clipboard.text() == "dle-desktop"
    assert set(sources.model_buttons) == {"vLLM", "Ollama"}

    access = view.access_panel
    token = server_token(desk.runtime.ctx.secrets)
    assert token not in access.token_field.text()
    access.copy_button.click()
    assert clipboard.text() == token
    access.show_button.click()
    assert access.token_field.text() == token and access.show_button.text() == "Hide"
    access.show_button.click()
    assert token not in access.token_field.text()


def test_rotate_token_rewrites_every_installed_copy(desk, st_dir, qloop):
    view = open_view(desk, qloop)
    panel = view.installs_panel
    secrets = desk.runtime.ctx.secrets

    async def scenario():
        assert await panel.add_folder(str(st_dir))
        for target in ("default-user", None):
            panel.set_target(target)
            assert await panel.install_selected()
        await settled(desk)
        copies = [
            st_dir / "data" / "default-user" / "extensions" / BRIDGE,
            st_dir / "public" / "scripts" / "extensions" / "third-party" / BRIDGE,
        ]
        old = server_token(secrets)
        assert all(config_of(c)["token"] == old for c in copies)
        assert await view.access_panel.rotate(ask=False) == 2
        new = server_token(secrets)
        assert new != old
        for c in copies:
            text = (c / "dle-config.json").read_text(encoding="utf-8")
            assert old not in text
            assert config_of(c)["token"] == new
            assert config_of(c)["server_url"] == "http://127.0.0.1:8765"
        message = view.access_panel.message.text()
        assert "2 installed copies" in message and "next request or after a reload" in message

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_connection_label_for_never_connected_and_stale(desk, qloop):
    view = open_view(desk, qloop)
    now = [1_000_000.0]
    monitor = BridgeMonitor(clock=lambda: now[0])
    desk.runtime.bridge_monitor = monitor
    conn = view.connection_panel
    conn.refresh()
    assert conn.status.text().startswith(NEVER)

    chat = "Seraphina - 2026-01-02@14h03m22s"
    monitor.hello(
        origin="http://127.0.0.1:8123",
        extension_version="0.1.0",
        st_version="1.19.0",
        chat_id=chat,
        character="Seraphina",
        last_error="DLE Desktop did not answer in 10 s",
    )
    monitor.generation(
        origin=None,
        chat_id=chat,
        character="Seraphina",
        injected=["Ada", "Bram", "Cyr", "Dun"],
        total_tokens=1234,
        ms=12.4,
    )
    now[0] += 3
    view._tick()  # what the timer does every two seconds
    assert conn.status.text() == (
        "Connected: SillyTavern 1.19.0, bridge 0.1.0 · last contact 3 s ago · "
        f'chat "{chat}" · 4 entries injected (1,234 tokens, 12 ms)'
    )
    assert "page http://127.0.0.1:8123" in conn.details.text()
    assert "last injected: Ada, Bram, Cyr, Dun" in conn.details.text()
    assert conn.error.text() == "The bridge last reported: DLE Desktop did not answer in 10 s"

    now[0] += 300
    conn.refresh()
    assert conn.status.text() == "Last contact 5 min ago (not connected now)"


def test_connection_text_shortens_a_long_chat_name():
    snap = BridgeMonitor(clock=lambda: 50.0)
    snap.hello(
        origin=None, extension_version=None, st_version="1.12.14", chat_id="x" * 80, character=None, last_error=None
    )
    text, _ = connection_text(snap.snapshot(now=50.5))
    assert text.startswith('Connected: SillyTavern 1.12.14 · last contact just now · chat "')
    assert "…" in text and "x" * 80 not in text


def test_chats_are_listed_and_forgotten(desk, qloop, monkeypatch):
    view = open_view(desk, qloop)
    chats = view.chats_panel
    engine = desk.bridge.engine
    record = {"injected": [], "verdicts": [], "total_tokens": 0}

    def make_chats():
        engine.retrieval.store.save("Seraphina - 2026-01-02", ChatState(generation_count=12), record)
        engine.retrieval.store.save("Aria - 2026-01-01", ChatState(generation_count=3), record)

    async def scenario():
        await desk.bridge.run(make_chats)
        await chats.refresh()
        rows = {chats.table.item(r, 0).text(): chats.table.item(r, 1).text() for r in range(chats.table.rowCount())}
        assert rows == {"Seraphina - 2026-01-02": "12", "Aria - 2026-01-01": "3"}
        assert chats.table.item(0, 0).text() == "Aria - 2026-01-01"  # the newest first
        assert not chats.forget_button.isEnabled()
        assert chats.select_chat("Seraphina - 2026-01-02")
        assert chats.forget_button.isEnabled()
        monkeypatch.setattr("dle_desktop.ui.sillytavern.chats_panel.confirm", lambda *a: False)
        assert await chats.forget_selected() == 0  # Cancel keeps it
        monkeypatch.setattr("dle_desktop.ui.sillytavern.chats_panel.confirm", lambda *a: True)
        assert await chats.forget_selected() == 1
        assert [chats.table.item(r, 0).text() for r in range(chats.table.rowCount())] == ["Aria - 2026-01-01"]
        assert "Forgot chat “Seraphina - 2026-01-02”" in chats.message.text()
        remaining = await desk.bridge.call(engine.retrieval.list_chats(10))
        assert [c["chat_id"] for c in remaining] == ["Aria - 2026-01-01"]

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_vector_routing_and_forgetting_deleted_chats_are_saved(desk, qloop):
    view = open_view(desk, qloop)
    assert not view.routing_panel.route.isChecked()
    assert view.chats_panel.auto_forget.isChecked()

    async def scenario():
        view.routing_panel.route.click()
        await settled(desk)
        assert saved(desk).st_vector_routing is True
        assert desk.runtime.engine.settings.st_vector_routing is True  # the running engine has it
        view.chats_panel.auto_forget.click()
        await settled(desk)
        assert saved(desk).st_forget_deleted_chats is False

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_the_writers_are_turned_on_beside_the_chats_and_saved(desk, qloop):
    """Issue 23: Session Scribe, Auto Lorebook and AI Notepad are off until turned on; the boxes
    beside the chats save the same settings as Settings → Writers and the running engine takes them."""
    view = open_view(desk, qloop)
    boxes = view.chats_panel.writer_switches.boxes
    assert set(boxes) == {"scribe_enabled", "auto_suggest_enabled", "ai_notepad_enabled"}
    assert not any(box.isChecked() for box in boxes.values())

    async def scenario():
        boxes["scribe_enabled"].click()
        boxes["ai_notepad_enabled"].click()
        await settled(desk)
        on_disk = saved(desk)
        assert (on_disk.scribe_enabled, on_disk.auto_suggest_enabled, on_disk.ai_notepad_enabled) == (True, False, True)
        engine = desk.runtime.engine.settings
        assert engine.scribe_enabled and engine.ai_notepad_enabled and not engine.auto_suggest_enabled
        assert "AI Notepad is on for every chat" in view.chats_panel.message.text()
        boxes["scribe_enabled"].click()
        await settled(desk)
        assert saved(desk).scribe_enabled is False

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_the_split_survives_a_restart(make_desktop, vault_copy, tmp_path, qloop):
    first = make_desktop(vault_copy)
    view = open_view(first, qloop)
    view.split.setSizes([500, 700])
    sizes = view.split.sizes()
    first.quit()
    qloop.run_until_complete(asyncio.sleep(0.05))  # the reads stop() cancelled wind down
    second = make_desktop(vault_copy)
    assert second.window.tabs.currentWidget() is second.window.sillytavern_view
    qloop.run_until_complete(second.window.sillytavern_view.idle())
    again = second.window.sillytavern_view.split.sizes()
    assert abs(again[0] / sum(again) - sizes[0] / sum(sizes)) < 0.02
