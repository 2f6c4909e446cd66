"""ChatStore.list_chats: newest first with counts, on new stores and on ones written by earlier
versions (schema 0 and 1, before the index on updated_at)."""

from __future__ import annotations

import json
import sqlite3

from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.state.chat_store import ChatStore

#: The tables as the first version wrote them (user_version 1; 0 before that).
OLD_SCHEMA = """
CREATE TABLE chats (chat_id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE generations (chat_id TEXT NOT NULL, gen INTEGER NOT NULL, created_at REAL NOT NULL, record TEXT NOT NULL,
                          PRIMARY KEY (chat_id, gen));
CREATE TABLE broken_chats (chat_id TEXT NOT NULL, state TEXT NOT NULL, problem TEXT NOT NULL, moved_at REAL NOT NULL);
"""


def record(n: int) -> dict:
    return {"injected": [f"T{n}"], "verdicts": [], "total_tokens": n}


def test_newest_first_with_counts(tmp_path):
    store = ChatStore(tmp_path / "state.sqlite")
    assert store.list_chats() == []
    for chat, gens in (("a", 1), ("b", 3), ("group/c", 0)):
        state = ChatState()
        for _ in range(gens):
            state = state.replace(generation_count=state.generation_count + 1)
            store.save(chat, state, record(state.generation_count))
        if not gens:
            store.save(chat, state)
    for when, chat in enumerate(("a", "b", "group/c")):  # clocks of coarse resolution could tie them
        store._db.execute("UPDATE chats SET updated_at = ? WHERE chat_id = ?", (1000.0 + when, chat))
    chats = store.list_chats()
    assert [c["chat_id"] for c in chats] == ["group/c", "b", "a"]
    assert [(c["generation_count"], c["records"]) for c in chats] == [(0, 0), (3, 3), (1, 1)]
    assert [c["updated_at"] for c in chats] == [1002.0, 1001.0, 1000.0]
    assert [c["chat_id"] for c in store.list_chats(limit=1)] == ["group/c"]
    store.delete("b")
    assert [c["chat_id"] for c in store.list_chats()] == ["group/c", "a"]
    store.close()


def test_a_store_from_an_earlier_version(tmp_path):
    path = tmp_path / "state.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("PRAGMA user_version = 1")
    good = json.dumps(ChatState().replace(generation_count=4).to_json())
    db.executemany(
        "INSERT INTO chats VALUES (?, ?, ?)",
        [
            ("old", good, 100.0),
            ("newer", good, 200.0),
            ("not json", "{broken", 150.0),
            ("odd count", json.dumps({"generation_count": "many"}), 50.0),
            ("a\nb", good, 300.0),
        ],
    )
    db.executemany(
        "INSERT INTO generations VALUES (?, ?, ?, ?)", [("old", g, 100.0 + g, json.dumps(record(g))) for g in (3, 4)]
    )
    db.commit()
    db.close()
    store = ChatStore(path)
    chats = store.list_chats()
    # The id with a newline was renamed when the store was opened (chat_store's schema 2).
    assert [(c["chat_id"], c["generation_count"], c["updated_at"], c["records"]) for c in chats] == [
        ("a\\u000ab", 4, 300.0, 0),
        ("newer", 4, 200.0, 0),
        ("not json", 0, 150.0, 0),
        ("old", 4, 100.0, 2),
        ("odd count", 0, 50.0, 0),
    ]
    indexes = {row[1] for row in sqlite3.connect(path).execute("PRAGMA index_list(chats)")}
    assert "chats_by_update" in indexes
    store.close()


def test_the_fallback_without_sqlites_json_functions(tmp_path, monkeypatch):
    store = ChatStore(tmp_path / "state.sqlite")
    store.save("x", ChatState().replace(generation_count=2), record(2))
    store._db.execute("UPDATE chats SET updated_at = 5")
    real = store._db

    class NoJson:
        def execute(self, sql, *args):
            if "json_" in sql:
                raise sqlite3.OperationalError("no such function: json_valid")
            return real.execute(sql, *args)

    store._db = NoJson()
    assert store.list_chats() == [{"chat_id": "x", "generation_count": 2, "updated_at": 5.0, "records": 1}]
    store._db = real
    store.close()
