"""AI search end to end: a real engine and HTTP server, `POST /retrieve`, and a fake AI provider
that is a real HTTP server on loopback. Two-stage and AI-only retrieval, every fallback with its
visible reason, the breaker, the throttle, the cache tiers, and keys kept out of everything."""

from __future__ import annotations

import json
import logging

import pytest

from dle_desktop.ai.breaker import Throttle
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import settings_from_mapping
from tests.retrieval._support import LiveServer, note_text

from .conftest import FAKE_KEY

WORLD = {
    "Harbor.md": note_text("Harbor", ("harbor",), extra="summary: The busy harbor of the city."),
    "Lighthouse.md": note_text("Lighthouse", ("beacon",)),
    "Market.md": note_text("Market", ("market",)),
    "Smugglers.md": note_text("Smugglers", ("smuggler",)),
    "Calendar.md": note_text("Calendar", (), extra="tags: [lorebook, lorebook-always]").replace(
        "tags: [lorebook]\n", "", 1
    ),
}


def answer(*picks: tuple[str, str, str]) -> dict:
    return {"selected": [{"title": t, "confidence": c, "reason": r} for t, c, r in picks]}


def chat(*texts: str) -> list[dict]:
    out = [
        {"name": "User" if i % 2 == 0 else "Narrator", "mes": t, "is_user": i % 2 == 0}
        for i, t in enumerate(("We set out.", "The road is long.", "Onward.", "Yes.", *texts))
    ]
    return out


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "world"
    for rel, text in WORLD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def servers():
    started: list[LiveServer] = []
    yield started
    for s in started:
        s.close()


def start(
    servers, vault, tmp_path, ai_fake, *, key: str | None = FAKE_KEY, profile_values: dict | None = None, **values
) -> LiveServer:
    profile = {
        "id": "fake",
        "name": "Fake",
        "provider": "openai",
        "flavor": "custom",
        "base_url": ai_fake.url + "/v1",
        "model": "fake-model",
        **(profile_values or {}),
    }
    settings = settings_from_mapping(
        {
            "connection_profiles": [profile],
            "aiSearchEnabled": True,
            "aiSearchProfileId": "fake",
            "aiSearchTimeout": 2000,
            **values,
        }
    )
    secrets = SecretStore(use_keyring=False)
    if key:
        secrets.set("ai-profile:fake", key)
    server = LiveServer(vault, tmp_path / f"data{len(servers)}", settings, secrets=secrets)
    servers.append(server)
    return server


def titles(out: dict) -> list[str]:
    return [i["title"] for i in out["injected"]]


def no_throttle(server: LiveServer) -> None:
    server.engine.ai.throttle = Throttle(min_interval=0.0)


# -- two-stage and AI-only ----------------------------------------------------------------------


def test_a_llamacpp_profile_without_a_model_asks_the_loaded_model(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake, profile_values={"flavor": "llamacpp", "model": ""})
    ai_fake.reply(structured=answer(("Harbor", "high", "they are at the harbor")))
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert "Harbor" in titles(out) and not any("fallback" in n.lower() for n in out["notes"])
    assert "model" not in ai_fake.last.body  # the server answers with whatever it has loaded


def test_two_stage_sends_keyword_candidates_and_keeps_the_ai_picks(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    ai_fake.reply(structured=answer(("Harbor", "high", "they are at the harbor")))
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert set(titles(out)) == {"Calendar", "Harbor"}
    harbor = next(i for i in out["injected"] if i["title"] == "Harbor")
    assert harbor["matched_by"] == "harbor + AI: they are at the harbor (high)"
    market = [v for v in out["verdicts"] if v["title"] == "Market" and v["stage"] == "ai search"]
    assert market and market[0]["outcome"] == "removed"
    req = ai_fake.last
    assert req.schema_name == "lore_selection" and req.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert '<entry name="Harbor">' in req.user_text and '<entry name="Market">' in req.user_text
    assert '<entry name="Lighthouse">' not in req.user_text and '<entry name="Calendar">' not in req.user_text
    assert "1 entries are always included" in req.user_text
    assert "At the harbor the market is loud." in req.user_text
    assert "timings_ms" in out and "ai search" in out["timings_ms"]


def test_ai_only_offers_the_whole_vault(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake, aiSearchMode="ai-only")
    ai_fake.reply(
        text='Here you go:\n```json\n[{"title": "lighthouse", "confidence": "medium", "reason": "a light at sea"}]\n```'
    )
    out = s.retrieve("c1", chat("We see a light far out at sea."))
    assert set(titles(out)) == {"Calendar", "Lighthouse"}
    sent = ai_fake.last.user_text
    assert all(f'<entry name="{t}">' in sent for t in ("Harbor", "Lighthouse", "Market", "Smugglers"))


def test_fuzzy_titles_and_titles_that_are_no_candidate(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    ai_fake.reply(structured=answer(("Harbour", "high", "spelling"), ("Atlantis", "high", "made up")))
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert "Harbor" in titles(out)
    reason = next(v["reason"] for v in out["verdicts"] if v["title"] == "Harbor" and v["stage"] == "ai search")
    assert "fuzzy" in reason
    assert any("Atlantis" in n for n in out["notes"])


def test_the_confidence_threshold_drops_low_picks_with_a_reason(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake, aiConfidenceThreshold="medium")
    ai_fake.reply(structured=answer(("Harbor", "high", "here"), ("Market", "low", "maybe")))
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert "Market" not in titles(out)
    assert any("below the threshold (medium)" in v["reason"] for v in out["verdicts"] if v["title"] == "Market")


# -- fallbacks ------------------------------------------------------------------------------------


def test_an_empty_answer_falls_back_to_constants(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    ai_fake.reply(structured={"selected": []})
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert titles(out) == ["Calendar"]
    assert "the AI picked no entries; fallback: constants" in out["notes"]


@pytest.mark.parametrize("failure", ["500", "timeout", "broken", "401", "truncated"])
def test_failures_fall_back_to_keywords_with_a_visible_reason(servers, vault, tmp_path, ai_fake, failure):
    s = start(servers, vault, tmp_path, ai_fake, aiSearchTimeout=1000)
    {
        "500": lambda: ai_fake.fail(500),
        "timeout": lambda: ai_fake.slow(3.0),
        "broken": ai_fake.broken_json,
        "401": lambda: ai_fake.fail(401),
        "truncated": ai_fake.truncated,
    }[failure]()
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert set(titles(out)) == {"Calendar", "Harbor", "Market"}
    note = next(n for n in out["notes"] if n.startswith("AI search failed:"))
    assert note.endswith("fallback: keyword") and FAKE_KEY not in json.dumps(out)


def test_an_unreadable_answer_falls_back_and_trips_the_breaker(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.reply(text="I think the harbor is nice, but I will not answer in JSON.")
    ai_fake.reply(text="Still no JSON here, sorry.")
    for i in range(2):
        out = s.retrieve(f"c{i}", chat(f"At the harbor the market is loud {i}."))
        assert any("could not be read" in n for n in out["notes"])
    assert s.engine.ai.breaker.state == "open"


# -- breaker and throttle -----------------------------------------------------------------------


def test_two_server_errors_open_the_breaker_and_the_third_call_is_not_made(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.fail(500)
    ai_fake.fail(503)
    for i in range(2):
        s.retrieve(f"c{i}", chat(f"At the harbor the market is loud {i}."))
    assert len(ai_fake.requests) == 2
    out = s.retrieve("c3", chat("At the harbor the market is loud again."))
    assert len(ai_fake.requests) == 2  # no call while open
    assert any("circuit breaker open" in n for n in out["notes"])
    assert set(titles(out)) == {"Calendar", "Harbor", "Market"}
    ai = s.client.get("/api/dle/v1/ai").json()
    assert ai["breaker"]["state"] == "open"
    assert s.client.post("/api/dle/v1/ai/breaker/reset").status_code == 200
    ai_fake.reply(structured=answer(("Harbor", "high", "ok")))
    out = s.retrieve("c4", chat("At the harbor the market is loud now."))
    assert set(titles(out)) == {"Calendar", "Harbor"} and len(ai_fake.requests) == 3


@pytest.mark.parametrize("status", [429, 401, 403])
def test_rate_limits_and_auth_errors_never_trip_the_breaker(servers, vault, tmp_path, ai_fake, status):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    for i in range(3):
        ai_fake.fail(status)
        s.retrieve(f"c{i}", chat(f"At the harbor the market is loud {i}."))
    assert s.engine.ai.breaker.state == "closed" and len(ai_fake.requests) == 3


def test_half_open_lets_exactly_one_probe_through(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    clock = [1000.0]
    from dle_desktop.ai.breaker import CircuitBreaker

    s.engine.ai.breaker = CircuitBreaker(now=lambda: clock[0])
    ai_fake.fail(500)
    ai_fake.fail(500)
    for i in range(2):
        s.retrieve(f"c{i}", chat(f"At the harbor the market is loud {i}."))
    clock[0] += 31
    assert s.engine.ai.breaker.state == "half-open"
    ai_fake.reply(structured=answer(("Harbor", "high", "probe ok")))
    out = s.retrieve("probe", chat("At the harbor the market is loud, probe."))
    assert set(titles(out)) == {"Calendar", "Harbor"} and s.engine.ai.breaker.state == "closed"


def test_calls_closer_than_half_a_second_are_throttled(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    clock = [50.0]
    s.engine.ai.throttle = Throttle(now=lambda: clock[0])
    ai_fake.default(lambda req: answer(("Harbor", "high", "ok")))
    s.retrieve("same", chat("At the harbor the market is loud 1."))
    # a smuggler makes another manifest: a cache miss that would call again
    out = s.retrieve("same", chat("At the harbor the market is loud; a smuggler waves."))
    assert any("throttled" in n for n in out["notes"]) and len(ai_fake.requests) == 1
    assert s.engine.ai.breaker.state == "closed"
    clock[0] += 0.6
    s.retrieve("same", chat("At the harbor the market is loud; a smuggler waves."))
    assert len(ai_fake.requests) == 2


# -- cache ------------------------------------------------------------------------------------------


def test_the_same_chat_again_is_answered_from_the_cache(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.reply(structured=answer(("Harbor", "high", "here")))
    msgs = chat("At the harbor the market is loud.")
    s.retrieve("c1", msgs, dry_run=True)
    again = s.retrieve("c1", msgs, dry_run=True)
    assert len(ai_fake.requests) == 1
    assert set(titles(again)) == {"Calendar", "Harbor"}
    assert any("from the cache (exact)" in v["reason"] for v in again["verdicts"] if v["title"] == "Harbor")
    usage = s.client.get("/api/dle/v1/ai").json()["channels"]["ai_search"]["usage"]
    assert usage["calls"] == 1 and usage["cache_hits"] == 1
    assert s.client.post("/api/dle/v1/ai/cache/clear").status_code == 200
    s.retrieve("c1", msgs, dry_run=True)
    assert len(ai_fake.requests) == 2


def test_a_forced_sync_that_changes_nothing_keeps_the_index_version_and_the_ai_cache(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.reply(structured=answer(("Harbor", "high", "here")))
    msgs = chat("At the harbor the market is loud.")
    s.retrieve("c1", msgs, dry_run=True)
    version = s.client.get("/api/dle/v1/status").json()["index_version"]
    assert s.client.post("/api/dle/v1/sync?force=1").json()["changes"]["has_changes"] is False
    assert s.client.get("/api/dle/v1/status").json()["index_version"] == version
    again = s.retrieve("c1", msgs, dry_run=True)
    assert len(ai_fake.requests) == 1
    assert any("from the cache (exact)" in v["reason"] for v in again["verdicts"] if v["title"] == "Harbor")
    # A real edit still makes a new index version.
    (vault / "Market.md").write_text(WORLD["Market.md"].replace("place of note", "loud place"), encoding="utf-8")
    s.client.post("/api/dle/v1/sync?force=1")
    assert s.client.get("/api/dle/v1/status").json()["index_version"] != version


# -- offline, unset channel, connection test, secrets ---------------------------------------------


def test_offline_makes_no_call_and_says_so(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    s.engine.ai.offline = True
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert ai_fake.requests == [] and any("--ai-offline" in n for n in out["notes"])


def test_a_channel_without_a_profile_falls_back_with_what_to_set(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake, aiSearchProfileId="")
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert any("AI search is not set up: no connection profile chosen" in n for n in out["notes"])


def test_channel_connection_test_through_the_api(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    ai_fake.reply(text="OK")
    r = s.client.post("/api/dle/v1/ai/channels/scribe/test")
    assert r.status_code == 200 and r.json()["ok"] is True
    assert ai_fake.last.user_text == "ping"
    ai_fake.fail(401)
    bad = s.client.post("/api/dle/v1/ai/channels/ai_search/test").json()
    assert bad["ok"] is False and "401" in bad["message"] and FAKE_KEY not in bad["message"]
    assert s.client.post("/api/dle/v1/ai/channels/nope/test").status_code == 404


def test_the_key_never_reaches_settings_logs_or_answers(servers, vault, tmp_path, ai_fake, caplog):
    caplog.set_level(logging.DEBUG)
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.fail(500, body={"error": {"message": f"bad key {FAKE_KEY}"}})
    out = s.retrieve("c1", chat("At the harbor the market is loud."))
    assert FAKE_KEY not in json.dumps(out)
    assert FAKE_KEY not in caplog.text
    assert FAKE_KEY not in json.dumps(s.client.get("/api/dle/v1/ai").json())
    assert FAKE_KEY not in json.dumps(s.settings.to_json())
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".log", ".txt"):
            assert FAKE_KEY not in f.read_text(encoding="utf-8", errors="replace"), f


def test_a_hang_is_cancelled_when_the_caller_gives_up(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake, aiSearchTimeout=60000)
    ai_fake.hang()
    from dle_desktop.core.pipeline.chat_input import parse_chat_document

    doc = parse_chat_document({"chat_id": "c1", "messages": chat("At the harbor the market is loud.")})
    future = s.thread.submit(s.engine.retrieval.retrieve(doc))
    assert _wait(lambda: ai_fake.waiting == 1)
    future.cancel()
    assert ai_fake.wait_for_disconnect(timeout=5.0)


def _wait(pred, timeout: float = 10.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_a_new_message_that_names_nothing_new_reuses_the_answer(servers, vault, tmp_path, ai_fake):
    """The keyword-stable tier: same manifest, no new candidate, so the AI is not asked again."""
    s = start(servers, vault, tmp_path, ai_fake)
    no_throttle(s)
    ai_fake.reply(structured=answer(("Harbor", "high", "here")))
    s.retrieve("c1", chat("At the harbor the market is loud."))
    out = s.retrieve("c1", chat("At the harbor the market is loud.", "The gulls cry.", "We wait at the harbor market."))
    assert len(ai_fake.requests) == 1
    reason = next(v["reason"] for v in out["verdicts"] if v["title"] == "Harbor" and v["stage"] == "ai search")
    assert "from the cache (keyword-stable)" in reason


def test_the_category_pre_filter_narrows_a_large_vault(servers, tmp_path, ai_fake):
    root = tmp_path / "big"
    categories = ("people", "places", "ships", "magic", "trade")
    for c in categories:
        for i in range(10):
            path = root / f"{c}-{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                note_text(f"{c.title()} {i}", (f"{c}{i}",)).replace("tags: [lorebook]", f"tags: [lorebook, {c}]"),
                encoding="utf-8",
            )
    s = start(
        servers,
        root,
        tmp_path,
        ai_fake,
        aiSearchMode="ai-only",
        hierarchicalPreFilter=True,
        hierarchicalAggressiveness=0.8,
    )
    no_throttle(s)

    def respond(req):
        if req.schema_name == "category_selection":
            return {"categories": ["ships"]}
        return answer(("Ships 3", "high", "the ship"))

    ai_fake.default(respond)
    out = s.retrieve("c1", chat("We board the ship at dawn."))
    assert [r.schema_name for r in ai_fake.requests] == ["category_selection", "lore_selection"]
    sent = ai_fake.requests[1].user_text
    assert '<entry name="Ships 3">' in sent and '<entry name="People 1">' not in sent
    assert titles(out) == ["Ships 3"]
    assert any(n.startswith("category pre-filter: 10 of 50 candidates in ships") for n in out["notes"])


def test_test_a_chat_can_run_with_ai_on_for_one_dry_run(servers, vault, tmp_path, ai_fake):
    from dle_desktop.core.pipeline.chat_input import parse_chat_document

    s = start(servers, vault, tmp_path, ai_fake, aiSearchEnabled=False)
    ai_fake.reply(structured=answer(("Market", "medium", "shopping")))
    doc = parse_chat_document(chat("At the harbor the market is loud."))
    gens = s.thread.call(s.engine.test_chat(doc, ai_mode="two-stage"), timeout=30)
    assert {i["title"] for i in gens[0]["injected"]} == {"Calendar", "Market"}
    plain = s.thread.call(s.engine.test_chat(doc), timeout=30)
    assert {i["title"] for i in plain[0]["injected"]} == {"Calendar", "Harbor", "Market"}
    assert len(ai_fake.requests) == 1
    assert s.client.get("/api/dle/v1/chats/c1").json()["generation_count"] == 0  # a dry run stores nothing


def test_usage_counts_survive_a_restart_and_a_damaged_file_costs_only_the_counts(servers, vault, tmp_path, ai_fake):
    s = start(servers, vault, tmp_path, ai_fake)
    ai_fake.reply(structured=answer(("Harbor", "high", "here")))
    s.retrieve("c1", chat("At the harbor the market is loud."))
    before = s.client.get("/api/dle/v1/ai").json()["channels"]["ai_search"]["usage"]
    assert before["calls"] == 1 and before["input_tokens"] > 0
    s.restart()
    after = s.client.get("/api/dle/v1/ai").json()["channels"]["ai_search"]["usage"]
    assert (after["calls"], after["input_tokens"]) == (1, before["input_tokens"])
    s.close()
    (s.data / "ai-usage.json").write_text("{not json", encoding="utf-8")
    s._start()
    assert s.client.get("/api/dle/v1/ai").json()["channels"]["ai_search"]["usage"]["calls"] == 0


def test_decay_hints_mark_an_entry_injected_again_and_again(servers, vault, tmp_path, ai_fake):
    s = start(
        servers, vault, tmp_path, ai_fake, decayEnabled=True, decayPenaltyThreshold=2, stripDuplicateInjections=False
    )
    no_throttle(s)
    ai_fake.default(lambda req: answer(("Harbor", "high", "here")))
    turns: list[str] = []
    for i in range(3):  # a growing chat: each request is a new generation, not a swipe
        turns += [f"At the harbor the market is loud, turn {i}.", "The narrator nods."]
        s.retrieve("c1", chat(*turns[:-1]))
    manifest = ai_fake.requests[-1].user_text
    harbor = manifest[manifest.index('<entry name="Harbor">') :].split("</entry>")[0]
    market = manifest[manifest.index('<entry name="Market">') :].split("</entry>")[0]
    assert "[FREQUENT" in harbor and "[FREQUENT" not in market
