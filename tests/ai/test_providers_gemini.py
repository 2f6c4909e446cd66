"""Gemini generateContent: the key stays out of the URL, schema conversion to Gemini's subset,
safety blocks as refusals, and the envelope shapes it answers with."""

from __future__ import annotations

import pytest

from dle_desktop.ai import gemini
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ConnectionProfile

from .conftest import FAKE_KEY, run

LORE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "strict": True,
    "$schema": "x",
    "required": ["selected"],
    "properties": {
        "selected": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "confidence", "reason"],
                "properties": {
                    "title": {"type": "string"},
                    "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                    "reason": {"type": ["string", "null"], "title": "Why"},
                },
            },
        }
    },
}
SCHEMA = {"name": "lore_selection", "schema": LORE_SCHEMA}


def prof(**kw) -> ConnectionProfile:
    fields = {"id": "p", "name": "Gem", "provider": "gemini", "model": "gemini-2.5-flash"}
    fields.update(kw)
    return ConnectionProfile(**fields)


def test_request_shape_and_key_in_a_header_only():
    req = ChatRequest(system="SYS", user_parts=("A", "B"), max_tokens=300, json_schema=SCHEMA, temperature=0.3)
    method, url, headers, body = gemini.build_request(prof(), FAKE_KEY, req)
    assert (method, url) == (
        "POST",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
    )
    assert FAKE_KEY not in url and "key=" not in url
    assert headers["x-goog-api-key"] == FAKE_KEY
    assert body["systemInstruction"] == {"parts": [{"text": "SYS"}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "A\n\nB"}]}]
    config = body["generationConfig"]
    assert config["maxOutputTokens"] == 300 and config["temperature"] == 0.3
    assert config["responseMimeType"] == "application/json"
    assert "thinkingConfig" not in config


def test_schema_is_reduced_to_the_openapi_subset():
    out = gemini.to_gemini_schema(LORE_SCHEMA)
    assert out == {
        "type": "OBJECT",
        "required": ["selected"],
        "propertyOrdering": ["selected"],
        "properties": {
            "selected": {
                "type": "ARRAY",
                "items": {
                    "type": "OBJECT",
                    "required": ["title", "confidence", "reason"],
                    "propertyOrdering": ["title", "confidence", "reason"],
                    "properties": {
                        "title": {"type": "STRING"},
                        "confidence": {"type": "STRING", "enum": ["high", "medium", "low"]},
                        "reason": {"type": "STRING", "nullable": True},
                    },
                },
            }
        },
    }
    assert LORE_SCHEMA["additionalProperties"] is False  # the caller's schema is left alone
    assert gemini.to_gemini_schema({"const": "x", "type": "string"}) == {"enum": ["x"], "type": "STRING"}


def test_force_user_role_and_no_system():
    req = ChatRequest(system="SYS", user_parts=("U",), max_tokens=5, force_user_role=True)
    body = gemini.build_request(prof(), None, req)[3]
    assert "systemInstruction" not in body
    assert body["contents"][0]["parts"][0]["text"] == "[Instructions]\nSYS\n\n---\n\nU"
    empty = gemini.build_request(prof(), None, ChatRequest(system="", user_parts=("U",), max_tokens=5))[3]
    assert "systemInstruction" not in empty


def test_thinking_gets_room_of_its_own():
    body = gemini.build_request(prof(thinking=True), None, ChatRequest(system="", user_parts=("U",), max_tokens=500))[3]
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024}
    assert body["generationConfig"]["maxOutputTokens"] == 1524


@pytest.mark.parametrize(
    "model, base, url",
    [
        ("models/gemini-2.0-flash", "", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"),
        ("gemini-pro", "https://proxy.example/v1beta/", "https://proxy.example/v1beta/models/gemini-pro"),
        ("tunedModels/my-lore", "", "https://generativelanguage.googleapis.com/v1beta/tunedModels/my-lore"),
    ],
)
def test_urls(model, base, url):
    assert gemini.request_url(prof(model=model, base_url=base)) == url + ":generateContent"


# ---- answers --------------------------------------------------------------------------------------


def parse(body, expect_json=False):
    return gemini.parse_response(prof(), 200, body, expect_json=expect_json)


def test_parts_are_joined_thoughts_skipped_usage_read():
    r = parse(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "I should pick A", "thought": True},
                            {"text": '{"selected": '},
                            {"text": "[]}"},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 800,
                "candidatesTokenCount": 12,
                "thoughtsTokenCount": 100,
                "cachedContentTokenCount": 512,
            },
            "modelVersion": "gemini-2.5-flash-001",
        },
        expect_json=True,
    )
    assert r.text == '{"selected": []}' and r.structured == {"selected": []}
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) == (800, 112, 512)
    assert (r.model, r.finish_reason) == ("gemini-2.5-flash-001", "STOP")


def test_a_candidate_cut_before_any_text():
    r = parse({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]})
    assert r.text == "" and r.hit_token_limit


def test_blocked_prompt_is_a_refusal():
    with pytest.raises(AiError) as info:
        parse({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []}})
    assert info.value.kind == "refused" and "SAFETY" in str(info.value)
    assert not info.value.trips_breaker


@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT", "RECITATION"])
def test_safety_stops_are_refusals(reason):
    with pytest.raises(AiError) as info:
        parse({"candidates": [{"content": {"parts": [{"text": "partial"}]}, "finishReason": reason}]})
    assert info.value.kind == "refused"


def test_error_envelopes_in_a_200():
    with pytest.raises(AiError) as info:
        parse({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})
    assert info.value.kind == "rate_limit"


@pytest.mark.parametrize("body", [{"candidates": []}, {}, {"candidates": [{"content": {"parts": "x"}}]}, 3])
def test_unreadable_envelopes(body):
    with pytest.raises(AiError) as info:
        parse(body)
    assert info.value.kind == "bad_response"


def test_end_to_end(ai_fake):
    ai_fake.reply(structured={"selected": []}, usage={"input": 10, "output": 2})
    client = AiClient()

    async def go():
        try:
            req = ChatRequest(system="S", user_parts=("U",), max_tokens=64, json_schema=SCHEMA)
            return await client.complete(ai_fake.profile("gemini", model="gemini-2.5-pro"), FAKE_KEY, req)
        finally:
            await client.aclose()

    r = run(go())
    assert r.structured == {"selected": []}
    seen = ai_fake.last
    assert seen.path == "/v1beta/models/gemini-2.5-pro:generateContent" and seen.query == {}
    assert seen.headers["x-goog-api-key"] == FAKE_KEY
    assert seen.system_text == "S" and seen.user_text == "U" and seen.model == "gemini-2.5-pro"
