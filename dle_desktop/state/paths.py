"""Where DLE Desktop keeps its files (platformdirs), or everything under one `--data-dir`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from dle_desktop.fileio import make_private_dir, make_private_tree, tighten

APP_NAME = "dle-desktop"


#: What the app keeps in its data folder (tightened at every start) and its config folder.
OWN_FOLDERS = ("index-cache", "vectors", "models", "logs", "run", "librarian", "graph-layouts", "olra")
OWN_DATA_FILES = tuple(
    f"{db}{suffix}" for db in ("state.sqlite", "write-history.sqlite") for suffix in ("", "-wal", "-shm")
) + ("ai-usage.json", "secrets.json")
OWN_CONFIG_FILES = ("settings.json", "ui-state.ini")


@dataclass(frozen=True)
class AppPaths:
    config_dir: Path
    data_dir: Path

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def index_cache_dir(self) -> Path:
        return self.data_dir / "index-cache"

    @property
    def state_db(self) -> Path:
        return self.data_dir / "state.sqlite"

    @property
    def ai_usage_file(self) -> Path:
        return self.data_dir / "ai-usage.json"

    @property
    def secrets_file(self) -> Path:
        """API keys when the system has no keyring (0600)."""
        return self.data_dir / "secrets.json"

    @property
    def vectors_dir(self) -> Path:
        return self.data_dir / "vectors"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def runtime_dir(self) -> Path:
        """Single-instance socket and lock files."""
        return self.data_dir / "run"

    def ensure(self) -> AppPaths:
        """Create the folders, private to the user; files earlier versions left readable are tightened."""
        for d in (self.config_dir, self.data_dir, self.index_cache_dir, self.logs_dir, self.runtime_dir):
            make_private_dir(d)
        # Only what the app itself keeps there: a --data-dir may be a folder that holds other things.
        for folder in OWN_FOLDERS:
            make_private_tree(self.data_dir / folder)
        for name in OWN_DATA_FILES:
            tighten(self.data_dir / name)
        for name in OWN_CONFIG_FILES:
            tighten(self.config_dir / name)
        return self


def resolve_paths(data_dir: str | os.PathLike | None = None) -> AppPaths:
    """`--data-dir` (or DLE_DESKTOP_DATA_DIR) puts config and data under one folder."""
    chosen = data_dir or os.environ.get("DLE_DESKTOP_DATA_DIR")
    if chosen:
        root = Path(chosen).expanduser().resolve()
        return AppPaths(config_dir=root, data_dir=root)
    return AppPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
    )


def resources_dir() -> Path:
    """Bundled resources: next to the package in a checkout, or inside a frozen build."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


def sample_vault_dir() -> Path:
    return resources_dir() / "sample_vault"
