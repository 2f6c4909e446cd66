"""Failure classification: kinds, breaker rules (DLE §4.8), and plain, scrubbed, short messages."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from dle_desktop.ai.errors import KINDS, AiError, classify_exception, classify_http, clean, excerpt


@pytest.mark.parametrize(
    "status, body, kind",
    [
        (401, '{"error": {"message": "Incorrect API key"}}', "auth"),
        (403, '{"error": {"message": "forbidden"}}', "auth"),
        (402, '{"error": {"message": "Insufficient credits"}}', "quota"),
        (429, '{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}', "quota"),
        (
            400,
            '{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low"}}',
            "quota",
        ),
        (429, '{"error": {"message": "Rate limit reached for requests"}}', "rate_limit"),
        # Gemini's per-minute limit mentions "quota" too: still a rate limit
        (
            429,
            '{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", '
            '"status": "RESOURCE_EXHAUSTED"}}',
            "rate_limit",
        ),
        (
            404,
            '{"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}',
            "model_not_found",
        ),
        (404, '{"error": "model \'qwen9\' not found, try pulling it first"}', "model_not_found"),
        (404, '{"type":"error","error":{"type":"not_found_error","message":"model: gpt-9"}}', "model_not_found"),
        (400, '{"error": {"message": "invalid model ID"}}', "model_not_found"),
        (404, "Cannot POST /v1/chat/completions", "not_found"),
        (500, '{"error": {"message": "boom"}}', "server"),
        (502, "<html>Bad gateway</html>", "server"),
        (503, '{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}', "overloaded"),
        (529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "overloaded"),
        (400, '{"error": {"message": "max_tokens is too large"}}', "config"),
        (422, '{"detail": "bad field"}', "config"),
        (408, "", "timeout"),
        (301, "", "config"),
    ],
)
def test_http_statuses_become_kinds(status, body, kind):
    err = classify_http(
        status, body, "openai", "gpt-9", url="http://127.0.0.1:8080/v1/chat/completions", label="OpenAI"
    )
    assert err.kind == kind, str(err)
    assert err.status == status
    assert err.provider == "openai"
    assert str(err).startswith("OpenAI: ")


def test_messages_say_what_to_do():
    def msg(status, body="", **kw):
        return str(classify_http(status, body, "openai", "gpt-9", **kw))

    assert "the API key was refused (401) — check the key in the connection profile" in msg(401)
    assert "the server wants an API key (401) — set one" in msg(401, key_sent=False)
    assert "rate limited (429): wait a moment" in msg(429)
    assert "model 'gpt-9' not found on this server" in msg(404, '{"error": "model gpt-9 not found"}')
    assert "nothing found at http://h:1/v1/chat/completions (404)" in msg(
        404, "", url="http://h:1/v1/chat/completions?api-version=1"
    )
    assert "overloaded (529)" in msg(529)
    assert "the server failed (500). The server said: boom" in msg(500, '{"message": "boom"}')


@pytest.mark.parametrize(
    "kind, trips",
    [
        ("server", True),
        ("overloaded", True),
        ("network", True),
        ("bad_response", True),
        ("cancelled", False),
        ("timeout", False),
        ("rate_limit", False),
        ("auth", False),
        ("quota", False),
        ("config", False),
        ("not_found", False),
        ("model_not_found", False),
        ("refused", False),
    ],
)
def test_breaker_trips_only_on_outages_and_format_drift(kind, trips):
    assert AiError("x", kind).trips_breaker is trips


def test_every_kind_is_covered_and_unknown_kinds_are_refused():
    assert len(KINDS) == 13
    with pytest.raises(ValueError):
        AiError("x", "weird")


def test_our_server_never_answers_401_for_an_upstream_auth_failure():
    assert classify_http(401, "", "openai", "m").http_status == 502
    assert classify_http(429, "", "openai", "m").http_status == 429
    assert AiError("x", "timeout").http_status == 504
    assert AiError("x", "config").http_status == 400


def test_body_excerpts_are_short_and_scrubbed():
    key = "sk-proj-UNREGISTERED0123456789abcdef"
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}. " + "blah " * 200}})
    err = classify_http(401, body, "openai", "m")
    assert key not in str(err)
    assert len(excerpt(body)) <= 201
    assert len(str(err)) < 320
    assert "abc.def" not in clean("header was Authorization: Bearer abc.def")
    for shape in (
        "AIzaSyA1234567890abcdefghijkl",
        "gsk_abcdefghijklmnop1234",
        "xai-abcdefghijklmnopqrst",
        "sk-ant-api03-abcdefghijklmnop",
        "sk-or-v1-0123456789abcdef0123",
    ):
        assert shape not in clean(f"bad key {shape} given"), shape


def test_error_messages_come_from_json_error_envelopes():
    assert excerpt('{"error": {"message": "nope", "type": "x"}}') == "nope"
    assert excerpt('[{"error": {"code": 400, "message": "gemini says no"}}]') == "gemini says no"
    assert excerpt('{"error": "ollama says no"}') == "ollama says no"
    assert excerpt('{"detail": "vllm says no"}') == "vllm says no"
    assert excerpt("plain\n\n text") == "plain text"


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")


@pytest.mark.parametrize(
    "exc, kind, words",
    [
        (
            httpx.ConnectError("[Errno 111] Connection refused", request=_request()),
            "network",
            "could not connect to http://127.0.0.1:8080 — is the server running?",
        ),
        (
            httpx.ConnectError("[Errno -2] Name or service not known", request=_request()),
            "network",
            "could not find the host",
        ),
        (
            httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", request=_request()),
            "network",
            "TLS/certificate",
        ),
        (httpx.ConnectTimeout("timed out", request=_request()), "network", "no answer to the connection"),
        (httpx.ReadTimeout("timed out", request=_request()), "timeout", "no answer within 20 s"),
        (TimeoutError(), "timeout", "no answer within 20 s"),
        (
            httpx.RemoteProtocolError("peer closed connection", request=_request()),
            "network",
            "closed before the answer was complete",
        ),
        (httpx.ReadError("reset", request=_request()), "network", "failed (ReadError)"),
        (httpx.UnsupportedProtocol("no", request=_request()), "config", "cannot be used"),
        (asyncio.CancelledError(), "cancelled", "cancelled"),
    ],
)
def test_transport_failures_become_kinds(exc, kind, words):
    err = classify_exception(
        exc, "openai", "http://127.0.0.1:8080/v1/chat/completions", timeout_s=20, label="llama.cpp server"
    )
    assert err.kind == kind
    assert words in str(err)
    assert str(err).startswith("llama.cpp server: ")


def test_timeout_message_uses_the_timeout_given():
    assert "within 0.5 s" in str(classify_exception(TimeoutError(), "gemini", "https://x", timeout_s=0.5))
    assert "within 120 s" in str(classify_exception(TimeoutError(), "gemini", "https://x", timeout_s=120))
