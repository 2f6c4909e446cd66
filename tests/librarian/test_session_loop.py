"""A librarian turn end to end: the real engine and tools, the provider layer and the fake AI
provider over loopback HTTP, in each wire format that carries native tool calls."""

from __future__ import annotations

import asyncio
import json

import pytest

from dle_desktop.librarian.loop import LibrarianFailed
from dle_desktop.librarian.service import Librarian

from .conftest import Events, running, vault_bytes

FINAL = {
    "message": "Drafted Mira Vell. Nobody in the vault knew her.",
    "draft": {
        "title": "Mira Vell",
        "type": "character",
        "priority": 50,
        "tags": ["lorebook", "smuggler"],
        "keys": ["Mira", "Mira Vell"],
        "summary": "A smuggler at Lantern Quay; select when she appears.",
        "content": "Mira Vell runs contraband past Old Hobb.",
    },
    "action": "update_draft",
}


def _tool_results(req) -> str:
    """The tool results as they went back to the model, whatever the wire format."""
    body = req.body
    if req.wire == "openai":
        return "\n".join(m["content"] for m in body["messages"] if m.get("role") == "tool")
    if req.wire == "anthropic":
        return "\n".join(
            b["content"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
    return "\n".join(
        p["functionResponse"]["response"]["content"]
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    )


def _offered(req) -> list[str]:
    tools = req.body.get("tools") or []
    if req.wire == "openai":
        return [t["function"]["name"] for t in tools]
    if req.wire == "anthropic":
        return [t["name"] for t in tools]
    return [d["name"] for t in tools for d in t["functionDeclarations"]]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_native_tool_calls_then_a_draft(tmp_path, ai_fake, provider):
    ai_fake.reply(
        tool_calls=[
            {"name": "search_vault", "args": {"query": "Old Hobb quay"}},
            {"name": "get_links", "args": {"title": "Lantern Quay"}},
        ]
    )
    ai_fake.reply(text=json.dumps(FINAL))
    events = Events()

    async def go():
        async with running(tmp_path, ai_fake, provider) as (_engine, lib, _root):
            session = lib.new_session("new", chat_text="Mira: I need passage tonight.\nHobb: Not on my quay.")
            answer = await lib.send(session, "Make an entry for Mira from the chat.", events.append)
            return answer, session, lib

    answer, session, lib = asyncio.run(go())
    assert answer.message.startswith("Drafted Mira Vell")
    assert events.kinds()[:4] == ["status", "tool_call", "tool_result", "tool_call"]
    assert [e.data["name"] for e in events.of("tool_call")] == ["search_vault", "get_links"]
    first, second = ai_fake.requests
    assert {"search_vault", "get_entry", "flag_entry_update"} <= set(_offered(first))
    back = _tool_results(second)
    assert "Old Hobb" in back and '"Old Hobb"' in back  # the search hit and the link list went back
    assert session.draft.title == "Mira Vell" and session.draft.keys == ("Mira", "Mira Vell")
    stored = lib.sessions.load(session.id)
    assert stored is not None and stored.draft.title == "Mira Vell"
    assert [m.role for m in stored.messages] == ["user", "activity", "activity", "assistant"]


def test_text_protocol_tool_call_for_connections_without_tools(tmp_path, ai_fake):
    ai_fake.reply(
        text=json.dumps(
            {"message": "Looking.", "action": "tool_call", "tool_calls": [{"name": "list_entries", "args": {}}]}
        )
    )
    ai_fake.reply(text="```json\n" + json.dumps(FINAL) + "\n```")
    events = Events()

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, _root):
            session = lib.new_session()
            return await lib.send(session, "What is there?", events.append)

    answer = asyncio.run(go())
    assert answer.draft["title"] == "Mira Vell"
    assert "[TOOL RESULTS]" in ai_fake.requests[1].user_text and "Ferrymen" in ai_fake.requests[1].user_text


def test_garbage_is_repaired(tmp_path, ai_fake):
    ai_fake.reply(text="Sure! Here is your entry: Mira is a smuggler.")
    ai_fake.reply(text=json.dumps({"draft": {"type": "wizard"}}))
    ai_fake.reply(text=json.dumps(FINAL))
    events = Events()

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, _root):
            return await lib.send(lib.new_session(), "Draft Mira.", events.append)

    answer = asyncio.run(go())
    assert answer.draft["title"] == "Mira Vell"
    repairs = events.of("repair")
    assert len(repairs) == 2 and "no JSON object" in repairs[0].text and "draft.type" in repairs[1].text
    assert "could not be used" in ai_fake.requests[1].user_text


def test_garbage_four_times_gives_up_with_a_clear_message(tmp_path, ai_fake):
    for _ in range(4):
        ai_fake.reply(text="no json here")

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, root):
            before = vault_bytes(root)
            session = lib.new_session()
            with pytest.raises(LibrarianFailed) as err:
                await lib.send(session, "Draft Mira.", lambda e: None)
            return err.value, session, before, vault_bytes(root)

    err, session, before, after = asyncio.run(go())
    assert "after 3 repair attempts" in str(err) and "Nothing was changed" in str(err)
    assert len(ai_fake.requests) == 4
    assert session.messages[-1].role == "error" and session.draft.empty
    assert before == after


def test_unknown_tool_and_a_path_outside_the_vault_get_tool_errors(tmp_path, ai_fake):
    ai_fake.reply(
        tool_calls=[
            {"name": "delete_everything", "args": {}},
            {"name": "get_full_content", "args": {"title": "../../../etc/passwd"}},
            {"name": "get_entry", "args": "not json"},
        ]
    )
    ai_fake.reply(text=json.dumps({"message": "I will behave."}))
    events = Events()

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, root):
            before = vault_bytes(root)
            await lib.send(lib.new_session(), "Hi", events.append)
            return before, vault_bytes(root)

    before, after = asyncio.run(go())
    results = events.of("tool_result")
    assert all(r.data["error"] for r in results)
    assert "unknown tool 'delete_everything'" in results[0].text
    assert (
        "outside" in results[1].data["text"] or "escape" in results[1].data["text"] or ".." in results[1].data["text"]
    )
    assert "JSON object" in results[2].text
    assert before == after


def test_a_hang_is_cancelled_at_once_and_the_connection_closed(tmp_path, ai_fake):
    ai_fake.hang()

    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, _root):
            session = lib.new_session()
            task = asyncio.create_task(lib.send(session, "Draft Mira.", lambda e: None))
            while ai_fake.waiting == 0:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return session, lib

    session, lib = asyncio.run(go())
    assert ai_fake.wait_for_disconnect(1)
    assert session.messages[-1].text.startswith("Cancelled")
    assert lib.sessions.load(session.id).messages[-1].role == "error"


def test_sessions_are_kept_and_resumed(tmp_path, ai_fake):
    ai_fake.reply(text=json.dumps(FINAL))
    ai_fake.reply(text=json.dumps({"message": "Raised her priority.", "draft": {"priority": 60}}))

    async def first():
        async with running(tmp_path, ai_fake) as (_engine, lib, _root):
            s = lib.new_session("review", chat_text="Mira: hello")
            lib.new_session("audit")
            await lib.send(s, "Draft Mira.", lambda e: None)
            return s.id

    sid = asyncio.run(first())

    async def second():
        async with running(tmp_path, ai_fake) as (engine, _old, _root):
            lib = Librarian(engine)  # a fresh start over the same data folder
            kinds = [s.kind for s in lib.sessions.list()]
            s = lib.sessions.load(sid)
            await lib.send(s, "More important, please.", lambda e: None)
            return kinds, s

    kinds, s = asyncio.run(second())
    assert sorted(kinds) == ["audit", "review"]
    assert s.draft.priority == 60 and s.draft.title == "Mira Vell"  # the partial draft merged
    resumed = ai_fake.requests[1]
    assert "Draft Mira." in resumed.user_text and "More important" in resumed.user_text
    assert "Drafted Mira Vell" in json.dumps(resumed.body)  # the earlier answer went back as history
    assert "Mira: hello" in resumed.system_text
