"""Session Scribe over a real engine and the fake provider: the note in the vault folder and the
index, DLE's message, one run per chat, cancel, reset, and a failing provider."""

from __future__ import annotations

import asyncio

import pytest

from dle_desktop.ai.errors import AiError
from dle_desktop.core.pipeline.chat_input import parse_messages
from dle_desktop.errors import InputError
from dle_desktop.writers.common import WriterBusy, WriterCancelled

from .conftest import SUMMARY, answer_writers, chat, running, writer_settings

NOTE = "Sessions/Hobb - 2026-03-04 05-06-07.md"
NOTE_TEXT = (
    "---\n"
    "tags: [lorebook-session]\n"
    'date: "2026-03-04T05:06:07"\n'
    'character: "Hobb"\n'
    "---\n"
    "# Session: Hobb, 2026-03-04 05:06:07\n\n"
    f"{SUMMARY}\n"
)
MESSAGES = parse_messages(chat("We meet at the quay.", "Hobb nods.", "Where is the key?", "Under the gate."))


def test_a_run_writes_the_session_note_into_the_folder_and_the_index(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            result = await engine.writers.scribe.run("c1", MESSAGES, focus="the key")
            assert result["ran"] and result["note"] == {"vault": "lore", "path": NOTE, "title": NOTE[9:-3]}
            assert (root / NOTE).read_bytes() == NOTE_TEXT.encode("utf-8")
            assert NOTE in {s.path for s in engine.snapshot.skipped}  # indexed at once (not a lore entry)
            assert engine.writer.history_for("lore", NOTE)[0].feature == "session_scribe"  # undoable
            sent = ai_fake.last.user_text
            assert "[PREVIOUS SESSION NOTE]" not in sent
            assert sent.index("[RECENT CONVERSATION]\n") < sent.index("[ADDITIONAL FOCUS]\nthe key")
            assert "Hobb (character): Under the gate." in sent
            assert "Summarize" in ai_fake.last.system_text and "past tense" in ai_fake.last.system_text

            engine.writers.scribe.now = lambda: __import__("datetime").datetime(2026, 3, 4, 6, 0, 0)
            await engine.writers.scribe.run("c1", MESSAGES)
            assert f"[PREVIOUS SESSION NOTE]\n{SUMMARY}\n\n[RECENT CONVERSATION]" in ai_fake.last.user_text
            history = await engine.writers.scribe.history("c1")
            assert [n["path"] for n in history["notes"]] == ["Sessions/Hobb - 2026-03-04 06-00-00.md", NOTE]
            assert history["last_summary"] == SUMMARY and history["last_chat_length"] == 4
            assert engine.ai.usage["scribe"].calls == 2

    asyncio.run(go())


def test_two_runs_at_once_for_one_chat_write_one_note(tmp_path, ai_fake):
    ai_fake.slow(1.0, text=SUMMARY)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            results = await asyncio.gather(
                engine.writers.scribe.run("c1", MESSAGES),
                engine.writers.scribe.run("c1", MESSAGES),
                return_exceptions=True,
            )
            assert sum(isinstance(r, dict) and r["ran"] for r in results) == 1
            busy = [r for r in results if isinstance(r, WriterBusy)]
            assert len(busy) == 1 and "already writing" in str(busy[0])
            assert len(list((root / "Sessions").iterdir())) == 1
            assert len(ai_fake.requests) == 1

    asyncio.run(go())


def test_automatic_runs_follow_the_setting_and_the_interval(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            off = await engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=12)
            assert off["ran"] is False and "scribe_enabled" in off["reason"]
            await engine.apply_settings(writer_settings(ai_fake, scribeEnabled=True, scribeInterval=5))
            assert (await engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=4))["ran"] is False
            assert (await engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=5))["ran"] is True
            # a second tab asking for the same point of the chat: not due again
            again = await engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=6)
            assert again == {
                "ran": False,
                "reason": "1 of 5 messages since the last session note",
                "note": None,
                "summary": None,
                "chat_length": 6,
            }
            assert len(list((root / "Sessions").iterdir())) == 1

    asyncio.run(go())


def test_cancel_and_reset_stop_the_run_and_write_nothing(tmp_path, ai_fake):
    ai_fake.hang()
    ai_fake.hang()

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            scribe = engine.writers.scribe
            run = asyncio.ensure_future(scribe.run("c1", MESSAGES))
            while not ai_fake.waiting:
                await asyncio.sleep(0.02)
            assert scribe.running("c1") and scribe.cancel("c1")
            with pytest.raises(WriterCancelled, match="cancelled; nothing written"):
                await run
            assert not scribe.running("c1") and scribe.cancel("c1") is False

            run = asyncio.ensure_future(scribe.run("c1", MESSAGES))
            while ai_fake.waiting < 1:
                await asyncio.sleep(0.02)
            await engine.retrieval.reset("c1")
            with pytest.raises(WriterCancelled):
                await run
            assert not (root / "Sessions").exists()
            assert (await scribe.history("c1"))["notes"] == []

    asyncio.run(go())


def test_a_failing_provider_gives_one_error_trips_the_breaker_and_writes_nothing(tmp_path, ai_fake):
    ai_fake.fail(500)
    ai_fake.fail(500)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            for _ in range(2):
                with pytest.raises(AiError) as failed:
                    await engine.writers.scribe.run("c1", MESSAGES)
                assert "500" in str(failed.value) or "server" in str(failed.value).lower()
            assert engine.ai.breaker.state == "open"
            assert engine.ai.usage["scribe"].failures == 2
            from dle_desktop.ai.service import AiUnavailable

            with pytest.raises(AiUnavailable, match="circuit breaker"):
                await engine.writers.scribe.run("c1", MESSAGES)
            assert not (root / "Sessions").exists()

    asyncio.run(go())


def test_a_provider_that_times_out_gives_one_clear_error_and_writes_nothing(tmp_path, ai_fake):
    ai_fake.hang()

    async def go():
        async with running(tmp_path, writer_settings(ai_fake, scribeTimeout=5000)) as (engine, root):
            with pytest.raises(AiError) as failed:
                await engine.writers.scribe.run("c1", MESSAGES)
            assert "timed out" in str(failed.value) or "time" in str(failed.value)
            assert not (root / "Sessions").exists()
            assert engine.ai.usage["scribe"].failures == 1

    asyncio.run(go())


def test_an_answer_with_nothing_to_write_is_refused(tmp_path, ai_fake):
    ai_fake.reply(text="%% only a comment %%\n<% tp.date.now() %>")

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            with pytest.raises(Exception, match="summary was empty"):
                await engine.writers.scribe.run("c1", MESSAGES)
            assert not (root / "Sessions").exists()

    asyncio.run(go())


def test_a_folder_setting_that_leaves_the_vault_is_refused_before_any_call(tmp_path, ai_fake):
    async def go():
        async with running(tmp_path, writer_settings(ai_fake, scribeFolder="../outside")) as (engine, root):
            with pytest.raises(InputError, match="scribe_folder"):
                await engine.writers.scribe.run("c1", MESSAGES)
            assert ai_fake.requests == [] and not (tmp_path / "outside").exists()
            assert sorted(p.name for p in root.rglob("*.md")) == ["Lantern Quay.md", "Old Hobb.md"]

    asyncio.run(go())


def test_a_session_note_is_undoable_and_a_runaway_summary_is_cut(tmp_path, ai_fake):
    ai_fake.reply(text=("A long paragraph of events. " * 40 + "\n\n") * 1000)  # about 1 MB

    async def go():
        async with running(tmp_path, writer_settings(ai_fake)) as (engine, root):
            result = await engine.writers.scribe.run("c1", MESSAGES)
            written = (root / NOTE).read_text(encoding="utf-8")
            assert len(result["summary"]) <= 32_000 and written.endswith("events.\n")
            assert [p.relative_to(root).as_posix() for p in root.rglob("*.md") if "Sessions" in p.parts] == [NOTE]
            (record,) = engine.writer.history_for("lore", NOTE)
            await engine.writer.undo(record.id)
            assert not (root / NOTE).exists()
            assert NOTE not in {s.path for s in engine.snapshot.skipped}

    asyncio.run(go())


def test_a_cancel_before_the_call_began_stops_it_too(tmp_path, ai_fake):
    ai_fake.default(answer_writers)

    async def go():
        async with running(tmp_path, writer_settings(ai_fake, scribeEnabled=True)) as (engine, root):
            run = asyncio.ensure_future(engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=10))
            await asyncio.sleep(0)  # the run now reads the chat's state off the loop
            assert engine.writers.scribe.cancel("c1") is True
            with pytest.raises(WriterCancelled):
                await run
            assert ai_fake.requests == [] and not (root / "Sessions").exists()
            assert (await engine.writers.scribe.run("c1", MESSAGES, auto=True, chat_length=10))["ran"] is True

    asyncio.run(go())
