"""Vault entries → a SillyTavern World Info book (`{"entries": {"0": {...}}}`), every field
SillyTavern 1.12.14 and 1.19.0 write, and a report of what World Info cannot express.

The mapping is the exact inverse of the import (convert.py) wherever a value survives both:
- priority → order, the same number (rounded to a whole one): the import keeps DLE's rule
  (order → priority unchanged, clamped 0–999), so import → export → import is stable;
- position: the note's `st_position` when it agrees with its DLE position (the import wrote
  both), else before → 0, after → 1, in_chat → 4; an outlet is position 7 with `outletName`;
  no position at all → ExportDefaults;
- the ST fields the import kept (sticky, group, selectiveLogic, st_position, …) are written
  back: the note parser keeps them in Entry.st_fields (note_parser.ST_ROUND_TRIP_FIELDS), so
  the entries alone are enough. `raw_fields` (each note's raw frontmatter, keyed by Entry.uid)
  overrides them where given, e.g. for notes parsed by an older version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.note_parser import NOT_IMPLEMENTED_FIELDS, ST_ROUND_TRIP_FIELDS
from dle_desktop.core.worldinfo.convert import KEPT_FIELDS, OUTLET, POSITION_TO_DLE, is_default, json_like
from dle_desktop.core.worldinfo.model import ExportDefaults, ExportLine, ExportReport

DLE_TO_POSITION = {"before": 0, "after": 1, "in_chat": 4}
ROLE_NUMBERS = {"system": 0, "user": 1, "assistant": 2}
ST_DEFAULT_ORDER = 100
#: Fields the import keeps that hold a SillyTavern value of a known type.
_BOOL_FIELDS = {
    "groupOverride",
    "vectorized",
    "ignoreBudget",
    "st_excludeRecursion",
    "matchPersonaDescription",
    "matchCharacterDescription",
    "matchCharacterPersonality",
    "matchCharacterDepthPrompt",
    "matchScenario",
    "matchCreatorNotes",
}
_NULLABLE_BOOL_FIELDS = {"caseSensitive", "matchWholeWords", "useGroupScoring"}
_TEXT_FIELDS = {"group", "automationId"}
#: Custom fields that are the import's round-trip keeping, not contextual gating.
_ROUND_TRIP_NAMES = ST_ROUND_TRIP_FIELDS | set(NOT_IMPLEMENTED_FIELDS)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _whole(value: object) -> int | None:
    num = _number(value)
    return None if num is None else round(num)


def _kept_value(name: str, value: Any) -> tuple[bool, Any]:
    """(usable, the value as SillyTavern stores it) for one kept frontmatter field."""
    value = json_like(value)
    if name in _BOOL_FIELDS:
        return isinstance(value, bool), value
    if name in _NULLABLE_BOOL_FIELDS:
        return value is None or isinstance(value, bool), value
    if name in _TEXT_FIELDS:
        return isinstance(value, (str, int, float)) and not isinstance(value, bool), str(value)
    if name == "selectiveLogic":
        num = _whole(value)
        return num in (0, 1, 2, 3), num
    if name in ("sticky", "delay"):
        num = _whole(value)
        return num is not None and num >= 0, num
    if name == "groupWeight":
        weight = _number(value)
        return weight is not None and weight > 0, (
            int(weight) if weight is not None and weight.is_integer() else weight
        )
    if name == "delayUntilRecursion":
        if isinstance(value, bool):
            return True, value
        num = _whole(value)
        return num is not None and num >= 0, num
    if name in ("triggers", "keysecondary"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return ok, value
    if name == "characterFilter":
        return isinstance(value, dict), value
    return True, value


def round_trip_source(entry: Entry, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Where the kept ST fields are read from: the note's raw frontmatter when the caller gives
    it, else what the parser kept (Entry.st_fields, and DLE's own `group_weight` spelling)."""
    source: dict[str, Any] = {}
    if "group_weight" in entry.custom_fields:
        source["groupWeight"] = entry.custom_fields["group_weight"]
    source.update(entry.st_fields)
    if raw is not None:
        source.update({k: v for k, v in raw.items() if k in ST_ROUND_TRIP_FIELDS})
    return source


def _kept_fields(source: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """The ST fields the note kept, in ST names, validated."""
    out: dict[str, Any] = {}
    for st_name, name, default in (*KEPT_FIELDS, ("keysecondary", "keysecondary", None)):
        if name not in source or is_default(source[name], default):
            continue
        ok, value = _kept_value(name, source[name])
        if ok:
            out[st_name] = value
        else:
            problems.append(f"{name}: {source[name]!r} is not a value SillyTavern reads; left out")
    return out


def _position(entry: Entry, raw: Mapping[str, Any], defaults: ExportDefaults) -> int:
    if entry.outlet:
        return OUTLET
    st_position = raw.get("st_position")
    if isinstance(st_position, int) and not isinstance(st_position, bool) and 0 <= st_position <= OUTLET:
        mapped = POSITION_TO_DLE.get(st_position)
        if mapped is not None and mapped == entry.position:
            return st_position
        if mapped is None and entry.position is None:  # 5, 6, or an outlet without a name
            return st_position
    return DLE_TO_POSITION.get(entry.position or defaults.position, DLE_TO_POSITION["after"])


def _lost(entry: Entry, tags: TagConfig) -> list[str]:
    lost: list[str] = []
    if entry.original_requires:
        lost.append(f"requires {', '.join(entry.original_requires)}: World Info has no requirements between entries")
    if entry.original_excludes:
        lost.append(f"excludes {', '.join(entry.original_excludes)}: World Info cannot block one entry by another")
    if entry.original_cascade_links:
        lost.append(
            f"cascade_links {', '.join(entry.original_cascade_links)}: World Info cannot pull other entries in "
            "(only recursion on their keys)"
        )
    if entry.warmup:
        lost.append(f"warmup {entry.warmup}: World Info has no warmup (its delay counts messages, not key hits)")
    if entry.seed:
        lost.append(f"{tags.seed}: World Info has no story-context seed; exported as a normal entry")
    if entry.bootstrap:
        lost.append(f"{tags.bootstrap}: World Info cannot force an entry in only while the chat is new")
    for name in entry.custom_fields:
        if name not in _ROUND_TRIP_NAMES and name != "group_weight":
            lost.append(f"{name}: World Info has no contextual gating; the entry fires whatever the {name}")
    if not entry.keys and not entry.constant:
        lost.append("no keys: World Info never selects it (here only AI search or a cascade could)")
    return lost


def export_entry(
    entry: Entry,
    uid: int,
    defaults: ExportDefaults = ExportDefaults(),
    tags: TagConfig = TagConfig(),
    raw: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """One entry as SillyTavern writes it (its newWorldInfoEntryTemplate's fields, in its order),
    and what World Info cannot express of it."""
    source = round_trip_source(entry, raw)
    lost = _lost(entry, tags)
    kept = _kept_fields(source, lost)
    position = _position(entry, source, defaults)
    depth = entry.depth if entry.depth is not None else defaults.depth
    role = ROLE_NUMBERS.get(entry.role or defaults.role, 0)
    order = _whole(entry.priority)
    probability = entry.probability
    secondary = list(entry.refine_keys) if entry.refine_keys else kept.get("keysecondary", [])
    wi: dict[str, Any] = {
        "uid": uid,
        "key": list(entry.keys),
        "keysecondary": secondary,
        "comment": entry.title,
        "content": entry.content,
        "constant": entry.constant,
        "vectorized": kept.get("vectorized", False),
        # `selective` off makes SillyTavern ignore the secondary keys: only a note that kept
        # them unselective (`keysecondary`) turns it off.
        "selective": bool(entry.refine_keys) or "keysecondary" not in kept,
        "selectiveLogic": kept.get("selectiveLogic", 0),
        "addMemo": True,
        "order": ST_DEFAULT_ORDER if order is None else order,
        "position": position,
        "disable": False,
        "ignoreBudget": kept.get("ignoreBudget", False),
        "excludeRecursion": kept.get("excludeRecursion", False),
        "preventRecursion": entry.exclude_recursion,
        "matchPersonaDescription": kept.get("matchPersonaDescription", False),
        "matchCharacterDescription": kept.get("matchCharacterDescription", False),
        "matchCharacterPersonality": kept.get("matchCharacterPersonality", False),
        "matchCharacterDepthPrompt": kept.get("matchCharacterDepthPrompt", False),
        "matchScenario": kept.get("matchScenario", False),
        "matchCreatorNotes": kept.get("matchCreatorNotes", False),
        "delayUntilRecursion": kept.get("delayUntilRecursion", 0),
        "probability": 100 if probability is None else round(probability * 100),
        "useProbability": True,
        "depth": depth,
        "outletName": entry.outlet or "",
        "group": kept.get("group", ""),
        "groupOverride": kept.get("groupOverride", False),
        "groupWeight": kept.get("groupWeight", 100),
        "scanDepth": entry.scan_depth if entry.scan_depth is not None else defaults.scan_depth,
        "caseSensitive": kept.get("caseSensitive"),
        "matchWholeWords": kept.get("matchWholeWords"),
        "useGroupScoring": kept.get("useGroupScoring"),
        "automationId": kept.get("automationId", ""),
        "role": role,
        "sticky": kept.get("sticky"),
        "cooldown": entry.cooldown,
        "delay": kept.get("delay"),
        "triggers": kept.get("triggers", []),
        "displayIndex": uid,
    }
    if "characterFilter" in kept:
        wi["characterFilter"] = kept["characterFilter"]
    if position == OUTLET:
        lost.append(f"outlet {entry.outlet or ''!r}: only SillyTavern versions with World Info outlets inject it")
    return wi, lost


def export_book(
    entries: Sequence[Entry],
    defaults: ExportDefaults = ExportDefaults(),
    tags: TagConfig = TagConfig(),
    raw_fields: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], ExportReport]:
    """The entries as one World Info book, uids 0… in the given order, and the report: one line
    per entry (guide entries are left out of the book: they are written for the AI writers only)."""
    book: dict[str, Any] = {}
    lines: list[ExportLine] = []
    for entry in entries:
        if entry.guide:
            lines.append(
                ExportLine(entry.title, entry.path, (f"{tags.guide}: written for the AI writers only; not exported",))
            )
            continue
        uid = len(book)
        raw = raw_fields.get(entry.uid) if raw_fields is not None else None
        wi, lost = export_entry(entry, uid, defaults, tags, raw)
        book[str(uid)] = wi
        lines.append(ExportLine(entry.title, entry.path, tuple(lost)))
    return {"entries": book}, ExportReport(entries=len(book), lines=tuple(lines))
