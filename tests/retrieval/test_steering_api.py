"""Steering a chat by name over HTTP (routes_steer): the vault's fields and folders, a gating field or
folder filter checked against the vault (a name it does not have changes nothing), the lore each
reply was written with (kept per swipe, across a restart), analytics, the keyword replay, and the
window request. A real engine and server on loopback, a small vault written to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import API, LiveServer, messages, note_text, titles


def _vault(root: Path) -> Path:
    notes = {
        "Places/Harbor.md": note_text("Harbor", ["harbor"], extra="location: Harbor"),
        "Places/Mill.md": note_text("Mill", ["mill"], extra="location: [Mill]"),
        "Places/Deep/Well.md": note_text("Well", ["well"]),
        "People/Tamsin.md": note_text("Tamsin", ["tamsin"], extra="era: Founding"),
        "People/Old Eel.md": note_text("Old Eel", ["eel"]),
    }
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def steer(tmp_path, start_server) -> LiveServer:
    return start_server(_vault(tmp_path / "vault"))


CHAT = "group/tavern 1"


def _chat(path: str) -> str:
    return f"{API}/chats/{CHAT.replace('/', '%2F')}/{path}"


def test_fields_list_the_values_the_notes_use_and_what_each_lets_through(steer):
    fields = {f["name"]: f for f in steer.client.get(f"{API}/fields").json()["fields"]}
    assert set(fields) == {"era", "location", "scene_type", "character_present"}
    location = {v["value"]: v for v in fields["location"]["used_values"]}
    assert set(location) == {"Harbor", "Mill"}
    # Set to Harbor: the Mill note is held back, the three notes without a location pass.
    assert location["Harbor"] == {"value": "Harbor", "entries": 1, "lets_through": 4}
    assert fields["location"]["entries_with_field"] == 2


def test_folders_count_notes_in_each_folder_and_below(steer):
    folders = {f["path"]: f["entries"] for f in steer.client.get(f"{API}/folders").json()["folders"]}
    assert folders == {"People": 2, "Places": 3, "Places/Deep": 1}


def test_setting_a_field_gates_the_next_generation_and_clearing_lets_it_back(steer):
    c = steer.client
    r = c.post(_chat("context-field"), json={"field": "location", "value": "Mill"})
    assert r.status_code == 200, r.text
    assert r.json()["context"] == {"location": ["Mill"]}
    gen = steer.retrieve(CHAT, messages("the harbor and the mill"))
    assert "Harbor" not in titles(gen) and "Mill" in titles(gen)
    assert any(v["title"] == "Harbor" and v["stage"] == "contextual gating" for v in gen["verdicts"])

    assert c.post(_chat("context-field"), json={"field": "location", "value": "Harbor, Mill"}).json()["value"] == [
        "Harbor",
        "Mill",
    ]
    assert c.post(_chat("context-field"), json={"field": "location", "value": None}).json()["context"] == {}
    gen = steer.retrieve(CHAT, messages("the harbor and the mill"))
    assert {"Harbor", "Mill"} <= set(titles(gen))


def test_an_unknown_field_is_refused_by_name_and_changes_nothing(steer):
    c = steer.client
    c.post(_chat("context-field"), json={"field": "era", "value": "Founding"})
    r = c.post(_chat("context-field"), json={"field": "weather", "value": "rain"})
    assert r.status_code == 404
    assert "weather" in r.json()["error"] and "location" in r.json()["error"] and "era" in r.json()["error"]
    assert steer.state(CHAT)["context"] == {"era": ["Founding"]}


def test_a_bad_body_is_a_400_that_says_what_to_send(steer):
    for body in ({"value": "x"}, {"field": "", "value": "x"}, {"field": "era", "value": 5}, {"field": "era", "x": 1}):
        r = steer.client.post(_chat("context-field"), json=body)
        assert r.status_code == 400, body
        assert r.json()["error"]
    assert steer.state(CHAT)["context"] == {}


def test_the_folder_filter_takes_only_folders_the_vault_has(steer):
    c = steer.client
    r = c.put(_chat("folders"), json={"folders": ["places/deep", "People/"]})
    assert r.status_code == 200, r.text
    assert r.json() == {"folder_filter": ["Places/Deep", "People"]}
    gen = steer.retrieve(CHAT, messages("tamsin at the well by the harbor"))
    assert set(titles(gen)) == {"Tamsin", "Well"}

    r = c.put(_chat("folders"), json={"folders": ["Places", "Attic"]})
    assert r.status_code == 404
    assert "Attic" in r.json()["error"] and "People" in r.json()["error"]
    assert steer.state(CHAT)["folder_filter"] == ["Places/Deep", "People"]

    assert c.put(_chat("folders"), json={"folders": []}).json() == {"folder_filter": None}


def test_each_swipe_keeps_the_lore_it_was_written_with_across_a_restart(steer):
    c = steer.client
    first = steer.retrieve(CHAT, messages("the harbor"))
    assert first["record"] is not None
    r = c.put(_chat("sources"), json={"message": 1, "swipe": 0, "record": first["record"]})
    assert r.status_code == 200, r.text
    assert r.json()["changes"] is None  # the first reply on record

    swiped = steer.retrieve(CHAT, messages("the harbor"), swipe=True)
    assert swiped["record"] == first["record"]  # a swipe rolls the count back and writes it again
    c.post(_chat("context-field"), json={"field": "location", "value": "Mill"})
    c.put(_chat("sources"), json={"message": 1, "swipe": 1, "record": swiped["record"]})

    reply = steer.retrieve(CHAT, messages("the harbor", "ok", "tamsin by the mill"))
    linked = c.put(_chat("sources"), json={"message": 3, "swipe": 0, "record": reply["record"]}).json()
    assert linked["changes"] == {
        "added": [t for t in titles(reply) if t not in titles(swiped)],
        "dropped": [t for t in titles(swiped) if t not in titles(reply)],
    }

    steer.restart()
    c = steer.client
    zero = c.get(_chat("sources"), params={"message": 1, "swipe": 0}).json()
    assert zero["injected"] == titles(first) and zero["swipe"] == 0
    assert [s["title"] for s in zero["sources"]] == titles(first)
    assert zero["sources"][0]["matched_by"] == first["injected"][0]["matched_by"]
    assert c.get(_chat("sources"), params={"message": 1, "swipe": 1}).json()["injected"] == titles(swiped)


def test_sources_that_are_not_on_record_get_a_404_in_words(steer):
    c = steer.client
    r = c.get(_chat("sources"), params={"message": 7})
    assert r.status_code == 404 and "message 7" in r.json()["error"]
    r = c.put(_chat("sources"), json={"message": 1, "swipe": 0, "record": 99})
    assert r.status_code == 404 and "no longer kept" in r.json()["error"]
    assert c.get(_chat("sources"), params={"message": "x"}).status_code == 400


def test_analytics_count_every_injection_and_list_the_entries_never_injected(steer):
    here = [
        steer.retrieve(CHAT, messages("the harbor")),
        steer.retrieve(CHAT, messages("the harbor", "yes", "tamsin and the harbor again")),
    ]
    there = [steer.retrieve("another", messages("the harbor and tamsin"))]
    mine = [t for g in here for t in titles(g)]
    everywhere = mine + [t for g in there for t in titles(g)]
    assert everywhere.count("Harbor") >= 2  # the count below is a sum, not a yes/no
    table = steer.client.get(f"{API}/analytics", params={"chat_id": CHAT}).json()
    rows = {r["title"]: r for r in table["entries"]}
    for title, row in rows.items():
        assert row["injected"] == everywhere.count(title), title
        assert row["chat"]["injected"] == mine.count(title), title
        assert (row["last_injected_at"] is None) == (title not in everywhere), title
    assert rows["Tamsin"]["last_injected_at"] >= rows["Harbor"]["last_injected_at"] > 0
    assert table["chats"] == 2
    assert table["never_injected"] == len(rows) - len(set(everywhere)) == 3
    injected = [r["injected"] for r in table["entries"]]
    assert injected == sorted(injected, reverse=True)  # most injected first


def test_simulate_replays_each_message_with_keywords_and_the_chats_own_gating(steer):
    steer.client.post(_chat("context-field"), json={"field": "location", "value": "Mill"})
    body = {"chat_id": CHAT, "messages": messages("the harbor", "tamsin walks", "the mill")}
    steps = steer.client.post(f"{API}/simulate", json=body).json()["steps"]
    assert [s["message"] for s in steps] == [0, 1, 2]
    assert steps[0]["injected"] == []  # Harbor is gated out by the chat's location
    assert "Tamsin" in steps[1]["added"]
    assert "Mill" in steps[2]["added"]
    assert steer.state(CHAT)["generation_count"] == 0  # nothing was saved


def test_showing_a_view_needs_a_window(steer):
    r = steer.client.post(f"{API}/app/show", json={"view": "graph"})
    assert r.status_code == 409 and "serve" in r.json()["error"]
    shown: list[dict] = []
    detach = steer.engine.window.attach(shown.append)
    assert steer.client.post(f"{API}/app/show", json={"view": "vault", "entry": "Mill"}).json()["shown"] is True
    assert shown == [{"view": "vault", "entry": "Mill"}]
    detach()
    assert steer.client.post(f"{API}/app/show", json={"view": "sideways"}).status_code == 400


def test_summarize_optimize_keys_and_a_note_are_asked_of_the_window(steer):
    """/dle-summarize, /dle-optimize-keys <entry>, /dle-scribe-history's Open: the window is asked
    (its Librarian proposes, the user reviews there); an unknown entry is a 404 and nothing is asked."""
    shown: list[dict] = []
    detach = steer.engine.window.attach(shown.append)
    try:
        for body in (
            {"view": "librarian", "mode": "summarize"},
            {"view": "librarian", "mode": "optimize-keys", "entry": "mill"},
            {"view": "vault", "vault": "lore", "path": "Sessions/Ann - 2026-01-01 10-00-00.md"},
            {"view": "librarian", "suggestion": "abc123"},
        ):
            r = steer.client.post(f"{API}/app/show", json=body)
            assert r.status_code == 200, (body, r.text)
        assert shown == [
            {"view": "librarian", "mode": "summarize"},
            {"view": "librarian", "mode": "optimize-keys", "entry": "mill"},
            {"view": "vault", "vault": "lore", "path": "Sessions/Ann - 2026-01-01 10-00-00.md"},
            {"view": "librarian", "suggestion": "abc123"},
        ]
        for body, status, words in (
            ({"view": "librarian", "mode": "optimize-keys", "entry": "No Such Entry"}, 404, "no entry is titled"),
            ({"view": "librarian", "mode": "optimize-keys"}, 404, "needs the entry"),
            ({"view": "librarian", "mode": "optimize-keys", "entry": "  "}, 404, "needs the entry"),
        ):
            r = steer.client.post(f"{API}/app/show", json=body)
            assert r.status_code == status and words in r.json()["error"], (body, r.text)
        assert len(shown) == 4
    finally:
        detach()
