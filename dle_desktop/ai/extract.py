"""Turning whatever a model answered into the lore titles it chose (dle-behaviour §4.3, §4.6).

`core.model_json` digs the array out of prose, code fences, provider envelopes, wrapper objects
and JavaScript-ish JSON, within its bounds; this module says which arrays are a selection or a
list of categories, and pairs the picks with entries. When nothing usable is there it raises
`ExtractError`, which the caller counts as format drift (it trips the breaker), because a model
that stops answering in the agreed shape needs attention.

Beyond DLE's extractor (the repairs are `core.model_json`'s): an answer with no whole array (cut
off by the token limit, or a lone object) keeps its complete `{title…}` objects.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.model_json import ArrayShape, find_array
from dle_desktop.errors import DleError

CONFIDENCES = ("high", "medium", "low")
_RANK = {c: i for i, c in enumerate(CONFIDENCES)}
FUZZY_THRESHOLD = 0.6

_SELECTION_KEYS = ("results", "entries", "titles", "selected")
_CATEGORY_KEYS = ("categories", "labels", "selected")
_REJECTED_TITLES = frozenset({"null", "undefined"})


class ExtractError(DleError):
    """The model's answer holds no usable selection (format drift)."""

    http_status = 502


@dataclass(frozen=True)
class Pick:
    title: str
    confidence: str = "medium"  # high | medium | low
    reason: str = ""


# ---------------------------------------------------------------- the selection


def _has_title(item: Any) -> bool:
    return isinstance(item, dict) and any(isinstance(item.get(k), str) for k in ("title", "name"))


def _is_selection_array(value: list) -> bool:
    return not value or any(isinstance(v, str) or _has_title(v) for v in value)


_SELECTION = ArrayShape(_is_selection_array, _SELECTION_KEYS, salvage=_has_title)


def _usable_title(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    title = value.strip()
    return title if title and title.lower() not in _REJECTED_TITLES else None


def _to_pick(item: Any) -> Pick | None:
    if isinstance(item, str):
        title = _usable_title(item)
        return Pick(title, "medium", "AI search") if title else None
    if not isinstance(item, dict):
        return None
    title = _usable_title(item.get("title")) or _usable_title(item.get("name"))
    if title is None:
        return None
    confidence = item.get("confidence")
    confidence = confidence.strip().lower() if isinstance(confidence, str) else ""
    reason = item.get("reason")
    return Pick(
        title, confidence if confidence in _RANK else "medium", reason.strip() if isinstance(reason, str) else ""
    )


def extract_selection(raw: str | object) -> list[Pick]:
    """The AI's picks, in its order; `[]` when it chose nothing on purpose."""
    found = find_array(raw, _SELECTION)
    if found is None:
        raise ExtractError("the AI's answer holds no list of lore entries")
    picks = [p for p in map(_to_pick, found) if p is not None]
    if found and not picks:
        raise ExtractError("the AI's answer lists entries, but none has a usable title")
    return picks


# ---------------------------------------------------------------- the pre-filter's categories


def _category_items(value: list) -> list:
    """One nested level is flattened: `[["Places", "Factions"], "Rules"]`."""
    out: list = []
    for v in value:
        out.extend(v if isinstance(v, list) else [v])
    return out


def _category_name(item: Any) -> str | None:
    if isinstance(item, dict):
        item = next((item[k] for k in ("name", "category", "title") if isinstance(item.get(k), str)), None)
    return _usable_title(item)


def _is_category_array(value: list) -> bool:
    items = _category_items(value)
    return not value or any(_category_name(v) for v in items)


_CATEGORIES = ArrayShape(_is_category_array, _CATEGORY_KEYS)


def extract_categories(raw: str | object) -> list[str]:
    """Category names the pre-filter call chose, de-duplicated case-insensitively."""
    found = find_array(raw, _CATEGORIES)
    if found is None:
        raise ExtractError("the AI's answer holds no list of categories")
    seen: set[str] = set()
    out: list[str] = []
    for item in _category_items(found):
        name = _category_name(item)
        if name and name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


# ---------------------------------------------------------------- picks → entries


@functools.lru_cache(maxsize=65536)
def _bigrams(text: str) -> frozenset[str]:
    """Cached: the same candidate titles come back generation after generation."""
    return frozenset(text[i : i + 2] for i in range(len(text) - 1))


@functools.lru_cache(maxsize=8)
def _gram_index(titles: tuple[str, ...]) -> tuple[list[frozenset[str]], dict[str, list[int]]]:
    """Bigram sets of the candidate titles and an inverted index bigram → candidates, so a fuzzy
    lookup scores only candidates sharing a bigram with the pick (500 candidates: ~0.1 ms, not 5)."""
    grams = [_bigrams(t) for t in titles]
    index: dict[str, list[int]] = {}
    for i, g in enumerate(grams):
        for gram in g:
            index.setdefault(gram, []).append(i)
    return grams, index


def dice_coefficient(a: str, b: str) -> float:
    """Bigram Dice similarity of two titles, case-insensitive."""
    a, b = a.lower(), b.lower()
    if a == b:
        return 1.0
    ga, gb = _bigrams(a), _bigrams(b)
    if not ga or not gb:
        return 0.0
    return 2 * len(ga & gb) / (len(ga) + len(gb))


def match_titles(
    picks: Sequence[Pick], candidates: Sequence[Entry]
) -> tuple[list[tuple[Pick, Entry, str]], list[Pick]]:
    """Pair each pick with a candidate: exact (case-insensitive) titles first, then the closest
    fuzzy title. Returns (pick, entry, "exact" | "fuzzy 0.73") in pick order, and the picks that
    name no candidate.

    Each candidate is taken once. Several candidates may share a title (one per vault): the
    first pick of that title takes the earliest of them in candidate order, a repeated pick
    the next one, so list the preferred vault first. A pick repeating a title whose candidates
    are all taken is a duplicate and is dropped (it is not "unmatched")."""
    by_title: dict[str, list[int]] = {}
    for i, e in enumerate(candidates):
        by_title.setdefault(e.title.strip().lower(), []).append(i)
    taken: set[int] = set()
    matched: dict[int, tuple[Pick, Entry, str]] = {}
    leftovers: list[int] = []
    for n, pick in enumerate(picks):
        same = by_title.get(pick.title.strip().lower())
        if same:
            free = next((i for i in same if i not in taken), None)
            if free is not None:
                taken.add(free)
                matched[n] = (pick, candidates[free], "exact")
            continue
        leftovers.append(n)
    unmatched: list[Pick] = []
    grams, index = _gram_index(tuple(e.title.lower() for e in candidates)) if leftovers else ([], {})
    for n in leftovers:
        pick = picks[n]
        wanted = _bigrams(pick.title.lower())
        shared: dict[int, int] = {}
        for gram in wanted:
            for i in index.get(gram, ()):
                shared[i] = shared.get(i, 0) + 1
        best, best_score = None, 0.0
        for i in sorted(shared):  # candidate order breaks ties, as a full scan would
            if i in taken:
                continue
            score = 2 * shared[i] / (len(wanted) + len(grams[i]))
            if score > best_score:
                best, best_score = i, score
        if best is not None and best_score >= FUZZY_THRESHOLD:
            taken.add(best)
            matched[n] = (pick, candidates[best], f"fuzzy {best_score:.2f}")
        else:
            unmatched.append(pick)
    return [matched[n] for n in sorted(matched)], unmatched


def order_and_threshold(matched: Sequence[tuple[Pick, Entry, str]], threshold: str) -> list[tuple[Pick, Entry, str]]:
    """High before medium before low (stable), keeping only tiers at or above `threshold`."""
    if threshold not in _RANK:
        raise ValueError(f"confidence threshold must be one of {', '.join(CONFIDENCES)}, not {threshold!r}")
    limit = _RANK[threshold]
    kept = [m for m in matched if _RANK.get(m[0].confidence, 1) <= limit]
    return sorted(kept, key=lambda m: _RANK.get(m[0].confidence, 1))
