"""`--install-desktop-entry`: the menu entry and every icon size in a temporary XDG_DATA_HOME,
valid, pointing at this installation, and all of it taken back by `--remove-desktop-entry`."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dle_desktop.desktop import menu_entry as desktop_entry
from dle_desktop.desktop.autostart import launch_command
from dle_desktop.errors import ConfigError
from tests.desktop import entry_rules

ROOT = Path(__file__).resolve().parents[2]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_the_packaged_icons_exist_at_every_size():
    assert desktop_entry.icons_dir() == ROOT / "dle_desktop" / "icons"
    for size in desktop_entry.ICON_SIZES:
        assert png_size(desktop_entry.icon_png(size)) == (size, size)
    assert desktop_entry.icon_svg().read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_the_icons_are_package_data():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"icons/*.png"' in text and '"icons/*.svg"' in text


def test_install_and_remove_in_a_temporary_data_home(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "share")}
    written = desktop_entry.install(environ=env, system="linux")
    entry = tmp_path / "share" / "applications" / "dle-desktop.desktop"
    assert written[0] == entry and entry.is_file()
    for size in desktop_entry.ICON_SIZES:
        icon = tmp_path / "share" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "dle-desktop.png"
        assert icon in written and png_size(icon) == (size, size)
    assert (tmp_path / "share" / "icons" / "hicolor" / "scalable" / "apps" / "dle-desktop.svg").is_file()
    keys = entry_rules.parse(entry)
    entry_rules.validate(entry)
    assert keys["Icon"] == "dle-desktop" and keys["Categories"].endswith(";")
    assert entry_rules.split_exec(entry_rules.unescape(keys["Exec"])) == launch_command(minimized=False)
    removed = desktop_entry.remove(environ=env)
    assert sorted(removed) == sorted(written)
    assert not any(p.is_file() for p in (tmp_path / "share").rglob("*"))
    assert desktop_entry.remove(environ=env) == []


def test_the_default_data_home(tmp_path):
    assert desktop_entry.entry_path({}, home=tmp_path) == tmp_path / ".local/share/applications/dle-desktop.desktop"
    assert (
        desktop_entry.icons_root({"XDG_DATA_HOME": "not/absolute"}, home=tmp_path)
        == tmp_path / ".local/share/icons/hicolor"
    )


def test_other_systems_are_told_what_to_do_instead(tmp_path):
    with pytest.raises(ConfigError, match="macOS"):
        desktop_entry.install(environ={"XDG_DATA_HOME": str(tmp_path)}, system="darwin")


def test_the_command_line_flags(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "share")}

    def run(flag: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dle_desktop", flag], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )

    done = run("--install-desktop-entry")
    assert done.returncode == 0, done.stderr
    assert "Menu entry installed" in done.stdout and (tmp_path / "share/applications/dle-desktop.desktop").is_file()
    done = run("--remove-desktop-entry")
    assert done.returncode == 0 and "Removed 10 files" in done.stdout
    assert not (tmp_path / "share/applications/dle-desktop.desktop").exists()
