"""Chat state in SQLite: it survives an engine restart, and a corrupted row is set aside in
broken_chats while the chat starts fresh and the request succeeds."""

from __future__ import annotations

import json

import pytest

from ._support import API, messages, titles, verdicts_for

SCRIPT = (
    "I ring the bell and call for tamsin.",
    "Tamsin hears the bell from the water.",
    "The bell again; tamsin frowns.",
)


def test_state_survives_a_restart(world, start_server, tmp_path):
    data = tmp_path / "persistent"
    s = start_server(world, data=data)
    s.put("keep", "pins", "pins", ["Hidden Archive"])
    s.put("keep", "context", "context", {"era": "Founding"})
    s.put("keep", "folder-filter", "folder_filter", ["Artifacts", "People"])
    s.put("keep", "notebook", "notebook", "Notes 📓")
    first = s.retrieve("keep", messages(SCRIPT[0]))
    assert sorted(titles(first)) == ["Drowned Bell", "Hidden Archive", "Tamsin Reed"]
    state, records = s.everything("keep")
    s.restart()
    assert s.everything("keep") == (state, records)
    # The next generation carries on from the stored state: cooldown and strip-dedup still apply.
    second = s.retrieve("keep", messages(*SCRIPT[:2]))
    assert titles(second) == ["Hidden Archive"]
    assert ("keywords", "skipped", "on cooldown: 2 more generations") in verdicts_for(second, "Drowned Bell")
    assert verdicts_for(second, "Tamsin Reed")[-1][0] == "strip duplicates"
    # Regenerating the same slot after a restart still rolls back (before_last was stored too).
    again = s.retrieve("keep", messages(*SCRIPT[:2]))
    assert again["swipe_rollback"] is True and titles(again) == ["Hidden Archive"]
    assert s.state("keep")["generation_count"] == 2
    # A fresh server on another data dir knows nothing of it.
    other = start_server(world, data=tmp_path / "elsewhere")
    assert other.state("keep")["generation_count"] == 0


def test_delete_survives_a_restart(world, start_server, tmp_path):
    s = start_server(world, data=tmp_path / "d")
    s.retrieve("gone", messages("the bell"))
    assert s.client.delete(f"{API}/chats/gone").json()["deleted"] is True
    s.restart()
    assert s.state("gone")["generation_count"] == 0 and s.records("gone") == []


def _write_row(server, chat_id: str, text: str) -> None:
    with server.db() as db:
        db.execute("INSERT OR REPLACE INTO chats (chat_id, state, updated_at) VALUES (?, ?, 0)", (chat_id, text))


def _broken(server, chat_id: str) -> list[tuple[str, str]]:
    with server.db() as db:
        return db.execute("SELECT state, problem FROM broken_chats WHERE chat_id = ?", (chat_id,)).fetchall()


GARBAGE = [
    "this is not JSON {",
    "",
    "[1, 2, 3]",
    "null",
    '"a string"',
    '{"generation_count": "many"}',
    '{"pins": [5]}',
    '{"injection_log": [5]}',
    '{"injection_log": [{"gen": 0, "entries": [{"title": "Tamsin Reed"}]}]}',
    '{"analytics": {"lore:Tamsin Reed": 5}}',
    '{"swipe_keys": {"0|0": "lore:Tamsin Reed"}}',
    '{"folder_filter": "People"}',
    '{"context": {"era": {"x": 1}}}',
    '{"cooldowns": {"lore:Drowned Bell": "2"}}',
    '{"before_last": 7}',
    '{"before_last": {"injection_log": 3}}',
    '{"notebook": ["x"]}',
    "[" * 5000,
]


@pytest.mark.parametrize("garbage", GARBAGE, ids=[g[:40] or "empty" for g in GARBAGE])
def test_corrupted_row_starts_fresh_and_is_kept(server, garbage):
    server.retrieve("sick", messages(SCRIPT[0]))
    server.retrieve("healthy", messages(SCRIPT[0]))
    healthy = server.everything("healthy")
    _write_row(server, "sick", garbage)
    gen = server.retrieve("sick", messages(*SCRIPT[:2]))
    # Fresh state: nothing on cooldown, nothing to dedup against.
    assert sorted(titles(gen)) == ["Drowned Bell", "Tamsin Reed"]
    st = server.state("sick")
    assert st["generation_count"] == 1 and st["pins"] == []
    assert _broken(server, "sick")[0][0] == garbage
    assert _broken(server, "sick")[0][1]  # the problem is recorded
    assert server.everything("healthy") == healthy  # other chats untouched


def test_corrupted_row_read_by_get_and_put(server):
    server.retrieve("sick", messages(SCRIPT[0]))
    _write_row(server, "sick", "{{{{")
    assert server.state("sick")["generation_count"] == 0
    assert len(_broken(server, "sick")) == 1
    _write_row(server, "sick", "[]")
    assert server.put("sick", "pins", "pins", ["Omen"]) == {"pins": ["Omen"]}
    assert len(_broken(server, "sick")) == 2
    assert server.state("sick")["pins"] == ["Omen"]


def test_valid_state_round_trips_the_shape_check(server):
    """Every state the app writes passes the store's shape check (no false 'corrupted')."""
    server.put("full", "pins", "pins", ["Omen", {"title": "Tamsin Reed", "vault": "lore"}])
    server.put("full", "blocks", "blocks", ["Lantern Quay"])
    server.put("full", "context", "context", {"era": ["Eel Year"], "location": "Saffre"})
    server.put("full", "folder-filter", "folder_filter", ["People", "Rules", "History", "Artifacts"])
    server.put("full", "notebook", "notebook", "n")
    for i in range(4):
        server.retrieve("full", messages(*SCRIPT[: i % 3 + 1]), seed=i)
    with server.db() as db:
        (raw,) = db.execute("SELECT state FROM chats WHERE chat_id = 'full'").fetchone()
    stored = json.loads(raw)
    assert stored["before_last"] and stored["injection_log"] and stored["swipe_keys"]
    before = server.state("full")
    server.restart()
    assert server.state("full") == before
    assert _broken(server, "full") == []
