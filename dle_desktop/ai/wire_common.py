"""Small pieces several wire formats share: the message list, token counts, URL suffix trimming."""

from __future__ import annotations

import json
from typing import Any

from dle_desktop import __version__
from dle_desktop.ai.types import ChatRequest

USER_AGENT = f"dle-desktop/{__version__}"
Request = tuple[str, str, dict[str, str], dict[str, Any]]


def chat_messages(req: ChatRequest) -> list[dict[str, str]]:
    """`[system, user]`, or one user message when the model must not see a system role."""
    if req.force_user_role or not req.system:
        return [{"role": "user", "content": req.merged_user_text}]
    return [{"role": "system", "content": req.system}, {"role": "user", "content": req.user_text}]


def json_headers() -> dict[str, str]:
    return {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}


def count(value: Any) -> int:
    """A token count from an answer: servers send null, floats or nothing at all."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(0, int(value))


def trim_suffix(url: str, *suffixes: str) -> str:
    """`url` without a trailing slash and without the first of `suffixes` it ends with, so users
    can paste either the server root or a full endpoint."""
    url = url.rstrip("/")
    for suffix in suffixes:
        if url.endswith(suffix):
            return url[: -len(suffix)].rstrip("/")
    return url


def strict_json(text: str) -> object | None:
    """The JSON value `text` holds exactly, or None; lenient extraction is the caller's business."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def tool_args(raw: Any) -> dict[str, Any] | None:
    """A tool call's arguments as a dict: OpenAI sends a JSON string, the others an object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        value = strict_json(raw)
        return value if isinstance(value, dict) else None
    return None
