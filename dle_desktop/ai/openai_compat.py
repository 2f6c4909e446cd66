"""OpenAI chat-completions wire format: OpenAI itself and every server that copies it (OpenRouter,
Groq, xAI, Fireworks, DeepSeek, Mistral, Azure, llama.cpp, KoboldCpp, Ollama /v1, vLLM, LM Studio).

Pure functions only: the client does the HTTP.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from dle_desktop.ai.errors import bad_response, error_in_body, refused
from dle_desktop.ai.types import (
    AZURE_DEFAULT_API_VERSION,
    ChatRequest,
    ChatResponse,
    ConnectionProfile,
    ToolCall,
    Usage,
)
from dle_desktop.ai.wire_common import Request, chat_messages, count, json_headers, strict_json, tool_args, trim_suffix

#: OpenRouter ranks apps by these; a desktop app has no site of its own to name.
OPENROUTER_REFERER = "http://localhost"
OPENROUTER_TITLE = "DLE Desktop"

_JSON_SCHEMA_FLAVORS = frozenset(
    {
        "openai",
        "azure",
        "openrouter",
        "groq",
        "xai",
        "fireworks",
        "mistral",
        "llamacpp",
        "vllm",
        "lmstudio",
        "ollama",
        "custom",
    }
)
_JSON_OBJECT_FLAVORS = frozenset({"deepseek"})
#: OpenAI's reasoning models reject `max_tokens`; `max_completion_tokens` works on all its chat models.
_COMPLETION_TOKENS_FLAVORS = frozenset({"openai", "azure"})
# DLE: forced structured output conflicts with Claude's extended thinking, also through OpenRouter.
_CLAUDE = re.compile(r"^(claude-|anthropic/claude)", re.I)


def is_claude_model(model: str) -> bool:
    return bool(_CLAUDE.match(model.strip()))


def structured_output_mode(profile: ConnectionProfile, req: ChatRequest) -> str:
    """How a structured answer is asked for: "json_schema", "json_object" or "none" (plain text,
    parsed leniently upstream)."""
    if req.json_schema is None or is_claude_model(profile.model):
        return "none"
    if profile.flavor in _JSON_SCHEMA_FLAVORS:
        return "json_schema"
    if profile.flavor in _JSON_OBJECT_FLAVORS:
        return "json_object"
    return "none"


def request_url(profile: ConnectionProfile) -> str:
    base = profile.endpoint
    if profile.flavor == "azure":
        base = trim_suffix(base, "/openai")
        version = quote(profile.api_version or AZURE_DEFAULT_API_VERSION, safe="-.")
        return (
            f"{base}/openai/deployments/{quote(profile.model.strip(), safe='-._')}/chat/completions"
            f"?api-version={version}"
        )
    if base.endswith("/chat/completions"):
        return base
    # A bare origin means the usual /v1 mount; any path the user gave is taken as the API root.
    has_path = base.split("://", 1)[-1].count("/") > 0
    return base + ("/chat/completions" if has_path else "/v1/chat/completions")


def build_request(profile: ConnectionProfile, api_key: str | None, req: ChatRequest) -> Request:
    headers = json_headers()
    if api_key:
        if profile.flavor == "azure":
            headers["api-key"] = api_key
        else:
            headers["Authorization"] = f"Bearer {api_key}"
    if profile.flavor == "openrouter":
        headers["HTTP-Referer"] = OPENROUTER_REFERER
        headers["X-Title"] = OPENROUTER_TITLE
    headers.update(profile.extra_headers)

    body: dict[str, Any] = {}
    if profile.model.strip() and profile.flavor != "azure":  # Azure names the deployment in the URL
        body["model"] = profile.model.strip()
    body["messages"] = chat_messages(req) + _turn_messages(req)
    if req.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in req.tools
        ]
    body["max_completion_tokens" if profile.flavor in _COMPLETION_TOKENS_FLAVORS else "max_tokens"] = req.max_tokens
    body["stream"] = False
    if req.temperature is not None:
        body["temperature"] = req.temperature
    mode = structured_output_mode(profile, req)
    if mode == "json_schema":
        schema = req.json_schema or {}
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema["name"], "strict": True, "schema": schema["schema"]},
        }
    elif mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    return "POST", request_url(profile), headers, body


def _turn_messages(req: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in req.turns:
        if turn.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.args or {})},
                    }
                    for c in turn.tool_calls
                ]
            out.append(msg)
        elif turn.role == "tool":
            out.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.text})
        else:
            out.append({"role": "user", "content": turn.text})
    return out


def _tool_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ()
    out = []
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        out.append(
            ToolCall(id=str(call.get("id") or f"call_{i}"), name=fn["name"], args=tool_args(fn.get("arguments")))
        )
    return tuple(out)


def _content_text(content: Any) -> str | None:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        texts = [part.get("text") for part in content if isinstance(part, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def parse_response(
    profile: ConnectionProfile, status: int, json_body: Any, *, expect_json: bool = False
) -> ChatResponse:
    """Read a chat-completions answer. `expect_json` (the request asked for structured output)
    makes an exactly-JSON answer available as `structured`."""
    provider, label = profile.provider, profile.label
    failure = error_in_body(provider, label, profile.model, json_body, status)
    if isinstance(json_body, dict) and not json_body.get("choices") and failure is not None:
        raise failure
    if not isinstance(json_body, dict):
        raise bad_response(provider, label, f"expected a JSON object, got {type(json_body).__name__}")
    choices = json_body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise bad_response(provider, label, "no 'choices' in the answer")
    choice = choices[0]
    if isinstance(choice.get("error"), dict):  # OpenRouter: a provider failed after the 200 went out
        failure = error_in_body(provider, label, profile.model, choice, status)
        if failure is not None:
            raise failure
    message = choice.get("message")
    if not isinstance(message, dict):
        raise bad_response(provider, label, "choices[0] has no 'message'")
    text = _content_text(message.get("content"))
    if text is None:
        raise bad_response(provider, label, "the message content is neither text nor a list of parts")
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    if finish == "content_filter" and not text.strip():
        raise refused(provider, label, "the provider's content filter blocked the answer")
    if not text and isinstance(message.get("refusal"), str) and message["refusal"].strip():
        raise refused(provider, label, message["refusal"])
    raw_usage = json_body.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    raw_details = usage.get("prompt_tokens_details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    model = json_body.get("model")
    return ChatResponse(
        text=text,
        structured=strict_json(text) if expect_json and text.strip() else None,
        usage=Usage(
            input_tokens=count(usage.get("prompt_tokens")),
            output_tokens=count(usage.get("completion_tokens")),
            # DeepSeek reports its cache hits under its own name.
            cache_read_tokens=count(details.get("cached_tokens")) or count(usage.get("prompt_cache_hit_tokens")),
        ),
        model=model if isinstance(model, str) and model else profile.model,
        finish_reason=finish,
        tool_calls=_tool_calls(message),
    )


__all__ = ["build_request", "is_claude_model", "parse_response", "request_url", "structured_output_mode"]
