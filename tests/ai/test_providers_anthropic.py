"""Anthropic Messages: headers (keyless proxies), the DLE §4.10 cache breakpoints, forced tool
choice vs extended thinking, and every answer shape."""

from __future__ import annotations

import pytest

from dle_desktop.ai import anthropic
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ConnectionProfile

from .conftest import FAKE_KEY, run

SCHEMA = {"name": "lore_selection", "schema": {"type": "object", "properties": {"selected": {"type": "array"}}}}
MANIFEST = (
    "<manifest_info>\nCandidate entries: 3\n</manifest_info>\n\n<available_lore_entries>...</available_lore_entries>"
)
CHAT = "<recent_chat_transcript>\nhi\n</recent_chat_transcript>"
ASK = "Output the JSON response as specified by the system prompt."


def prof(**kw) -> ConnectionProfile:
    fields = {"id": "p", "name": "Claude", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    fields.update(kw)
    return ConnectionProfile(**fields)


def build(req, key=FAKE_KEY, **kw):
    return anthropic.build_request(prof(**kw), key, req)


def test_headers_and_url():
    method, url, headers, body = build(ChatRequest(system="S", user_parts=("U",), max_tokens=100))
    assert (method, url) == ("POST", "https://api.anthropic.com/v1/messages")
    assert headers["x-api-key"] == FAKE_KEY and headers["anthropic-version"] == "2023-06-01"
    assert headers["Content-Type"] == "application/json" and "Authorization" not in headers
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "S",
        "messages": [{"role": "user", "content": "U"}],
    }


def test_a_local_proxy_gets_no_key_header():
    _, url, headers, _ = build(
        ChatRequest(system="S", user_parts=("U",), max_tokens=5), key=None, base_url="http://127.0.0.1:42069/v1/"
    )
    assert url == "http://127.0.0.1:42069/v1/messages"
    assert "x-api-key" not in headers


def test_cache_hint_gives_dle_proxy_body_shape():
    req = ChatRequest(system="SYS", user_parts=(MANIFEST, CHAT, ASK), max_tokens=1024, cache_hint=True)
    body = build(req, key=None)[3]
    assert body["system"] == [{"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": MANIFEST, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": f"{CHAT}\n\n{ASK}"},
            ],
        }
    ]


def test_cache_hint_with_a_single_part_sends_no_empty_block():
    body = build(ChatRequest(system="S", user_parts=(MANIFEST,), max_tokens=5, cache_hint=True))[3]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": MANIFEST, "cache_control": {"type": "ephemeral"}}
    ]


def test_cache_hint_with_force_user_role_keeps_instructions_in_the_cached_block():
    req = ChatRequest(system="SYS", user_parts=(MANIFEST, CHAT), max_tokens=5, cache_hint=True, force_user_role=True)
    body = build(req)[3]
    assert "system" not in body
    first, second = body["messages"][0]["content"]
    assert first["text"] == f"[Instructions]\nSYS\n\n---\n\n{MANIFEST}" and "cache_control" in first
    assert second == {"type": "text", "text": CHAT}


def test_force_user_role_without_cache():
    body = build(ChatRequest(system="SYS", user_parts=("A", "B"), max_tokens=5, force_user_role=True))[3]
    assert "system" not in body
    assert body["messages"] == [{"role": "user", "content": "[Instructions]\nSYS\n\n---\n\nA\n\nB"}]


def test_structured_output_is_a_forced_tool_call():
    req = ChatRequest(system="S", user_parts=("U",), max_tokens=512, json_schema=SCHEMA, temperature=0.1)
    body = build(req)[3]
    assert anthropic.structured_output_mode(prof(), req) == "tool"
    assert body["tools"] == [
        {"name": "lore_selection", "description": body["tools"][0]["description"], "input_schema": SCHEMA["schema"]}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "lore_selection"}
    assert body["temperature"] == 0.1 and "thinking" not in body


def test_thinking_drops_the_forced_tool_and_gets_its_own_budget():
    req = ChatRequest(system="S", user_parts=("U",), max_tokens=512, json_schema=SCHEMA, temperature=0.1)
    p = prof(thinking=True)
    body = anthropic.build_request(p, None, req)[3]
    assert anthropic.structured_output_mode(p, req) == "none"
    assert "tools" not in body and "tool_choice" not in body and "temperature" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 512 + 1024
    big = anthropic.build_request(p, None, ChatRequest(system="S", user_parts=("U",), max_tokens=4096))[3]
    assert big["thinking"]["budget_tokens"] == 4096 and big["max_tokens"] == 8192


# ---- answers --------------------------------------------------------------------------------------


def parse(body, status=200, **kw):
    return anthropic.parse_response(prof(**kw), status, body)


def test_text_blocks_are_joined_and_thinking_skipped_with_cache_usage():
    r = parse(
        {
            "model": "claude-sonnet-4-5-20250929",
            "stop_reason": "end_turn",
            "content": [
                {"type": "thinking", "thinking": "secret reasoning", "signature": "x"},
                {"type": "text", "text": '[{"title": '},
                {"type": "text", "text": '"A"}]'},
            ],
            "usage": {
                "input_tokens": 20,
                "output_tokens": 9,
                "cache_read_input_tokens": 3000,
                "cache_creation_input_tokens": 100,
            },
        }
    )
    assert r.text == '[{"title": "A"}]' and r.structured is None
    assert (r.model, r.finish_reason) == ("claude-sonnet-4-5-20250929", "end_turn")
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (20, 9, 3000, 100)


def test_tool_use_input_is_the_structured_answer():
    r = parse(
        {
            "content": [
                {"type": "tool_use", "id": "t", "name": "lore_selection", "input": {"selected": [{"title": "A"}]}}
            ],
            "stop_reason": "tool_use",
        }
    )
    assert r.structured == {"selected": [{"title": "A"}]} and r.text == ""


def test_max_tokens_stop_is_reported():
    assert parse({"content": [{"type": "text", "text": '[{"ti'}], "stop_reason": "max_tokens"}).hit_token_limit


@pytest.mark.parametrize(
    "etype, kind",
    [
        ("overloaded_error", "overloaded"),
        ("authentication_error", "auth"),
        ("rate_limit_error", "rate_limit"),
        ("api_error", "server"),
    ],
)
def test_error_envelopes_even_in_a_200(etype, kind):
    with pytest.raises(AiError) as info:
        parse({"type": "error", "error": {"type": etype, "message": "nope"}})
    assert info.value.kind == kind


def test_refusal_stop_reason():
    with pytest.raises(AiError) as info:
        parse({"content": [], "stop_reason": "refusal"})
    assert info.value.kind == "refused" and not info.value.trips_breaker


@pytest.mark.parametrize("body", [{"content": "text"}, {"id": "x"}, {"content": ["x"]}, "just text"])
def test_unreadable_envelopes(body):
    with pytest.raises(AiError) as info:
        parse(body)
    assert info.value.kind == "bad_response"


# ---- through the real client and the fake server ------------------------------------------------


async def _once(p, key, req):
    client = AiClient()
    try:
        return await client.complete(p, key, req)
    finally:
        await client.aclose()


def test_end_to_end_tool_call(ai_fake):
    ai_fake.reply(
        structured={"selected": []}, usage={"input": 5000, "output": 20, "cache_read": 4096, "cache_write": 0}
    )
    req = ChatRequest(system="S", user_parts=(MANIFEST, CHAT), max_tokens=1024, json_schema=SCHEMA, cache_hint=True)
    r = run(_once(ai_fake.profile("anthropic", model="claude-haiku-4-5"), None, req))
    assert r.structured == {"selected": []} and r.usage.cache_read_tokens == 4096
    seen = ai_fake.last
    assert seen.path == "/v1/messages" and "x-api-key" not in seen.headers
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.schema_name == "lore_selection"
    assert seen.user_text == f"{MANIFEST}\n\n{CHAT}"


def test_end_to_end_thinking_answers_in_text(ai_fake):
    ai_fake.reply(structured={"selected": [{"title": "A"}]})
    req = ChatRequest(system="S", user_parts=("U",), max_tokens=1024, json_schema=SCHEMA)
    r = run(_once(ai_fake.profile("anthropic", thinking=True), FAKE_KEY, req))
    assert r.structured is None and r.text == '{"selected": [{"title": "A"}]}'
    assert ai_fake.last.headers["x-api-key"] == FAKE_KEY
    assert ai_fake.last.body["thinking"]["type"] == "enabled"
