"""The fast paths (patching a snapshot for an edit, reusing finalized entries on a warm start)
must give exactly what a full build gives."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from dle_desktop.vault.cache import IndexCache
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"


def _json(snapshot):
    return [e.to_json() for e in snapshot.entries], [s.to_json() for s in snapshot.skipped]


def _full(vault: Path):
    return asyncio.run(VaultIndexer([FolderSource("v", vault)]).sync_all(force=True)).snapshot


def test_edit_without_title_change_is_patched_and_equals_a_full_build(tmp_path):
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)

    async def go():
        ix = VaultIndexer([FolderSource("v", vault)])
        await ix.sync_all()
        ix.snapshot.bm25  # noqa: B018 - reading it builds BM25, so the incremental BM25 path runs too
        note = vault / "Places" / "Lantern Quay.md"
        note.write_text(note.read_text(encoding="utf-8") + "\nA new line about [[Tidewriting]].\n", encoding="utf-8")
        before = ix.snapshot
        result = await ix.sync_paths("v", ["Places/Lantern Quay.md"])
        assert result.changes.modified == ("v:Places/Lantern Quay.md",)
        assert result.snapshot is not before
        # untouched entries are the very same objects: nothing else was rebuilt
        same = sum(1 for a, b in zip(before.entries, result.snapshot.entries) if a is b)
        assert same == len(before.entries) - 1
        return result.snapshot

    patched = asyncio.run(go())
    full = _full(vault)
    assert _json(patched) == _json(full)
    hits_patched = patched.bm25.search("tidewriting lantern quay", 10, 0.0)
    hits_full = full.bm25.search("tidewriting lantern quay", 10, 0.0)
    assert [h[0] for h in hits_patched] == [h[0] for h in hits_full]
    assert [round(h[1], 9) for h in hits_patched] == [round(h[1], 9) for h in hits_full]


def test_title_change_falls_back_to_full_build_and_relinks(tmp_path):
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)

    async def go():
        ix = VaultIndexer([FolderSource("v", vault)])
        await ix.sync_all()
        note = vault / "Rules" / "Tidewriting.md"
        note.write_text(
            note.read_text(encoding="utf-8").replace("# Tidewriting", "# Tide-Writing", 1), encoding="utf-8"
        )
        return (await ix.sync_paths("v", ["Rules/Tidewriting.md"])).snapshot

    snap = asyncio.run(go())
    assert snap.find("Tide-Writing") is not None and snap.find("Tidewriting") is None
    # entries that linked to the old title no longer resolve it: a full build happened
    assert all("Tidewriting" not in e.resolved_links for e in snap.entries)
    assert _json(snap) == _json(_full(vault))


def test_warm_start_reuses_saved_finalized_entries_and_matches_full_build(tmp_path):
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)
    cache = IndexCache(tmp_path / "cache")
    asyncio.run(VaultIndexer([FolderSource("v", vault)], cache=cache).sync_all())
    warm = VaultIndexer([FolderSource("v", vault)], cache=cache).load_cache()
    assert warm is not None
    assert _json(warm) == _json(_full(vault))
    assert any(e.resolved_links for e in warm.entries)


def test_warm_start_ignores_finalized_entries_that_do_not_match_their_parse(tmp_path):
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)
    cache = IndexCache(tmp_path / "cache")
    ix = VaultIndexer([FolderSource("v", vault)], cache=cache)
    asyncio.run(ix.sync_all())
    # Save a cache whose finalized copy of one entry belongs to another parse.
    uid, (raw, fin) = next((u, p) for u, p in ix.snapshot._finalized.items() if p[1] is not p[0])
    import dataclasses

    bogus = dataclasses.replace(fin, content="TAMPERED", content_hash="0_x_y")
    ix.snapshot._finalized[uid] = (raw, bogus)
    ix.save_cache()
    warm = VaultIndexer([FolderSource("v", vault)], cache=cache).load_cache()
    assert warm.by_uid[uid].content == raw.content
    assert _json(warm) == _json(_full(vault))


def test_keyword_automaton_is_reused_after_a_body_edit_and_matches_a_rebuild(tmp_path):
    import random

    from dle_desktop.core.pipeline.chat import ChatMessage
    from dle_desktop.core.pipeline.config import MatchConfig
    from dle_desktop.core.pipeline.run import _parts, run_generation
    from dle_desktop.core.pipeline.state import ChatState

    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)
    cfg = MatchConfig()
    chat = [ChatMessage("Mira", "Lantern Quay, the lamplighters and the silt-ink of the Chancery.", is_user=True)]

    async def go():
        ix = VaultIndexer([FolderSource("v", vault)])
        await ix.sync_all()
        _, index_before = _parts(ix.snapshot, cfg)
        note = vault / "Places" / "Lantern Quay.md"
        note.write_text(note.read_text(encoding="utf-8") + "\nThe quay smells of tar tonight.\n", encoding="utf-8")
        snap = (await ix.sync_paths("v", ["Places/Lantern Quay.md"])).snapshot
        _, index_after = _parts(snap, cfg)
        assert index_after.automaton is index_before.automaton  # patched, not rebuilt
        assert index_after.entries[index_after.position[snap.find("Lantern Quay").uid]] is snap.find("Lantern Quay")
        return snap

    patched = asyncio.run(go())
    full = _full(vault)
    a, _ = run_generation(patched, chat, ChatState(), cfg, rng=random.Random(1))
    b, _ = run_generation(full, chat, ChatState(), cfg, rng=random.Random(1))
    assert a.to_json()["injected"] == b.to_json()["injected"]
    assert [g.text for g in a.groups] == [g.text for g in b.groups]
    assert "tar tonight" in " ".join(g.text for g in a.groups)


def _indexed_with_cache(tmp_path) -> tuple[Path, IndexCache, str]:
    """A copy of the sample vault indexed once with a cache: (the vault, the cache, its key)."""
    vault = tmp_path / "v"
    shutil.copytree(SAMPLE, vault)
    cache = IndexCache(tmp_path / "cache")
    ix = VaultIndexer([FolderSource("v", vault)], cache=cache)
    asyncio.run(ix.sync_all())
    return vault, cache, ix._cache_key(ix.sources[0])


def test_warm_start_saves_finalized_entries_as_their_links_and_rebuilds_them_exactly(tmp_path):
    from dle_desktop.core.index import entry_values

    vault, cache, key = _indexed_with_cache(tmp_path)
    _, meta = cache.load(key)
    # Each entry is in the file once: its parse in the records, only its links in the meta.
    assert meta["finalized"] == {} and meta["derived"]
    assert all(len(saved) == 6 for saved in meta["derived"].values())
    warm = VaultIndexer([FolderSource("v", vault)], cache=cache).load_cache()
    full = _full(vault)
    assert [entry_values(e) for e in warm.entries] == [entry_values(e) for e in full.entries]


def test_warm_start_ignores_saved_links_of_another_parse(tmp_path):
    vault, cache, key = _indexed_with_cache(tmp_path)
    records, meta = cache.load(key)
    uid, saved = next(iter(meta["derived"].items()))
    meta["derived"][uid] = ("0_x_y", saved[1], ("Nowhere",), (), (), ())
    cache.save(key, records, meta)
    warm = VaultIndexer([FolderSource("v", vault)], cache=cache).load_cache()
    assert "Nowhere" not in warm.by_uid[uid].resolved_links
    assert _json(warm) == _json(_full(vault))
