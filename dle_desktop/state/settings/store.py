"""settings.json: loaded and migrated from older schema versions, saved atomically. A broken
file is set aside, not overwritten; a file from a newer version is neither read nor overwritten.
Never holds secrets: API keys live in the keyring."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from dle_desktop.errors import ConfigError
from dle_desktop.fileio import move_into_place, write_private_atomic
from dle_desktop.state.settings.model import SCHEMA_VERSION, Settings, settings_from_mapping

log = logging.getLogger(__name__)


class SettingsFromNewerVersion(ConfigError):
    """settings.json was written by a newer DLE Desktop: read nothing, overwrite nothing."""


def _migrate(raw: dict) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError("settings must be a JSON object")
    version = raw.get("schema_version", 0)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SettingsFromNewerVersion(f"settings were written by a newer DLE Desktop (schema {version})")
    # Schema 0 → 1: nothing renamed yet. Migrations go here, one step per version.
    if "semantic_relative_margin" not in raw and raw.get("semantic_min_score") == 0.35:
        # Saved before the relative threshold existed, with the old default floor (0.35 drops
        # right answers of small models): take the new default floor. No version bump, so an
        # older DLE Desktop still reads the file.
        raw["semantic_min_score"] = 0.2
    raw["schema_version"] = SCHEMA_VERSION
    return raw


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """What changes whenever a file is written, atomically replaced or edited in place (its inode,
    size and modification time), in one stat; None while there is no file to look at."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class SettingsStore:
    """Loads and saves settings.json atomically. Never writes secrets."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.problem: str | None = None
        #: True when the file must not be overwritten (newer version, or not a readable file).
        self.read_only = False

    def load(self) -> Settings:
        if not self.path.exists():
            return Settings()
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return settings_from_mapping(_migrate(raw))
        except SettingsFromNewerVersion as exc:
            self.read_only = True
            self.problem = f"{exc}; defaults are in use for this run and the file is left untouched"
            log.warning(self.problem)
            return Settings()
        except OSError as exc:  # a folder where the file should be, no permission...
            self.read_only = True
            self.problem = f"settings file {self.path} cannot be read ({exc.strerror or exc}); defaults are in use and nothing is saved"
            log.warning(self.problem)
            return Settings()
        except (json.JSONDecodeError, UnicodeDecodeError, ConfigError) as exc:
            kept = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
            n = 1
            while kept.exists():  # never overwrite a copy set aside earlier (same second)
                n += 1
                kept = kept.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            try:
                move_into_place(self.path, kept)
            except OSError:
                kept = self.path
            self.problem = (
                f"settings file could not be read ({exc}); it was kept as {kept.name} and defaults are in use"
            )
            log.warning(self.problem)
            return Settings()

    def read_current(self) -> Settings | None:
        """The file as it is now, judged as `load` judges it, for a running instance that follows
        what another process wrote; None when there is no file. Unlike `load` it sets nothing
        aside and marks nothing: ConfigError says why the file cannot be used."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"it cannot be read ({exc.strerror or exc})") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"it is not UTF-8 text ({exc})") from exc
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"it is not JSON ({exc})") from exc
        except RecursionError:
            raise ConfigError("it nests JSON too deeply to read") from None
        return settings_from_mapping(_migrate(raw))

    def save(self, settings: Settings) -> None:
        if self.read_only:
            raise ConfigError(f"not saving settings: {self.problem}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_private_atomic(self.path, json.dumps(settings.to_json(), indent=2, ensure_ascii=False))
