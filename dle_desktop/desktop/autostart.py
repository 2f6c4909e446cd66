"""Start DLE Desktop in the tray at login, the platform's own way: an XDG autostart entry on Linux
and the BSDs, a LaunchAgent on macOS, the per-user Run key on Windows.

The file (or registry value) is the state: nothing in settings.json says autostart is on, so the
checkbox can never disagree with what the system will do at the next login, also after the user
removed the entry with the desktop's own tools."""

from __future__ import annotations

import os
import plistlib
import re
import subprocess
import sys
from pathlib import Path

from dle_desktop.errors import ConfigError
from dle_desktop.fileio import write_atomic

APP_ID = "dle-desktop"
LAUNCH_AGENT_LABEL = "dle-desktop.tray"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "DLE Desktop"
TRAY_FLAG = "--minimized"


def source_root() -> Path | None:
    """The folder holding the `dle_desktop` package when it runs from a source checkout (None frozen)."""
    if getattr(sys, "frozen", False):
        return None
    return Path(__file__).resolve().parents[2]


def launch_command(minimized: bool = True, data_dir: str | os.PathLike | None = None) -> list[str]:
    """How this installation starts the app: the frozen executable, or this interpreter with
    `-m dle_desktop` (which also works from a checkout that was never pip-installed, since the
    entries start it in `source_root()`). `data_dir`: a `--data-dir` this run was given."""
    if getattr(sys, "frozen", False):
        cmd = [sys.executable]
    else:
        python = Path(sys.executable)
        if os.name == "nt":  # pythonw.exe: no console window at every login
            windowed = python.with_name("pythonw.exe")
            python = windowed if windowed.is_file() else python
        cmd = [str(python), "-m", "dle_desktop"]
    if data_dir:
        cmd += ["--data-dir", str(Path(data_dir).expanduser().resolve())]
    if minimized:
        cmd.append(TRAY_FLAG)
    return cmd


def for_paths(paths=None) -> Autostart:
    """The login item for the app whose files are under `paths` (an `AppPaths`): a data folder
    other than the platform's default is passed on as `--data-dir`, so the app started at login
    is the same one the user ticked the box in."""
    if paths is None:
        return Autostart()
    import platformdirs

    from dle_desktop.state.paths import APP_NAME

    default = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    return Autostart(launch_command(data_dir=None if Path(paths.data_dir) == default else paths.data_dir))


# -- freedesktop entries (also used for the menu entry) ----------------------------------------
_EXEC_RESERVED = re.compile(r"[\s\"'\\><~|&;$*?#()`]")


def exec_value(args: list[str]) -> str:
    """An `Exec=` value for `args` (the Desktop Entry spec's quoting, then its string escapes)."""
    quoted = []
    for arg in args:
        arg = arg.replace("%", "%%")  # a lone % starts a field code
        if not arg or _EXEC_RESERVED.search(arg):
            arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
        quoted.append(arg)
    return string_value(" ".join(quoted))


def string_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def desktop_entry(args: list[str], *, name: str, comment: str, extra: dict[str, str] | None = None) -> str:
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.0",
        f"Name={name}",
        f"Comment={comment}",
        f"Exec={exec_value(args)}",
        f"TryExec={string_value(args[0])}",
        f"Icon={APP_ID}",
        "Terminal=false",
    ]
    root = source_root()
    if root is not None:
        lines.append(f"Path={string_value(str(root))}")
    lines += [f"{k}={v}" for k, v in (extra or {}).items()]
    return "\n".join(lines) + "\n"


def read_entry(path: Path) -> dict[str, str]:
    """The `[Desktop Entry]` keys of a desktop file (values as written, escapes kept)."""
    out: dict[str, str] = {}
    section = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Desktop Entry]" and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


class Autostart:
    """`system`, `environ`, `home` and `registry` (a winreg-like module) default to this machine's;
    tests give their own."""

    def __init__(
        self,
        command: list[str] | None = None,
        *,
        system: str | None = None,
        environ=None,
        home: Path | None = None,
        registry=None,
    ) -> None:
        self.command = command or launch_command()
        self.system = system or (
            "windows" if sys.platform == "win32" else "macos" if sys.platform == "darwin" else "xdg"
        )
        self.environ = os.environ if environ is None else environ
        self.home = Path(home) if home is not None else Path.home()
        self._registry = registry

    # -- where ------------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        if self.system == "xdg":
            config = self.environ.get("XDG_CONFIG_HOME") or ""
            base = Path(config) if os.path.isabs(config) else self.home / ".config"
            return base / "autostart" / f"{APP_ID}.desktop"
        if self.system == "macos":
            return self.home / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"
        return None

    def _entry_file(self) -> Path:
        path = self.path
        assert path is not None  # Windows keeps its entry in the registry and never asks for a file
        return path

    def describe(self) -> str:
        return str(self.path) if self.path is not None else f"HKEY_CURRENT_USER\\{RUN_KEY} ({RUN_VALUE})"

    # -- what -------------------------------------------------------------------------------
    def xdg_entry(self) -> str:
        return desktop_entry(
            self.command,
            name="DLE Desktop",
            comment="Lore engine for SillyTavern, in the system tray",
            extra={"X-GNOME-Autostart-enabled": "true", "NoDisplay": "false"},
        )

    def launch_agent(self) -> bytes:
        agent = {
            "Label": LAUNCH_AGENT_LABEL,
            "ProgramArguments": list(self.command),
            "RunAtLoad": True,
            "ProcessType": "Interactive",
            "LimitLoadToSessionType": "Aqua",
        }
        root = source_root()
        if root is not None:
            agent["WorkingDirectory"] = str(root)
        return plistlib.dumps(agent)

    def run_value(self) -> str:
        return subprocess.list2cmdline(self.command)

    # -- state ------------------------------------------------------------------------------
    def is_enabled(self) -> bool:
        if self.system == "windows":
            return self._read_run_value() is not None
        path = self._entry_file()
        if not path.is_file():
            return False
        if self.system == "xdg":  # a desktop's startup-apps tool may switch an entry off instead of deleting it
            entry = read_entry(path)
            return entry.get("Hidden", "false") != "true" and entry.get("X-GNOME-Autostart-enabled", "true") != "false"
        return True

    def enable(self) -> str:
        """Write the entry (again: it then names this installation's command); returns where."""
        if self.system == "xdg":
            write_file(self._entry_file(), self.xdg_entry().encode("utf-8"))
        elif self.system == "macos":
            write_file(self._entry_file(), self.launch_agent())
        else:
            reg = self._winreg()
            with reg.CreateKey(reg.HKEY_CURRENT_USER, RUN_KEY) as key:
                reg.SetValueEx(key, RUN_VALUE, 0, reg.REG_SZ, self.run_value())
        return self.describe()

    def disable(self) -> bool:
        """Remove the entry; False when there was none."""
        if self.system == "windows":
            reg = self._winreg()
            try:
                with reg.OpenKey(reg.HKEY_CURRENT_USER, RUN_KEY, 0, reg.KEY_SET_VALUE) as key:
                    reg.DeleteValue(key, RUN_VALUE)
                return True
            except FileNotFoundError:
                return False
        try:
            self._entry_file().unlink()
            return True
        except FileNotFoundError:
            return False

    def set_enabled(self, on: bool) -> None:
        try:
            self.enable() if on else self.disable()
        except OSError as exc:
            raise ConfigError(
                f"could not {'add' if on else 'remove'} the login item at {self.describe()}: {exc.strerror or exc}"
            ) from exc

    def _read_run_value(self) -> str | None:
        reg = self._winreg()
        try:
            with reg.OpenKey(reg.HKEY_CURRENT_USER, RUN_KEY) as key:
                return reg.QueryValueEx(key, RUN_VALUE)[0]
        except FileNotFoundError:
            return None

    def _winreg(self):
        if self._registry is None:
            import winreg  # only on Windows

            self._registry = winreg
        return self._registry
