"""A big folder sync reads and parses its notes in worker processes (spawned, real): the index is
the very same as when read in a thread, an unchanged note keeps its parse, notes that cannot be
read are skips saying why, and when worker processes cannot start the sync reads here instead."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dle_desktop.vault import read_batch
from dle_desktop.vault.indexer import BATCH, ParseOptions, VaultIndexer
from dle_desktop.vault.sources import FolderSource
from tests.conftest import lore_text

NOTES = 2 * BATCH + 37  # three batches, the last one short


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for i in range(NOTES):
        folder = root / ("People" if i % 3 else "Places") / f"g{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        extra = f"priority: {i % 90}\nrequires: [Note {i - 1}]" if i % 5 == 0 and i else ""
        body = f"Note {i} links [[Note {(i * 7) % NOTES}]] and [[Note {(i + 1) % NOTES}]]."
        (folder / f"Note {i}.md").write_text(lore_text(f"Note {i}", (f"key{i}", f"shared{i % 11}"), extra, body))
    (root / "Loose.md").write_text("no frontmatter, so no entry")
    (root / "Broken.md").write_bytes(b"---\nkeys: [unclosed\n---\n# Broken\n\xff\xfe bad bytes\n")
    outside = root.parent / "outside.md"
    outside.write_text(lore_text("Outside", ("out",)))
    os.symlink(outside, root / "Linked.md")
    return root


def _indexer(root: Path, in_processes: bool) -> VaultIndexer:
    indexer = VaultIndexer([FolderSource("v", root)], ParseOptions())
    indexer.process_min_notes = 1 if in_processes else 10**9
    return indexer


def _shape(snapshot) -> tuple:
    entries = [
        (e.uid, e.title, e.keys, e.priority, e.content_hash, e.links, e.requires, e.content) for e in snapshot.entries
    ]
    return entries, [(s.path, s.code, s.reason) for s in snapshot.skipped]


@pytest.fixture
def started(monkeypatch) -> list[int]:
    """How many times a sync started worker processes."""
    count: list[int] = []
    executor = read_batch.BatchProcesses.executor

    def counting(self):
        if self._pool is None:
            count.append(self.workers)
        return executor(self)

    monkeypatch.setattr(read_batch.BatchProcesses, "executor", counting)
    return count


def test_a_big_sync_in_worker_processes_builds_the_same_index_as_one_in_a_thread(vault, started):
    threaded = asyncio.run(_indexer(vault, in_processes=False).sync_all())
    assert started == []
    pooled = asyncio.run(_indexer(vault, in_processes=True).sync_all())
    assert len(started) == 1 and started[0] >= 1
    assert _shape(pooled.snapshot) == _shape(threaded.snapshot)
    assert (pooled.read, pooled.parsed) == (threaded.read, threaded.parsed) == (NOTES + 3, NOTES + 3)
    assert len(pooled.snapshot.entries) == NOTES
    codes = {s.path: s.code for s in pooled.snapshot.skipped}
    assert codes["Linked.md"] == "SKIP_OUTSIDE_VAULT"
    assert "Loose.md" in codes


def test_notes_read_again_in_worker_processes_keep_their_parse_unless_they_changed(vault, started):
    indexer = _indexer(vault, in_processes=True)
    asyncio.run(indexer.sync_all())
    first = {p: rec.result for p, rec in indexer._records["v"].items()}
    changed = next(vault.rglob("Note 12.md")).relative_to(vault).as_posix()
    (vault / changed).write_text(lore_text("Note 12", ("renamed key",)))
    for note in vault.rglob("*.md"):  # every stamp moves: every note is read, only the changed one re-parsed
        os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))
    second = asyncio.run(indexer.sync_all())
    assert len(started) == 2
    # the note that cannot be read is a new skip each time, as in a thread
    assert second.read == NOTES + 3 and second.parsed == 2
    now = {p: rec.result for p, rec in indexer._records["v"].items()}
    assert set(now) == set(first)
    assert sorted(p for p in now if now[p] is not first[p]) == sorted([changed, "Linked.md"])
    assert next(e for e in second.snapshot.entries if e.path == changed).keys == ("renamed key",)


def test_when_worker_processes_cannot_start_the_sync_reads_in_a_thread(vault, monkeypatch, caplog):
    def cannot_start(self):
        raise OSError("no processes in this sandbox")

    monkeypatch.setattr(read_batch.BatchProcesses, "executor", cannot_start)
    result = asyncio.run(_indexer(vault, in_processes=True).sync_all())
    assert len(result.snapshot.entries) == NOTES
    assert "no processes in this sandbox" in caplog.text and "reading the rest here" in caplog.text
