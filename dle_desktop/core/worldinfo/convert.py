"""World Info entry → DLE note, by DLE's import mapping (dle-behaviour.md §5.8), field by field.

Where we differ from DLE, on purpose:
- no `summary: "Imported from SillyTavern World Info"` placeholder: an empty summary is what
  lets the app offer Summarize for the entry afterwards;
- `{{...}}` is kept in the content: it is SillyTavern's macro syntax (`{{char}}`, `{{user}}`),
  which DLE's Obsidian-syntax stripping would delete from nearly every World Info entry;
- the ST position is a field, `st_position`, rather than DLE's YAML comment, so an export can
  read it back; `depth` and `role` are written only for in-chat entries (SillyTavern stores a
  depth on every entry; elsewhere it means nothing and DLE's health check would flag it);
- SillyTavern's `preventRecursion` becomes DLE's `excludeRecursion` (the same meaning), and
  SillyTavern's own `excludeRecursion` is kept as `st_excludeRecursion`;
- ST fields DLE does not enforce are kept under their ST names (see KEPT_FIELDS), not dropped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from dle_desktop.core.body import estimate_tokens
from dle_desktop.core.entry import TagConfig
from dle_desktop.core.worldinfo.model import NoteSpec, WiBook, WiEntry
from dle_desktop.core.worldinfo.reader import st_fields
from dle_desktop.core.writers.scribe import strip_obsidian_syntax

DEFAULT_PRIORITY = 50
MAX_PRIORITY = 999
MAX_TITLE_FROM_KEYS = 50
MAX_KEY_LENGTH = 200  # the note parser cuts longer keys; cutting here keeps the round trip stable
HUGE_CONTENT_TOKENS = 20_000

#: SillyTavern's World Info positions → DLE's. DLE's importer maps 0 (before the character) to after
#: and 1 (after it) to before; we map them the way round their names say, so a note keeps its place
#: through an export and an import (the export writes before → 0, after → 1). 2 and 3 (the Author's
#: Note, which DLE has no place for) follow DLE's table.
POSITION_TO_DLE: dict[int, str] = {0: "before", 1: "after", 2: "before", 3: "after", 4: "in_chat"}
POSITION_NAMES = {
    0: "before character definitions",
    1: "after character definitions",
    2: "top of Author's Note",
    3: "bottom of Author's Note",
    4: "at depth in the chat",
    5: "top of example messages",
    6: "bottom of example messages",
    7: "outlet",
}
AT_DEPTH = 4
ST_DEFAULT_DEPTH = 4
OUTLET = 7
ROLES = {0: "system", 1: "user", 2: "assistant"}
LOGIC_NAMES = {0: "AND_ANY", 1: "NOT_ALL", 2: "NOT_ANY", 3: "AND_ALL"}

_MATCH_SOURCES = {
    "matchPersonaDescription": "the persona description",
    "matchCharacterDescription": "the character description",
    "matchCharacterPersonality": "the character personality",
    "matchCharacterDepthPrompt": "the character's depth prompt",
    "matchScenario": "the scenario",
    "matchCreatorNotes": "the creator's notes",
}
_GROUP_ONLY = "it only matters for inclusion groups, which DLE does not use"

#: ST fields a note keeps for the round trip although DLE does not enforce them: the ST name,
#: the frontmatter name, and SillyTavern's default (a default value is not written).
KEPT_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("selectiveLogic", "selectiveLogic", 0),
    ("sticky", "sticky", 0),
    ("delay", "delay", 0),
    ("group", "group", ""),
    ("groupOverride", "groupOverride", False),
    ("groupWeight", "groupWeight", 100),
    ("useGroupScoring", "useGroupScoring", None),
    ("caseSensitive", "caseSensitive", None),
    ("matchWholeWords", "matchWholeWords", None),
    ("excludeRecursion", "st_excludeRecursion", False),
    ("delayUntilRecursion", "delayUntilRecursion", 0),
    ("vectorized", "vectorized", False),
    ("ignoreBudget", "ignoreBudget", False),
    *((name, name, False) for name in _MATCH_SOURCES),
    ("triggers", "triggers", None),
    ("automationId", "automationId", ""),
    ("characterFilter", "characterFilter", None),
)

_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.S)
_EXCLUDE_BLOCK = re.compile(r"%%deeplore-exclude%%[\s\S]*?%%/deeplore-exclude%%")
_LINK_IN_TITLE = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_WORDISH = re.compile(r"\w")
#: What DLE's injection (core/body.py clean_content) removes or rewrites: kept in the note, but
#: the entry will not inject it as SillyTavern did.
_INJECTION_CHANGES = (
    (re.compile(r"</?div\b[^>]*>", re.I), "<div> tags (DLE injects only the text inside them)"),
    (re.compile(r"!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)"), "images or embeds (DLE leaves them out of the prompt)"),
    (re.compile(r"\[\[[^\]]+\]\]"), "[[...]] (read as Obsidian links: DLE injects only their text)"),
)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        num = float(value)
    elif isinstance(value, str):
        try:
            num = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return num if math.isfinite(num) else None


def _int(value: object) -> int | None:
    num = _number(value)
    return None if num is None else int(num)


def json_like(value: Any) -> Any:
    """A JSON-like copy (lists, not tuples) so the fields serialise and compare plainly."""
    if isinstance(value, (list, tuple)):
        return [json_like(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_like(v) for k, v in value.items()}
    return value


def is_default(value: object, default: object) -> bool:
    """Whether a kept field holds SillyTavern's default, i.e. nothing worth keeping."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, str)) and not value:
        return True
    if isinstance(value, dict):  # characterFilter with no names and no tags
        return not any(v for k, v in value.items() if k != "isExclude")
    return value == default


def clean_title(text: str) -> str:
    """DLE's title rule on one line: newlines stripped, control characters removed, an Obsidian
    link shown as its text (the note parser reads the H1 that way, so the round trip holds)."""
    text = re.sub(r"[\r\n]+", " ", text)
    text = _CONTROL.sub("", text)
    text = _LINK_IN_TITLE.sub(lambda m: m.group(2) or m.group(1), text)
    return re.sub(r"\s{2,}", " ", text).strip()


def entry_title(entry: WiEntry) -> tuple[str, str | None]:
    """The title and, when it does not come from the comment, a warning saying where it came from."""
    title = clean_title(entry.comment)
    if title:
        return title, None
    from_keys = clean_title(", ".join(entry.keys))[:MAX_TITLE_FROM_KEYS].strip(" ,")
    if from_keys:
        return from_keys, f"no comment: titled from its keys ({from_keys!r})"
    return f"Entry_{entry.uid}", f"no comment and no keys: titled Entry_{entry.uid}"


def clean_body_text(content: str) -> str:
    """DLE's body rules on imported content: exclude blocks and Obsidian syntax go, `---` lines
    become `- - -` (they would open frontmatter), blank runs shrink to one blank line."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    return strip_obsidian_syntax(_EXCLUDE_BLOCK.sub("", text), keep_macros=True)


def note_body(title: str, content: str) -> str:
    return f"# {title}\n\n{content}\n" if content else f"# {title}\n"


def _keys(keys: tuple[str, ...], label: str, warnings: list[str]) -> list[str]:
    out: dict[str, None] = {}
    for key in keys:
        if len(key) > MAX_KEY_LENGTH:
            warnings.append(f"{label}: a key of {len(key)} characters was cut to {MAX_KEY_LENGTH}")
            key = key[:MAX_KEY_LENGTH].strip()
        if _REGEX_KEY.match(key):
            warnings.append(
                f"{label}: {key!r} is a regular expression in SillyTavern; DLE matches it as plain text, "
                "so it will almost never fire (rewrite it as plain keys)"
            )
        out.setdefault(key)
    return list(out)


def _position(st: dict[str, Any], fields: dict[str, Any], warnings: list[str]) -> None:
    raw = st.get("position")
    position = _int(raw)
    if position is None:
        if raw is not None:
            warnings.append(f"position {raw!r} is not a number; the global position applies")
        return
    if position == OUTLET:
        outlet = st.get("outletName")
        name = outlet.strip() if isinstance(outlet, str) else ""
        fields["st_position"] = position
        if name:
            fields["outlet"] = name
        else:
            warnings.append("outlet position without an outlet name; the global position applies")
        return
    mapped = POSITION_TO_DLE.get(position)
    if mapped is None:
        where = POSITION_NAMES.get(position)
        warnings.append(
            f"position {position} ({where}): DLE has no such place; the global position applies"
            if where
            else f"position {position} is unknown; the global position applies"
        )
        if where:
            fields["st_position"] = position
        return
    fields["position"] = mapped
    fields["st_position"] = position
    if position in (2, 3):
        warnings.append(
            f"position {position} ({POSITION_NAMES[position]}): DLE has no Author's Note positions; "
            f"it is injected {mapped} the prompt instead"
        )
    if position == AT_DEPTH:
        # Always written for in-chat entries, with SillyTavern's own fallbacks (depth 4, system):
        # without them DLE's global depth and role would apply instead.
        depth = _int(st.get("depth"))
        fields["depth"] = depth if depth is not None and depth >= 0 else ST_DEFAULT_DEPTH
        fields["role"] = ROLES.get(_int(st.get("role")) or 0, "system")


def _show(value: Any) -> str:
    """A value as the user wrote it in SillyTavern (true, not Python's True)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(json_like(value), ensure_ascii=False)
    return str(value)


def _kept_warning(name: str, value: Any) -> str:
    if name == "selectiveLogic":
        logic = LOGIC_NAMES.get(_int(value) or 0, str(value))
        if logic in ("NOT_ANY", "NOT_ALL"):
            return (
                f"selectiveLogic {logic} is kept but DLE matches refine keys as AND_ANY: here the entry fires only "
                "WITH one of its refine keys, the opposite of SillyTavern; review its refine_keys"
            )
        return f"selectiveLogic {logic} is kept but DLE matches refine keys as AND_ANY (any one of them is enough)"
    if name == "sticky":
        return f"sticky {value} is kept for SillyTavern; DLE does not keep the entry for {value} more messages"
    if name == "delay":
        return f"delay {value} is kept for SillyTavern; DLE does not hold the entry back until message {value}"
    if name == "group":
        return (
            f"inclusion group {value!r} is kept for SillyTavern; DLE does not pick one entry per group, "
            "so every matching entry of the group can be injected"
        )
    if name in ("groupOverride", "groupWeight", "useGroupScoring"):
        return f"{name} {_show(value)} is kept for SillyTavern; {_GROUP_ONLY}"
    if name in ("caseSensitive", "matchWholeWords"):
        setting = "case sensitivity" if name == "caseSensitive" else "whole-word matching"
        return f"{name} {_show(value)} is kept for SillyTavern; DLE uses its global {setting} setting for every entry"
    if name == "st_excludeRecursion":
        return (
            "excludeRecursion is kept as st_excludeRecursion; DLE cannot stop recursion from activating an entry "
            "(DLE's own excludeRecursion means SillyTavern's preventRecursion)"
        )
    if name == "delayUntilRecursion":
        return "delayUntilRecursion is kept for SillyTavern; DLE does not delay an entry until recursion"
    if name == "vectorized":
        return "vectorized is kept for SillyTavern's Vector Storage; DLE selects by keys (and AI search)"
    if name == "ignoreBudget":
        return "ignoreBudget is kept for SillyTavern; DLE counts this entry against the budget (an outlet does not)"
    if name in _MATCH_SOURCES:
        return f"{name} is kept for SillyTavern; DLE matches keys in the chat only, not in {_MATCH_SOURCES[name]}"
    if name == "triggers":
        return f"triggers {_show(value)} are kept for SillyTavern; DLE does not limit entries to generation types"
    if name == "automationId":
        return "automationId is kept for SillyTavern; DLE runs no automations"
    if name == "characterFilter":
        return "characterFilter is kept for SillyTavern; DLE does not limit entries to characters or tags"
    return f"{name} is kept for SillyTavern; DLE does not use it"


def convert_entry(entry: WiEntry, tags: TagConfig = TagConfig()) -> NoteSpec:
    """One World Info entry as a note: ordered frontmatter fields and the body."""
    st = st_fields(entry.raw)
    warnings: list[str] = []
    title, title_warning = entry_title(entry)
    if title_warning:
        warnings.append(title_warning)
    if not _WORDISH.search(title):
        warnings.append(f"the title {title!r} has no letters or digits; give the note a real name")

    constant = st.get("constant") is True
    note_tags = [tags.lorebook] + ([tags.constant] if constant else [])
    keys = _keys(entry.keys, "keys", warnings)
    selective = st.get("selective") is not False
    secondary = _keys(entry.secondary_keys, "secondary keys", warnings)
    fields: dict[str, Any] = {"type": "lore", "status": "active", "tags": note_tags, "keys": keys}
    if secondary and selective:
        fields["refine_keys"] = secondary
    order = _number(st.get("order"))
    fields["priority"] = DEFAULT_PRIORITY if order is None else min(max(round(order), 0), MAX_PRIORITY)
    _position(st, fields, warnings)

    use_probability = st.get("useProbability") is not False
    probability = _number(st.get("probability"))
    if use_probability and probability is not None and probability < 100:
        fields["probability"] = round(max(probability, 0.0) / 100, 2)
        if fields["probability"] == 0:
            warnings.append("probability 0: this entry never fires")
    scan_depth = _int(st.get("scanDepth"))
    if scan_depth is not None:
        if scan_depth >= 0:
            fields["scanDepth"] = scan_depth
        else:
            warnings.append(f"scanDepth {scan_depth} is negative; the global scan depth applies")
    cooldown = _int(st.get("cooldown"))
    if cooldown is not None and cooldown > 0:
        fields["cooldown"] = cooldown
    if st.get("preventRecursion") is True:
        fields["excludeRecursion"] = True
    if st.get("disable") is True:
        fields["enabled"] = False
        warnings.append("disabled in SillyTavern: imported with enabled: false, so DLE skips it until you enable it")

    kept: list[str] = []
    if secondary and not selective:
        fields["keysecondary"] = secondary
        kept.append("keysecondary")
        warnings.append(
            "secondary keys are kept as keysecondary: SillyTavern ignores them for this entry (selective is off), "
            "and so does DLE"
        )
    for st_name, name, default in KEPT_FIELDS:
        value = st.get(st_name)
        if is_default(value, default):
            continue
        fields[name] = json_like(value)
        kept.append(name)
        warnings.append(_kept_warning(name, value))

    content = clean_body_text(entry.content)
    if not content:
        warnings.append("empty content: the entry has nothing to inject")
    else:
        tokens = estimate_tokens(content)
        if tokens > HUGE_CONTENT_TOKENS:
            warnings.append(
                f"huge content: about {tokens:,} tokens; it will crowd every other entry out of a normal budget"
            )
        for pattern, what in _INJECTION_CHANGES:
            if pattern.search(content):
                warnings.append(f"the content holds {what}")
    if not keys and not constant:
        warnings.append("no keys: it never fires by keyword (only AI search or a cascade can select it)")
    return NoteSpec(
        uid=entry.uid,
        title=title,
        fields=fields,
        body=note_body(title, content),
        kept=tuple(kept),
        warnings=tuple(warnings),
    )


def convert_book(book: WiBook, tags: TagConfig = TagConfig()) -> list[NoteSpec]:
    """Every entry of a book as a note. Titles that repeat within the book (case-insensitively,
    as DLE compares them) become "Title (2)", "Title (3)"… in book order, with a warning."""
    specs = [convert_entry(e, tags) for e in book.entries]
    taken = {s.title.casefold() for s in specs}
    seen: set[str] = set()
    out: list[NoteSpec] = []
    for spec in specs:
        folded = spec.title.casefold()
        if folded not in seen:
            seen.add(folded)
            out.append(spec)
            continue
        n = 2
        while f"{spec.title} ({n})".casefold() in taken:
            n += 1
        title = f"{spec.title} ({n})"
        taken.add(title.casefold())
        seen.add(title.casefold())
        content = spec.body.split("\n", 1)[1].strip("\n") if "\n" in spec.body else ""
        out.append(
            NoteSpec(
                uid=spec.uid,
                title=title,
                fields=spec.fields,
                body=note_body(title, content),
                kept=spec.kept,
                warnings=(*spec.warnings, f"another entry of this book is titled {spec.title!r}: renamed {title!r}"),
            )
        )
    return out


def book_notes(book: WiBook) -> tuple[str, ...]:
    """What the preview says once per book rather than on every entry."""
    notes: list[str] = []
    raws = [st_fields(e.raw) for e in book.entries]
    if any(_number(r.get("order")) is not None for r in raws):
        notes.append(
            "SillyTavern's order becomes DLE's priority with the same number (0–999), but the direction flips: "
            "in SillyTavern a higher order wins, in DLE a lower priority wins. Check the priorities of entries "
            "that compete for the budget."
        )
    if any(_int(r.get("position")) in (0, 1, 2, 3) for r in raws):
        notes.append(
            "Positions: 0 (before the character) → before, 1 (after it) → after, 2 → before, 3 → after, "
            "4 → in_chat (DLE's own importer swaps 0 and 1). "
            "The original number is kept as st_position, and an export writes it back."
        )
    return tuple(notes)
