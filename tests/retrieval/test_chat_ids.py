"""One rule for chat ids across /retrieve and every /chats/{chat_id} route: ids with `/`
(SillyTavern's group chats) are reachable, nothing is trimmed, control characters, empty and
over-long ids are a clear 400 that stores nothing, and chats stored before the rule existed stay
reachable."""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

import pytest

from dle_desktop.core.chat_id import MAX_CHAT_ID_CHARS
from dle_desktop.state.chat_store import ChatStore

from ._support import API, messages

FIELDS = ("pins", "blocks", "context", "folder-filter", "notebook")


def _stored_ids(server) -> set[str]:
    with server.db() as db:
        return {row[0] for row in db.execute("SELECT chat_id FROM chats")}


@pytest.mark.parametrize("url_id", ["group/abc", quote("group/abc", safe="")], ids=["raw slash", "encoded slash"])
def test_a_group_chat_id_with_a_slash_is_reachable_by_every_route(server, url_id):
    gen = server.retrieve("group/abc", messages("tamsin rings the bell"))
    assert gen["injected"]
    c = server.client
    state = c.get(f"{API}/chats/{url_id}")
    assert state.status_code == 200, state.text
    assert state.json()["chat_id"] == "group/abc" and state.json()["generation_count"] == 1
    records = c.get(f"{API}/chats/{url_id}/records")
    assert records.status_code == 200 and len(records.json()["records"]) == 1
    r = c.put(f"{API}/chats/{url_id}/pins", json={"pins": ["Omen"]})
    assert r.status_code == 200 and r.json() == {"pins": ["Omen"]}
    for field in FIELDS:
        assert c.get(f"{API}/chats/{url_id}/{field}").status_code == 200
    assert server.state("group/abc")["pins"] == ["Omen"]
    assert _stored_ids(server) == {"group/abc"}, "one chat, under the id /retrieve was given"
    r = c.delete(f"{API}/chats/{url_id}")
    assert r.status_code == 200 and r.json() == {"chat_id": "group/abc", "deleted": True}
    assert _stored_ids(server) == set()


def test_an_id_that_ends_like_a_sub_resource_is_reached_with_an_encoded_slash(server):
    server.retrieve("x", messages("tamsin"))
    server.retrieve("x/records", messages("the bell"))
    server.retrieve("x/records", messages("the bell", "again"))
    c = server.client
    # A literal slash before a sub-resource name is the sub-resource; %2F keeps it in the id.
    assert c.get(f"{API}/chats/x/records").json()["chat_id"] == "x"
    st = c.get(f"{API}/chats/x%2Frecords").json()
    assert st["chat_id"] == "x/records" and st["generation_count"] == 2
    recs = c.get(f"{API}/chats/x%2Frecords/records").json()
    assert recs["chat_id"] == "x/records" and len(recs["records"]) == 2
    assert c.get(f"{API}/chats/x/records/records").json()["chat_id"] == "x/records"


def test_surrounding_spaces_are_refused_not_trimmed(server):
    server.retrieve("A", messages("tamsin"))
    c = server.client
    r = c.post(f"{API}/retrieve", json={"chat_id": " A ", "messages": messages("tamsin")})
    assert r.status_code == 400 and "whitespace" in r.json()["error"]
    for url in (f"{API}/chats/%20A%20", f"{API}/chats/A%20", f"{API}/chats/%20A/pins"):
        r = c.get(url)
        assert r.status_code == 400 and "whitespace" in r.json()["error"], url
    assert server.state("A")["generation_count"] == 1
    assert _stored_ids(server) == {"A"}
    # Spaces inside an id are part of it (SillyTavern's "Name - 2024-05-01@12h00m" ids).
    assert server.retrieve("Seraphina - 2024-05-01@12h00m", messages("tamsin"))["injected"]
    assert c.get(f"{API}/chats/{quote('Seraphina - 2024-05-01@12h00m')}").json()["generation_count"] == 1


BAD_IDS = [
    ("", "empty"),
    ("a\x00b", "U+0000"),
    ("a\nb", "U+000A"),
    ("a\rb", "U+000D"),
    ("a\tb", "U+0009"),
    ("a\x7fb", "U+007F"),
    ("a\x85b", "U+0085"),
    ("a\u2028b", "U+2028"),
    ("x" * (MAX_CHAT_ID_CHARS + 1), "513 characters"),
]


@pytest.mark.parametrize("chat_id,problem", BAD_IDS, ids=[p for _, p in BAD_IDS])
def test_bad_ids_are_a_clear_400_everywhere_and_store_nothing(server, chat_id, problem):
    server.retrieve("keep", messages("tamsin"))
    c = server.client
    for key in ("chat_id", "chatId"):
        r = c.post(f"{API}/retrieve", json={key: chat_id, "messages": messages("tamsin")})
        assert r.status_code == 400, (key, r.text)
        assert "chat" in r.json()["error"] and problem in r.json()["error"], r.json()
    url_id = quote(chat_id, safe="")
    for method, url, body in (
        ("GET", f"{API}/chats/{url_id}", None),
        ("DELETE", f"{API}/chats/{url_id}", None),
        ("GET", f"{API}/chats/{url_id}/records", None),
        ("PUT", f"{API}/chats/{url_id}/pins", {"pins": ["Omen"]}),
        ("POST", f"{API}/ai/cache/clear?chat_id={url_id or '%00'}", None),
    ):
        r = c.request(method, url, json=body)
        assert r.status_code == 400, (method, url, r.status_code, r.text)
        assert "chat id" in r.json()["error"], r.json()
    assert _stored_ids(server) == {"keep"}


def test_the_longest_id_is_accepted(server):
    chat_id = "é" * MAX_CHAT_ID_CHARS
    assert server.retrieve(chat_id, messages("tamsin"))["injected"]
    assert server.client.get(f"{API}/chats/{quote(chat_id)}").json()["generation_count"] == 1


def test_chats_stored_under_ids_the_rule_now_refuses_are_renamed_and_reachable(world, start_server, tmp_path):
    """Before the rule, /retrieve stored ids with newlines or NUL; such a chat is given an id with
    the characters written out (`\\u000a`), so it can still be read, changed and deleted."""
    data = tmp_path / "old"
    s = start_server(world, data=data)
    s.retrieve("kept", messages("tamsin"))
    s.put("kept", "pins", "pins", ["Omen"])
    state = s.state("kept")
    s.close()
    with sqlite3.connect(data / "state.sqlite") as db:  # what the old code wrote for "a\nb" and "n\x00"
        for old in ("a\nb", "n\x00"):
            db.execute("INSERT INTO chats SELECT ?, state, updated_at FROM chats WHERE chat_id = 'kept'", (old,))
            db.execute(
                "INSERT INTO generations SELECT ?, gen, created_at, record FROM generations WHERE chat_id = 'kept'",
                (old,),
            )
        db.execute("PRAGMA user_version = 1")
    s = start_server(world, data=data)
    for new in ("a\\u000ab", "n\\u0000"):
        st = s.client.get(f"{API}/chats/{quote(new, safe='')}").json()
        assert st == {**state, "chat_id": new}
        assert len(s.records(new)) == 1
    assert _stored_ids(s) == {"kept", "a\\u000ab", "n\\u0000"}
    renamed = quote("a\\u000ab", safe="")
    assert s.client.delete(f"{API}/chats/{renamed}").json()["deleted"] is True


def test_a_renamed_id_that_is_taken_moves_the_old_chat_to_broken_chats(tmp_path):
    path = tmp_path / "state.sqlite"
    ChatStore(path).close()
    with sqlite3.connect(path) as db:
        for chat_id in ("a\nb", "a\\u000ab", "x" * 300 + "\n" * 100):
            db.execute("INSERT INTO chats VALUES (?, '{}', 1.0)", (chat_id,))
        db.execute("PRAGMA user_version = 1")
    store = ChatStore(path)
    try:
        assert {c["chat_id"] for c in store.chats()} == {"a\\u000ab"}
        with sqlite3.connect(path) as db:
            moved = dict(db.execute("SELECT chat_id, problem FROM broken_chats").fetchall())
        assert set(moved) == {"a\nb", "x" * 300 + "\n" * 100}
        assert all("chat id" in problem for problem in moved.values())
    finally:
        store.close()
