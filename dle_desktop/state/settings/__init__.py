"""Every setting, declared once: name, DLE's name, default, allowed values.

Settings are a frozen dataclass (`model`). They load from a versioned JSON file (`store`; never
secrets: API keys live in the keyring), accept DLE's camelCase names beside ours (`mapping`), and
refuse unknown names with a message that lists them. A broken settings file is set aside, not
overwritten. The names below are the ones the rest of the app imports from here.
"""

from __future__ import annotations

from dle_desktop.state.settings.declare import GROUPS, folder_path
from dle_desktop.state.settings.fields import CHANNELS
from dle_desktop.state.settings.model import (
    DLE_NAMES,
    FIELDS,
    SCHEMA_VERSION,
    Settings,
    grouped_fields,
    label_for,
    normalise_name,
    settings_from_mapping,
)
from dle_desktop.state.settings.records import OPENAI_FLAVORS, PROVIDERS, ProfileConfig, VaultConfig
from dle_desktop.state.settings.store import SettingsFromNewerVersion, SettingsStore

__all__ = [
    "CHANNELS",
    "DLE_NAMES",
    "FIELDS",
    "GROUPS",
    "OPENAI_FLAVORS",
    "PROVIDERS",
    "SCHEMA_VERSION",
    "ProfileConfig",
    "Settings",
    "SettingsFromNewerVersion",
    "SettingsStore",
    "VaultConfig",
    "folder_path",
    "grouped_fields",
    "label_for",
    "normalise_name",
    "settings_from_mapping",
]
