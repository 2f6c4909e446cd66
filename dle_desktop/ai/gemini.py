"""Google Gemini `generateContent` wire format (AI Studio keys).

The key travels in the `x-goog-api-key` header, never in the URL, so it cannot leak into logs or
error messages that quote the URL. Pure functions only: the client does the HTTP.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from dle_desktop.ai.errors import bad_response, error_in_body, refused
from dle_desktop.ai.types import ChatRequest, ChatResponse, ConnectionProfile, ToolCall, Usage
from dle_desktop.ai.wire_common import Request, count, json_headers, strict_json, tool_args, trim_suffix

#: Finish reasons that mean the answer was withheld on policy grounds.
_BLOCKED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"})
#: The OpenAPI subset responseSchema accepts; anything else (additionalProperties, strict, $schema,
#: title...) makes older API versions answer 400 "Unknown name".
_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
    }
)
MIN_THINKING_BUDGET = 1024


def structured_output_mode(profile: ConnectionProfile, req: ChatRequest) -> str:
    """ "response_schema" (JSON mode with a schema) or "none"."""
    return "none" if req.json_schema is None else "response_schema"


def to_gemini_schema(schema: Any) -> Any:
    """A JSON schema reduced to Gemini's OpenAPI subset: unsupported keys dropped, `["x", "null"]`
    types turned into `nullable`, `const` into a one-value enum, and property order pinned
    (Gemini otherwise orders properties alphabetically)."""
    if isinstance(schema, list):
        return [to_gemini_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [value]
        elif key not in _SCHEMA_KEYS:
            continue
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_gemini_schema(sub) for name, sub in value.items()}
            if "propertyOrdering" not in schema:
                out["propertyOrdering"] = list(value)
        elif key in ("items", "anyOf"):
            out[key] = to_gemini_schema(value)
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            concrete = [t for t in types if t != "null"]
            if len(concrete) < len(types):
                out["nullable"] = True
            if concrete:
                out["type"] = str(concrete[0]).upper()
        else:
            out[key] = value
    return out


def model_path(model: str) -> str:
    model = model.strip()
    if not model.startswith("tunedModels/"):
        model = "models/" + model.removeprefix("models/")
    return "/".join(quote(segment, safe="-._") for segment in model.split("/"))


def request_url(profile: ConnectionProfile) -> str:
    base = trim_suffix(profile.endpoint, "/v1beta", "/v1")
    return f"{base}/v1beta/{model_path(profile.model)}:generateContent"


def _turn_contents(req: ChatRequest) -> list[dict[str, Any]]:
    """Function results go back as user-role functionResponse parts, one content per run of them."""
    out: list[dict[str, Any]] = []
    for turn in req.turns:
        if turn.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
            parts += [{"functionCall": {"name": c.name, "args": c.args or {}}} for c in turn.tool_calls]
            out.append({"role": "model", "parts": parts or [{"text": "…"}]})
            continue
        part = (
            {"functionResponse": {"name": turn.name, "response": {"content": turn.text}}}
            if turn.role == "tool"
            else {"text": turn.text or "…"}
        )
        if out and out[-1]["role"] == "user":
            out[-1]["parts"].append(part)
        else:
            out.append({"role": "user", "parts": [part]})
    return out


def build_request(profile: ConnectionProfile, api_key: str | None, req: ChatRequest) -> Request:
    headers = json_headers()
    if api_key:
        headers["x-goog-api-key"] = api_key
    headers.update(profile.extra_headers)

    merge = req.force_user_role and req.system
    body: dict[str, Any] = {}
    if req.system and not merge:
        body["systemInstruction"] = {"parts": [{"text": req.system}]}
    user = req.merged_user_text if merge else req.user_text
    body["contents"] = [{"role": "user", "parts": [{"text": user}]}] + _turn_contents(req)
    if req.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"name": t.name, "description": t.description, "parameters": to_gemini_schema(t.parameters)}
                    for t in req.tools
                ]
            }
        ]
    config: dict[str, Any] = {"maxOutputTokens": req.max_tokens}
    if req.temperature is not None:
        config["temperature"] = req.temperature
    if profile.thinking:
        # Gemini counts thoughts against maxOutputTokens, so thinking gets room of its own.
        budget = max(MIN_THINKING_BUDGET, req.max_tokens)
        config["maxOutputTokens"] = req.max_tokens + budget
        config["thinkingConfig"] = {"thinkingBudget": budget}
    if req.json_schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = to_gemini_schema(req.json_schema["schema"])
    body["generationConfig"] = config
    return "POST", request_url(profile), headers, body


def parse_response(
    profile: ConnectionProfile, status: int, json_body: Any, *, expect_json: bool = False
) -> ChatResponse:
    """Read a generateContent answer: the first candidate's text parts joined (thought parts
    skipped); blocked prompts and safety stops are refusals."""
    provider, label = profile.provider, profile.label
    if isinstance(json_body, list) and len(json_body) == 1:
        json_body = json_body[0]  # some proxies hand back the one-element stream array
    if not isinstance(json_body, dict):
        raise bad_response(provider, label, f"expected a JSON object, got {type(json_body).__name__}")
    failure = error_in_body(provider, label, profile.model, json_body, status)
    if failure is not None:
        raise failure
    feedback = json_body.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        raise refused(provider, label, f"the prompt was blocked: {feedback['blockReason']}")
    candidates = json_body.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        raise bad_response(provider, label, "no 'candidates' in the answer")
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    finish = finish if isinstance(finish, str) else None
    if finish in _BLOCKED:
        raise refused(provider, label, f"stopped for {finish}")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if parts is None:
        parts = []  # a candidate cut at MAX_TOKENS before any text has no parts at all
    if not isinstance(parts, list):
        raise bad_response(provider, label, "candidates[0].content.parts is not a list")
    text = "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    )
    calls = tuple(
        ToolCall(id=f"gemini-call-{i}", name=p["functionCall"]["name"], args=tool_args(p["functionCall"].get("args")))
        for i, p in enumerate(parts)
        if isinstance(p, dict)
        and isinstance(p.get("functionCall"), dict)
        and isinstance(p["functionCall"].get("name"), str)
    )
    raw_usage = json_body.get("usageMetadata")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    model = json_body.get("modelVersion")
    return ChatResponse(
        text=text,
        structured=strict_json(text) if expect_json and text.strip() else None,
        usage=Usage(
            input_tokens=count(usage.get("promptTokenCount")),
            # thoughts are billed as output, as the other providers count them
            output_tokens=count(usage.get("candidatesTokenCount")) + count(usage.get("thoughtsTokenCount")),
            cache_read_tokens=count(usage.get("cachedContentTokenCount")),
        ),
        model=model if isinstance(model, str) and model else profile.model,
        finish_reason=finish,
        tool_calls=calls,
    )


__all__ = ["build_request", "model_path", "parse_response", "request_url", "structured_output_mode", "to_gemini_schema"]
