"""A branch (or checkpoint) of a chat starts with the state of the chat it came from, as DLE's
chat metadata travels with a branch in SillyTavern: POST /chats/{id}/fork {"from": ...}. A real
engine and server on loopback."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tests.retrieval._support import API, LiveServer, messages, write_world


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    base = tmp_path_factory.mktemp("fork")
    server = LiveServer(write_world(base / "vault"), base / "data")
    yield server
    server.close()


def fork(live, target: str, body) -> httpx.Response:
    return live.client.post(f"{API}/chats/{quote(target, safe='')}/fork", json=body)


def test_a_branch_starts_with_the_parent_state_and_the_parent_is_untouched(live):
    live.put("parent", "pins", "pins", ["Lamplighters"])
    live.retrieve("parent", messages("the harbour at night", "yes"))
    parent = live.state("parent")
    r = fork(live, "parent - Branch 1", {"from": "parent"})
    assert r.status_code == 200, r.text
    assert r.json() == {"chat_id": "parent - Branch 1", "from": "parent", "copied": True, "reason": None}
    branch = live.state("parent - Branch 1")
    assert {k: v for k, v in branch.items() if k != "chat_id"} == {k: v for k, v in parent.items() if k != "chat_id"}
    assert live.records("parent - Branch 1") == []  # the decision records stay with the parent
    assert live.state("parent") == parent


def test_a_chat_with_state_of_its_own_is_never_overwritten(live):
    live.put("own", "notebook", "notebook", "mine")
    live.put("other", "notebook", "notebook", "theirs")
    r = fork(live, "own", {"from": "other"})
    assert r.status_code == 200
    assert r.json()["copied"] is False and "already has state" in r.json()["reason"]
    assert live.state("own")["notebook"] == "mine"


def test_nothing_to_copy_from_a_chat_without_state(live):
    r = fork(live, "fresh branch", {"from": "never seen"})
    assert r.status_code == 200 and r.json()["copied"] is False
    assert "no state" in r.json()["reason"]
    assert "fresh branch" not in [c["chat_id"] for c in live.client.get(f"{API}/chats").json()["chats"]]


@pytest.mark.parametrize(
    "body",
    [{}, {"from": ""}, {"from": 3}, {"from": "a", "extra": 1}, ["a"], {"from": " padded"}],
    ids=["missing", "empty", "number", "extra-field", "list", "whitespace"],
)
def test_bad_bodies_are_refused_and_nothing_is_written(live, body):
    r = fork(live, "target-bad", body)
    assert r.status_code == 400, r.text
    assert "error" in r.json()
    assert all(c["chat_id"] != "target-bad" for c in live.client.get(f"{API}/chats").json()["chats"])


def test_a_chat_cannot_be_forked_from_itself(live):
    live.put("same", "notebook", "notebook", "kept")
    r = fork(live, "same", {"from": "same"})
    assert r.status_code == 200 and r.json()["copied"] is False and "itself" in r.json()["reason"]
    assert live.state("same")["notebook"] == "kept"


def test_group_chat_ids_with_a_slash_fork_too(live):
    live.put("group/abc", "notebook", "notebook", "group notes")
    r = fork(live, "group/abc-branch", {"from": "group/abc"})
    assert r.status_code == 200 and r.json()["copied"] is True
    assert live.state("group/abc-branch")["notebook"] == "group notes"


def test_the_first_generation_of_a_branch_is_never_taken_for_a_swipe(live):
    """A branch from an early message has the same message count as the parent's last generation:
    that must not roll the copied state back (the parent's cooldown holds in the branch)."""
    live.retrieve("bell chat", messages("hello", "ring the drowned bell"))
    assert live.state("bell chat")["cooldowns"]
    assert fork(live, "bell branch", {"from": "bell chat"}).json()["copied"] is True
    again = live.retrieve("bell branch", messages("hello", "the bell once more"))
    assert again["swipe_rollback"] is False
    assert "Drowned Bell" not in [i["title"] for i in again["injected"]]
    assert live.state("bell branch")["generation_count"] == live.state("bell chat")["generation_count"] + 1
