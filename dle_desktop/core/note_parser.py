"""One note's text → an Entry, or a Skip that says why not. Pure: no I/O."""

from __future__ import annotations

import math
import reprlib
from typing import Any

from dle_desktop.core.body import clean_content, estimate_tokens, extract_title, extract_wikilinks
from dle_desktop.core.entry import Entry, ParseWarning, Skip, TagConfig
from dle_desktop.core.fields import DEFAULT_DEFINITIONS, FieldDefinitions, extract_custom_value
from dle_desktop.core.frontmatter import split_note

MAX_KEY_LENGTH = 200
MAX_DEPTH = 10000
DEFAULT_PRIORITY = 100

#: Canonical frontmatter names, keyed by their spelling with case, `_` and `-` removed.
CANONICAL_FIELDS = {
    n.lower().replace("_", ""): n
    for n in [
        "tags",
        "keys",
        "priority",
        "summary",
        "requires",
        "excludes",
        "refine_keys",
        "cascade_links",
        "position",
        "depth",
        "role",
        "scanDepth",
        "excludeRecursion",
        "constant",
        "cooldown",
        "warmup",
        "probability",
        "outlet",
        "enabled",
        "graph",
    ]
}
#: Accepted for round-trips from SillyTavern World Info, but not enforced.
NOT_IMPLEMENTED_FIELDS = ("sticky", "delay", "group", "group_weight")
#: SillyTavern World Info fields an imported note keeps under their ST names (core/worldinfo):
#: read into Entry.st_fields so an export can write them back, and nowhere else (not custom
#: fields: the AI manifest, the graph and gating would treat them as lore metadata).
ST_ROUND_TRIP_FIELDS = frozenset(
    [
        "st_position",
        "keysecondary",
        "selectiveLogic",
        "sticky",
        "delay",
        "group",
        "groupOverride",
        "groupWeight",
        "useGroupScoring",
        "caseSensitive",
        "matchWholeWords",
        "st_excludeRecursion",
        "delayUntilRecursion",
        "vectorized",
        "ignoreBudget",
        "matchPersonaDescription",
        "matchCharacterDescription",
        "matchCharacterPersonality",
        "matchCharacterDepthPrompt",
        "matchScenario",
        "matchCreatorNotes",
        "triggers",
        "automationId",
        "characterFilter",
    ]
)
POSITIONS = ("before", "after", "in_chat")
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 2, 80, 80, 4, 4


def _short(value: object) -> str:
    """A bounded repr for messages: YAML aliases can nest a value into gigabytes of text."""
    return _SHORT.repr(value)


ROLES = ("system", "user", "assistant")


def _hash(text: str) -> str:
    # Imported here: the hash needs numpy, which a warm `dle-desktop index` (no note read) never loads.
    from dle_desktop.core.hashing import simple_hash

    return simple_hash(text)


_canonical_names: dict[str, str | None] = {}


def _canonical_name(key: str) -> str | None:
    """The canonical field a frontmatter name stands for (None: not one), remembered per
    spelling: every note repeats the same few names."""
    try:
        return _canonical_names[key]
    except KeyError:
        canon = CANONICAL_FIELDS.get(key.lower().replace("_", "").replace("-", ""))
        if len(_canonical_names) < 4096:
            _canonical_names[key] = canon
        return canon


def _normalise_aliases(data: dict[str, Any], lenient: bool, warnings: list[ParseWarning]) -> dict[str, Any]:
    if not lenient:
        return data
    out: dict[str, Any] = {}
    aliased: list[tuple[str, str]] = []
    for key, value in data.items():
        canon = _canonical_name(key)
        if canon is None or canon == key:
            out[key] = value
        else:
            aliased.append((key, canon))
    for key, canon in aliased:
        if canon in out:  # the canonical spelling wins; the alias is dropped
            continue
        out[canon] = data[key]
        warnings.append(ParseWarning("W_ALIAS_USED", f"'{key}' read as '{canon}'"))
    return out


def _string_list(name: str, value: object, warnings: list[ParseWarning], split_commas: bool = False) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        items = value
    elif isinstance(value, str):
        if split_commas and "," in value:
            warnings.append(
                ParseWarning(
                    "W_COMMA_SPLIT", f"{name}: the text {_short(value)} was split at commas; write a YAML list instead"
                )
            )
            items = value.split(",")
        else:
            items = [value]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    else:
        warnings.append(
            ParseWarning("W_BAD_VALUE", f"{name}: expected a list of text, found {type(value).__name__}; ignored")
        )
        return []
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, (dict, list)):
            warnings.append(
                ParseWarning(
                    "W_BAD_VALUE", f"{name}: item {_short(item)} is not text; ignored (quote it if it contains ': ')"
                )
            )
            continue
        if isinstance(item, bool):  # JS String(true) is "true", not Python's "True"
            item = "true" if item else "false"
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        text = str(item).strip()
        if text:
            out.append(text)
    return out


def _number(name: str, value: object, warnings: list[ParseWarning]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        warnings.append(ParseWarning("W_BAD_VALUE", f"{name}: expected a number, found {_short(value)}; ignored"))
        return None
    if isinstance(value, (int, float)):
        num = float(value)
    elif isinstance(value, str):
        try:
            num = float(value.strip())
        except ValueError:
            warnings.append(ParseWarning("W_BAD_VALUE", f"{name}: expected a number, found {_short(value)}; ignored"))
            return None
        warnings.append(ParseWarning("W_COERCED_NUM", f"{name}: the text {_short(value)} was read as a number"))
    else:
        warnings.append(
            ParseWarning("W_BAD_VALUE", f"{name}: expected a number, found {type(value).__name__}; ignored")
        )
        return None
    if not math.isfinite(num):
        warnings.append(ParseWarning("W_BAD_VALUE", f"{name}: {_short(value)} is not a finite number; ignored"))
        return None
    return num


def _int_or_float(num: float) -> float | int:
    return int(num) if num.is_integer() else num


def _bool(name: str, value: object, warnings: list[ParseWarning]) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    warnings.append(ParseWarning("W_BAD_VALUE", f"{name}: expected true or false, found {_short(value)}; ignored"))
    return None


def _choice(name: str, value: object, choices: tuple[str, ...], warnings: list[ParseWarning]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int, float)):
        warnings.append(
            ParseWarning(
                "W_BAD_VALUE",
                f"{name}: expected one of {', '.join(choices)}, found {type(value).__name__}; the global setting applies",
            )
        )
        return None
    text = str(value).strip().lower()
    if text in choices:
        return text
    warnings.append(
        ParseWarning(
            "W_BAD_VALUE", f"{name}: {_short(value)} is not one of {', '.join(choices)}; the global setting applies"
        )
    )
    return None


def parse_note(
    vault: str,
    path: str,
    text: str,
    tags_config: TagConfig = TagConfig(),
    field_definitions: FieldDefinitions = DEFAULT_DEFINITIONS,
    lenient: bool = True,
    content_hash: str | None = None,
) -> Entry | Skip:
    split = split_note(text)
    if split.error is not None:
        return Skip(vault, path, "SKIP_BAD_FRONTMATTER", split.error.message, split.error.line)
    warnings: list[ParseWarning] = []
    data = _normalise_aliases(split.data or {}, lenient, warnings)

    tags = [t.lower() for t in _string_list("tags", data.get("tags"), warnings)]
    if tags_config.lorebook not in tags and tags_config.guide not in tags:
        if not data:
            return Skip(
                vault, path, "SKIP_NO_FRONTMATTER", "no frontmatter; add a `tags: [lorebook]` block at the very top"
            )
        return Skip(
            vault,
            path,
            "SKIP_NO_LOREBOOK_TAG",
            f"tags do not include '{tags_config.lorebook}' (tags: {tags or 'none'})",
        )
    enabled = _bool("enabled", data.get("enabled"), warnings)
    if enabled is False:
        return Skip(vault, path, "SKIP_ENABLED_FALSE", "enabled: false")
    if tags_config.never in tags:
        return Skip(vault, path, "SKIP_NEVER_INSERT_TAG", f"tagged '{tags_config.never}'")

    keys = _string_list("keys", data.get("keys"), warnings, split_commas=lenient)
    for i, key in enumerate(keys):
        if len(key) > MAX_KEY_LENGTH:
            warnings.append(
                ParseWarning("W_TRUNCATED", f"keys: a key of {len(key)} characters was cut to {MAX_KEY_LENGTH}")
            )
            keys[i] = key[:MAX_KEY_LENGTH]

    priority = _number("priority", data.get("priority"), warnings)
    priority = DEFAULT_PRIORITY if priority is None else _int_or_float(priority)

    depth = _number("depth", data.get("depth"), warnings)
    if depth is not None:
        clamped = min(max(depth, 0), MAX_DEPTH)
        if clamped != depth:
            warnings.append(ParseWarning("W_BAD_VALUE", f"depth: {_int_or_float(depth)} clamped to {int(clamped)}"))
        depth = int(clamped)

    scan_depth = _number("scanDepth", data.get("scanDepth"), warnings)
    if scan_depth is not None:
        if scan_depth < 0:
            warnings.append(
                ParseWarning(
                    "W_BAD_VALUE",
                    f"scanDepth: {_int_or_float(scan_depth)} is negative; read as 0 (this entry never matches by keyword)",
                )
            )
        scan_depth = max(0, int(scan_depth))

    cooldown = _number("cooldown", data.get("cooldown"), warnings)
    cooldown = int(cooldown) if cooldown is not None and cooldown > 0 else None
    warmup = _number("warmup", data.get("warmup"), warnings)
    warmup = int(warmup) if warmup is not None and warmup > 0 else None

    probability = _number("probability", data.get("probability"), warnings)
    if probability is not None:
        if probability > 1:
            warnings.append(
                ParseWarning(
                    "W_BAD_VALUE",
                    f"probability: {_int_or_float(probability)} is above 1 and is read as 1 (always); "
                    f"write {probability / 100:g} for {_int_or_float(probability)}%",
                )
            )
        probability = _int_or_float(min(max(probability, 0.0), 1.0))

    summary = data.get("summary")
    if summary is None:
        summary = ""
    elif isinstance(summary, (dict, list)):
        warnings.append(ParseWarning("W_BAD_VALUE", "summary: expected text; ignored"))
        summary = ""
    else:
        summary = str(_int_or_float(summary) if isinstance(summary, float) else summary).strip()

    outlet = data.get("outlet")
    outlet = str(outlet).strip() or None if outlet is not None and not isinstance(outlet, (dict, list)) else None

    custom: dict[str, Any] = {}
    defs = field_definitions.by_name()
    for name, definition in defs.items():
        if name in data:
            value = extract_custom_value(definition, data[name])
            if value is not None and value != []:
                custom[name] = tuple(value) if isinstance(value, list) else value
    for name in NOT_IMPLEMENTED_FIELDS:
        if name in data and name not in custom:
            custom[name] = data[name] if not isinstance(data[name], list) else tuple(data[name])
            warnings.append(ParseWarning("W_NOT_IMPLEMENTED", f"{name}: kept for round-trips but not enforced"))

    constant_flag = _bool("constant", data.get("constant"), warnings)
    body = split.body
    content = clean_content(body)
    requires = tuple(_string_list("requires", data.get("requires"), warnings))
    excludes = tuple(_string_list("excludes", data.get("excludes"), warnings))
    cascade = tuple(_string_list("cascade_links", data.get("cascade_links"), warnings))
    markers = (tags_config.lorebook, tags_config.guide)
    return Entry(
        vault=vault,
        path=path,
        title=extract_title(body, path),
        content=content,
        content_hash=content_hash or _hash(text),
        token_estimate=estimate_tokens(content),
        keys=tuple(dict.fromkeys(keys)),
        refine_keys=tuple(_string_list("refine_keys", data.get("refine_keys"), warnings)),
        priority=priority,
        constant=constant_flag is True or tags_config.constant in tags,
        seed=tags_config.seed in tags,
        bootstrap=tags_config.bootstrap in tags,
        guide=tags_config.guide in tags,
        original_requires=requires,
        original_excludes=excludes,
        original_cascade_links=cascade,
        requires=requires,
        excludes=excludes,
        cascade_links=cascade,
        scan_depth=scan_depth,
        exclude_recursion=_bool("excludeRecursion", data.get("excludeRecursion"), warnings) is True,
        warmup=warmup,
        cooldown=cooldown,
        probability=probability,
        position=_choice("position", data.get("position"), POSITIONS, warnings),
        depth=depth,
        role=_choice("role", data.get("role"), ROLES, warnings),
        outlet=outlet,
        graph=_bool("graph", data.get("graph"), warnings) is not False,
        tags=tuple(dict.fromkeys(t for t in tags if t not in markers)),
        summary=summary,
        links=extract_wikilinks(body),
        custom_fields=custom,
        st_fields=tuple((k, v) for k, v in data.items() if k in ST_ROUND_TRIP_FIELDS),
        warnings=tuple(warnings),
    )
