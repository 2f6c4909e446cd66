"""`Settings`: the declared settings as one frozen value, read from a mapping in our names or
DLE's camelCase ones (each value checked against its declaration, unknown names refused with a
message that lists them) and written back as JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dle_desktop.errors import ConfigError
from dle_desktop.state.settings.declare import GROUPS
from dle_desktop.state.settings.fields import SettingsFields
from dle_desktop.state.settings.records import ProfileConfig, VaultConfig, WiSyncConfig

#: The settings file's format (`schema_version`); the store migrates older ones.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Settings(SettingsFields):
    # -- conversions -------------------------------------------------------------------------
    def to_json(self) -> dict:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = [v.to_json() for v in value] if f.name in _RECORD_LISTS else value
        return out

    def replace(self, **changes) -> Settings:
        return settings_from_mapping({**self.to_json(), **changes}, base=None)

    def enabled_vaults(self) -> tuple[VaultConfig, ...]:
        return tuple(v for v in self.vaults if v.enabled)


#: The settings that hold records (written as lists of objects).
_RECORD_LISTS = ("vaults", "connection_profiles", "wi_syncs")  # see _RECORDS

FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
DLE_NAMES = {f.metadata["dle"]: f.name for f in FIELDS.values() if f.metadata.get("dle")}
#: Names older DLE versions wrote (its settings migrations), read like the current ones.
DLE_NAMES.update({"librarianSessionModel": "librarian_model"})


_ACRONYMS = {"ai": "AI", "rrf": "RRF", "wi": "WI", "ttl": "TTL", "url": "URL"}


def label_for(name: str) -> str:
    """A setting's name in the settings UI: its declared label, else our name in words."""
    words = [_ACRONYMS.get(w, w) for w in name.split("_")]
    return FIELDS[name].metadata.get("label") or " ".join(words)[:1].upper() + " ".join(words)[1:]


def grouped_fields() -> list[tuple[str, list[dataclasses.Field]]]:
    """The settings that have a place in the settings UI, by group in `GROUPS` order (declaration
    order within a group)."""
    by_group: dict[str, list[dataclasses.Field]] = {g: [] for g in GROUPS}
    for f in FIELDS.values():
        group = f.metadata.get("group")
        if group is not None:
            by_group[group].append(f)
    return [(g, fs) for g, fs in by_group.items() if fs]


#: The record lists: each one's type, the identity that must be unique, and what to say when not.
_RECORDS: dict[str, tuple[Any, Callable[[Any], str], str]] = {
    "vaults": (VaultConfig, lambda v: v.name.lower(), "vault names must be unique"),
    "connection_profiles": (ProfileConfig, lambda p: p.id, "connection profile ids must be unique"),
    "wi_syncs": (WiSyncConfig, lambda s: s.book_path, "each World Info book can be synced from one folder only"),
}


def _record_list(name: str, value: Any, kind: Any, identity: Callable[[Any], str], not_unique: str) -> tuple:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{name} must be a list")
    records = tuple(r if isinstance(r, kind) else kind.from_json(r) for r in value)
    ids = [identity(r) for r in records]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"{not_unique}: {', '.join(dupes)}")
    return records


def _coerce(name: str, value: Any) -> Any:
    f = FIELDS[name]
    meta = f.metadata
    default = f.default
    record = _RECORDS.get(name)
    if record is not None:
        return _record_list(name, value, *record)
    if isinstance(default, tuple):
        if isinstance(value, str) and not meta.get("split", True):
            value = [value]
        return _text_list(name, value, meta.get("item"))
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"setting {name}: expected true or false, got {value!r}")
    if isinstance(default, (int, float)):
        if isinstance(value, bool):
            raise ConfigError(f"setting {name}: expected a number, got {value!r}")
        try:
            num = float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name}: expected a number, got {value!r}") from exc
        if num != num:
            raise ConfigError(f"setting {name}: NaN is not a number")
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            raise ConfigError(f"setting {name}: {value!r} is outside {lo}-{hi}")
        if isinstance(default, int) and not isinstance(default, bool):
            if not num.is_integer():
                raise ConfigError(f"setting {name}: expected a whole number, got {value!r}")
            return int(num)
        return num
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"setting {name}: expected text, got {value!r}")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"setting {name}: {value!r} is not one of {', '.join(choices)}")
        return value
    return value


def _text_list(name: str, value: Any, item) -> tuple[str, ...]:
    """A list of text values; one string is split at commas and spaces (`"a, b"`)."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"setting {name}: expected a list of text values, got {value!r}")
    out: list[str] = []
    for raw in value:
        try:
            canonical = item(raw) if item else raw.strip()
        except ValueError as exc:
            raise ConfigError(f"setting {name}: {exc}") from None
        if canonical and canonical not in out:
            out.append(canonical)
    return tuple(out)


def normalise_name(name: str) -> str | None:
    """Our snake_case name for a setting given in either spelling, or None if unknown."""
    if name in FIELDS:
        return name
    return DLE_NAMES.get(name)


def settings_from_mapping(raw: dict, base: Settings | None = None) -> Settings:
    """Build settings from a mapping in our names or DLE's; unknown names are an error."""
    if not isinstance(raw, dict):
        raise ConfigError("settings must be a JSON object")
    raw = {k: v for k, v in raw.items() if k not in ("schema_version", "settingsVersion")}
    unknown = sorted(k for k in raw if normalise_name(k) is None)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    values = {} if base is None else {f: getattr(base, f) for f in FIELDS}
    for key, value in raw.items():
        name = normalise_name(key)
        assert name is not None  # unknown names were refused above
        values[name] = _coerce(name, value)
    return Settings(**values)
