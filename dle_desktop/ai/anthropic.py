"""Anthropic Messages API wire format (api.anthropic.com, or a local proxy such as
claude-code-proxy that adds its own credentials, DLE's "proxy" mode, §4.10).

Pure functions only: the client does the HTTP.
"""

from __future__ import annotations

from typing import Any

from dle_desktop.ai.errors import bad_response, error_in_body, refused
from dle_desktop.ai.types import ChatRequest, ChatResponse, ConnectionProfile, ToolCall, Usage, merge_instructions
from dle_desktop.ai.wire_common import Request, count, json_headers, tool_args, trim_suffix

ANTHROPIC_VERSION = "2023-06-01"
#: The API's floor for a thinking budget.
MIN_THINKING_BUDGET = 1024
_EPHEMERAL = {"type": "ephemeral"}
_TOOL_DESCRIPTION = "Return the answer in exactly this structure."


def structured_output_mode(profile: ConnectionProfile, req: ChatRequest) -> str:
    """ "tool" (a forced tool call whose input is the answer) or "none". Extended thinking cannot
    be combined with a forced tool choice, so with thinking on the answer comes back as text."""
    if req.json_schema is None or profile.thinking:
        return "none"
    return "tool"


def thinking_budget(req: ChatRequest) -> int:
    """Thinking gets its own room on top of the answer's max_tokens, so that reasoning can never
    eat the answer (the API counts both against max_tokens)."""
    return max(MIN_THINKING_BUDGET, req.max_tokens)


def request_url(profile: ConnectionProfile) -> str:
    return trim_suffix(profile.endpoint, "/v1/messages", "/v1") + "/v1/messages"


def _system(req: ChatRequest) -> str | list[dict[str, Any]] | None:
    if not req.system or req.force_user_role:
        return None
    if req.cache_hint:
        return [{"type": "text", "text": req.system, "cache_control": dict(_EPHEMERAL)}]
    return req.system


def _user_content(req: ChatRequest) -> str | list[dict[str, Any]]:
    merge = req.force_user_role and req.system
    if not req.cache_hint or not req.user_parts:
        return req.merged_user_text if merge else req.user_text
    # The cache breakpoint goes after the big stable part (the manifest), so only the chat after it
    # is paid in full on the next call.
    stable = req.user_parts[0]
    if merge:
        stable = merge_instructions(req.system, "") + stable
    blocks: list[dict[str, Any]] = [{"type": "text", "text": stable, "cache_control": dict(_EPHEMERAL)}]
    rest = "\n\n".join(req.user_parts[1:])
    if rest:  # the API rejects empty text blocks
        blocks.append({"type": "text", "text": rest})
    return blocks


def _turn_messages(req: ChatRequest) -> list[dict[str, Any]]:
    """Tool results go back as user-role tool_result blocks; consecutive ones share one message,
    as the API requires strictly alternating roles."""
    out: list[dict[str, Any]] = []
    for turn in req.turns:
        if turn.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args or {}} for c in turn.tool_calls]
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "…"}]})
            continue
        block = (
            {"type": "tool_result", "tool_use_id": turn.call_id, "content": turn.text}
            if turn.role == "tool"
            else {"type": "text", "text": turn.text or "…"}
        )
        if out and out[-1]["role"] == "user":
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return out


def build_request(profile: ConnectionProfile, api_key: str | None, req: ChatRequest) -> Request:
    headers = json_headers()
    headers["anthropic-version"] = ANTHROPIC_VERSION
    if api_key:  # a local proxy adds its own auth, so a keyless profile sends none
        headers["x-api-key"] = api_key
    headers.update(profile.extra_headers)

    body: dict[str, Any] = {"model": profile.model.strip(), "max_tokens": req.max_tokens}
    system = _system(req)
    if system is not None:
        body["system"] = system
    body["messages"] = [{"role": "user", "content": _user_content(req)}] + _turn_messages(req)
    if req.tools and req.json_schema is None:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in req.tools
        ]
    if profile.thinking:
        budget = thinking_budget(req)
        body["max_tokens"] = req.max_tokens + budget
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif req.temperature is not None:  # thinking only runs at the default temperature
        body["temperature"] = req.temperature
    if structured_output_mode(profile, req) == "tool":
        schema = req.json_schema or {}
        name = schema["name"]
        body["tools"] = [
            {
                "name": name,
                "description": schema.get("description") or _TOOL_DESCRIPTION,
                "input_schema": schema["schema"],
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": name}
    return "POST", request_url(profile), headers, body


def parse_response(
    profile: ConnectionProfile, status: int, json_body: Any, *, expect_json: bool = False
) -> ChatResponse:
    """Read a Messages answer: text blocks joined, a tool_use block's input as `structured`,
    thinking blocks skipped. `expect_json` is accepted for symmetry; the structure comes from the tool."""
    provider, label = profile.provider, profile.label
    if not isinstance(json_body, dict):
        raise bad_response(provider, label, f"expected a JSON object, got {type(json_body).__name__}")
    if json_body.get("type") == "error" or "error" in json_body:
        failure = error_in_body(provider, label, profile.model, json_body, status)
        if failure is not None:
            raise failure
    content = json_body.get("content")
    if not isinstance(content, list):
        raise bad_response(provider, label, "no 'content' list in the answer")
    texts: list[str] = []
    calls: list[ToolCall] = []
    structured: object | None = None
    for block in content:
        if not isinstance(block, dict):
            raise bad_response(provider, label, "a content block is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            if structured is None:
                structured = block.get("input")
            if isinstance(block.get("name"), str):
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or f"toolu_{len(calls)}"),
                        name=block["name"],
                        args=tool_args(block.get("input")),
                    )
                )
    stop = json_body.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    text = "".join(texts)
    if stop == "refusal" and structured is None:
        raise refused(provider, label, text or "stop_reason refusal")
    raw_usage = json_body.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    model = json_body.get("model")
    return ChatResponse(
        text=text,
        structured=structured,
        usage=Usage(
            input_tokens=count(usage.get("input_tokens")),
            output_tokens=count(usage.get("output_tokens")),
            cache_read_tokens=count(usage.get("cache_read_input_tokens")),
            cache_write_tokens=count(usage.get("cache_creation_input_tokens")),
        ),
        model=model if isinstance(model, str) and model else profile.model,
        finish_reason=stop,
        tool_calls=tuple(calls),
    )


__all__ = [
    "ANTHROPIC_VERSION",
    "build_request",
    "parse_response",
    "request_url",
    "structured_output_mode",
    "thinking_budget",
]
