"""Connection profiles and chat requests: validation with clear messages, JSON round trips, default URLs."""

from __future__ import annotations

import pytest

from dle_desktop.ai.types import (
    DEFAULT_BASE_URLS,
    OPENAI_FLAVORS,
    ChatRequest,
    ChatResponse,
    ConnectionProfile,
    Usage,
    default_base_url,
)
from dle_desktop.errors import ConfigError


def profile(**kw) -> ConnectionProfile:
    fields = {"id": "p1", "name": "Main", "provider": "openai", "flavor": "openai", "model": "gpt-4o-mini"}
    fields.update(kw)
    return ConnectionProfile(**fields)


def test_json_round_trip_keeps_every_field():
    p = profile(
        flavor="openrouter",
        base_url="https://openrouter.ai/api/v1/",
        model="anthropic/claude-sonnet-4",
        secret_id="ai:openrouter",
        extra_headers={"X-Trace": "1"},
        timeout_s=45.5,
        thinking=True,
        api_version="",
    )
    data = p.to_json()
    assert data["extra_headers"] == {"X-Trace": "1"}
    assert "key" not in " ".join(k for k in data if k != "secret_id")
    again = ConnectionProfile.from_json(data)
    assert again == p
    assert hash(again) == hash(p)  # usable as a cache key


def test_from_json_ignores_unknown_keys_and_fills_defaults():
    p = ConnectionProfile.from_json(
        {"id": "x", "name": "Local", "provider": "ollama", "model": "qwen3:8b", "future_field": [1, 2]}
    )
    assert p.flavor == "ollama" and p.timeout_s == 20.0 and p.thinking is False and p.extra_headers == ()
    assert p.endpoint == "http://127.0.0.1:11434"


@pytest.mark.parametrize(
    "data, words",
    [
        ({"provider": "cohere", "model": "m"}, "unknown provider 'cohere'"),
        ({"provider": "openai", "flavor": "together", "model": "m"}, "unknown OpenAI-compatible flavor 'together'"),
        ({"provider": "anthropic", "flavor": "openrouter", "model": "m"}, "has no flavor 'openrouter'"),
        ({"provider": "openai", "base_url": "ftp://example.com/v1", "model": "m"}, "http:// or https://"),
        ({"provider": "openai", "base_url": "http:///v1", "model": "m"}, "no host name"),
        (
            {"provider": "openai", "base_url": "https://user:sk-secret@example.com/v1", "model": "m"},
            "not in the server URL",
        ),
        ({"provider": "openai", "base_url": "https://example.com/v1?key=1", "model": "m"}, "must not carry a query"),
        ({"provider": "openai", "flavor": "openai", "model": ""}, "needs a model name"),
        ({"provider": "anthropic", "model": " "}, "Anthropic connection needs a model name"),
        ({"provider": "gemini"}, "needs a model name"),
        ({"provider": "ollama"}, "needs a model name"),
        (
            {"provider": "openai", "flavor": "azure", "base_url": "https://r.openai.azure.com"},
            "needs a deployment name",
        ),
        ({"provider": "openai", "flavor": "azure", "model": "gpt4o"}, "needs a server URL"),
        ({"provider": "openai", "flavor": "custom"}, "needs a server URL"),
        ({"provider": "openai", "model": "m", "timeout_s": 0}, "timeout must be a positive"),
        ({"provider": "openai", "model": "m", "timeout_s": "20"}, "'timeout_s' must be a number"),
        ({"provider": "openai", "model": "m", "thinking": "yes"}, "'thinking' must be true or false"),
        ({"provider": "openai", "model": 7}, "'model' must be text"),
        ({"provider": "openai", "model": "m", "extra_headers": {"Bad Header": "x"}}, "not a valid header name"),
        ({"provider": "openai", "model": "m", "extra_headers": {"X-A": "a\r\nInjected: 1"}}, "must be on one line"),
        ({"provider": "openai", "model": "m", "extra_headers": ["X-A"]}, "'extra_headers' must be an object"),
    ],
)
def test_from_json_rejects_bad_profiles_in_plain_words(data, words):
    with pytest.raises(ConfigError) as info:
        ConnectionProfile.from_json({"id": "p", "name": "Mine", **data})
    assert words in str(info.value)
    assert "sk-secret" not in str(info.value)


def test_from_json_rejects_non_objects():
    with pytest.raises(ConfigError, match="must be a JSON object"):
        ConnectionProfile.from_json(["openai"])  # type: ignore[arg-type]  # the wrong type is the point


def test_model_is_optional_for_single_model_servers():
    for flavor in ("llamacpp", "koboldcpp", "lmstudio"):
        assert profile(flavor=flavor, model="").model == ""
    assert profile(flavor="custom", base_url="http://10.0.0.5:9000/v1", model="").endpoint == "http://10.0.0.5:9000/v1"


def test_every_flavor_but_azure_and_custom_has_a_default_url():
    for flavor in OPENAI_FLAVORS:
        url = default_base_url("openai", flavor)
        assert bool(url) == (flavor not in ("azure", "custom")), flavor
    assert DEFAULT_BASE_URLS[("openai", "ollama")] == "http://127.0.0.1:11434/v1"
    assert DEFAULT_BASE_URLS[("ollama", "ollama")] == "http://127.0.0.1:11434"
    assert profile(flavor="groq").endpoint == "https://api.groq.com/openai/v1"
    assert profile(provider="anthropic", flavor="", model="claude-x").endpoint == "https://api.anthropic.com"
    assert profile(provider="gemini", flavor="", model="g").endpoint == "https://generativelanguage.googleapis.com"


def test_given_url_wins_and_loses_its_trailing_slash():
    assert profile(flavor="llamacpp", base_url="http://192.168.1.4:8080/v1/").endpoint == "http://192.168.1.4:8080/v1"


def test_extra_headers_are_stored_as_pairs():
    p = profile(extra_headers={"X-A": "1", "X-B": "2"})
    assert p.extra_headers == (("X-A", "1"), ("X-B", "2"))
    assert p.headers == {"X-A": "1", "X-B": "2"}


def test_labels_name_the_kind_of_server():
    assert profile(flavor="openrouter").label == "OpenRouter"
    assert profile(flavor="llamacpp", model="").label == "llama.cpp server"


def test_chat_request_normalises_and_validates():
    req = ChatRequest(system="S", user_parts=["manifest", "chat"], max_tokens=10)  # type: ignore[arg-type]  # a list on purpose: it is normalised to a tuple
    assert req.user_parts == ("manifest", "chat")
    assert req.user_text == "manifest\n\nchat"
    assert req.merged_user_text == "[Instructions]\nS\n\n---\n\nmanifest\n\nchat"
    assert ChatRequest(system="", user_parts=("u",), max_tokens=1).merged_user_text == "u"
    with pytest.raises(ConfigError, match="max_tokens"):
        ChatRequest(system="s", user_parts=("u",), max_tokens=0)
    with pytest.raises(ConfigError, match="json_schema"):
        ChatRequest(system="s", user_parts=("u",), max_tokens=5, json_schema={"schema": {}})


def test_response_knows_when_it_hit_the_token_limit():
    assert ChatResponse(text="", finish_reason="length").hit_token_limit
    assert ChatResponse(text="", finish_reason="MAX_TOKENS").hit_token_limit
    assert ChatResponse(text="", finish_reason="max_tokens").hit_token_limit
    assert not ChatResponse(text="x", finish_reason="stop").hit_token_limit
    assert ChatResponse(text="x").usage == Usage()
