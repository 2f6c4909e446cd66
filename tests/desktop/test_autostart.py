"""Start with the system: the XDG autostart entry is written for real in a temporary
XDG_CONFIG_HOME, parsed back, validated and run; the LaunchAgent and the Run key are checked for
what they would hand macOS and Windows."""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

from dle_desktop.desktop.autostart import (
    LAUNCH_AGENT_LABEL,
    RUN_KEY,
    RUN_VALUE,
    TRAY_FLAG,
    Autostart,
    exec_value,
    launch_command,
    source_root,
)
from tests.desktop import entry_rules

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def xdg(tmp_path):
    return Autostart(system="xdg", environ={"XDG_CONFIG_HOME": str(tmp_path / "config")}, home=tmp_path / "home")


def test_the_command_starts_this_installation_in_the_tray():
    cmd = launch_command()
    assert cmd[0] == sys.executable and cmd[1:3] == ["-m", "dle_desktop"] and cmd[-1] == TRAY_FLAG
    assert source_root() == ROOT
    assert launch_command(minimized=False)[-1] != TRAY_FLAG
    assert launch_command(data_dir="/tmp/x y")[-3:] == ["--data-dir", str(Path("/tmp/x y").resolve()), TRAY_FLAG]


def test_a_frozen_build_starts_its_own_executable(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/DLE Desktop/dle-desktop")
    assert launch_command() == ["/opt/DLE Desktop/dle-desktop", TRAY_FLAG]
    assert source_root() is None


def test_ticking_writes_a_valid_autostart_entry_and_unticking_removes_it(xdg, tmp_path):
    path = tmp_path / "config" / "autostart" / "dle-desktop.desktop"
    assert xdg.path == path and not xdg.is_enabled()
    xdg.set_enabled(True)
    assert path.is_file() and xdg.is_enabled()
    entry = entry_rules.parse(path)
    entry_rules.validate(path)
    assert entry["Type"] == "Application" and entry["Name"] == "DLE Desktop"
    assert entry["X-GNOME-Autostart-enabled"] == "true" and entry["Terminal"] == "false"
    args = entry_rules.split_exec(entry_rules.unescape(entry["Exec"]))
    assert args == launch_command()
    assert os.access(entry_rules.unescape(entry["TryExec"]), os.X_OK)
    assert entry_rules.unescape(entry["Path"]) == str(ROOT)
    xdg.set_enabled(False)
    assert not path.exists() and not xdg.is_enabled()
    assert xdg.disable() is False  # already gone: no error


def test_the_entry_really_starts_the_app(xdg):
    xdg.enable()
    entry = entry_rules.parse(xdg.path)
    args = entry_rules.split_exec(entry_rules.unescape(entry["Exec"]))
    # --version exits before any window: proof that Exec names a working interpreter and package,
    # run from the entry's own working folder as a session manager would.
    done = subprocess.run(
        [*args, "--version"],
        cwd=entry_rules.unescape(entry["Path"]),
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0 and done.stdout.startswith("dle-desktop "), done.stderr


def test_odd_characters_in_paths_survive_the_exec_quoting(tmp_path):
    weird = ['/opt/My Apps/py$thon "3"', "-m", "dle_desktop", "--data-dir", "/home/a b/100%`x`\\y", TRAY_FLAG]
    assert entry_rules.split_exec(entry_rules.unescape(exec_value(weird))) == weird
    auto = Autostart(weird, system="xdg", environ={"XDG_CONFIG_HOME": str(tmp_path)})
    auto.enable()
    entry_rules.validate(auto.path)
    assert entry_rules.split_exec(entry_rules.unescape(entry_rules.parse(auto.path)["Exec"])) == weird


def test_the_default_config_folder_and_a_relative_xdg_value(tmp_path):
    # The spec: a relative $XDG_CONFIG_HOME is invalid and is ignored.
    for env in ({}, {"XDG_CONFIG_HOME": ""}, {"XDG_CONFIG_HOME": "relative/dir"}):
        auto = Autostart(system="xdg", environ=env, home=tmp_path)
        assert auto.path == tmp_path / ".config" / "autostart" / "dle-desktop.desktop"


def test_an_entry_switched_off_by_the_desktop_reads_as_off(xdg):
    xdg.enable()
    xdg.path.write_text(xdg.path.read_text() + "Hidden=true\n")
    assert not xdg.is_enabled()
    xdg.enable()  # ticking again rewrites it on
    assert xdg.is_enabled()
    xdg.path.write_text(
        xdg.path.read_text().replace("X-GNOME-Autostart-enabled=true", "X-GNOME-Autostart-enabled=false")
    )
    assert not xdg.is_enabled()


def test_a_folder_that_cannot_be_written_is_a_clear_error(tmp_path):
    from dle_desktop.errors import ConfigError

    blocker = tmp_path / "config"
    blocker.write_text("a file, not a folder")
    auto = Autostart(system="xdg", environ={"XDG_CONFIG_HOME": str(blocker)})
    with pytest.raises(ConfigError, match="login item"):
        auto.set_enabled(True)


def test_the_macos_launch_agent(tmp_path):
    cmd = ["/Applications/DLE Desktop.app/Contents/MacOS/dle-desktop", TRAY_FLAG]
    auto = Autostart(cmd, system="macos", home=tmp_path)
    assert auto.path == tmp_path / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"
    assert not auto.is_enabled()
    auto.set_enabled(True)
    agent = plistlib.loads(auto.path.read_bytes())
    assert agent["Label"] == LAUNCH_AGENT_LABEL and agent["ProgramArguments"] == cmd
    assert agent["RunAtLoad"] is True and agent["LimitLoadToSessionType"] == "Aqua"
    assert auto.is_enabled()
    auto.set_enabled(False)
    assert not auto.path.exists() and not auto.is_enabled()


class FakeWinreg:
    """The part of winreg that autostart uses, over a dict."""

    HKEY_CURRENT_USER = "HKCU"
    KEY_SET_VALUE = 2
    REG_SZ = 1

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], dict[str, tuple[int, str]]] = {}

    class _Key:
        def __init__(self, values):
            self.values = values

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def CreateKey(self, root, path):
        return self._Key(self.keys.setdefault((root, path), {}))

    def OpenKey(self, root, path, reserved=0, access=0):
        if (root, path) not in self.keys:
            raise FileNotFoundError(path)
        return self._Key(self.keys[(root, path)])

    def SetValueEx(self, key, name, reserved, kind, value):
        key.values[name] = (kind, value)

    def QueryValueEx(self, key, name):
        if name not in key.values:
            raise FileNotFoundError(name)
        kind, value = key.values[name]
        return value, kind

    def DeleteValue(self, key, name):
        if name not in key.values:
            raise FileNotFoundError(name)
        del key.values[name]


def test_the_windows_run_key():
    reg = FakeWinreg()
    cmd = [r"C:\Program Files\DLE Desktop\dle-desktop.exe", TRAY_FLAG]
    auto = Autostart(cmd, system="windows", registry=reg)
    assert not auto.is_enabled()
    auto.set_enabled(True)
    kind, value = reg.keys[("HKCU", RUN_KEY)][RUN_VALUE]
    assert kind == reg.REG_SZ and value == r'"C:\Program Files\DLE Desktop\dle-desktop.exe" --minimized'
    assert auto.is_enabled()
    auto.set_enabled(False)
    assert RUN_VALUE not in reg.keys[("HKCU", RUN_KEY)] and not auto.is_enabled()
    assert auto.disable() is False
