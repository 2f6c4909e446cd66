"""Vault entries embedded into the real store with the real llama.cpp embedder."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource
from dle_desktop.vectors.embedder import LocalEmbedder
from dle_desktop.vectors.store import VectorStore
from dle_desktop.vectors.vault_embeddings import COLLECTION, SOURCE, VaultEmbeddings, entry_rows
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_vault"
MINILM = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf")


def _snapshot(vault: Path):
    return asyncio.run(VaultIndexer([FolderSource("v", vault)]).sync_all()).snapshot


def test_embeds_each_entry_once_and_follows_edits(tmp_path, tiny_model):
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)
    store = VectorStore(tmp_path / "vectors")
    ve = VaultEmbeddings(store, LocalEmbedder(tiny_model))
    snap = _snapshot(vault)
    visible = [e for e in snap.entries if not e.guide and e.content]
    seen = []
    first = asyncio.run(ve.sync(snap, progress=lambda done, total: seen.append((done, total))))
    assert first.embedded == len(visible) and seen[-1] == (len(visible), len(visible))
    again = asyncio.run(ve.sync(snap))
    assert again.embedded == 0 and again.removed == 0  # unchanged entries are never re-embedded
    # edit one note, delete another
    note = vault / "Places" / "Lantern Quay.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nNew gossip on the quay.\n", encoding="utf-8")
    (vault / "Rules" / "Storm Season.md").unlink()
    snap2 = _snapshot(vault)
    third = asyncio.run(ve.sync(snap2))
    # Lantern Quay: only its last passage changed (one old row out, one new in); Storm Season's rows go
    storm = next(e for e in snap.entries if e.title == "Storm Season")
    assert third.embedded == 1 and third.removed == 1 + len(entry_rows(storm))
    snap2_visible = [e for e in snap2.entries if not e.guide and e.content]
    assert ve.embedded_entries(snap2) == len(visible) - 1
    assert len(store.list_hashes(COLLECTION, SOURCE, ve.profile_key)) == sum(len(entry_rows(e)) for e in snap2_visible)


def test_search_returns_entry_uids_best_first(tmp_path, tiny_model):
    store = VectorStore(tmp_path / "vectors")
    ve = VaultEmbeddings(store, LocalEmbedder(tiny_model))
    snap = _snapshot(SAMPLE)
    asyncio.run(ve.sync(snap))
    hits = asyncio.run(ve.search("the lamplighters of the quay", 5))
    assert len(hits) == 5
    assert all(uid in snap.by_uid for uid, _, _ in hits)
    assert len({uid for uid, _, _ in hits}) == 5  # entries, not passages
    assert [s for _, s, _ in hits] == sorted((s for _, s, _ in hits), reverse=True)
    assert all(0 <= i < len(entry_rows(snap.by_uid[uid])) for uid, _, i in hits)
    assert asyncio.run(ve.search("   ", 5)) == []


def test_pause_holds_the_sync_until_resumed(tmp_path, tiny_model):
    store = VectorStore(tmp_path / "vectors")
    ve = VaultEmbeddings(store, LocalEmbedder(tiny_model), batch=4)
    snap = _snapshot(SAMPLE)

    async def go():
        ve.pause(True)
        task = asyncio.create_task(ve.sync(snap))
        await asyncio.sleep(0.3)
        assert not task.done()
        assert store.list_hashes(COLLECTION, SOURCE, ve.profile_key) == []
        ve.pause(False)
        stats = await asyncio.wait_for(task, 60)
        assert stats.paused and stats.embedded == stats.total > 0

    asyncio.run(go())


@pytest.mark.skipif(not MINILM.exists(), reason="needs ../shared/models (real embedding model)")
def test_real_model_finds_the_entry_by_meaning(tmp_path):
    store = VectorStore(tmp_path / "vectors")
    ve = VaultEmbeddings(store, LocalEmbedder(MINILM))
    snap = _snapshot(SAMPLE)
    asyncio.run(ve.sync(snap))
    # No key of the storm note appears in this question; its meaning is close.
    hits = asyncio.run(ve.search("When do the gales and high winds batter the city?", 5))
    titles = [snap.by_uid[uid].title for uid, _, _ in hits]
    assert "Storm Season" in titles[:3], titles
