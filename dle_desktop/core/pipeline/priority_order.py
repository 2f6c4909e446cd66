"""DLE's final order of the working set: priority, then titles as JavaScript's `localeCompare`
orders them."""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

from dle_desktop.core.pipeline.stage_context import Active

#: ICU's root order for ASCII punctuation and symbols (they all sort before digits and letters).
_ICU_ASCII_ORDER = {c: i for i, c in enumerate("_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$")}


def _collation_group(ch: str) -> tuple[int, int]:
    if ch in _ICU_ASCII_ORDER:
        return 1, _ICU_ASCII_ORDER[ch]
    cat = unicodedata.category(ch)
    if ch.isspace() or cat[0] == "Z":
        return 0, 0
    if cat == "Pd":
        return 1, _ICU_ASCII_ORDER["-"]
    if cat[0] == "P":
        return 1, 100
    if cat == "Sc":
        return 3, 0
    if cat[0] == "S":
        return 2, 0
    if cat[0] == "N":
        return 4, 0
    return 5, 0


#: Letters ICU sorts as two letters (ß already case-folds to "ss").
_EXPANSIONS = {"æ": "ae", "œ": "oe"}
#: Letters ICU sorts as a base letter with a secondary (accent-like) difference.
_STROKED = {"ø": ("o", "\u0338"), "đ": ("d", "\u0335"), "ł": ("l", "\u0337"), "ħ": ("h", "\u0335")}
#: ICU's secondary order of common combining marks; others follow by code point.
_MARK_ORDER = {
    chr(c): i
    for i, c in enumerate(
        (
            0x301,
            0x300,
            0x306,
            0x302,
            0x30C,
            0x30A,
            0x308,
            0x30B,
            0x303,
            0x307,
            0x338,
            0x327,
            0x328,
            0x304,
            0x337,
            0x335,
            0x31B,
            0x323,
        )
    )
}


@functools.lru_cache(maxsize=65536)
def title_order_key(title: str) -> tuple[Any, ...]:
    """An approximation of JavaScript's `localeCompare` (ICU root collation), which DLE uses to
    order titles: accents and case only break ties (é sorts with e, 'apple' before 'Apple'), and
    spaces, punctuation and symbols sort before digits, digits before letters."""
    primary: list[tuple[Any, ...]] = []
    marks: list[tuple[tuple[int, str], ...]] = []
    tertiary: list[int] = []
    for ch in unicodedata.normalize("NFKD", title):
        if unicodedata.combining(ch) and primary:
            marks[-1] += ((_MARK_ORDER.get(ch, 100), ch),)
            continue
        folded = ch.casefold()
        folded = _EXPANSIONS.get(folded, folded)
        stroke = _STROKED.get(folded)
        if stroke:
            folded = stroke[0]
        expanded = len(folded) > 1
        case = (1 if ch.isupper() else 0) + (2 if expanded else 0)
        for i, f in enumerate(folded):
            primary.append((*_collation_group(f), f))
            if stroke:
                marks.append(((_MARK_ORDER.get(stroke[1], 100), stroke[1]),))
            elif expanded and ch.casefold() in _EXPANSIONS:
                marks.append(((200 + i, ""),))  # æ, œ also differ from "ae", "oe" at the accent level
            else:
                marks.append(())
            tertiary.append(case)
    return tuple(primary), tuple(marks), tuple(tertiary), title


def sort_by_priority(items: list[Active]) -> list[Active]:
    """DLE's final sort: priority ascending, then `title.localeCompare`."""
    return sorted(items, key=lambda a: (a.entry.priority, title_order_key(a.entry.title)))
