"""Auto Lorebook and AI Notepad over a real engine and the fake provider: suggestions kept for
review, accepted into the vault (byte for byte) and injected by the next generation, an existing
title dropped; a tag-mode reply shown without its notes, the notes in the next generation's
notepad group, a rollback taking them out; extract mode's call and its guard."""

from __future__ import annotations

import asyncio
import json

import pytest

from dle_desktop.core.pipeline.chat_input import parse_chat_document, parse_messages
from dle_desktop.errors import InputError, NoteExists, NotFound
from dle_desktop.writers.common import AnswerRefused

from .conftest import EXTRACTED, answer_writers, chat, running, writer_settings

MESSAGES = parse_messages(chat("Do you have the brass key?", "Hobb shows a brass key."))
KEY_NOTE = (
    "---\n"
    "type: lore\n"
    "priority: 50\n"
    'tags: ["lorebook"]\n'
    'keys: ["brass key", "the key"]\n'
    'summary: "A key that opens the sea gate."\n'
    "---\n"
    "# Brass Key\n\n"
    "An old brass key, green with salt.\n\nIt opens the sea gate.\n"
)


def _doc(chat_id: str, *texts: str):
    return parse_chat_document({"chat_id": chat_id, "messages": chat(*texts)})


def test_suggestions_wait_then_accepting_writes_the_entry_and_the_next_generation_injects_it(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake, autoSuggestFolder="New")) as (engine, root):
            suggest = engine.writers.suggest
            run = await suggest.run("c1", MESSAGES)
            assert [s["suggestion"]["title"] for s in run["suggestions"]] == ["Brass Key"]
            assert run["dropped"] == [{"title": "old hobb", "reason": "an entry with this title already exists"}]
            sent = ai_fake.last.user_text
            assert sent.startswith('## Existing lorebook entries (do NOT suggest these):\n"Lantern Quay", "Old Hobb"')
            assert sent.endswith("Suggest new lorebook entries as a JSON array.")
            assert not (root / "New").exists()  # nothing written before review
            pending = (await suggest.pending())["suggestions"]
            assert [p["chat_id"] for p in pending] == ["c1"]

            before = await engine.retrieval.retrieve(_doc("c1", "the brass key glints"))
            assert "Brass Key" not in [i.entry.title for i in before.injected]
            accepted = await suggest.accept(pending[0]["id"], {})
            assert accepted["written"] == {"vault": "lore", "path": "New/Brass Key.md", "title": "Brass Key"}
            assert (root / "New" / "Brass Key.md").read_bytes() == KEY_NOTE.encode("utf-8")
            after = await engine.retrieval.retrieve(_doc("c1", "the brass key glints"))
            assert "Brass Key" in [i.entry.title for i in after.injected]
            assert (await suggest.pending())["suggestions"] == []

            # the same suggestion again: the title exists now, so it is dropped
            again = await suggest.run("c1", MESSAGES)
            assert again["suggestions"] == [] and {d["title"] for d in again["dropped"]} == {"Brass Key", "old hobb"}

    asyncio.run(go())


def test_edits_rejects_and_refusals_change_nothing_they_should_not(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            suggest = engine.writers.suggest
            first = (await suggest.run("c1", MESSAGES))["suggestions"][0]
            with pytest.raises(InputError, match="slash"):
                await suggest.accept(first["id"], {"title": "../outside"})
            with pytest.raises(InputError, match="summary is empty"):
                await suggest.accept(first["id"], {"summary": "  "})
            with pytest.raises(NoteExists, match="already exists"):
                await suggest.accept(first["id"], {"title": "Old Hobb"})
            assert len((await suggest.pending())["suggestions"]) == 1
            done = await suggest.accept(first["id"], {"title": "Sea Gate Key", "keys": ["sea gate"]})
            text = (root / "Sea Gate Key.md").read_text(encoding="utf-8")
            assert done["suggestion"]["keys"] == ["Sea Gate Key", "sea gate"] and "# Sea Gate Key\n" in text
            with pytest.raises(NotFound):
                await suggest.accept(first["id"], {})
            second = (await suggest.run("c1", MESSAGES))["suggestions"][0]
            assert (await suggest.reject(second["id"]))["rejected"] is True
            assert (await suggest.pending())["suggestions"] == []
            with pytest.raises(NotFound):
                await suggest.reject(second["id"])

    asyncio.run(go())


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I could not find anything worth adding.", "holds no JSON"),
        ('[{"title": "A", "summary": "b", }, {"title": ', None),  # repaired: the whole object is kept
        ('[{"title": "Broken" "summary"]', "broken JSON"),
        ("x" * 1_000_000, "over the limit"),
    ],
)
def test_bad_answers_are_refused_or_repaired_and_write_nothing_outside(tmp_path, ai_fake, answer, reason):
    ai_fake.reply(text=answer)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, _root):
            before = sorted(p.name for p in tmp_path.rglob("*.md"))
            if reason is None:
                run = await engine.writers.suggest.run("c1", MESSAGES)
                assert [s["suggestion"]["title"] for s in run["suggestions"]] == ["A"]
            else:
                with pytest.raises(AnswerRefused, match=reason):
                    await engine.writers.suggest.run("c1", MESSAGES)
            assert sorted(p.name for p in tmp_path.rglob("*.md")) == before

    asyncio.run(go())


def test_skip_review_writes_at_once_and_auto_runs_keep_their_interval(tmp_path, ai_fake):
    ai_fake.default(answer_writers)
    settings = writer_settings(ai_fake, autoSuggestSkipReview=True, autoSuggestEnabled=True, autoSuggestInterval=3)

    async def go():
        async with running(tmp_path, settings) as (engine, root):
            suggest = engine.writers.suggest
            assert (await suggest.run("c1", MESSAGES, auto=True, ai_messages=2))["ran"] is False
            run = await suggest.run("c1", MESSAGES, auto=True, ai_messages=3)
            assert run["written"] == [{"vault": "lore", "path": "Brass Key.md", "title": "Brass Key"}]
            assert (root / "Brass Key.md").is_file() and run["suggestions"] == []
            assert (await suggest.run("c1", MESSAGES, auto=True, ai_messages=5))["reason"] == (
                "2 of 3 AI messages since the last suggestions"
            )

    asyncio.run(go())


def _groups(result) -> dict[str, object]:
    return {g.key: g for g in result.groups}


def test_tag_mode_takes_the_notes_out_injects_them_next_and_a_rollback_takes_them_back(tmp_path, ai_fake):
    settings = writer_settings(ai_fake, aiNotepadEnabled=True, aiNotepadDepth=2, aiNotepadRole=1)

    async def go():
        async with running(tmp_path, settings) as (engine, _root):
            notepad = engine.writers.notepad
            empty = _groups(await engine.retrieval.retrieve(_doc("c1", "hello")))["deeplore_ai_notepad"]
            assert "<dle-notes>" in empty.text and "[Your previous session notes]" not in empty.text
            reply = "Hobb smiles.\n\n<dle-notes>\nMira owes Hobb a favour.\n</dle-notes>"
            shown = await notepad.process("c1", 1, 0, reply)
            assert shown["text"] == "Hobb smiles." and shown["notes"] == "Mira owes Hobb a favour."
            # the fallback event sends the cleaned text again: the notes stay
            again = await notepad.process("c1", 1, 0, "Hobb smiles.")
            assert again["notes"] == "Mira owes Hobb a favour." and again["stored"] is False
            group = _groups(await engine.retrieval.retrieve(_doc("c1", "hello", "Hobb smiles.", "and?")))[
                "deeplore_ai_notepad"
            ]
            assert (group.position, group.depth, group.role) == (1, 2, 1)
            assert group.text.startswith(
                "[Your previous session notes]\nMira owes Hobb a favour.\n[End of session notes]\n\n"
            )
            await notepad.process("c1", 3, 0, "Later.<dle-notes>The gate is rusted.</dle-notes>")
            rolled = await notepad.rollback("c1", 1, None)
            assert rolled["removed"] == [{"message": 1, "swipe": 0, "notes": "Mira owes Hobb a favour."}]
            assert rolled["text"] == "The gate is rusted."
            text = _groups(await engine.retrieval.retrieve(_doc("c1", "x")))["deeplore_ai_notepad"].text
            assert "favour" not in text and "rusted" in text
            assert (await notepad.clear("c1"))["text"] == ""

    asyncio.run(go())


def test_extract_mode_strips_asides_and_asks_the_notepad_channel(tmp_path, ai_fake):
    ai_fake.default(answer_writers)
    settings = writer_settings(ai_fake, aiNotepadEnabled=True, aiNotepadMode="extract")

    async def go():
        async with running(tmp_path, settings) as (engine, _root):
            notepad = engine.writers.notepad
            assert _groups(await engine.retrieval.retrieve(_doc("c1", "hi"))).get("deeplore_ai_notepad") is None
            reply = "Mira tucks the key away. [Note to self: she hides it in her boot] (OOC: nice)"
            shown = await notepad.process("c1", 1, 0, reply)
            assert shown["text"] == "Mira tucks the key away." and shown["notes"] == EXTRACTED
            assert "[Latest AI response]\nMira tucks the key away. [Note to self" in ai_fake.last.user_text
            assert engine.ai.usage["ai_notepad"].calls == 1
            nothing = await notepad.process("c1", 3, 0, "The sea is calm.")
            assert nothing["notes"] == "" and nothing["stored"] is False
            group = _groups(await engine.retrieval.retrieve(_doc("c1", "hi")))["deeplore_ai_notepad"]
            assert EXTRACTED in group.text and "<dle-notes>" not in group.text
            read = await notepad.read("c1")
            assert read["replies"] == [{"message": 1, "swipe": 0, "notes": EXTRACTED}]

    asyncio.run(go())


def test_an_extraction_overtaken_by_a_rollback_is_dropped_and_a_failure_lets_the_chat_go_on(tmp_path, ai_fake):
    ai_fake.slow(1.0, text="- late note")
    ai_fake.fail(500)
    settings = writer_settings(ai_fake, aiNotepadEnabled=True, aiNotepadMode="extract")

    async def go():
        async with running(tmp_path, settings) as (engine, _root):
            notepad = engine.writers.notepad
            pending = asyncio.ensure_future(notepad.process("c1", 1, 0, "A reply [OOC: x]"))
            while not ai_fake.requests:
                await asyncio.sleep(0.02)
            await notepad.rollback("c1", 1, 0)
            late = await pending
            assert late["stored"] is False and "swiped" in late["error"]
            failed = await notepad.process("c1", 3, 0, "Another [OOC: y]")
            assert failed["text"] == "Another" and "could not take notes" in failed["error"]
            assert (await notepad.read("c1"))["text"] == ""

    asyncio.run(go())


def test_reset_forgets_the_chats_writer_state(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake, aiNotepadEnabled=True)) as (engine, _root):
            await engine.writers.notepad.process("c1", 1, 0, "x<dle-notes>n</dle-notes>")
            await engine.writers.suggest.run("c1", MESSAGES)
            await engine.retrieval.reset("c1")
            assert (await engine.writers.notepad.read("c1"))["text"] == ""
            assert (await engine.writers.suggest.pending("c1"))["suggestions"] == []

    asyncio.run(go())


def test_the_notes_survive_a_restart(tmp_path, ai_fake):
    async def go():
        async with running(tmp_path, writer_settings(ai_fake, aiNotepadEnabled=True)) as (engine, _root):
            await engine.writers.notepad.process("c1", 1, 2, "x<dle-notes>kept</dle-notes>")
        async with running(tmp_path, writer_settings(ai_fake, aiNotepadEnabled=True)) as (engine, _root):
            assert json.dumps((await engine.writers.notepad.read("c1"))["replies"]) == json.dumps(
                [{"message": 1, "swipe": 2, "notes": "kept"}]
            )

    asyncio.run(go())


def test_a_branch_starts_with_its_parents_notepad(tmp_path, ai_fake):
    async def go():
        async with running(tmp_path, writer_settings(ai_fake, aiNotepadEnabled=True)) as (engine, _root):
            notepad = engine.writers.notepad
            await engine.retrieval.retrieve(_doc("parent", "hello"))
            await notepad.process("parent", 1, 0, "x<dle-notes>from the parent</dle-notes>")
            assert await engine.retrieval.fork("parent", "branch") is None
            branch = await notepad.read("branch")
            assert branch["text"] == "from the parent" and branch["replies"][0]["notes"] == "from the parent"
            await notepad.rollback("branch", 1, 0)
            assert (await notepad.read("parent"))["text"] == "from the parent"  # the parent keeps its own

    asyncio.run(go())


def test_extract_mode_without_waiting_answers_at_once_and_keeps_the_notes_in_the_background(tmp_path, ai_fake):
    ai_fake.slow(0.5, text="- the key is in the boot")
    settings = writer_settings(ai_fake, aiNotepadEnabled=True, aiNotepadMode="extract")

    async def go():
        async with running(tmp_path, settings) as (engine, _root):
            notepad = engine.writers.notepad
            shown = await notepad.process("c1", 1, 0, "She hid it. [OOC: key]", wait=False)
            assert shown["text"] == "She hid it." and shown["pending"] is True and shown["notes"] == ""
            for _ in range(100):
                if (await notepad.read("c1"))["text"]:
                    break
                await asyncio.sleep(0.05)
            assert (await notepad.read("c1"))["text"] == "- the key is in the boot"

    asyncio.run(go())
