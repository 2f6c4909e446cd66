"""Titles in the order JavaScript's `localeCompare` (ICU root collation) gives them, which DLE
uses to order entries of equal priority."""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

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


@functools.lru_cache(maxsize=65536)
def flat_title_order_key(title: str) -> tuple[Any, ...]:
    """`title_order_key` with its primary part (a tuple of (group, subgroup, letter) triples)
    packed into one string, three characters per triple: the two small non-negative ints as
    code points, then the single letter. Fixed-width fields compare as the triples do, and a
    shorter tuple's prefix sorts first in both, so the order is the same; sorting then mostly
    compares one string in C instead of tuples of tuples."""
    primary, marks, tertiary, original = title_order_key(title)
    packed = "".join(f"{chr(group)}{chr(sub)}{letter}" for group, sub, letter in primary)
    return packed, marks, tertiary, original
