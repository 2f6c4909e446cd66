"""A first index hands out the entries parsed so far (issue 24: a 10,000-entry vault fills the
window while it is read); a later sync does not."""

from __future__ import annotations

import asyncio
import itertools

from dle_desktop.vault import indexer as indexer_module
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource


def write_vault(root, n: int) -> None:
    for i in range(n):
        (root / f"Note {i:03}.md").write_text(
            f"---\ntags: [lorebook]\nkeys: [key{i}]\n---\n# Note {i:03}\nSee [[Note {(i + 1) % n:03}]].\n",
            encoding="utf-8",
        )
    (root / "Broken.md").write_text("---\nkeys: [unclosed\n---\nbody\n", encoding="utf-8")


def test_a_first_index_shows_its_progress_and_a_sync_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH", 5)
    monkeypatch.setattr(indexer_module, "PARTIAL_EVERY_S", 0.0)
    write_vault(tmp_path, 45)
    indexer = VaultIndexer([FolderSource("v", tmp_path)])
    seen: list[list] = []
    result = asyncio.run(indexer.sync_all(partial=seen.append))
    sizes = [len(s) for s in seen]
    assert sizes[-1] < 45 and len(sizes) >= 3  # shown before the end
    assert all(b >= 2 * a for a, b in itertools.pairwise(sizes))  # each at least doubles
    titles = {e.title for e in seen[-1]}
    assert titles <= {e.title for e in result.snapshot.entries}  # only notes, never the broken one
    assert len(result.snapshot.entries) == 45
    again: list[list] = []
    (tmp_path / "Note 000.md").write_text("---\ntags: [lorebook]\nkeys: [changed]\n---\nNew.\n", encoding="utf-8")
    asyncio.run(indexer.sync_all(partial=again.append))
    assert again == []  # a sync of a known vault has its snapshot already
