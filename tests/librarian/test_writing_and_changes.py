"""Writing drafts through the real note writer, Optimize Keys and Summarize as diffs, and the
draft's live report."""

from __future__ import annotations

import asyncio
import json

import pytest

from dle_desktop.errors import NoteExists
from dle_desktop.librarian.draft import Draft, analyse

from .conftest import COMMENTED, running, vault_bytes

MIRA = Draft(
    title="Mira Vell",
    type="character",
    tags=("lorebook",),
    keys=("Mira",),
    summary="A smuggler.",
    content="Mira runs contraband.",
)


def test_a_draft_is_written_indexed_at_once_and_undone(tmp_path, ai_fake):
    async def go():
        async with running(tmp_path, ai_fake) as (engine, lib, root):
            session = lib.new_session()
            session.draft = MIRA
            plan = await lib.plan_write(session.draft)
            assert plan.path == "Mira Vell.md" and not plan.is_update
            result = await lib.write(plan, session)
            on_disk = (root / "Mira Vell.md").read_text(encoding="utf-8")
            indexed = engine.snapshot.find("Mira Vell")
            # a second write from the same session is an update of that note, shown as a diff
            session.draft = session.draft.merged({"keys": ["Mira", "Vell"]})
            update = await lib.plan_write(session.draft)
            await engine.writer.undo(result.record.id)
            return plan, on_disk, indexed, update, (root / "Mira Vell.md").exists(), engine.snapshot.find("Mira Vell")

    plan, on_disk, indexed, update, exists_after_undo, after_undo = asyncio.run(go())
    assert on_disk == plan.text and on_disk.startswith("---\nfileClass: character\ntype: character\nstatus: active\n")
    assert indexed is not None and indexed.keys == ("Mira",)
    assert (
        update.is_update
        and "+  - Vell" in update.diff
        and [ln for ln in update.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")] == ["+  - Vell"]
    )
    assert not exists_after_undo and after_undo is None


def test_an_existing_title_is_refused_and_nothing_written(tmp_path, ai_fake):
    async def go():
        async with running(tmp_path, ai_fake) as (_engine, lib, root):
            before = vault_bytes(root)
            with pytest.raises(NoteExists) as err:
                await lib.plan_write(Draft(title="old hobb", content="A duplicate."))
            return str(err.value), before, vault_bytes(root)

    message, before, after = asyncio.run(go())
    assert "already exists" in message and "Characters/Old Hobb.md" in message and "nothing written" in message
    assert before == after


def test_optimize_keys_changes_only_the_keys_line_of_a_commented_note(tmp_path, ai_fake):
    ai_fake.reply(text=json.dumps({"suggested": ["Old Hobb", "harbourmaster", "Hobb"], "reasoning": "names"}))

    async def go():
        async with running(tmp_path, ai_fake) as (engine, lib, root):
            entry = engine.snapshot.find("Old Hobb")
            change = await lib.optimize_keys(entry)
            await lib.apply(change)
            return (
                change,
                (root / "Characters/Old Hobb.md").read_text(encoding="utf-8"),
                engine.snapshot.find("Old Hobb"),
            )

    change, on_disk, entry = asyncio.run(go())
    assert change.note == "names" and "optimize_keys" not in change.diff
    old_lines, new_lines = COMMENTED.splitlines(), on_disk.splitlines()
    assert len(old_lines) == len(new_lines)
    differing = [(a, b) for a, b in zip(old_lines, new_lines) if a != b]
    assert differing == [
        ("keys: [harbour, quay]  # short on purpose", "keys: [Old Hobb, harbourmaster, Hobb]  # short on purpose")
    ]
    assert entry.keys == ("Old Hobb", "harbourmaster", "Hobb")
    assert 'Current keys: ["harbour", "quay"]' in ai_fake.last.user_text


def test_summarize_many_hands_over_each_proposal_and_stops_on_cancel(tmp_path, ai_fake):
    ai_fake.reply(text="The ferrymen's guild; select when boats or crossings come up.")
    ai_fake.hang()
    progress, results = [], []

    async def go():
        async with running(tmp_path, ai_fake) as (engine, lib, root):
            entries = [engine.snapshot.find("Ferrymen"), engine.snapshot.find("Lantern Quay")]
            task = asyncio.create_task(
                lib.summarize_many(
                    entries, lambda *p: progress.append(p), lambda c, e, err: results.append((c, e.title, err))
                )
            )
            while ai_fake.waiting == 0:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            before = vault_bytes(root)
            await lib.apply(results[0][0])
            return before, vault_bytes(root)

    before, after = asyncio.run(go())
    assert progress == [(0, 2, "Ferrymen"), (1, 2, "Lantern Quay")]
    assert len(results) == 1 and results[0][1] == "Ferrymen"
    assert '+summary: "The ferrymen' in results[0][0].diff or "+summary: The ferrymen" in results[0][0].diff
    assert ai_fake.wait_for_disconnect(1)
    changed = [k for k in after if after[k] != before.get(k)]
    assert changed == ["Factions/Ferrymen.md"]


def test_the_draft_report_previews_keys_tokens_and_health():
    report = analyse(MIRA.merged({"keys": ["Mira", "Vell"]}), chat_text="Mira smiled. MIRA! Someone else.")
    assert dict(report.key_hits) == {"Mira": 2, "Vell": 0}
    assert report.tokens > 0 and not report.problems
    keyless = analyse(Draft(title="Nameless", content="x"), chat_text="hello")
    assert any("no keys" in w for w in keyless.warnings)
    untitled = analyse(Draft(content="x"))
    assert "the draft has no title" in untitled.problems
