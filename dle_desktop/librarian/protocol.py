"""The librarian's response protocol (DLE `validateSessionResponse`, dle-behaviour §5.4(b)):

    {"message": str, "draft"?: {title, type, priority, tags, keys, summary, content} (partial),
     "action"?: update_draft | propose_queue | propose_options | tool_call | null,
     "queue"?: [{title, action: create|update, reason, urgency?}], "options"?: [{label, fields}],
     "tool_calls"?: [{name, args}]}

The answer is read leniently (code fences, prose around the object) but validated strictly; what
is wrong is said in words the model can act on in a repair turn."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from dle_desktop.librarian.draft import SUMMARY_MAX, TYPES

ACTIONS = ("update_draft", "propose_queue", "propose_options", "tool_call")
MAX_REPAIRS = 3
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


@dataclass(frozen=True)
class SessionResponse:
    message: str
    draft: dict[str, Any] | None = None
    action: str | None = None
    queue: tuple[dict[str, Any], ...] = ()
    options: tuple[dict[str, Any], ...] = ()
    tool_calls: tuple[dict[str, Any], ...] = ()


def find_object(text: str) -> Any:
    """The first JSON object in `text` (inside a code fence or not), or None."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        chunk = chunk.strip()
        for i, ch in enumerate(chunk):
            if ch != "{":
                continue
            try:
                value, _end = decoder.raw_decode(chunk, i)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        value = list(value.split(","))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def validate_draft(raw: Any) -> tuple[dict[str, Any], list[str]]:
    errors: list[str] = []
    if not isinstance(raw, dict):
        return {}, ["'draft' must be an object"]
    out: dict[str, Any] = {}
    for key in ("title", "summary", "content"):
        if key in raw and raw[key] is not None:
            if not isinstance(raw[key], str):
                errors.append(f"draft.{key} must be text")
            else:
                out[key] = raw[key][:SUMMARY_MAX] if key == "summary" else raw[key]
    if raw.get("type") is not None:
        if raw["type"] not in TYPES:
            errors.append(f"draft.type must be one of {', '.join(TYPES)} (got {raw['type']!r})")
        else:
            out["type"] = raw["type"]
    if raw.get("priority") is not None:
        p = raw["priority"]
        if isinstance(p, str) and p.strip().isdigit():
            p = int(p.strip())
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 1 <= p <= 100:
            errors.append("draft.priority must be a number from 1 to 100")
        else:
            out["priority"] = int(p)
    for key in ("tags", "keys"):
        if raw.get(key) is not None:
            values = _strings(raw[key])
            if values is None:
                errors.append(f"draft.{key} must be a list of text")
            else:
                out[key] = values
    return out, errors


def validate(obj: Any) -> tuple[SessionResponse | None, list[str]]:
    if not isinstance(obj, dict):
        return None, ["the answer must be one JSON object with a 'message' field"]
    errors: list[str] = []
    message = obj.get("message")
    if not isinstance(message, str) or not message.strip():
        errors.append("'message' is required and must be non-empty text")
    draft = None
    if obj.get("draft") is not None:
        draft, draft_errors = validate_draft(obj["draft"])
        errors += draft_errors
    action = obj.get("action")
    if action is not None and action not in ACTIONS:
        errors.append(f"'action' must be one of {', '.join(ACTIONS)} or null (got {action!r})")
    queue = obj.get("queue") or []
    if not isinstance(queue, list) or not all(
        isinstance(q, dict) and isinstance(q.get("title"), str) and q.get("action", "create") in ("create", "update")
        for q in queue
    ):
        errors.append("'queue' must be a list of {title, action: create|update, reason}")
        queue = []
    options = obj.get("options") or []
    if not isinstance(options, list) or not all(
        isinstance(o, dict) and isinstance(o.get("label"), str) for o in options
    ):
        errors.append("'options' must be a list of {label, fields}")
        options = []
    calls = obj.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        errors.append("'tool_calls' must be a list of {name, args}")
        calls = []
    if action == "tool_call" and not calls:
        errors.append("action 'tool_call' needs a non-empty 'tool_calls' list")
    if errors:
        return None, errors
    assert isinstance(message, str)  # checked above
    return SessionResponse(message.strip(), draft or None, action, tuple(queue), tuple(options), tuple(calls)), []


def parse(text: str) -> tuple[SessionResponse | None, list[str]]:
    if not text or not text.strip():
        return None, ["the answer was empty"]
    obj = find_object(text)
    if obj is None:
        return None, ["no JSON object found in the answer"]
    return validate(obj)


def repair_prompt(errors: list[str]) -> str:
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        f"Your last reply could not be used:\n{listed}\n\nReply again with only one JSON object in the "
        "response format (a 'message' field, and 'draft' / 'action' as needed). No text outside the JSON."
    )
