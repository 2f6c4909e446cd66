"""A busy server port at start-up: a readable notice with Retry, `--port`, and Settings → OK
starting the server once the port is free."""

from __future__ import annotations

import socket

import pytest

from dle_desktop.state.settings import Settings


@pytest.fixture
def busy_port():
    """A port held by another program (a listening socket), freed by calling the result."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    yield holder.getsockname()[1], holder.close
    holder.close()


def accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_busy_port_shows_a_notice_and_retry_starts_the_server(make_desktop, vault_copy, busy_port, qloop):
    port, free = busy_port
    desk = make_desktop(vault_copy, runtime_options={"port": port})  # as `dle-desktop --port PORT`
    notice = desk.window.server_notice
    assert desk.runtime.server is None
    assert not notice.isHidden() and str(port) in notice.label.text()
    assert desk.window.server_label.text() == "Server: not running"
    notice.retry_button.click()  # still busy: the notice stays
    assert desk.runtime.server is None and not notice.isHidden()
    free()
    notice.retry_button.click()
    assert desk.runtime.server is not None and desk.runtime.server.port == port
    assert notice.isHidden() and desk.window.server_label.text() == f"Server: http://127.0.0.1:{port}"
    assert accepts(port)


def test_settings_ok_starts_the_server_once_the_port_is_free(make_desktop, vault_copy, busy_port, qloop):
    """After freeing the port, Settings → OK (no changes) left the server off."""
    port, free = busy_port
    desk = make_desktop(
        vault_copy, settings=Settings().replace(server_port=port, server_enabled=True), runtime_options={}
    )
    assert desk.runtime.server is None and not desk.window.server_notice.isHidden()
    free()
    qloop.run_until_complete(desk.apply_settings(desk.runtime.ctx.settings, {}))  # applied in the background
    assert desk.runtime.server is not None and desk.runtime.server.port == port
    assert desk.window.server_notice.isHidden()
    assert accepts(port)


def test_command_line_port_survives_settings_until_the_port_is_changed(make_desktop, vault_copy, busy_port, qloop):
    port, free = busy_port
    free()
    desk = make_desktop(vault_copy, runtime_options={"port": port})
    assert desk.runtime.server.port == port
    settings = desk.runtime.ctx.settings
    qloop.run_until_complete(desk.apply_settings(settings.replace(close_to_tray=not settings.close_to_tray), {}))
    assert desk.runtime.server.port == port  # an unrelated change keeps --port
    qloop.run_until_complete(desk.apply_settings(desk.runtime.ctx.settings.replace(server_port=0), {}))
    assert desk.runtime.server.port not in (port, 0)  # the port chosen in Settings wins from now on
    assert desk.runtime.port_override is None


def test_gui_accepts_port_and_refuses_a_bad_one(capsys):
    from dle_desktop.cli.main import build_parser

    assert build_parser().parse_args(["--port", "9123"]).port == 9123
    assert build_parser().parse_args(["--port", "9123", "serve"]).port == 9123
    assert build_parser().parse_args(["serve", "--port", "9124"]).port == 9124
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--port", "70000"])
    assert "0 to 65535" in capsys.readouterr().err


def test_lan_mode_with_a_bridge_installed_is_said_in_the_window(make_desktop, vault_copy, tmp_path, monkeypatch):
    from dle_desktop.st_bridge.install import inspect, install
    from tests.st_bridge.conftest import make_st

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    st_root = make_st(tmp_path / "my-st")
    install(inspect(st_root), server_url="http://127.0.0.1:8765", token="t" * 32)
    settings = Settings().replace(server_host="0.0.0.0", server_port=0, server_enabled=True, st_folders=[str(st_root)])
    desk = make_desktop(vault_copy, settings=settings, runtime_options={})
    assert desk.runtime.server is not None
    shown = desk.window.statusBar().currentMessage()
    assert "dle-config.json" in shown and str(st_root.resolve()) in shown
