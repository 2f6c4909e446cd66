"""The fake provider answers what an OpenAI-compatible chat client (SillyTavern's Custom source, in
tests/e2e/sillytavern/) asks besides a plain completion: the model list, and a streamed answer."""

from __future__ import annotations

import json

import httpx


def test_models_are_listed(ai_fake):
    ai_fake.models = ["fake-model", "other-model"]
    r = httpx.get(ai_fake.url + "/v1/models")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == ["fake-model", "other-model"]


def test_a_streaming_request_gets_server_sent_events_that_add_up_to_the_reply(ai_fake):
    ai_fake.reply(text="The lanterns of Gorduin burn all night.")
    r = httpx.post(
        ai_fake.url + "/v1/chat/completions",
        json={"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = [line[len("data: ") :] for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "The lanterns of Gorduin burn all night."
    assert len([c for c in chunks if c["choices"][0]["delta"].get("content")]) > 1
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_request_without_stream_still_gets_one_json_completion(ai_fake):
    ai_fake.reply(text="plain")
    r = httpx.post(ai_fake.url + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.json()["choices"][0]["message"]["content"] == "plain"
