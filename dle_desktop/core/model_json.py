"""Digging the JSON array a language model answered out of whatever it wrote around it.

Models wrap JSON in prose, code fences, `<think>` blocks, provider envelopes and wrapper objects,
and sometimes write JavaScript-ish JSON. `find_array` looks through all of them for the first
array a caller's `ArrayShape` accepts; `None` means there is none, and what that means (format
drift, a refused answer) is the caller's business.

Repairs: trailing commas, single-quoted strings (`\\'` inside them) and Python literals
(`True`, `False`, `None`); JSON held in a JSON string; OpenAI `choices`, Anthropic content
blocks, Gemini candidates (also as Node's `util.inspect` prints them). An answer with no whole
array (cut off by the token limit, or a lone object) keeps its complete objects when the shape
asks for salvage.

Cost on hostile input stays linear-ish: the bracket scan is one pass per quoting rule, only the
`MAX_SCAN_CANDIDATES` largest bracketed spans are parsed, at most `MAX_SALVAGE` objects are
parsed when salvaging, the permissive repair is skipped above `MAX_REPAIR_CHARS`, and recursion
through envelopes, wrappers and JSON-in-strings stops at `MAX_DEPTH`.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Largest bracketed spans parsed per text; a real answer is one of the few biggest spans.
MAX_SCAN_CANDIDATES = 48
#: Complete objects parsed when salvaging a truncated answer.
MAX_SALVAGE = 200
#: Spans longer than this get only the strict JSON parser (the repair pass runs in Python).
MAX_REPAIR_CHARS = 200_000
#: How deep envelopes, wrapper objects and JSON-in-strings are followed.
MAX_DEPTH = 6

#: Provider envelope lists: an empty one (a blocked Gemini answer) is no answer, not "nothing".
_ENVELOPE_KEYS = frozenset({"candidates", "choices", "content", "parts"})


@dataclass(frozen=True)
class ArrayShape:
    """What the caller is looking for.

    `is_valid` accepts an array as the answer; `wrapper_keys` (lower case) are tried first in
    an object, before any other key holding a valid array. `salvage`, when given, keeps the
    complete objects it accepts from an answer holding no whole array. `read_envelopes` looks
    inside provider response objects: off for text a provider client has already unwrapped, so
    an answered object with a `text` or `content` field is taken for itself."""

    is_valid: Callable[[list[Any]], bool]
    wrapper_keys: tuple[str, ...] = ()
    salvage: Callable[[Any], bool] | None = None
    read_envelopes: bool = True


def find_array(raw: object, shape: ArrayShape) -> list[Any] | None:
    """The first array `shape` accepts in `raw` (text, bytes or already-parsed JSON), or None."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    return _in_value(raw, shape, 0)


_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)


def without_thinking(text: str) -> str:
    """`text` less its closed `<think>`, `<thinking>` and `<reasoning>` blocks (drafts, not answers)."""
    return _THINKING.sub("", text)


class NotJson(ValueError):
    """Text that is not JSON, even after the repairs."""


def loads_lenient(text: str) -> Any:
    """Strict JSON, else JSON with single quotes, trailing commas and Python literals repaired
    (not above MAX_REPAIR_CHARS). NotJson when neither parses."""
    value = _loads(text)
    if value is _FAILED:
        raise NotJson("not JSON, even with trailing commas, single quotes and Python literals repaired")
    return value


# ---------------------------------------------------------------- values and envelopes


def _in_value(value: Any, shape: ArrayShape, depth: int) -> list[Any] | None:
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        return _in_text(value, shape, depth + 1)
    if isinstance(value, list):
        return value if shape.is_valid(value) else None
    if not isinstance(value, dict):
        return None
    text = _envelope_text(value) if shape.read_envelopes else None
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
    skipped = _ENVELOPE_KEYS if shape.read_envelopes else frozenset()
    for key, item in value.items():
        if isinstance(item, list) and key not in skipped and shape.is_valid(item):
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


def _envelope_text(obj: dict[Any, Any]) -> str | None:
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
            return str(obj[key])
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
            return str(message["content"])
        if isinstance(choices[0].get("text"), str):
            return str(choices[0]["text"])
    return None


# ---------------------------------------------------------------- text

_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.#-]*[ \t]*\r?$\n?", re.MULTILINE)
_FENCED_BLOCK = re.compile(r"```[\w+.#-]*\s*(.*?)```", re.DOTALL)
_FAILED = object()


def _in_text(text: str, shape: ArrayShape, depth: int) -> list[Any] | None:
    if depth > MAX_DEPTH:
        return None
    text = without_thinking(text.lstrip("\ufeff"))
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
    inspected = _node_inspect_text(text) if shape.read_envelopes else None
    if inspected is not None:
        found = _in_text(inspected, shape, depth + 1)
        if found is not None:
            return found
    spans = _all_spans(text)
    for start, end in _largest(spans):
        found = _in_parsed(_loads(text[start:end]), shape, depth)
        if found is not None:
            return found
    return _salvaged_objects(text, spans, shape.salvage) if shape.salvage else None


def _in_parsed(parsed: Any, shape: ArrayShape, depth: int) -> list[Any] | None:
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


def _requote(match: re.Match[str]) -> str:
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
    """Strict JSON, else the repaired text; `_FAILED` when neither parses."""
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
    pieces: list[str] = []
    i = match.end()
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


def _salvaged_objects(text: str, spans: set[tuple[int, int]], keep: Callable[[Any], bool]) -> list[Any] | None:
    """The complete objects `keep` accepts, in text order, of an answer that holds no whole
    array: an answer cut off by the token limit keeps the items it finished. Objects nested in
    an accepted one are skipped; at most MAX_SALVAGE spans are parsed."""
    out: list[Any] = []
    reach = -1
    tried = 0
    for start, end in sorted(s for s in spans if text[s[0]] == "{"):
        if start < reach:
            continue
        tried += 1
        if tried > MAX_SALVAGE:
            break
        parsed = _loads(text[start:end])
        if parsed is not _FAILED and keep(parsed):
            out.append(parsed)
            reach = end
    return out or None
