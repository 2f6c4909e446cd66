"""Ollama's native /api/chat: request shape, schema as `format`, answers and errors."""

from __future__ import annotations

import pytest

from dle_desktop.ai import ollama_native
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ConnectionProfile

from .conftest import run

SCHEMA = {"name": "lore_selection", "schema": {"type": "object", "properties": {"selected": {"type": "array"}}}}


def prof(**kw) -> ConnectionProfile:
    fields = {"id": "p", "name": "Local", "provider": "ollama", "model": "qwen3:8b"}
    fields.update(kw)
    return ConnectionProfile(**fields)


def test_request_shape():
    req = ChatRequest(system="S", user_parts=("A", "B"), max_tokens=256, json_schema=SCHEMA, temperature=0)
    method, url, headers, body = ollama_native.build_request(prof(), None, req)
    assert (method, url) == ("POST", "http://127.0.0.1:11434/api/chat")
    assert "Authorization" not in headers
    assert body == {
        "model": "qwen3:8b",
        "stream": False,
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "A\n\nB"}],
        "options": {"num_predict": 256, "temperature": 0},
        "format": SCHEMA["schema"],
    }


def test_thinking_key_and_force_user_role():
    req = ChatRequest(system="S", user_parts=("U",), max_tokens=5, force_user_role=True)
    _, _, headers, body = ollama_native.build_request(prof(thinking=True), "k-123456", req)
    assert body["think"] is True and "format" not in body
    assert body["messages"] == [{"role": "user", "content": "[Instructions]\nS\n\n---\n\nU"}]
    assert headers["Authorization"] == "Bearer k-123456"
    plain = ollama_native.build_request(prof(), None, ChatRequest(system="S", user_parts=("U",), max_tokens=5))[3]
    assert "think" not in plain


@pytest.mark.parametrize(
    "base",
    [
        "http://box:11434",
        "http://box:11434/",
        "http://box:11434/api",
        "http://box:11434/v1",
        "http://box:11434/api/chat",
    ],
)
def test_url_from_what_users_paste(base):
    assert ollama_native.request_url(prof(base_url=base)) == "http://box:11434/api/chat"


def test_answer_and_usage():
    r = ollama_native.parse_response(
        prof(),
        200,
        {
            "model": "qwen3:8b",
            "message": {"role": "assistant", "content": '{"selected": []}', "thinking": "hmm"},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 700,
            "eval_count": 9,
        },
        expect_json=True,
    )
    assert (r.text, r.structured, r.finish_reason) == ('{"selected": []}', {"selected": []}, "stop")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (700, 9)


def test_error_bodies():
    with pytest.raises(AiError) as info:
        ollama_native.parse_response(prof(), 200, {"error": "model 'qwen3:8b' not found, try pulling it first"})
    assert info.value.kind == "model_not_found"
    for body in ({"done": True}, {"message": {"content": 5}}, ["x"]):
        with pytest.raises(AiError) as info:
            ollama_native.parse_response(prof(), 200, body)
        assert info.value.kind == "bad_response"


def test_end_to_end_and_model_not_found(ai_fake):
    client = AiClient()
    req = ChatRequest(system="S", user_parts=("U",), max_tokens=64, json_schema=SCHEMA)

    async def go():
        try:
            ai_fake.reply(text="[]", usage={"input": 3, "output": 1})
            ok = await client.complete(ai_fake.profile("ollama"), None, req)
            ai_fake.fail(404, {"error": "model 'nope' not found, try pulling it first"})
            with pytest.raises(AiError) as info:
                await client.complete(ai_fake.profile("ollama", model="nope"), None, req)
            return ok, info.value
        finally:
            await client.aclose()

    ok, err = run(go())
    assert ok.text == "[]" and ok.structured == [] and ok.usage.input_tokens == 3
    assert ai_fake.requests[0].path == "/api/chat" and ai_fake.requests[0].body["format"] == SCHEMA["schema"]
    assert err.kind == "model_not_found" and "model 'nope' not found on this server (404)" in str(err)
