"""The writers over HTTP (routes_writers): a real engine and server on loopback, the fake provider
as the AI. The bridge's calls in order: a Scribe run and its history, one note for two requests at
once, cancel; suggestions accepted and injected by the next /retrieve; a tag-mode reply shown
without its notes, the notes in the next /retrieve's notepad group, a rollback taking them out;
bad input answered 400 in words with nothing changed; scribe-informed AI search."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.retrieval._support import API, LiveServer, messages

from .conftest import SUMMARY, answer_writers, make_vault, writer_settings

CHAT = "group/tavern 1"
C = f"{API}/chats/{CHAT.replace('/', '%2F')}"
TALK = messages("We meet at the quay.", "Hobb nods.", "Where is the brass key?", "Under the gate.")


@pytest.fixture
def live(tmp_path, ai_fake):
    ai_fake.default(answer_writers)
    servers: list[LiveServer] = []

    def start(**settings) -> LiveServer:
        server = LiveServer(make_vault(tmp_path / "vault"), tmp_path / "data", writer_settings(ai_fake, **settings))
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.close()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.md")}


def test_scribe_runs_lists_its_notes_and_a_second_request_at_once_is_a_409(live, ai_fake):
    s = live()
    r = s.client.post(f"{C}/scribe", json={"messages": TALK, "character": "Hobb", "focus": "the key"})
    assert r.status_code == 200, r.text
    note = r.json()["note"]
    assert note["path"].startswith("Sessions/Hobb - ") and (s.vault / note["path"]).is_file()
    assert r.json()["summary"] == SUMMARY
    history = s.client.get(f"{C}/scribe").json()
    assert [n["path"] for n in history["notes"]] == [note["path"]] and history["running"] is False

    ai_fake.slow(1.5, text=SUMMARY)
    answers: list = []
    threads = [
        threading.Thread(target=lambda: answers.append(s.client.post(f"{C}/scribe", json={"messages": TALK})))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.status_code for a in answers) == [200, 409]
    busy = next(a for a in answers if a.status_code == 409).json()["error"]
    assert "already writing" in busy
    assert len(list((s.vault / "Sessions").iterdir())) == 2  # the first run's and one of the pair


def test_cancel_answers_409_to_the_waiting_run_and_writes_nothing(live, ai_fake):
    s = live()
    ai_fake.hang()
    answers: list = []
    t = threading.Thread(target=lambda: answers.append(s.client.post(f"{C}/scribe", json={"messages": TALK})))
    t.start()
    while not ai_fake.waiting:
        threading.Event().wait(0.02)
    assert s.client.get(f"{C}/scribe").json()["running"] is True
    assert s.client.delete(f"{C}/scribe").json() == {"chat_id": CHAT, "cancelled": True}
    t.join()
    assert answers[0].status_code == 409 and "cancelled; nothing written" in answers[0].json()["error"]
    assert not (s.vault / "Sessions").exists()
    assert s.client.delete(f"{C}/scribe").json()["cancelled"] is False


def test_an_accepted_suggestion_is_injected_by_the_next_retrieve(live):
    s = live(autoSuggestFolder="Lore/New")
    r = s.client.post(f"{C}/suggestions", json={"messages": TALK})
    assert r.status_code == 200, r.text
    (pending,) = r.json()["suggestions"]
    assert r.json()["dropped"][0]["title"] == "old hobb"
    assert s.client.get(f"{API}/suggestions", params={"chat_id": CHAT}).json()["suggestions"] == [pending]
    before = s.retrieve(CHAT, messages("the brass key glints"))
    assert "Brass Key" not in [i["title"] for i in before["injected"]]
    accepted = s.client.post(f"{API}/suggestions/{pending['id']}/accept", json={"summary": "The sea gate's key."})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["written"]["path"] == "Lore/New/Brass Key.md"
    after = s.retrieve(CHAT, messages("the brass key glints"))
    assert "Brass Key" in [i["title"] for i in after["injected"]]
    assert s.client.get(f"{C}/suggestions").json()["suggestions"] == []


def test_a_tag_mode_reply_loses_its_block_its_notes_reach_the_next_prompt_and_a_swipe_takes_them_out(live):
    s = live(aiNotepadEnabled=True)
    reply = "Hobb grins.\n<dle-notes>Mira promised Hobb a drink.</dle-notes>"
    r = s.client.post(f"{C}/notes", json={"message": 3, "swipe": 0, "text": reply})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "Hobb grins." and r.json()["notes"] == "Mira promised Hobb a drink."

    def notepad_group(gen: dict) -> dict:
        return next(g for g in gen["groups"] if g["key"] == "deeplore_ai_notepad")

    group = notepad_group(s.retrieve(CHAT, messages("a", "Hobb grins.", "and then?")))
    assert "Mira promised Hobb a drink." in group["text"] and "<dle-notes>" in group["text"]
    assert (group["position"], group["depth"], group["role"]) == (1, 4, 0)
    assert s.client.get(f"{C}/notepad").json()["text"] == "Mira promised Hobb a drink."

    rolled = s.client.delete(f"{C}/notes", params={"message": 3, "swipe": 0})
    assert rolled.status_code == 200 and rolled.json()["removed"][0]["notes"] == "Mira promised Hobb a drink."
    group = notepad_group(s.retrieve(CHAT, messages("a", "Hobb grins.", "and then?")))
    assert "drink" not in group["text"]

    s.client.post(f"{C}/notes", json={"message": 5, "text": "x<dle-notes>kept</dle-notes>"})
    assert s.client.delete(f"{C}/notepad").json()["text"] == ""
    assert s.client.delete(f"{API}/chats/{CHAT.replace('/', '%2F')}").status_code == 200
    assert s.client.get(f"{C}/notepad").json()["replies"] == []


def test_a_delete_takes_the_notes_of_that_message_and_every_later_one(live):
    s = live(aiNotepadEnabled=True)
    for message, note in ((1, "first"), (3, "second"), (5, "third")):
        r = s.client.post(f"{C}/notes", json={"message": message, "text": f"x<dle-notes>{note}</dle-notes>"})
        assert r.status_code == 200, r.text
    rolled = s.client.delete(f"{C}/notes", params={"message": 3, "later": "true"})
    assert rolled.status_code == 200, rolled.text
    assert sorted(r["message"] for r in rolled.json()["removed"]) == [3, 5]
    assert rolled.json()["text"] == "first"
    assert [r["message"] for r in s.client.get(f"{C}/notepad").json()["replies"]] == [1]
    assert s.client.delete(f"{C}/notes", params={"message": 0, "later": "maybe"}).status_code == 400
    assert s.client.get(f"{C}/notepad").json()["text"] == "first"


def test_review_builds_the_whole_vault_prompt_and_says_when_it_does_not_fit(live):
    s = live(reviewResponseTokens=300)
    r = s.client.post(f"{API}/review", json={"question": "Who keeps the quay?"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["entries"] == 2 and got["fits"] is True and got["response_tokens"] == 300
    prompt = got["prompt"]
    assert prompt.startswith("[DeepLore Enhanced Review — 2 entries, ~")
    assert "## Old Hobb\n" in prompt and "## Lantern Quay\n" in prompt and "\n\n---\n\n" in prompt
    assert prompt.endswith("Who keeps the quay?\n\nKeep your response under 300 tokens.")
    small = s.client.post(f"{API}/review", json={"context_tokens": 10}).json()
    assert small["fits"] is False and small["prompt"] == "" and small["tokens"] > 10
    assert s.client.post(f"{API}/review", json={}).json()["question"].startswith("Review this lorebook")
    assert s.client.post(f"{API}/review").status_code == 400  # no body: say what to send
    assert s.client.post(f"{API}/review", json={"question": 5}).status_code == 400


@pytest.mark.parametrize(
    ("method", "url", "body", "words"),
    [
        ("POST", "/scribe", {}, "messages"),
        ("POST", "/scribe", {"messages": []}, "messages is empty"),
        ("POST", "/scribe", {"messages": "hi"}, "messages must be a list"),
        ("POST", "/scribe", {"messages": TALK, "focus": 5}, "focus must be text"),
        ("POST", "/scribe", {"messages": TALK, "auto": "yes"}, "auto must be true or false"),
        ("POST", "/scribe", {"messages": TALK, "chat_length": -1}, "chat_length must be a whole number"),
        ("POST", "/scribe", {"messages": TALK, "bogus": 1}, "unknown field"),
        ("POST", "/suggestions", {"messages": [{"name": "x"}]}, "mes is missing"),
        ("POST", "/notes", {"message": -1, "text": "x"}, "message must be a whole number"),
        ("POST", "/notes", {"message": 1}, "send {"),
        ("POST", "/notes", {"message": 1, "text": 5}, "text must be text"),
        ("DELETE", "/notes", None, "message"),
        ("DELETE", "/notes?message=x", None, "message must be a whole number"),
    ],
)
def test_bad_input_is_a_400_in_words_and_changes_nothing(live, ai_fake, method, url, body, words):
    s = live(aiNotepadEnabled=True)
    s.client.post(f"{C}/notes", json={"message": 1, "text": "x<dle-notes>before</dle-notes>"})
    files = _files(s.vault)
    r = s.client.request(method, C + url, json=body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]
    assert _files(s.vault) == files and ai_fake.requests == []
    assert s.client.get(f"{C}/notepad").json()["text"] == "before"
    assert s.client.get(f"{C}/scribe").json()["notes"] == []


def test_a_bad_edit_or_a_missing_suggestion_changes_nothing(live):
    s = live()
    (pending,) = s.client.post(f"{C}/suggestions", json={"messages": TALK}).json()["suggestions"]
    files = _files(s.vault)
    for body, status, words in (
        ({"keys": []}, 400, "keys has 0 items"),
        ({"title": "../escape"}, 400, "slash"),
        ({"type": "weapon"}, 400, "type must be one of"),
        ({"title": "Old Hobb"}, 409, "already exists"),
        ([], 400, "send {}"),
    ):
        r = s.client.post(f"{API}/suggestions/{pending['id']}/accept", json=body)
        assert r.status_code == status and words in r.json()["error"], r.text
    assert _files(s.vault) == files
    assert s.client.post(f"{API}/suggestions/abc123/accept").status_code == 404
    assert s.client.post(f"{API}/suggestions/not-an-id/reject").status_code == 404
    assert [p["id"] for p in s.client.get(f"{API}/suggestions").json()["suggestions"]] == [pending["id"]]
    assert s.client.post(f"{API}/suggestions/{pending['id']}/reject").json() == {"id": pending["id"], "rejected": True}


def test_every_writer_is_off_by_default_and_a_channel_not_set_up_is_a_409_in_words(tmp_path):
    s = LiveServer(make_vault(tmp_path / "vault"), tmp_path / "data")
    try:
        off = s.client.get(f"{API}/writers").json()
        assert off["scribe"] == {
            "enabled": False,
            "interval": 5,
            "folder": "Sessions",
            "scan_depth": 20,
            "informed_retrieval": False,
        }
        assert off["auto_suggest"] == {"enabled": False, "interval": 10, "folder": "", "skip_review": False}
        assert off["ai_notepad"] == {"enabled": False, "mode": "tag", "position": 1, "depth": 4, "role": 0}
        r = s.client.post(f"{C}/scribe", json={"messages": TALK})
        assert r.status_code == 409 and "Session Scribe is not set up" in r.json()["error"]
        auto = s.client.post(f"{C}/suggestions", json={"messages": TALK, "auto": True})
        assert auto.json()["ran"] is False and "auto_suggest_enabled" in auto.json()["reason"]
    finally:
        s.close()


def test_scribe_informed_retrieval_gives_ai_search_the_last_summary(live, ai_fake):
    def answer(req):
        if req.schema_name == "lore_selection" or "available_lore_entries" in req.user_text:
            return {"selected": []}
        return answer_writers(req)

    ai_fake.default(answer)
    s = live(aiSearchEnabled=True, aiSearchMode="ai-only", scribeInformedRetrieval=True)
    assert s.client.post(f"{C}/scribe", json={"messages": TALK}).status_code == 200
    s.retrieve(CHAT, messages("the quay at night"))
    search = ai_fake.requests[-1]
    assert "[STORY SO FAR" in search.user_text and "They agreed to find the Brass Key." in search.user_text
    s.retrieve("another chat", messages("the quay at night again"))
    assert "[STORY SO FAR" not in ai_fake.requests[-1].user_text
