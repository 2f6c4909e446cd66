"""What a chat can be steered with, read off the vault: the gating fields and the values the
notes use (with how many entries each value would let through), the folders, and the checks
that keep a typo from silently switching lore off. Pure: the server and the app both ask.

"Lets through" counts what that one field's gate passes when the chat's value is set to that
value, exactly as contextual gating decides it: entries without a value for the field pass,
entries with one pass when the field's operator says so (or the field is lenient)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.fields import FieldDefinition, FieldDefinitions
from dle_desktop.core.pipeline.gating import evaluate_operator


class SteeringError(ValueError):
    """A field or folder the vault does not know. The message names the known ones."""


@dataclass(frozen=True)
class ValueUse:
    value: str
    entries: int  # notes that carry this value
    lets_through: int  # notes this field's gate passes with the chat's value set to it

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "entries": self.entries, "lets_through": self.lets_through}


@dataclass(frozen=True)
class FieldUse:
    definition: FieldDefinition
    values: tuple[ValueUse, ...]
    entries_with_field: int

    def to_json(self) -> dict[str, Any]:
        return {
            **self.definition.to_json(),
            "entries_with_field": self.entries_with_field,
            "used_values": [v.to_json() for v in self.values],
        }


def _values_of(raw: object) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, (list, tuple)):
        return [str(v).strip() for v in raw if v is not None and str(v).strip()]
    text = str(raw).strip()
    return [text] if text else []


def _passes(field: FieldDefinition, entry_values: tuple[str, ...], active: str) -> bool:
    """Contextual gating's verdict for one field: an entry with these values, the chat's value `active`."""
    if field.operator in ("exists", "not_exists"):
        return evaluate_operator(field.operator, list(entry_values), active)
    if not entry_values:
        return True
    if evaluate_operator(field.operator, list(entry_values), active):
        return True
    return field.tolerance == "lenient" and field.operator in ("match_any", "match_all")


def _lets_through(field: FieldDefinition, value: str, groups: Counter[tuple[str, ...]], carrying: int) -> int:
    """How many entries the field's gate passes with the chat's value set to `value`. `groups`
    counts the entries by their (lower-cased) values, `carrying` how many carry `value`. The
    common case is counted, not walked: at 10,000 entries and hundreds of values, a walk per
    value took seconds."""
    if field.operator == "match_any" and field.tolerance != "lenient":
        return groups.get((), 0) + carrying
    if field.tolerance == "lenient" and field.operator in ("match_any", "match_all"):
        return sum(groups.values())
    return sum(n for values, n in groups.items() if _passes(field, values, value))


def field_usage(entries: Sequence[Entry], definitions: FieldDefinitions) -> list[FieldUse]:
    """Every defined field with the values the notes use (case kept from the first note that
    uses it, compared case-insensitively as gating does) and the values the definition lists,
    most used first."""
    out = []
    for field in definitions.fields:
        seen: dict[str, str] = {}
        counts: Counter[str] = Counter()
        groups: Counter[tuple[str, ...]] = Counter()
        for entry in entries:
            values = _values_of(entry.custom_fields.get(field.name))
            lowered = tuple(dict.fromkeys(v.lower() for v in values))
            groups[lowered] += 1
            counts.update(lowered)
            for value in values:
                seen.setdefault(value.lower(), value)
        for declared in field.values:
            seen.setdefault(declared.strip().lower(), declared.strip())
        uses = [
            ValueUse(
                value=shown, entries=counts.get(low, 0), lets_through=_lets_through(field, shown, groups, counts[low])
            )
            for low, shown in seen.items()
            if low
        ]
        uses.sort(key=lambda u: (-u.entries, u.value.lower()))
        with_field = sum(n for values, n in groups.items() if values)
        out.append(FieldUse(definition=field, values=tuple(uses), entries_with_field=with_field))
    return out


def vault_folders(entries: Iterable[Entry]) -> dict[str, int]:
    """Folder path → notes in it or below it, for every folder that holds a note (and its parents)."""
    counts: Counter[str] = Counter()
    for entry in entries:
        folder = entry.folder
        while folder:
            counts[folder] += 1
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
    return dict(sorted(counts.items(), key=lambda kv: kv[0].lower()))


def _named(items: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "") if items else "none"


def resolve_field(name: str, definitions: FieldDefinitions) -> FieldDefinition:
    """A field by its name or its context key (case-insensitive)."""
    wanted = name.strip().lower()
    for field in definitions.fields:
        if wanted in (field.name.lower(), (field.context_key or field.name).lower()):
            return field
    known = [f.name for f in definitions.fields]
    raise SteeringError(f"the vault has no gating field '{name.strip()}'; its fields are: {_named(known)}")


def context_value(field: FieldDefinition, raw: str | Sequence[str]) -> str | list[str]:
    """What a command's text becomes in the chat's context: a comma list for a multi-valued
    field (DLE splits on commas), one trimmed value otherwise."""
    parts = [raw] if isinstance(raw, str) else list(raw)
    if field.multi:
        values = [v.strip() for part in parts for v in str(part).split(",") if v.strip()]
        if not values:
            raise SteeringError(f"give {field.name} at least one value")
        return values
    text = ", ".join(str(p).strip() for p in parts if str(p).strip())
    if not text:
        raise SteeringError(f"give {field.name} a value")
    if field.type == "number":
        try:
            float(text)
        except ValueError:
            raise SteeringError(f"{field.name} takes a number, not '{text}'") from None
    if field.type == "boolean" and text.lower() not in ("true", "false"):
        raise SteeringError(f"{field.name} takes true or false, not '{text}'")
    return text


def checked_context(context: Mapping[str, Any], definitions: FieldDefinitions) -> dict[str, Any]:
    """The context with every key replaced by its field's context key; an unknown key raises."""
    out: dict[str, Any] = {}
    for key, value in context.items():
        field = resolve_field(key, definitions)
        out[field.context_key or field.name] = value
    return out


def checked_folders(folders: Sequence[str], known: Mapping[str, int]) -> tuple[str, ...]:
    """The folder filter with each folder spelled as the vault spells it; one the vault does not
    have raises (a folder filter that matches nothing would switch off all lore)."""
    by_lower = {k.lower(): k for k in known}
    out = []
    missing = []
    for folder in folders:
        clean = folder.strip().strip("/")
        if not clean:
            continue
        match = by_lower.get(clean.lower())
        if match is None:
            missing.append(clean)
        else:
            out.append(match)
    if missing:
        tops = sorted({k.split("/", 1)[0] for k in known}, key=str.lower)
        raise SteeringError(
            f"the vault has no folder {', '.join(repr(m) for m in missing)}; its folders are: {_named(tops)}"
            + (" (and their subfolders)" if any("/" in k for k in known) else "")
        )
    return tuple(dict.fromkeys(out))
