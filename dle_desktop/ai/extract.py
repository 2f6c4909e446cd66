"""Turning whatever a model answered into the lore titles it chose (dle-behaviour §4.3, §4.6).

Models wrap JSON in prose, code fences, provider envelopes and wrapper objects, and sometimes
write JavaScript-ish JSON; the extractor digs the answer out of all of them. When nothing usable
is there it raises `ExtractError`, which the caller counts as format drift (it trips the
breaker), because a model that stops answering in the agreed shape needs attention.

Beyond DLE's extractor: closed `<think>` blocks are ignored, trailing commas, single quotes and
Python literals are repaired, OpenAI `choices` and Anthropic content blocks are unwrapped, and
an answer with no whole array (cut off by the token limit, or a lone object) keeps its complete
`{title…}` objects.

Cost on hostile input stays linear-ish: the bracket scan is one pass per quoting rule, only the
`MAX_SCAN_CANDIDATES` largest bracketed spans are parsed, the permissive JSON repair is skipped
above `MAX_REPAIR_CHARS`, and recursion through envelopes stops at `MAX_DEPTH`.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.errors import DleError

CONFIDENCES = ("high", "medium", "low")
_RANK = {c: i for i, c in enumerate(CONFIDENCES)}
FUZZY_THRESHOLD = 0.6
#: Largest bracketed spans parsed per text; a real answer is one of the few biggest spans.
MAX_SCAN_CANDIDATES = 48
#: Complete objects parsed when salvaging a truncated answer.
MAX_SALVAGE = 200
#: Spans longer than this get only the strict JSON parser (the repair pass runs in Python).
MAX_REPAIR_CHARS = 200_000
#: How deep envelopes, wrapper objects and JSON-in-strings are followed.
MAX_DEPTH = 6

_SELECTION_KEYS = ("results", "entries", "titles", "selected")
_CATEGORY_KEYS = ("categories", "labels", "selected")
_REJECTED_TITLES = frozenset({"null", "undefined"})
#: Provider envelope lists: an empty one (a blocked Gemini answer) is no answer, not "nothing".
_ENVELOPE_KEYS = frozenset({"candidates", "choices", "content", "parts"})


class ExtractError(DleError):
    """The model's answer holds no usable selection (format drift)."""

    http_status = 502


@dataclass(frozen=True)
class Pick:
    title: str
    confidence: str = "medium"  # high | medium | low
    reason: str = ""


# ---------------------------------------------------------------- shape-independent digging


@dataclass(frozen=True)
class _Shape:
    wrapper_keys: tuple[str, ...]
    is_valid: Callable[[list], bool]
    salvage_objects: bool = False


def _find_array(raw: Any, shape: _Shape) -> list | None:
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    return _in_value(raw, shape, 0)


def _in_value(value: Any, shape: _Shape, depth: int) -> list | None:
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        return _in_text(value, shape, depth + 1)
    if isinstance(value, list):
        return value if shape.is_valid(value) else None
    if not isinstance(value, dict):
        return None
    text = _envelope_text(value)
    if text is not None:
        found = _in_text(text, shape, depth + 1)
        if found is not None:
            return found
    lowered = {k.lower(): k for k in value if isinstance(k, str)}
    wrappers = [lowered[k] for k in shape.wrapper_keys if k in lowered]
    for key in wrappers:
        found = _in_value(value[key], shape, depth + 1)
        if found is not None:
            return found
    for key, item in value.items():
        if isinstance(item, list) and key not in _ENVELOPE_KEYS and shape.is_valid(item):
            return item
    for key, item in value.items():  # a wrapper inside a wrapper ({"response": {"selected": [...]}})
        if isinstance(item, dict) and key not in wrappers:
            found = _in_value(item, shape, depth + 1)
            if found is not None:
                return found
    return None


def _joined_text(parts: Any) -> str | None:
    """Text blocks of a provider's content list; thinking blocks are not the answer."""
    if not isinstance(parts, list):
        return None
    texts = [
        p["text"]
        for p in parts
        if isinstance(p, dict)
        and isinstance(p.get("text"), str)
        and not p.get("thought")
        and p.get("type") not in ("thinking", "reasoning")
    ]
    return "".join(texts) if texts else None


def _envelope_text(obj: dict) -> str | None:
    """The answer text inside a provider response object (Gemini, Anthropic, OpenAI and co)."""
    candidates = obj.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        content = candidates[0].get("content")
        if isinstance(content, dict):
            text = _joined_text(content.get("parts"))
            if text is not None:
                return text
    for key in ("text", "output_text"):
        if isinstance(obj.get(key), str):
            return obj[key]
    content = obj.get("content")
    if isinstance(content, str):
        return content
    text = _joined_text(content)
    if text is not None:
        return text
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            return message["content"]
        if isinstance(choices[0].get("text"), str):
            return choices[0]["text"]
    return None


_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.#-]*[ \t]*\r?$\n?", re.MULTILINE)
_FENCED_BLOCK = re.compile(r"```[\w+.#-]*\s*(.*?)```", re.DOTALL)
_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_FAILED = object()


def _in_text(text: str, shape: _Shape, depth: int) -> list | None:
    if depth > MAX_DEPTH:
        return None
    text = _THINKING.sub("", text.lstrip("\ufeff"))
    text = _FENCE_LINE.sub("", text).strip()
    if not text:
        return None
    found = _in_parsed(_loads(text), shape, depth)
    if found is not None:
        return found
    fenced = _FENCED_BLOCK.search(text)
    if fenced:
        found = _in_parsed(_loads(fenced.group(1).strip()), shape, depth)
        if found is not None:
            return found
    inspected = _node_inspect_text(text)
    if inspected is not None:
        found = _in_text(inspected, shape, depth + 1)
        if found is not None:
            return found
    spans = _all_spans(text)
    for start, end in _largest(spans):
        found = _in_parsed(_loads(text[start:end]), shape, depth)
        if found is not None:
            return found
    return _salvaged_objects(text, spans) if shape.salvage_objects else None


def _in_parsed(parsed: Any, shape: _Shape, depth: int) -> list | None:
    if parsed is _FAILED:
        return None
    return _in_value(parsed, shape, depth + 1)


# ---------------------------------------------------------------- JSON, strict then forgiving

_REPAIRABLE = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a JSON string: left alone
    r"|'((?:[^'\\]|\\.)*)'"  # a single-quoted string: requoted
    r"|,(?=\s*[\]}])"  # a trailing comma: dropped
    r"|\b(True|False|None)\b",  # Python literals: spelled the JSON way
    re.DOTALL,
)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _unescape_apostrophes(text: str) -> str:
    """`\\'` is JavaScript, not JSON; pairs are consumed left to right so `\\\\` stays put."""
    return re.sub(r"\\(.)", lambda m: m.group(1) if m.group(1) == "'" else m.group(0), text, flags=re.DOTALL)


def _requote(match: re.Match) -> str:
    whole = match.group(0)
    if whole.startswith('"'):
        return _unescape_apostrophes(whole)
    if match.group(2):
        return _PY_LITERALS[match.group(2)]
    if whole.startswith(","):
        return ""
    body = _unescape_apostrophes(match.group(1))
    return '"' + re.sub(r'(?<!\\)((?:\\\\)*)"', r'\1\\"', body) + '"'


def _loads(text: str) -> Any:
    """Strict JSON, else JSON with single quotes, trailing commas and Python literals repaired."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if len(text) > MAX_REPAIR_CHARS:
        return _FAILED
    repaired = _REPAIRABLE.sub(_requote, text)
    if repaired == text:
        return _FAILED
    try:
        return json.loads(repaired)
    except (ValueError, RecursionError):
        return _FAILED


# ---------------------------------------------------------------- Node's util.inspect output

_INSPECT_TEXT = re.compile(r"\btext:\s*")
_JS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _read_js_string(text: str, i: int) -> tuple[str, int] | None:
    """A JS string literal starting at `i` (any quote), unescaped; None if there is none."""
    if i >= len(text) or text[i] not in "'\"`":
        return None
    out: list[str] = []
    quote, i = text[i], i + 1
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            if nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2 : i + 4]):
                out.append(chr(int(text[i + 2 : i + 4], 16)))
                i += 4
                continue
            out.append(_JS_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return None


def _node_inspect_text(text: str) -> str | None:
    """`{ candidates: [ { content: { parts: [ { text: '...' + '...' } ] } } ] }`, as a
    console.log of a Gemini response prints it (long strings split into `+` pieces)."""
    at = text.find("candidates:")
    if at < 0:
        return None
    match = _INSPECT_TEXT.search(text, at)
    if not match:
        return None
    pieces, i = [], match.end()
    while True:
        read = _read_js_string(text, i)
        if read is None:
            break
        pieces.append(read[0])
        i = read[1]
        plus = re.match(r"\s*\+\s*", text[i : i + 200])
        if not plus:
            break
        i += plus.end()
    return "".join(pieces) if pieces else None


# ---------------------------------------------------------------- balanced-bracket scan

_PAIRS = {"]": "[", "}": "{"}
_SCAN_CHARS = re.compile(r"[\[\]{}\"'\\]")


def _spans(text: str, quotes: str) -> list[tuple[int, int]]:
    """Every balanced [..] / {..} span; quotes are honoured only inside a bracket, so an
    apostrophe in the prose before the JSON does not swallow it."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []
    quote: str | None = None
    escaped_until = -1
    for m in _SCAN_CHARS.finditer(text):
        i = m.start()
        ch = text[i]
        if i < escaped_until:
            continue
        if quote is not None:
            if ch == "\\":
                escaped_until = i + 2
            elif ch == quote:
                quote = None
            continue
        if ch in "[{":
            stack.append((ch, i))
        elif ch in _PAIRS:
            if stack and stack[-1][0] == _PAIRS[ch]:
                spans.append((stack.pop()[1], i + 1))
        elif ch in quotes and stack:
            quote = ch
    return spans


def _all_spans(text: str) -> set[tuple[int, int]]:
    """Two passes, one honouring both quote kinds and one only double quotes, because a stray
    apostrophe inside a bracket (`[the hero's]`) would otherwise hide everything after it."""
    spans = set(_spans(text, "\"'"))
    if "'" in text:
        spans.update(_spans(text, '"'))
    return spans


def _largest(spans: set[tuple[int, int]]) -> list[tuple[int, int]]:
    return heapq.nlargest(MAX_SCAN_CANDIDATES, spans, key=lambda s: (s[1] - s[0], -s[0]))


def _salvaged_objects(text: str, spans: set[tuple[int, int]]) -> list | None:
    """The complete `{title…}` objects of an answer that holds no whole array, in text order:
    an answer cut off by the token limit keeps the entries it finished. Objects nested in an
    accepted one are skipped; at most MAX_SALVAGE spans are parsed."""
    out: list = []
    reach = -1
    tried = 0
    for start, end in sorted(s for s in spans if text[s[0]] == "{"):
        if start < reach:
            continue
        tried += 1
        if tried > MAX_SALVAGE:
            break
        parsed = _loads(text[start:end])
        if _has_title(parsed):
            out.append(parsed)
            reach = end
    return out or None


# ---------------------------------------------------------------- the selection


def _has_title(item: Any) -> bool:
    return isinstance(item, dict) and any(isinstance(item.get(k), str) for k in ("title", "name"))


def _is_selection_array(value: list) -> bool:
    return not value or any(isinstance(v, str) or _has_title(v) for v in value)


_SELECTION = _Shape(_SELECTION_KEYS, _is_selection_array, salvage_objects=True)


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
    found = _find_array(raw, _SELECTION)
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


_CATEGORIES = _Shape(_CATEGORY_KEYS, _is_category_array)


def extract_categories(raw: str | object) -> list[str]:
    """Category names the pre-filter call chose, de-duplicated case-insensitively."""
    found = _find_array(raw, _CATEGORIES)
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
