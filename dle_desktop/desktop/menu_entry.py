"""`dle-desktop --install-desktop-entry`: DLE Desktop in the freedesktop application menu (Linux,
the BSDs), with its icon at every size in the user's hicolor theme. Only the user's own folders
are written (`$XDG_DATA_HOME`, default ~/.local/share): no root, and `--remove-desktop-entry`
takes back exactly what was put there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dle_desktop.desktop.autostart import APP_ID, desktop_entry, launch_command, write_file
from dle_desktop.errors import ConfigError

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ENTRY_FILE = f"{APP_ID}.desktop"


def icons_dir() -> Path:
    """The packaged icons (`dle-desktop.svg`, `dle-desktop-<size>.png`), in a checkout, a wheel or a
    frozen build (which carries them as `dle_desktop/icons`)."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "dle_desktop" / "icons"
    return Path(__file__).resolve().parents[1] / "icons"


def icon_png(size: int) -> Path:
    return icons_dir() / f"{APP_ID}-{size}.png"


def icon_svg() -> Path:
    return icons_dir() / f"{APP_ID}.svg"


def data_home(environ=None, home: Path | None = None) -> Path:
    environ = os.environ if environ is None else environ
    value = environ.get("XDG_DATA_HOME") or ""
    return Path(value) if os.path.isabs(value) else (home or Path.home()) / ".local" / "share"


def icons_root(environ=None, home: Path | None = None) -> Path:
    return data_home(environ, home) / "icons" / "hicolor"


def entry_path(environ=None, home: Path | None = None) -> Path:
    return data_home(environ, home) / "applications" / ENTRY_FILE


def targets(environ=None, home: Path | None = None) -> list[tuple[Path, Path]]:
    """(packaged file, where it goes) for every icon; the entry itself is written, not copied."""
    root = icons_root(environ, home)
    out: list[tuple[Path, Path]] = [(icon_png(s), root / f"{s}x{s}" / "apps" / f"{APP_ID}.png") for s in ICON_SIZES]
    out.append((icon_svg(), root / "scalable" / "apps" / f"{APP_ID}.svg"))
    return out


def menu_entry(command: list[str] | None = None) -> str:
    return desktop_entry(
        command or launch_command(minimized=False),
        name="DLE Desktop",
        comment="Lore engine for SillyTavern: your Obsidian-style lore vaults, matched natively",
        extra={
            "GenericName": "Lore engine",
            "Categories": "Utility;TextTools;",
            "Keywords": "SillyTavern;lore;lorebook;Obsidian;vault;",
            "StartupNotify": "true",
        },
    )


def install(
    command: list[str] | None = None, environ=None, home: Path | None = None, system: str | None = None
) -> list[Path]:
    """Write the menu entry and copy the icons; returns the written files, the entry first."""
    if (system or sys.platform) in ("win32", "darwin"):
        raise ConfigError(
            "menu entries are for freedesktop desktops (Linux, BSD); on macOS use the app bundle, "
            "on Windows a shortcut to dle-desktop.exe"
        )
    missing = [str(src) for src, _ in targets(environ, home) if src is not None and not src.is_file()]
    if missing:
        raise ConfigError(f"the app's icons are missing from this installation: {', '.join(missing)}")
    written = []
    for src, dest in targets(environ, home):
        write_file(dest, src.read_bytes())
        written.append(dest)
    entry = entry_path(environ, home)
    write_file(entry, menu_entry(command).encode("utf-8"))
    # The theme folder's time is what icon caches compare; touching it makes them look again.
    os.utime(icons_root(environ, home))
    return [entry, *written]


def remove(environ=None, home: Path | None = None) -> list[Path]:
    removed = []
    for path in (entry_path(environ, home), *(dest for _, dest in targets(environ, home))):
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            continue
    return removed
