"""Ollama's native `/api/chat` wire format (structured outputs through `format: <schema>`).

Pure functions only: the client does the HTTP.
"""

from __future__ import annotations

from typing import Any

from dle_desktop.ai.errors import bad_response, error_in_body
from dle_desktop.ai.types import ChatRequest, ChatResponse, ConnectionProfile, Usage
from dle_desktop.ai.wire_common import Request, chat_messages, count, json_headers, strict_json, trim_suffix


def structured_output_mode(profile: ConnectionProfile, req: ChatRequest) -> str:
    """ "format_schema" or "none"."""
    return "none" if req.json_schema is None else "format_schema"


def request_url(profile: ConnectionProfile) -> str:
    return trim_suffix(profile.endpoint, "/api/chat", "/api", "/v1") + "/api/chat"


def build_request(profile: ConnectionProfile, api_key: str | None, req: ChatRequest) -> Request:
    headers = json_headers()
    if api_key:  # Ollama behind a reverse proxy, or ollama.com's hosted API
        headers["Authorization"] = f"Bearer {api_key}"
    headers.update(profile.extra_headers)
    options: dict[str, Any] = {"num_predict": req.max_tokens}
    if req.temperature is not None:
        options["temperature"] = req.temperature
    body: dict[str, Any] = {
        "model": profile.model.strip(),
        "messages": chat_messages(req),
        "stream": False,
        "options": options,
    }
    if profile.thinking:
        # Only sent when wanted: a model without thinking support answers 400 to "think": true.
        body["think"] = True
    if req.json_schema is not None:
        body["format"] = req.json_schema["schema"]
    return "POST", request_url(profile), headers, body


def parse_response(
    profile: ConnectionProfile, status: int, json_body: Any, *, expect_json: bool = False
) -> ChatResponse:
    provider, label = profile.provider, profile.label
    if not isinstance(json_body, dict):
        raise bad_response(provider, label, f"expected a JSON object, got {type(json_body).__name__}")
    failure = error_in_body(provider, label, profile.model, json_body, status)
    if failure is not None:
        raise failure
    message = json_body.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content", ""), str):
        raise bad_response(provider, label, "no 'message.content' in the answer")
    text = message.get("content") or ""
    finish = json_body.get("done_reason")
    model = json_body.get("model")
    return ChatResponse(
        text=text,
        structured=strict_json(text) if expect_json and text.strip() else None,
        usage=Usage(
            input_tokens=count(json_body.get("prompt_eval_count")), output_tokens=count(json_body.get("eval_count"))
        ),
        model=model if isinstance(model, str) and model else profile.model,
        finish_reason=finish if isinstance(finish, str) else None,
    )


__all__ = ["build_request", "parse_response", "request_url", "structured_output_mode"]
