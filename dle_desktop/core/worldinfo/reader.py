"""Reading World Info books: WI exports, bare arrays, character cards (JSON and PNG)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from dle_desktop.core.worldinfo.model import MAX_BOOK_BYTES, WiBook, WiEntry, WorldInfoError
from dle_desktop.core.worldinfo.png import card_json_from_png, is_png

CARD_SPECS = {"chara_card_v2": "card-v2", "chara_card_v3": "card-v3"}
#: Fields only a character card (V1) carries: a dict with these and no book is a card without one.
_CARD_FIELDS = ("first_mes", "char_persona", "char_greeting", "personality", "scenario", "mes_example")
_NO_BOOK = "this card has no embedded lorebook (no character_book); there is nothing to import"

#: A character-book entry's `extensions` names → SillyTavern's World Info names, as
#: SillyTavern's own convertCharacterBook (world-info.js) reads them.
_EXTENSION_NAMES = {
    "exclude_recursion": "excludeRecursion",
    "prevent_recursion": "preventRecursion",
    "delay_until_recursion": "delayUntilRecursion",
    "display_index": "displayIndex",
    "probability": "probability",
    "useProbability": "useProbability",
    "depth": "depth",
    "selectiveLogic": "selectiveLogic",
    "outlet_name": "outletName",
    "group": "group",
    "group_override": "groupOverride",
    "group_weight": "groupWeight",
    "scan_depth": "scanDepth",
    "case_sensitive": "caseSensitive",
    "match_whole_words": "matchWholeWords",
    "use_group_scoring": "useGroupScoring",
    "automation_id": "automationId",
    "role": "role",
    "vectorized": "vectorized",
    "sticky": "sticky",
    "cooldown": "cooldown",
    "delay": "delay",
    "match_persona_description": "matchPersonaDescription",
    "match_character_description": "matchCharacterDescription",
    "match_character_personality": "matchCharacterPersonality",
    "match_character_depth_prompt": "matchCharacterDepthPrompt",
    "match_scenario": "matchScenario",
    "match_creator_notes": "matchCreatorNotes",
    "triggers": "triggers",
    "ignore_budget": "ignoreBudget",
}


def _decode_json(data: bytes, what: str) -> Any:
    if len(data) > MAX_BOOK_BYTES:
        raise WorldInfoError(
            f"{what} is {len(data) / (1024 * 1024):.0f} MB; the limit is {MAX_BOOK_BYTES // (1024 * 1024)} MB "
            "(no real lorebook is that big)"
        )
    head = data[:1024]
    if b"\0" in head:
        raise WorldInfoError(f"{what} is neither JSON nor a PNG character card (it looks like binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorldInfoError(f"{what} is not UTF-8 text (byte {exc.start} cannot be read), so it is not JSON") from exc
    if not text.strip():
        raise WorldInfoError(f"{what} is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorldInfoError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError as exc:
        raise WorldInfoError(f"{what} nests too deeply to be a lorebook") from exc


def read_book_bytes(data: bytes, *, name: str) -> WiBook:
    """A book from a file's bytes: PNG character cards are sniffed, anything else is read as JSON."""
    if len(data) > MAX_BOOK_BYTES:
        raise WorldInfoError(
            f"the file is {len(data) / (1024 * 1024):.0f} MB; the limit is {MAX_BOOK_BYTES // (1024 * 1024)} MB "
            "(no real lorebook is that big)"
        )
    if is_png(data):
        value = _decode_json(card_json_from_png(data), "the PNG's character card")
        if not isinstance(value, dict) or (_card_kind(value) is None and not _looks_like_card(value)):
            raise WorldInfoError("the PNG's character card is not a character card (its JSON is no card object)")
        return read_book_value(value, name=name)
    return read_book_value(_decode_json(data, "the file"), name=name)


def _card_kind(value: Mapping[str, Any]) -> str | None:
    spec = value.get("spec")
    return CARD_SPECS.get(spec) if isinstance(spec, str) else None


def _looks_like_card(value: Mapping[str, Any]) -> bool:
    data = value.get("data")
    holder = data if isinstance(data, dict) else value
    return "character_book" in holder or any(k in holder for k in _CARD_FIELDS)


def read_book_value(value: Any, *, name: str) -> WiBook:
    """A book from already-parsed JSON: `{entries: {...}}` or `{entries: [...]}`, an array of
    entries, or a character card (V2/V3, or a V1-like card with a `character_book`)."""
    if isinstance(value, list):
        return _book(name, "array", list(enumerate(value)), character_book=None)
    if not isinstance(value, dict):
        raise WorldInfoError(
            f"this JSON is no lorebook: it is a {_json_type(value)}, not a World Info book "
            '({"entries": {...}}), an array of entries or a character card'
        )
    kind = _card_kind(value)
    if kind is not None or (_looks_like_card(value) and "entries" not in value):
        data = value.get("data")
        holder = data if isinstance(data, dict) else value
        book = holder.get("character_book")
        if book is None:
            raise WorldInfoError(_NO_BOOK)
        if not isinstance(book, dict) or not isinstance(book.get("entries"), list):
            raise WorldInfoError("this card's character_book is damaged: it has no list of entries")
        book_name = _str_or_empty(book.get("name"))
        char_name = _str_or_empty(holder.get("name"))
        return _book(
            name or book_name or char_name,
            kind or "card-v2",
            list(enumerate(book["entries"])),
            character_book=True,
        )
    for marker, label in (("lorebookVersion", "a NovelAI lorebook"), ("kind", "an Agnai memory book")):
        if marker in value and (marker != "kind" or value.get("kind") == "memory"):
            raise WorldInfoError(
                f"this is {label}; import it into SillyTavern first (World Info → Import), then import that book here"
            )
    if value.get("type") == "risu":
        raise WorldInfoError(
            "this is a RisuAI lorebook; import it into SillyTavern first (World Info → Import), then import that book here"
        )
    if "entries" in value:
        entries = value["entries"]
        if isinstance(entries, dict):
            return _book(name, "world-info", list(entries.items()), character_book=None)
        if isinstance(entries, list):
            return _book(name, "world-info", list(enumerate(entries)), character_book=None)
        raise WorldInfoError(
            f"this book's `entries` is a {_json_type(entries)}; a World Info book keeps its entries in an object or a list"
        )
    raise WorldInfoError(
        "this JSON is no lorebook: it has no `entries` and is not a character card "
        f"(its top-level fields: {', '.join(sorted(map(str, value))[:8]) or 'none'})"
    )


def _str_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_character_book_entry(raw: Mapping[str, Any]) -> bool:
    """A character-book entry (`keys`, `insertion_order`, `extensions`…) rather than a WI one (`key`, `order`…)."""
    if "key" in raw or "uid" in raw:
        return False
    return any(k in raw for k in ("keys", "secondary_keys", "insertion_order", "extensions", "enabled"))


def st_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Any entry in SillyTavern's World Info field names: a character-book entry is translated the
    way SillyTavern's convertCharacterBook does; a World Info entry is returned as it is."""
    if not is_character_book_entry(raw):
        return dict(raw)
    ext = raw.get("extensions")
    ext = ext if isinstance(ext, Mapping) else {}
    out: dict[str, Any] = {
        "key": raw.get("keys", []),
        "keysecondary": raw.get("secondary_keys") or [],
        "comment": raw.get("comment") or raw.get("name") or "",
        "content": raw.get("content", ""),
        "constant": raw.get("constant") or False,
        "selective": raw.get("selective") or False,
        "order": raw.get("insertion_order"),
        # A card missing `enabled` (required by the spec) is taken as enabled: a sloppy exporter
        # should not turn a whole book off.
        "disable": raw.get("enabled") is False,
    }
    position = ext.get("position")
    if position is None:
        position = 0 if raw.get("position") == "before_char" else 1
    out["position"] = position
    for ext_name, st_name in _EXTENSION_NAMES.items():
        if ext_name in ext:
            out[st_name] = ext[ext_name]
    if "caseSensitive" not in out and isinstance(raw.get("case_sensitive"), bool):
        out["caseSensitive"] = raw["case_sensitive"]
    return out


def _key_list(value: object, field: str) -> tuple[str, ...]:
    """A key list as text; raises ValueError (with a message) for a type no key can be read from."""
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[object] = list(value.split(","))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise ValueError(f"`{field}` is {_json_type(value)}, expected a list of text")
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError(f"`{field}` holds {_json_type(item)} {json.dumps(item)[:40]}, expected text")
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"`{field}` holds {item}, expected text")
            item = int(item) if item.is_integer() else item
        text = str(item).strip()
        if text:
            out.append(text)
    return tuple(out)


def _text(value: object, field: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value) if isinstance(value, float) and value.is_integer() else value)
    raise ValueError(f"`{field}` is {_json_type(value)}, expected text")


def _uid(raw: Mapping[str, Any], slot: object) -> str:
    for candidate in (raw.get("uid"), raw.get("id")):
        if isinstance(candidate, bool):
            continue
        if isinstance(candidate, int) or (isinstance(candidate, str) and candidate.strip()):
            return str(candidate).strip()
        if isinstance(candidate, float) and candidate.is_integer():
            return str(int(candidate))
    return str(slot)


def _book(name: str, kind: str, items: list[tuple[Any, Any]], *, character_book: bool | None) -> WiBook:
    entries: list[WiEntry] = []
    problems: list[str] = []
    for slot, raw in items:
        where = f"entry {slot}"
        if not isinstance(raw, dict):
            problems.append(f"{where}: is {_json_type(raw)}, not an entry object; skipped")
            continue
        fields = st_fields(raw)
        uid = _uid(raw, slot)
        comment = _str_or_empty(fields.get("comment"))
        label = f"entry {uid}" + (f" ({comment.strip()[:40]!r})" if comment.strip() else "")
        try:
            entries.append(
                WiEntry(
                    uid=uid,
                    comment=_text(fields.get("comment"), "comment"),
                    keys=_key_list(fields.get("key"), "keys" if character_book else "key"),
                    secondary_keys=_key_list(
                        fields.get("keysecondary"), "secondary_keys" if character_book else "keysecondary"
                    ),
                    content=_text(fields.get("content"), "content"),
                    raw=raw,
                )
            )
        except ValueError as exc:
            problems.append(f"{label}: {exc}; skipped")
    return WiBook(name=name, kind=kind, entries=tuple(entries), problems=tuple(problems))
