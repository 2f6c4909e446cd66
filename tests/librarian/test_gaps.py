"""Gap records merged as DLE merges them, persisted, and filled from the librarian's search misses."""

from __future__ import annotations

import asyncio
import json

from dle_desktop.librarian.gaps import MAX_GAPS, GapStore

from .conftest import running


def test_similar_records_merge_raise_urgency_and_append_reasons(tmp_path):
    store = GapStore(tmp_path / "gaps.json")
    a = store.flag("The Drowned Bell", "the bell rang in the chat", urgency="low")
    b = store.flag("Drowned Bell", "asked about again", urgency="high")
    c = store.record_search_miss("ferry timetable")
    assert b.id == a.id and b.frequency == 2 and b.urgency == "high"
    assert b.reason == "the bell rang in the chat; asked about again"
    assert [g.id for g in store.list()] == [a.id, c.id]  # most urgent first


def test_repeated_flags_escalate(tmp_path):
    store = GapStore(tmp_path / "gaps.json")
    for _ in range(3):
        gap = store.record_search_miss("ferry timetable")
    assert gap.frequency == 3 and gap.urgency == "high"  # medium, raised one step on the third


def test_hidden_resurfaces_dismissed_stays_buried_but_escalates(tmp_path):
    store = GapStore(tmp_path / "gaps.json")
    hidden = store.flag("Salt Tithe", "tax", urgency="low")
    dismissed = store.flag("Glass Orchard", "garden", urgency="low")
    store.hide(hidden.id)
    store.dismiss(dismissed.id)
    assert store.list() == []
    store.flag("Salt Tithe", "tax again", urgency="low")
    again = store.flag("Glass Orchard", "garden again", urgency="medium")
    assert [g.id for g in store.list()] == [hidden.id]
    assert again.id == dismissed.id and again.dismissed and again.urgency == "medium" and again.frequency == 2


def test_records_persist_and_are_capped(tmp_path):
    path = tmp_path / "gaps.json"
    store = GapStore(path)
    first = store.flag("Salt Tithe", "tax")
    store.mark_written(first.id)
    for i in range(MAX_GAPS + 5):
        store.record_search_miss(f"unique{i} topic{i}")
    reloaded = GapStore(path)
    assert len(reloaded.list(include_hidden=True)) == MAX_GAPS
    assert reloaded.get(first.id) is None  # written records go first
    assert len(json.loads(path.read_text())) == MAX_GAPS


def test_a_search_that_finds_nothing_becomes_a_gap(tmp_path, ai_fake):
    ai_fake.reply(tool_calls=[{"name": "search_vault", "args": {"query": "zeppelin armada"}}])
    ai_fake.reply(text=json.dumps({"message": "Nothing on zeppelins."}))

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, _root):
            await lib.send(lib.new_session(), "Any airships?", lambda e: None)
            gaps = lib.gaps.list()
            session = lib.new_session("gap", gap_id=gaps[0].id)
            return gaps, session

    gaps, session = asyncio.run(go())
    assert [(g.type, g.query) for g in gaps] == [("search", "zeppelin armada")]
    assert session.title == "Gap: zeppelin armada" and session.draft.title == "zeppelin armada"
