"""The client against a real loopback server, for every wire format: HTTP failures, broken and
cut-off bodies, timeouts that fire on time, cancellation that really aborts, unreachable servers,
keys that never leak, and the connection test."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest

from dle_desktop.ai import client as client_module
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ConnectionProfile

from .conftest import FAKE_KEY, run

PROFILES = [
    ("openai", "openai"),
    ("openai", "llamacpp"),
    ("openai", "azure"),
    ("anthropic", ""),
    ("gemini", ""),
    ("ollama", ""),
]
IDS = ["openai", "llamacpp", "azure", "anthropic", "gemini", "ollama"]
REQ = ChatRequest(system="You pick lore.", user_parts=("<manifest/>", "<chat/>"), max_tokens=128)


async def complete(p: ConnectionProfile, key: str | None = FAKE_KEY, req: ChatRequest = REQ, **kw):
    client = AiClient()
    try:
        return await client.complete(p, key, req, **kw)
    finally:
        await client.aclose()


def failure(p: ConnectionProfile, key: str | None = FAKE_KEY, **kw) -> AiError:
    with pytest.raises(AiError) as info:
        run(complete(p, key, **kw))
    return info.value


@pytest.mark.parametrize("provider, flavor", PROFILES, ids=IDS)
def test_good_answer_and_usage(ai_fake, provider, flavor):
    ai_fake.reply(text='[{"title": "Gorduin"}]', usage={"input": 321, "output": 7})
    r = run(complete(ai_fake.profile(provider, flavor)))
    assert r.text == '[{"title": "Gorduin"}]'
    assert (r.usage.input_tokens, r.usage.output_tokens) == (321, 7)
    assert r.model == "fake-model"
    assert ai_fake.last.system_text == "You pick lore." and ai_fake.last.user_text == "<manifest/>\n\n<chat/>"


@pytest.mark.parametrize("provider, flavor", PROFILES, ids=IDS)
@pytest.mark.parametrize(
    "status, body, kind, trips",
    [
        (401, None, "auth", False),
        (402, None, "quota", False),
        (
            404,
            b'{"error": {"message": "The model `fake-model` does not exist", "code": "model_not_found"}}',
            "model_not_found",
            False,
        ),
        (429, None, "rate_limit", False),
        (500, None, "server", True),
        (529, None, "overloaded", True),
    ],
)
def test_http_failures(ai_fake, provider, flavor, status, body, kind, trips):
    ai_fake.fail(status, body)
    err = failure(ai_fake.profile(provider, flavor))
    assert (err.kind, err.status, err.provider, err.trips_breaker) == (kind, status, provider, trips)


def test_404_without_a_model_mention_is_a_wrong_url(ai_fake):
    p = ConnectionProfile(
        id="x", name="x", provider="openai", flavor="custom", base_url=ai_fake.url + "/wrong/v2", model="m"
    )
    ai_fake.fail(404, b"Cannot POST")
    err = failure(p)
    assert err.kind == "not_found" and f"{ai_fake.url}/wrong/v2/chat/completions" in str(err)


def test_a_redirect_is_not_followed(ai_fake):
    ai_fake.fail(301, b"", headers={"Location": "https://elsewhere.example/v1/chat/completions"})
    err = failure(ai_fake.profile("openai", "custom"))
    assert err.kind == "config" and "redirected" in str(err)
    assert len(ai_fake.requests) == 1


@pytest.mark.parametrize("provider, flavor", PROFILES, ids=IDS)
def test_broken_json_is_a_bad_response(ai_fake, provider, flavor):
    ai_fake.broken_json()
    err = failure(ai_fake.profile(provider, flavor))
    assert err.kind == "bad_response" and err.trips_breaker and "not JSON" in str(err)


@pytest.mark.parametrize("provider, flavor", PROFILES, ids=IDS)
def test_a_cut_off_body_is_a_network_error(ai_fake, provider, flavor):
    ai_fake.truncated()
    err = failure(ai_fake.profile(provider, flavor))
    assert err.kind in ("network", "bad_response") and err.trips_breaker
    assert "before the answer was complete" in str(err)


def test_empty_and_oversized_answers(ai_fake, monkeypatch):
    ai_fake.fail(200, b"")
    assert "empty" in str(failure(ai_fake.profile()))
    monkeypatch.setattr(client_module, "MAX_ANSWER_BYTES", 100)
    ai_fake.reply(text="x" * 500)
    err = failure(ai_fake.profile())
    assert err.kind == "bad_response" and "larger than" in str(err)


def test_the_connection_is_reused_after_errors(ai_fake):
    async def go():
        client = AiClient()
        try:
            ai_fake.fail(500)
            with pytest.raises(AiError):
                await client.complete(ai_fake.profile(), None, REQ)
            ai_fake.truncated()
            with pytest.raises(AiError):
                await client.complete(ai_fake.profile(), None, REQ)
            return await client.complete(ai_fake.profile(), None, REQ)
        finally:
            await client.aclose()

    assert run(go()).text == "OK"


# ---- time ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider, flavor", [("openai", "lmstudio"), ("anthropic", "")], ids=["openai", "anthropic"])
def test_a_slow_answer_times_out_on_time_and_the_request_is_dropped(ai_fake, provider, flavor):
    ai_fake.slow(10.0)
    started = time.monotonic()
    err = failure(ai_fake.profile(provider, flavor, timeout_s=0.6))
    elapsed = time.monotonic() - started
    assert err.kind == "timeout" and not err.trips_breaker
    assert "no answer within 0.6 s" in str(err)
    assert elapsed >= 0.5, elapsed  # the timeout, not the 10 s answer, ended it (kind and message above)
    assert ai_fake.wait_for_disconnect(timeout=3.0), "the server kept holding the abandoned request"


def test_timeout_override_beats_the_profile(ai_fake):
    ai_fake.slow(10.0)
    started = time.monotonic()
    err = failure(ai_fake.profile(timeout_s=60), timeout_s=0.4)
    assert err.kind == "timeout" and "0.4 s" in str(err) and time.monotonic() - started >= 0.4


def test_a_slow_answer_within_the_timeout_arrives(ai_fake):
    ai_fake.slow(0.3, text="late but fine")
    assert run(complete(ai_fake.profile(timeout_s=5))).text == "late but fine"


@pytest.mark.parametrize(
    "provider, flavor", [("openai", "openai"), ("gemini", ""), ("ollama", "")], ids=["openai", "gemini", "ollama"]
)
def test_cancelling_the_caller_aborts_the_request(ai_fake, provider, flavor):
    ai_fake.hang()

    async def go():
        task = asyncio.create_task(complete(ai_fake.profile(provider, flavor, timeout_s=60)))
        while ai_fake.waiting == 0:
            assert not task.done()
            await asyncio.sleep(0.01)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled_at

    run(go())
    assert ai_fake.wait_for_disconnect(timeout=3.0), "the server never saw the connection close"
    assert ai_fake.waiting == 0  # nothing left running in the background


def test_connection_refused_on_a_closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = ConnectionProfile(
        id="x", name="x", provider="openai", flavor="llamacpp", base_url=f"http://127.0.0.1:{port}/v1"
    )
    err = failure(p, None)
    assert err.kind == "network" and err.trips_breaker
    assert str(err) == f"llama.cpp server: could not connect to http://127.0.0.1:{port} — is the server running?"


# ---- secrets ------------------------------------------------------------------------------------


def test_the_key_never_appears_in_errors_or_logs(ai_fake, caplog):
    caplog.set_level(logging.DEBUG)
    echo = f'{{"error": {{"message": "Incorrect API key provided: {FAKE_KEY}. Authorization: Bearer {FAKE_KEY}"}}}}'
    messages: list[str] = []
    for provider, flavor in PROFILES:
        p = ai_fake.profile(provider, flavor, timeout_s=0.3)
        for script in (
            lambda: ai_fake.fail(401, echo),
            lambda: ai_fake.fail(500, echo),
            lambda: ai_fake.fail(400, echo),
            ai_fake.broken_json,
            ai_fake.truncated,
            lambda: ai_fake.slow(3.0),
            lambda: ai_fake.reply(raw={"error": {"message": f"bad key {FAKE_KEY}", "code": 401}}),
        ):
            # 0.3 s lets `slow` time out; on a loaded machine another request can time out before
            # it arrives, and its answer must not be left for the next one.
            ai_fake.clear()
            script()
            err = failure(p)
            messages += [str(err), repr(err), str(err.args)]
        ai_fake.clear()
        ai_fake.reply(text=f"the model repeats {FAKE_KEY}")
        patient = ai_fake.profile(provider, flavor, timeout_s=30)
        run(complete(patient))  # answer text is the caller's business, but it must not reach the logs
        messages.append(str(p.to_json()) + repr(p))
    assert all(
        r.headers.get("authorization", "").endswith(FAKE_KEY)
        or r.headers.get("x-api-key") == FAKE_KEY
        or r.headers.get("x-goog-api-key") == FAKE_KEY
        or r.headers.get("api-key") == FAKE_KEY
        for r in ai_fake.requests
    ), "the key was not even sent"
    assert any("refused (401)" in m for m in messages)
    leaks = [m for m in messages if FAKE_KEY in m] + [
        r.getMessage() for r in caplog.records if FAKE_KEY in r.getMessage()
    ]
    assert leaks == []
    assert FAKE_KEY not in caplog.text


def test_prompts_are_not_logged_at_info(ai_fake, caplog):
    caplog.set_level(logging.DEBUG)
    ai_fake.fail(500)
    failure(ai_fake.profile())
    run(complete(ai_fake.profile()))
    ours = [r for r in caplog.records if r.name.startswith("dle_desktop.ai")]
    assert ours and all("You pick lore." not in r.getMessage() and "<manifest/>" not in r.getMessage() for r in ours)
    debug = [r.getMessage() for r in ours if r.levelno == logging.DEBUG]
    assert any("status=200" in m and "tokens in=10 out=5" in m for m in debug)
    assert any(r.levelno == logging.INFO and "kind=server status=500" in r.getMessage() for r in ours)


# ---- connection test and client plumbing ---------------------------------------------------------


@pytest.mark.parametrize("provider, flavor", PROFILES, ids=IDS)
def test_connection_test_ok(ai_fake, provider, flavor):
    async def go():
        client = AiClient()
        try:
            return await client.test_connection(ai_fake.profile(provider, flavor), FAKE_KEY)
        finally:
            await client.aclose()

    ok, message, latency_ms = run(go())
    assert ok and "connected" in message and "fake-model" in message
    assert isinstance(latency_ms, int) and latency_ms >= 0
    seen = ai_fake.last
    assert seen.system_text == "Reply OK." and seen.user_text == "ping"
    assert 8 in (
        seen.body.get("max_tokens"),
        seen.body.get("max_completion_tokens"),
        seen.body.get("generationConfig", {}).get("maxOutputTokens"),
        seen.body.get("options", {}).get("num_predict"),
    )


def test_connection_test_failing(ai_fake):
    async def go():
        client = AiClient()
        try:
            ai_fake.fail(401)
            refused = await client.test_connection(ai_fake.profile("anthropic"), FAKE_KEY)
            keyless = await client.test_connection(ai_fake.profile("gemini"), None)  # the fake answers 200
            return refused, keyless
        finally:
            await client.aclose()

    (ok, message, _), (ok2, _, _) = run(go())
    assert not ok and "the API key was refused (401)" in message and FAKE_KEY not in message
    assert ok2


def test_connection_test_unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = ConnectionProfile(id="x", name="x", provider="ollama", base_url=f"http://127.0.0.1:{port}", model="m")

    async def go():
        client = AiClient()
        try:
            return await client.test_connection(p, None)
        finally:
            await client.aclose()

    ok, message, _ = run(go())
    assert not ok and "is the server running?" in message


def test_one_http_client_per_origin_and_loop(ai_fake):
    client = AiClient()

    async def go():
        await client.complete(ai_fake.profile("openai"), None, REQ)
        await client.complete(ai_fake.profile("anthropic"), None, REQ)  # same origin, other wire format
        first = dict(client._clients)
        other = ConnectionProfile(
            id="y",
            name="y",
            provider="openai",
            flavor="custom",
            base_url=ai_fake.url.replace("127.0.0.1", "localhost") + "/v1",
            model="m",
        )
        await client.complete(other, None, REQ)
        return first, dict(client._clients)

    first, second = run(go())
    assert len(first) == 1 and len(second) == 2
    # a new event loop (the engine restarted) gets fresh clients instead of dead sockets
    assert run(complete(ai_fake.profile())).text == "OK"
    run(_use_again(client, ai_fake))
    run(client.aclose())


async def _use_again(client: AiClient, fake) -> None:
    assert (await client.complete(fake.profile(), None, REQ)).text == "OK"
    assert len(client._clients) == 1  # the clients of the finished loop were dropped


def test_concurrent_calls_share_the_client(ai_fake):
    ai_fake.default(lambda req: req.user_text.upper())

    async def go():
        client = AiClient()
        try:
            reqs = [ChatRequest(system="s", user_parts=(f"q{i}",), max_tokens=5) for i in range(6)]
            return await asyncio.gather(*(client.complete(ai_fake.profile(), None, r) for r in reqs))
        finally:
            await client.aclose()

    assert sorted(r.text for r in run(go())) == [f"Q{i}" for i in range(6)]


def test_a_failing_default_answer_shows_as_a_500(ai_fake):
    ai_fake.default(lambda req: 1 / 0)
    err = failure(ai_fake.profile())
    assert err.kind == "server" and "ZeroDivisionError" in str(err)
    assert isinstance(ai_fake.errors[0], ZeroDivisionError)
