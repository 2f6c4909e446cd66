"""OpenAI-compatible chat completions: request shape per flavor (structured-output mode, the Claude
exception, Azure, OpenRouter headers), answers in every envelope shape, usage, errors in 200s."""

from __future__ import annotations

import pytest

from dle_desktop.ai import openai_compat
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ConnectionProfile

from .conftest import FAKE_KEY, run

SCHEMA = {
    "name": "lore_selection",
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["selected"],
        "properties": {"selected": {"type": "array", "items": {"type": "object"}}},
    },
}
REQ = ChatRequest(
    system="You are a lore librarian.", user_parts=("<manifest/>", "<chat/>"), max_tokens=512, json_schema=SCHEMA
)


def prof(flavor: str = "openai", **kw) -> ConnectionProfile:
    fields = {"id": "p", "name": "P", "provider": "openai", "flavor": flavor, "model": "gpt-4o-mini"}
    if flavor in ("azure", "custom"):
        fields["base_url"] = "https://res.openai.azure.com" if flavor == "azure" else "http://10.0.0.2:9000/v1"
    fields.update(kw)
    return ConnectionProfile(**fields)


@pytest.mark.parametrize(
    "flavor, mode",
    [
        ("openai", "json_schema"),
        ("azure", "json_schema"),
        ("openrouter", "json_schema"),
        ("groq", "json_schema"),
        ("xai", "json_schema"),
        ("fireworks", "json_schema"),
        ("mistral", "json_schema"),
        ("llamacpp", "json_schema"),
        ("vllm", "json_schema"),
        ("lmstudio", "json_schema"),
        ("ollama", "json_schema"),
        ("custom", "json_schema"),
        ("deepseek", "json_object"),
        ("koboldcpp", "none"),
    ],
)
def test_structured_output_mode_per_flavor(flavor, mode):
    p = prof(flavor)
    assert openai_compat.structured_output_mode(p, REQ) == mode
    body = openai_compat.build_request(p, FAKE_KEY, REQ)[3]
    if mode == "json_schema":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "lore_selection", "strict": True, "schema": SCHEMA["schema"]},
        }
    elif mode == "json_object":
        assert body["response_format"] == {"type": "json_object"}
    else:
        assert "response_format" not in body


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "anthropic/claude-3.7-sonnet:thinking", "Claude-3-haiku"])
def test_claude_models_get_plain_text_even_through_openrouter(model):
    p = prof("openrouter", model=model)
    assert openai_compat.structured_output_mode(p, REQ) == "none"
    assert "response_format" not in openai_compat.build_request(p, None, REQ)[3]


def test_not_claude_lookalikes_keep_structured_output():
    assert openai_compat.structured_output_mode(prof("openrouter", model="openai/claude-like"), REQ) == "json_schema"


def test_no_schema_means_no_response_format():
    req = ChatRequest(system="s", user_parts=("u",), max_tokens=5)
    assert "response_format" not in openai_compat.build_request(prof(), None, req)[3]


def test_request_shape_for_openai():
    method, url, headers, body = openai_compat.build_request(prof(), FAKE_KEY, REQ)
    assert (method, url) == ("POST", "https://api.openai.com/v1/chat/completions")
    assert headers["Authorization"] == f"Bearer {FAKE_KEY}"
    assert headers["Content-Type"] == "application/json"
    assert body["messages"] == [
        {"role": "system", "content": "You are a lore librarian."},
        {"role": "user", "content": "<manifest/>\n\n<chat/>"},
    ]
    assert body["max_completion_tokens"] == 512 and "max_tokens" not in body
    assert body["stream"] is False and body["model"] == "gpt-4o-mini"
    assert "temperature" not in body


def test_compatible_servers_get_max_tokens_and_temperature():
    req = ChatRequest(system="s", user_parts=("u",), max_tokens=64, temperature=0.2)
    body = openai_compat.build_request(prof("groq", model="llama-3.3-70b"), None, req)[3]
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    assert body["temperature"] == 0.2


def test_no_key_no_authorization_header_and_no_model_for_single_model_servers():
    _, url, headers, body = openai_compat.build_request(prof("llamacpp", model=""), None, REQ)
    assert url == "http://127.0.0.1:8080/v1/chat/completions"
    assert "Authorization" not in headers and "model" not in body


def test_force_user_role_sends_one_user_message():
    req = ChatRequest(system="SYS", user_parts=("A", "B"), max_tokens=5, force_user_role=True)
    body = openai_compat.build_request(prof("custom", model="glm-4"), None, req)[3]
    assert body["messages"] == [{"role": "user", "content": "[Instructions]\nSYS\n\n---\n\nA\n\nB"}]


def test_openrouter_identifies_the_app():
    headers = openai_compat.build_request(prof("openrouter", model="x/y"), FAKE_KEY, REQ)[2]
    assert headers["HTTP-Referer"] and headers["X-Title"] == "DLE Desktop"


def test_azure_uses_the_deployment_url_and_an_api_key_header():
    p = prof("azure", model="gpt4o-prod", api_version="2024-08-01-preview")
    _, url, headers, body = openai_compat.build_request(p, FAKE_KEY, REQ)
    assert url == (
        "https://res.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-08-01-preview"
    )
    assert headers["api-key"] == FAKE_KEY and "Authorization" not in headers
    assert "model" not in body
    assert "api-version=2024-10-21" in openai_compat.build_request(prof("azure", model="d"), None, REQ)[1]


def test_extra_headers_come_last_and_win():
    p = prof(extra_headers={"Authorization": "Token custom", "X-Org": "lore"})
    headers = openai_compat.build_request(p, FAKE_KEY, REQ)[2]
    assert headers["Authorization"] == "Token custom" and headers["X-Org"] == "lore"


@pytest.mark.parametrize(
    "base, url",
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://h:1/api/v1/chat/completions", "http://h:1/api/v1/chat/completions"),
        ("https://h/openai/v1", "https://h/openai/v1/chat/completions"),
    ],
)
def test_urls_from_what_users_paste(base, url):
    assert openai_compat.request_url(prof("custom", base_url=base)) == url


# ---- answers --------------------------------------------------------------------------------------


def parse(body, flavor="openai", expect_json=False, status=200):
    return openai_compat.parse_response(prof(flavor), status, body, expect_json=expect_json)


def test_plain_answer_with_usage_and_cached_tokens():
    r = parse(
        {
            "model": "gpt-4o-mini-2024",
            "choices": [{"message": {"content": "[]"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 768}},
        },
        expect_json=True,
    )
    assert (r.text, r.structured, r.model, r.finish_reason) == ("[]", [], "gpt-4o-mini-2024", "stop")
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) == (900, 3, 768)


def test_content_parts_are_joined_and_reasoning_is_ignored():
    r = parse(
        {
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": '[{"ti'}, {"type": "text", "text": 'tle": "A"}]'}],
                        "reasoning_content": "hidden thoughts",
                    }
                }
            ]
        }
    )
    assert r.text == '[{"title": "A"}]' and "hidden" not in r.text
    assert r.model == "gpt-4o-mini" and r.finish_reason is None


def test_structured_only_when_asked_and_exactly_json():
    assert parse({"choices": [{"message": {"content": '{"selected": []}'}}]}).structured is None
    assert parse({"choices": [{"message": {"content": "Sure! []"}}]}, expect_json=True).structured is None


def test_deepseek_cache_hits_and_null_usage_values():
    r = parse(
        {
            "choices": [{"message": {"content": "x"}}],
            "usage": {"prompt_tokens": None, "completion_tokens": 2.0, "prompt_cache_hit_tokens": 50},
        },
        "deepseek",
    )
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) == (0, 2, 50)


def test_null_content_cut_at_the_token_limit():
    r = parse({"choices": [{"message": {"content": None, "reasoning_content": "..."}, "finish_reason": "length"}]})
    assert r.text == "" and r.hit_token_limit


def test_content_filter_and_refusals():
    with pytest.raises(AiError) as info:
        parse({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]})
    assert info.value.kind == "refused"
    with pytest.raises(AiError) as info:
        parse({"choices": [{"message": {"content": None, "refusal": "I can't help with that."}}]})
    assert info.value.kind == "refused" and "I can't help" in str(info.value)


def test_errors_inside_a_200_are_read_as_the_error_they_stand_for():
    with pytest.raises(AiError) as info:
        parse({"error": {"message": "Rate limit exceeded: free-models-per-day", "code": 429}}, "openrouter")
    assert info.value.kind == "rate_limit" and info.value.status == 429
    with pytest.raises(AiError) as info:
        parse(
            {"choices": [{"error": {"message": "upstream died", "code": 502}, "message": {"content": ""}}]},
            "openrouter",
        )
    assert info.value.kind == "server"


@pytest.mark.parametrize(
    "body, words",
    [
        ([], "expected a JSON object"),
        ({"choices": []}, "no 'choices'"),
        ({"object": "list", "data": []}, "no 'choices'"),
        ({"choices": [{"text": "legacy completion"}]}, "no 'message'"),
        ({"choices": [{"message": {"content": 42}}]}, "neither text nor a list"),
    ],
)
def test_unreadable_envelopes_are_bad_responses(body, words):
    with pytest.raises(AiError) as info:
        parse(body)
    assert info.value.kind == "bad_response" and info.value.trips_breaker
    assert words in str(info.value)


# ---- through the real client and the fake server ------------------------------------------------


def test_end_to_end_against_the_fake(ai_fake):
    ai_fake.reply(
        structured={"selected": [{"title": "Gorduin", "confidence": "high", "reason": "named"}]},
        usage={"input": 1200, "output": 40, "cache_read": 1024},
    )
    client = AiClient()

    async def go():
        try:
            return await client.complete(ai_fake.profile("openai", "vllm", model="qwen"), FAKE_KEY, REQ)
        finally:
            await client.aclose()

    r = run(go())
    assert r.structured == {"selected": [{"title": "Gorduin", "confidence": "high", "reason": "named"}]}
    assert r.usage.cache_read_tokens == 1024
    seen = ai_fake.last
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert seen.body["response_format"]["json_schema"]["name"] == "lore_selection"
    assert seen.system_text == "You are a lore librarian." and seen.user_text == "<manifest/>\n\n<chat/>"


def test_azure_end_to_end(ai_fake):
    p = ai_fake.profile("openai", "azure", model="prod-gpt", api_version="2024-10-21")
    run(_once(p, FAKE_KEY))
    assert ai_fake.last.path == "/openai/deployments/prod-gpt/chat/completions"
    assert ai_fake.last.query == {"api-version": "2024-10-21"}
    assert ai_fake.last.headers["api-key"] == FAKE_KEY


async def _once(p, key, req=REQ):
    client = AiClient()
    try:
        return await client.complete(p, key, req)
    finally:
        await client.aclose()
