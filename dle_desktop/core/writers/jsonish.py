"""Digging a JSON array of objects out of a model's answer: prose around it, code fences,
`<think>` blocks, trailing commas, and an answer cut off mid-array (its whole objects are kept).
Bounded work on hostile input: the caller refuses very long answers before this runs."""

from __future__ import annotations

import json
import re
from typing import Any

_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_FENCE = re.compile(r"```(?:json)?", re.I)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")


class NoJson(ValueError):
    """No JSON array or object could be read; the message says what was found."""


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_TRAILING_COMMA.sub(r"\1", text))


def _objects(text: str) -> list[dict[str, Any]]:
    """Every complete top-level `{...}` in `text` that parses, in order (strings honoured)."""
    found: list[dict[str, Any]] = []
    depth, start, quoted, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = depth > 0
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                try:
                    value = _loads(text[start : i + 1])
                except ValueError:
                    continue
                if isinstance(value, dict):
                    found.append(value)
    return found


def extract_objects(raw: str) -> list[Any]:
    """The array the model answered (its items as they are), or the whole objects of a broken or
    cut-off one. `[]` only when the model answered an empty array. NoJson when there is nothing."""
    text = _FENCE.sub("", _THINK.sub("", raw)).strip()
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        try:
            value = _loads(text[start : end + 1])
        except ValueError:
            value = None
        if isinstance(value, list):
            return value
    if text.startswith("{"):
        try:
            value = _loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            inner = next((v for v in value.values() if isinstance(v, list)), None)
            return inner if inner is not None else [value]
    salvaged = _objects(text)
    if salvaged:
        return salvaged
    if start == -1 and "{" not in text:
        raise NoJson("the model's answer holds no JSON (expected an array of suggestions)")
    raise NoJson("the model's answer is broken JSON that could not be repaired")
