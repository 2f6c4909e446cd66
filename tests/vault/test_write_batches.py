"""Issue 25: writes made as one action share a batch id in the write history, one Undo takes the
whole batch back (a note changed since is kept and reported), and a batch re-indexes once. Real
files, a real SQLite history; the history file of an older version is migrated in place."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from dle_desktop.errors import WriteConflict
from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.write_history import WriteHistory
from dle_desktop.vault.writer import NoteWriter

#: The schema the write history had before batches (as shipped before issue 25).
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS writes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    vault TEXT NOT NULL,
    path TEXT NOT NULL,
    feature TEXT NOT NULL,
    action TEXT NOT NULL,
    before_text TEXT,
    after_text TEXT,
    before_hash TEXT,
    after_hash TEXT,
    undoes INTEGER,
    undone_by INTEGER
);
CREATE INDEX IF NOT EXISTS writes_by_note ON writes (vault, path, id);
"""


def note(title: str, body: str = "text") -> str:
    return f"---\ntags: [lorebook]\nkeys: [{title.lower()}]\n---\n# {title}\n\n{body}\n"


class Reindexed:
    """The writer's `on_written` hook: remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[str]]] = []

    def __call__(self, vault: str, paths: set[str]) -> None:
        self.calls.append((vault, set(paths)))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def make_writer(tmp_path: Path, vault: Path, hook: Reindexed | None = None) -> NoteWriter:
    return NoteWriter(
        [FolderSource("mine", vault)], history=WriteHistory(tmp_path / "data" / "history.sqlite"), on_written=hook
    )


# -- the history file ------------------------------------------------------------------------------


def test_an_old_history_file_gains_the_batch_column_and_keeps_its_records(tmp_path: Path):
    path = tmp_path / "write-history.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO writes (at, vault, path, feature, action, before_text, after_text, before_hash, after_hash) "
        "VALUES (1.0, 'mine', 'Quay.md', 'librarian', 'create', NULL, 'x', NULL, 'h')"
    )
    db.commit()
    db.close()

    history = WriteHistory(path)
    [old] = history.for_note("mine", "Quay.md")
    assert (old.feature, old.after_text, old.batch) == ("librarian", "x", None)
    new = history.record(
        vault="mine", path="Gull.md", feature="wi-import", action="create", before_text=None,
        after_text="y", before_hash=None, after_hash="h2", batch="b1",
    )  # fmt: skip
    assert new.batch == "b1"
    assert [r.path for r in history.for_batch("b1")] == ["Gull.md"]
    assert history.for_batch("nothing") == []
    history.close()

    db = sqlite3.connect(path)
    columns = [row[1] for row in db.execute("PRAGMA table_info(writes)")]
    indexes = [row[1] for row in db.execute("PRAGMA index_list(writes)")]
    db.close()
    assert columns[-1] == "batch" and "writes_by_batch" in indexes
    # Opening it again (the migration already done) changes nothing.
    again = WriteHistory(path)
    assert [r.path for r in again.for_batch("b1")] == ["Gull.md"]
    again.close()


# -- undoing a batch -------------------------------------------------------------------------------


def test_undo_batch_takes_back_creates_and_overwrites_newest_first(tmp_path: Path, vault: Path):
    (vault / "Old.md").write_text(note("Old", "before"), encoding="utf-8")
    (vault / "Mine.md").write_text(note("Mine"), encoding="utf-8")
    writer = make_writer(tmp_path, vault)

    async def main() -> None:
        await writer.create("mine", "Lore/A.md", note("A"), feature="wi-import", batch="b1")
        await writer.create("mine", "Lore/B.md", note("B"), feature="wi-import", batch="b1")
        old = await writer.read("mine", "Old.md")
        await writer.write("mine", "Old.md", note("Old", "imported"), base=old, feature="wi-import", batch="b1")
        # The same note twice in one batch: undone newest first, it ends as it began (absent).
        b = await writer.read("mine", "Lore/B.md")
        await writer.write("mine", "Lore/B.md", note("B", "second"), base=b, feature="wi-import", batch="b1")
        # A write outside the batch is not touched.
        mine = await writer.read("mine", "Mine.md")
        await writer.write("mine", "Mine.md", note("Mine", "edited"), base=mine, feature="manual")

        undo = await writer.undo_batch("b1")
        assert undo.complete and len(undo.undone) == 4
        assert [r.path for r in undo.undone] == ["Lore/B.md", "Old.md", "Lore/B.md", "Lore/A.md"]
        again = await writer.undo_batch("b1")
        assert again.undone == () and again.complete

    asyncio.run(main())
    assert not (vault / "Lore" / "A.md").exists() and not (vault / "Lore" / "B.md").exists()
    assert (vault / "Old.md").read_text(encoding="utf-8") == note("Old", "before")
    assert (vault / "Mine.md").read_text(encoding="utf-8") == note("Mine", "edited")
    undo_records = [r for r in writer.history.recent(20) if r.action == "undo"]
    assert len(undo_records) == 4 and all(r.batch is None for r in undo_records)


def test_a_note_changed_after_the_batch_is_kept_and_reported_the_others_are_undone(tmp_path: Path, vault: Path):
    writer = make_writer(tmp_path, vault)

    async def main():
        for title in ("A", "B", "C"):
            await writer.create("mine", f"{title}.md", note(title), feature="wi-import", batch="b2")
        (vault / "B.md").write_text(note("B", "my own edit"), encoding="utf-8")
        return await writer.undo_batch("b2")

    undo = asyncio.run(main())
    assert sorted(r.path for r in undo.undone) == ["A.md", "C.md"]
    [conflict] = undo.conflicts
    assert isinstance(conflict, WriteConflict) and conflict.path == "B.md"
    assert conflict.current_text == note("B", "my own edit")
    assert not undo.complete
    assert sorted(p.name for p in vault.iterdir()) == ["B.md"]
    assert (vault / "B.md").read_text(encoding="utf-8") == note("B", "my own edit")


# -- one re-index for a batch ----------------------------------------------------------------------


def test_writes_inside_deferred_reindex_are_reindexed_once_at_the_end(tmp_path: Path, vault: Path):
    hook = Reindexed()
    writer = make_writer(tmp_path, vault, hook)

    async def main() -> None:
        async with writer.deferred_reindex():
            for i in range(5):
                await writer.create("mine", f"N{i}.md", note(f"N{i}"), feature="wi-import", batch="b3")
            async with writer.deferred_reindex():  # a nested use joins the outer one
                await writer.create("mine", "N5.md", note("N5"), feature="wi-import", batch="b3")
            assert hook.calls == []
        assert hook.calls == [("mine", {f"N{i}.md" for i in range(6)})]
        hook.calls.clear()
        await writer.create("mine", "Solo.md", note("Solo"), feature="manual")
        assert hook.calls == [("mine", {"Solo.md"})]
        hook.calls.clear()
        await writer.undo_batch("b3")  # the undo of a batch is one re-index too
        assert hook.calls == [("mine", {f"N{i}.md" for i in range(6)})]

    asyncio.run(main())


def test_a_failure_inside_deferred_reindex_still_reindexes_what_was_written(tmp_path: Path, vault: Path):
    hook = Reindexed()
    writer = make_writer(tmp_path, vault, hook)

    async def main() -> None:
        with pytest.raises(RuntimeError):
            async with writer.deferred_reindex():
                await writer.create("mine", "A.md", note("A"), feature="x", batch="b4")
                raise RuntimeError("stop")
        assert hook.calls == [("mine", {"A.md"})]

    asyncio.run(main())


def test_another_task_writing_meanwhile_is_reindexed_at_once(tmp_path: Path, vault: Path):
    """The deferral belongs to the coroutine that asked for it, not to the writer: the Scribe
    writing while an import runs still sees its note indexed when its write returns."""
    hook = Reindexed()
    writer = make_writer(tmp_path, vault, hook)

    async def main() -> None:
        started, release = asyncio.Event(), asyncio.Event()

        async def importing() -> None:
            async with writer.deferred_reindex():
                await writer.create("mine", "Imported.md", note("Imported"), feature="wi-import", batch="b5")
                started.set()
                await release.wait()

        task = asyncio.create_task(importing())
        await started.wait()
        await writer.create("mine", "Scribe.md", note("Scribe"), feature="scribe")
        assert hook.calls == [("mine", {"Scribe.md"})]
        release.set()
        await task
        assert hook.calls[-1] == ("mine", {"Imported.md"})

    asyncio.run(main())


def test_the_history_is_not_fsynced_per_record(tmp_path: Path):
    """WAL with synchronous=NORMAL (1): sound through any crash, and an import's records are no
    longer one fsync each under the history's lock."""
    history = WriteHistory(tmp_path / "history.sqlite")
    history.for_batch("x")
    db = history._conn()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1
    history.close()
