"""POST /api/dle/v1/retrieve on a live server: the generation object, state carried between calls
(cooldown, strip-dedup), dry runs, seeds, swipe rollback, isolation between chats, and
serialisation of concurrent requests for one chat."""

from __future__ import annotations

import asyncio

import httpx

from ._support import API, dump, messages, titles, verdicts_for

SCRIPT = (
    "I ring the bell and call for tamsin.",
    "Tamsin hears the bell from the water.",
    "The bell again; tamsin frowns.",
    "Tamsin and the bell, once more.",
)


def _without_timings(gen: dict) -> dict:
    return {k: v for k, v in gen.items() if k != "timings_ms"}


def test_generation_object_shape(server):
    gen = server.retrieve("shape", messages("Tamsin walks along the quay."))
    assert set(gen) >= {"injected", "groups", "total_tokens", "verdicts", "timings_ms"}
    assert sorted(titles(gen)) == ["Lantern Quay", "Tamsin Reed"]
    for inj in gen["injected"]:
        assert {"title", "vault", "tokens", "truncated"} <= set(inj)
        assert inj["vault"] == "lore" and inj["truncated"] is False and inj["tokens"] > 0
    assert {i["title"]: i["matched_by"] for i in gen["injected"]} == {"Lantern Quay": "quay", "Tamsin Reed": "tamsin"}
    assert gen["total_tokens"] == sum(i["tokens"] for i in gen["injected"])
    assert len(gen["groups"]) == 1
    g = gen["groups"][0]
    assert {"position", "depth", "role", "text"} <= set(g)
    assert (g["position"], g["depth"], g["role"]) == (1, 4, 0)  # DLE's defaults: in chat, depth 4, system
    assert "<Lantern Quay>" in g["text"] and "<Tamsin Reed>" in g["text"]
    assert g["text"].index("<Tamsin Reed>") < g["text"].index("<Lantern Quay>")  # priority 20 before 100
    for v in gen["verdicts"]:
        assert set(v) >= {"title", "stage", "outcome", "reason"} and v["reason"]
    assert ("keywords", "matched", "key 'tamsin' in the last 4 messages") in verdicts_for(gen, "Tamsin Reed")
    assert [o for _, o, _ in verdicts_for(gen, "Tamsin Reed")][-1] == "injected"
    assert all(isinstance(ms, (int, float)) and ms >= 0 for ms in gen["timings_ms"].values())
    assert "total" in gen["timings_ms"]
    assert gen["skipped_reason"] is None and gen["swipe_rollback"] is False


def test_nothing_matches_gives_an_empty_generation(server):
    gen = server.retrieve("empty", messages("Nothing of note happens."))
    assert gen["injected"] == [] and gen["groups"] == [] and gen["total_tokens"] == 0
    assert server.state("empty")["generation_count"] == 1


def test_cooldown_and_strip_dedup_across_calls(server):
    """Bell has cooldown 2; Tamsin is stripped as a duplicate for strip_lookback_depth (2) generations."""
    gens = [server.retrieve("run", messages(*SCRIPT[: i + 1])) for i in range(4)]
    # 1st: both in.
    assert sorted(titles(gens[0])) == ["Drowned Bell", "Tamsin Reed"]
    # 2nd: the bell cools down, Tamsin's identical text was injected one generation ago.
    assert titles(gens[1]) == []
    assert ("keywords", "skipped", "on cooldown: 2 more generations") in verdicts_for(gens[1], "Drowned Bell")
    assert any(
        st == "strip duplicates" and o == "removed" and "1 generation(s) ago" in r
        for st, o, r in verdicts_for(gens[1], "Tamsin Reed")
    )
    # 3rd: one more generation of cooldown; the look-back of 2 still sees the first injection.
    assert titles(gens[2]) == []
    assert ("keywords", "skipped", "on cooldown: 1 more generation") in verdicts_for(gens[2], "Drowned Bell")
    assert any(
        st == "strip duplicates" and "2 generation(s) ago" in r for st, _, r in verdicts_for(gens[2], "Tamsin Reed")
    )
    # 4th: both again.
    assert sorted(titles(gens[3])) == ["Drowned Bell", "Tamsin Reed"]
    state = server.state("run")
    assert state["generation_count"] == 4
    assert state["cooldowns"] == {"lore:Drowned Bell": 2}
    assert state["counts"] == {"lore:Drowned Bell": 2, "lore:Tamsin Reed": 2}
    # DLE's analytics: `matched` counts the post-dedup set, so stripped generations do not count.
    tamsin = dict(state["analytics"]["lore:Tamsin Reed"])
    assert tamsin.pop("last_injected_at") > 0  # when it last reached a prompt (Unix time)
    assert tamsin == {"matched": 2, "injected": 2, "last_triggered": 3}


def test_state_after_each_call(server):
    counts = []
    for i in range(3):
        server.retrieve("step", messages(*SCRIPT[: i + 1]))
        st = server.state("step")
        counts.append((st["generation_count"], st["cooldowns"]))
    assert counts == [(1, {"lore:Drowned Bell": 2}), (2, {"lore:Drowned Bell": 1}), (3, {})]


def test_dry_run_changes_nothing_and_predicts_the_real_call(server):
    server.retrieve("dry", messages(SCRIPT[0]))
    before = server.everything("dry")
    dry = server.retrieve("dry", messages(*SCRIPT[:2]), dry_run=True, seed=5)
    assert server.everything("dry") == before
    dry_again = server.retrieve("dry", messages(*SCRIPT[:2]), dryRun=True, seed=5)  # camelCase too
    assert server.everything("dry") == before
    assert dump(_without_timings(dry)) == dump(_without_timings(dry_again))
    # It saw the chat's state: the bell is cooling, Tamsin is a duplicate.
    assert titles(dry) == []
    assert verdicts_for(dry, "Drowned Bell")[0][1] == "skipped"
    real = server.retrieve("dry", messages(*SCRIPT[:2]), seed=5)
    assert dry["record"] is None and real["record"] == 2  # only the real call saves a decision record
    assert dump(_without_timings(real) | {"record": None}) == dump(_without_timings(dry))
    assert server.state("dry")["generation_count"] == 2


def test_dry_run_on_a_new_chat_creates_nothing(server):
    server.retrieve("ghost", messages("tamsin"), dry_run=True, pins=["Omen"], notebook="x")
    st = server.state("ghost")
    assert st["generation_count"] == 0 and st["pins"] == [] and st["notebook"] == ""
    assert server.records("ghost") == []
    with server.db() as db:
        assert db.execute("SELECT COUNT(*) FROM chats WHERE chat_id = 'ghost'").fetchone()[0] == 0


def test_seed_makes_probability_reproducible(server):
    msgs = messages("An omen on the water.")

    def outcome(chat: str, seed: int) -> str:
        gen = server.retrieve(chat, msgs, seed=seed, dry_run=True)
        return dump(_without_timings(gen))

    for seed in (1, 2, 3):
        assert outcome("s1", seed) == outcome("s1", seed) == outcome("s2", seed)
    # The 50 % entry goes both ways over a few seeds, and the verdict shows the roll.
    results = {}
    for seed in range(12):
        gen = server.retrieve("s3", msgs, seed=seed, dry_run=True)
        results[seed] = "Omen" in titles(gen)
        if not results[seed]:
            ((stage, outcome_, reason),) = verdicts_for(gen, "Omen")
            assert (stage, outcome_) == ("keywords", "skipped") and reason.startswith("probability 0.5: rolled")
    assert set(results.values()) == {True, False}


def test_same_slot_regeneration_and_swipe_roll_back(server):
    first = server.retrieve("sw", messages(SCRIPT[0]))
    assert sorted(titles(first)) == ["Drowned Bell", "Tamsin Reed"]
    after_first = server.state("sw")
    second = server.retrieve("sw", messages(*SCRIPT[:2]))
    assert titles(second) == []
    after_second = server.state("sw")
    assert after_second["generation_count"] == 2
    # Regenerating the same message slot (no `swipe` flag) rolls the last generation back first.
    regen = server.retrieve("sw", messages(*SCRIPT[:2]))
    assert regen["swipe_rollback"] is True
    assert dump(_without_timings({**regen, "swipe_rollback": False})) == dump(_without_timings(second))
    assert server.state("sw") == after_second
    # A new swipe id on the same message is a swipe: explicit `swipe: true` rolls back too.
    swiped = messages(*SCRIPT[:2])
    swiped[-1]["swipe_id"] = 1
    gen = server.retrieve("sw", swiped, swipe=True)
    assert gen["swipe_rollback"] is True and titles(gen) == []
    assert server.state("sw")["generation_count"] == 2
    # `swipe: false` never rolls back: the same slot counts as a new generation.
    gen = server.retrieve("sw", swiped, swipe=False)
    assert gen["swipe_rollback"] is False
    assert server.state("sw")["generation_count"] == 3
    # Rolling back restores counts as they were after the first generation, then re-adds.
    assert after_first["counts"] == {"lore:Drowned Bell": 1, "lore:Tamsin Reed": 1}


def test_swipe_true_rolls_back_the_first_generation(server):
    server.retrieve("sw1", messages(SCRIPT[0]))
    gen = server.retrieve("sw1", messages(SCRIPT[0]), swipe=True)
    assert gen["swipe_rollback"] is True
    # Rolled back to a fresh chat: nothing is on cooldown or a duplicate, so the same entries come back.
    assert sorted(titles(gen)) == ["Drowned Bell", "Tamsin Reed"]
    st = server.state("sw1")
    assert st["generation_count"] == 1 and st["counts"] == {"lore:Drowned Bell": 1, "lore:Tamsin Reed": 1}
    assert [r["gen"] for r in server.records("sw1")] == [1]


def test_chats_never_see_each_others_state(server):
    text = "tamsin rings the bell at the quay; eels everywhere"
    server.put("A", "pins", "pins", ["Hidden Archive"])
    server.put("A", "blocks", "blocks", ["Lantern Quay"])
    server.put("A", "context", "context", {"era": "Founding"})
    server.put("A", "folder-filter", "folder_filter", ["Artifacts", "Places", "History"])
    a = server.retrieve("A", messages(text))
    assert sorted(titles(a)) == ["Drowned Bell", "Hidden Archive"]
    assert verdicts_for(a, "Eel Year")[-1][:2] == ("contextual gating", "removed")
    assert verdicts_for(a, "Tamsin Reed")[-1][:2] == ("folder filter", "removed")
    assert verdicts_for(a, "Lantern Quay")[-1][:2] == ("blocks", "removed")
    assert server.state("A")["cooldowns"] == {"lore:Drowned Bell": 2}
    # B, same chat text: none of A's pins, blocks, context, folder filter or cooldowns.
    server.put("B", "pins", "pins", ["Omen"])
    b = server.retrieve("B", messages(text))
    assert sorted(titles(b)) == ["Drowned Bell", "Eel Year", "Lantern Quay", "Omen", "Tamsin Reed"]
    assert verdicts_for(b, "Hidden Archive") == []
    st_b = server.state("B")
    assert st_b["pins"] == ["Omen"] and st_b["blocks"] == [] and st_b["context"] == {}
    assert st_b["folder_filter"] is None and st_b["generation_count"] == 1
    # A's next generation sees only A's state: its own cooldown, not B's pin.
    a2 = server.retrieve("A", messages(text, "the bell tolls on"))
    assert "Omen" not in titles(a2) and "Hidden Archive" in titles(a2)
    assert ("keywords", "skipped", "on cooldown: 2 more generations") in verdicts_for(a2, "Drowned Bell")
    st_a = server.state("A")
    assert (
        st_a["generation_count"] == 2 and st_a["pins"] == ["Hidden Archive"] and st_a["context"] == {"era": "Founding"}
    )
    assert server.state("B")["generation_count"] == 1
    # Chat ids are exact: another case is another chat, surrounding spaces are refused (not trimmed).
    assert server.state("a")["generation_count"] == 0
    assert server.client.get(f"{API}/chats/%20A%20").status_code == 400


def test_concurrent_requests_for_one_chat_are_serialised(server):
    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:

            async def post(chat: str, text: str):
                # swipe: false, so that every call counts (no same-slot rollback) whatever the order.
                return await client.post(
                    f"{API}/retrieve", json={"chat_id": chat, "messages": messages(text), "swipe": False}
                )

            calls = [post("busy", "the bell and tamsin") for _ in range(20)]
            calls += [post(f"other-{i % 4}", "tamsin at the quay") for i in range(12)]
            return await asyncio.gather(*calls)

    responses = asyncio.run(main())
    assert [r.status_code for r in responses] == [200] * 32
    st = server.state("busy")
    assert st["generation_count"] == 20
    assert [r["gen"] for r in server.records("busy")] == list(range(20, 0, -1))  # no lost or doubled update
    # One bell injection per cooldown cycle of 3: generations 1, 4, 7, ... → 7 of 20, as sequential calls give.
    assert st["analytics"]["lore:Drowned Bell"]["injected"] == 7
    assert st["analytics"]["lore:Drowned Bell"]["matched"] == 7
    for i in range(4):
        assert server.state(f"other-{i}")["generation_count"] == 3


def test_a_busy_chat_does_not_block_other_chats(server):
    """Hold chat A's lock on the engine loop: B's request completes, A's waits, then A completes."""

    async def take():
        held_lock = server.engine.retrieval._lock("held")
        await held_lock.acquire()
        return held_lock

    lock = server.thread.call(take(), timeout=10)  # a strong reference keeps it in the weak table
    released = False
    try:

        async def main():
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                body = {"messages": messages("tamsin at the quay")}
                held = asyncio.create_task(client.post(f"{API}/retrieve", json={"chat_id": "held", **body}))
                free = await client.post(f"{API}/retrieve", json={"chat_id": "free", **body})
                assert free.status_code == 200 and sorted(titles(free.json())) == ["Lantern Quay", "Tamsin Reed"]
                free_state = await client.get(f"{API}/chats/free")
                assert free_state.json()["generation_count"] == 1
                assert not held.done()
                nonlocal released
                server.thread.loop.call_soon_threadsafe(lock.release)
                released = True
                return await held

        held = asyncio.run(main())
    finally:
        if not released:
            server.thread.loop.call_soon_threadsafe(lock.release)
    assert held.status_code == 200
    assert server.state("held")["generation_count"] == 1


def test_sample_vault_retrieval(sample_copy, start_server):
    s = start_server(sample_copy)
    gen = s.retrieve("sample", messages("We step off the ferry at Lantern Quay and Tamsin waves."), seed=1)
    t = titles(gen)
    assert "Tamsin Reed" in t and "Lantern Quay" in t
    assert any(i["matched_by"] == "(constant)" for i in gen["injected"])
    assert gen["total_tokens"] <= 3072
    guides = {e["title"] for e in s.client.get(f"{API}/entries").json()["entries"] if e["guide"]}
    assert guides and not guides & set(t)  # guide entries never reach the writing prompt


def test_distinct_slots_concurrently_all_count(server):
    """20 concurrent requests with chats of 1..20 messages (no swipe flag): each is its own slot."""

    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            return await asyncio.gather(
                *[
                    client.post(f"{API}/retrieve", json={"chat_id": "slots", "messages": messages(*["tamsin"] * n)})
                    for n in range(1, 21)
                ]
            )

    assert [r.status_code for r in asyncio.run(main())] == [200] * 20
    assert server.state("slots")["generation_count"] == 20
    assert len(server.records("slots")) == 20


def test_per_chat_locks_do_not_pile_up(server):
    for i in range(30):
        server.state(f"chat-{i}")
        server.retrieve(f"chat-{i}", messages("tamsin"))

    async def live_locks() -> int:
        import gc

        gc.collect()
        return len(server.engine.retrieval._locks)

    assert server.thread.call(live_locks(), timeout=10) == 0
