"""IndexCache on real files: round trip, damage treated as a miss, warm start through the indexer."""

from __future__ import annotations

import asyncio
import pickle
import shutil
from pathlib import Path

import pytest

from dle_desktop.core.entry import Entry, Skip, TagConfig
from dle_desktop.core.note_parser import parse_note
from dle_desktop.vault.cache import CACHE_FORMAT, FileRecord, IndexCache
from dle_desktop.vault.indexer import ParseOptions, VaultIndexer
from dle_desktop.vault.sources import FolderSource

CHUNK_PLUS = 600  # more items than one chunk holds


def run(coro):
    return asyncio.run(coro)


def entries_json(snapshot) -> list[dict]:
    return sorted((e.to_json() for e in snapshot.entries), key=lambda d: (d["vault"], d["path"]))


def make_records(lore) -> dict[str, FileRecord]:
    entry = parse_note("v", "A.md", lore("Alpha", ("a", "alpha")))
    skip = parse_note("v", "B.md", "no frontmatter")
    assert isinstance(entry, Entry) and isinstance(skip, Skip)
    return {"A.md": FileRecord("1:2", entry.content_hash, entry), "B.md": FileRecord(None, "abc", skip)}


def test_round_trip(tmp_path, lore):
    cache = IndexCache(tmp_path / "cache")
    records = make_records(lore)
    cache.save("key-1", records, {"note": "meta"})
    loaded = IndexCache(tmp_path / "cache").load("key-1")
    assert loaded is not None
    got, meta = loaded
    assert meta == {"note": "meta"}
    assert got.keys() == records.keys()
    assert got["A.md"].stamp == "1:2" and got["A.md"].content_hash == records["A.md"].content_hash
    assert got["A.md"].result.to_json() == records["A.md"].result.to_json()
    assert got["B.md"].result == records["B.md"].result  # Skip compares by value
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".idx"]  # no temp file left


def test_missing_key_and_other_keys_are_misses(tmp_path, lore):
    cache = IndexCache(tmp_path / "cache")
    assert cache.load("anything") is None  # no folder yet
    cache.save("key-1", make_records(lore))
    assert cache.load("key-2") is None


def test_clear_removes_cache_files(tmp_path, lore):
    cache = IndexCache(tmp_path / "cache")
    cache.save("k1", make_records(lore))
    cache.save("k2", make_records(lore))
    assert cache.clear() == 2
    assert cache.load("k1") is None


def _damage_variants(good: bytes, key: str):
    return {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "garbage": b"\x00\x01this is not a pickle at all\xff" * 10,
        "text": b'{"format": 3}',
        "other format": pickle.dumps({"format": CACHE_FORMAT + 1, "key": key, "records": {}, "meta": {}}),
        "old format": pickle.dumps({"format": CACHE_FORMAT - 1, "key": key, "records": {}, "meta": {}}),
        "other key": pickle.dumps({"format": CACHE_FORMAT, "key": key + "x", "records": {}, "meta": {}}),
        "not a dict": pickle.dumps(["format", CACHE_FORMAT]),
        "records not a dict": pickle.dumps({"format": CACHE_FORMAT, "key": key, "records": [1, 2], "meta": {}}),
        "bad record": pickle.dumps({"format": CACHE_FORMAT, "key": key, "records": {"A.md": "text"}, "meta": {}}),
        "unknown class": good.replace(b"FileRecord", b"FileRecorX"),
        "chunks not a list": pickle.dumps({"format": CACHE_FORMAT, "key": key, "chunks": b"x", "meta": {}}),
        "chunk not a pickle": pickle.dumps(
            {"format": CACHE_FORMAT, "key": key, "chunks": [b"\x00garbage"], "meta": {}}
        ),
        "bad record in a chunk": pickle.dumps(
            {"format": CACHE_FORMAT, "key": key, "chunks": [pickle.dumps({"A.md": "text"})], "meta": {}}
        ),
    }


@pytest.mark.parametrize(
    "variant",
    [
        "truncated",
        "empty",
        "garbage",
        "text",
        "other format",
        "old format",
        "other key",
        "not a dict",
        "records not a dict",
        "bad record",
        "unknown class",
        "chunks not a list",
        "chunk not a pickle",
        "bad record in a chunk",
    ],
)
def test_damaged_cache_is_a_miss_not_an_error(tmp_path, lore, variant):
    cache = IndexCache(tmp_path / "cache")
    cache.save("key-1", make_records(lore))
    [path] = list((tmp_path / "cache").glob("*.idx"))
    path.write_bytes(_damage_variants(path.read_bytes(), "key-1")[variant])
    assert cache.load("key-1") is None


def test_many_records_round_trip_in_chunks_the_window_can_run_between(tmp_path, lore):
    """10,000 records are pickled in chunks of CHUNK (each loads in milliseconds), not in one
    load that holds the interpreter lock for half a second; they come back whole and in order."""
    from dle_desktop.vault.cache import CHUNK

    (one,) = [r for r in make_records(lore).values() if isinstance(r.result, Entry)]
    records = {f"N{i:05d}.md": FileRecord(f"{i}:1", f"h{i}", one.result) for i in range(10_000)}
    cache = IndexCache(tmp_path / "cache")
    pauses: list[int] = []
    cache.save("key-1", records, give_way=lambda: pauses.append(1) or 0.0)
    [path] = list((tmp_path / "cache").glob("*.idx"))
    saved = pickle.loads(path.read_bytes())
    assert len(saved["chunks"]) == -(-10_000 // CHUNK)
    assert len(pauses) == len(saved["chunks"]) - 1  # a save in the background gives way between chunks
    loaded = cache.load("key-1")
    assert loaded is not None and list(loaded[0]) == list(records) and loaded[0]["N09999.md"].stamp == "9999:1"


def test_meta_that_is_not_a_dict_becomes_empty(tmp_path, lore):
    cache = IndexCache(tmp_path / "cache")
    cache.save("k", make_records(lore))
    [path] = list((tmp_path / "cache").glob("*.idx"))
    payload = pickle.loads(path.read_bytes())
    payload["meta"] = "nonsense"
    path.write_bytes(pickle.dumps(payload))
    records, meta = cache.load("k")
    assert meta == {} and set(records) == {"A.md", "B.md"}


def test_a_large_meta_mapping_is_saved_in_chunks_and_comes_back_whole(tmp_path, lore):
    """The saved links of 10,000 entries are pickled in chunks like the records (pickled whole,
    they held the interpreter lock while the window filled its table); small values stay as
    they are."""
    from dle_desktop.vault.cache import CHUNK

    derived = {f"v\x00N{i:05d}.md": (f"h{i}", f"Note {i}", (f"Note {i + 1}",)) for i in range(10_000)}
    meta = {"derived": derived, "titles": {"note 1": "v\x00N00001.md"}, "field_definitions": "defs"}
    cache = IndexCache(tmp_path / "cache")
    cache.save("key-1", make_records(lore), meta)
    [path] = list((tmp_path / "cache").glob("*.idx"))
    saved = pickle.loads(path.read_bytes())
    assert set(saved["meta_chunks"]) == {"derived"} and len(saved["meta_chunks"]["derived"]) == -(-10_000 // CHUNK)
    assert saved["meta"] == {"titles": meta["titles"], "field_definitions": "defs"}
    _records, loaded = cache.load("key-1")
    assert loaded == meta and list(loaded["derived"]) == list(derived)


def test_a_cache_saved_before_meta_chunks_still_loads_its_meta(tmp_path, lore):
    cache = IndexCache(tmp_path / "cache")
    cache.save("k", make_records(lore))
    [path] = list((tmp_path / "cache").glob("*.idx"))
    payload = pickle.loads(path.read_bytes())
    del payload["meta_chunks"]
    payload["meta"] = {"derived": {f"u{i}": (i,) for i in range(CHUNK_PLUS)}}
    path.write_bytes(pickle.dumps(payload))
    records, meta = cache.load("k")
    assert set(records) == {"A.md", "B.md"} and len(meta["derived"]) == CHUNK_PLUS


def test_a_damaged_meta_chunk_drops_that_mapping_and_keeps_the_records(tmp_path, lore, caplog):
    cache = IndexCache(tmp_path / "cache")
    cache.save("k", make_records(lore), {"derived": {f"u{i}": (i,) for i in range(CHUNK_PLUS)}, "small": 1})
    [path] = list((tmp_path / "cache").glob("*.idx"))
    payload = pickle.loads(path.read_bytes())
    payload["meta_chunks"]["derived"][0] = b"not a pickle"
    path.write_bytes(pickle.dumps(payload))
    records, meta = cache.load("k")
    assert set(records) == {"A.md", "B.md"} and meta == {"small": 1}
    assert "saved links are unreadable" in caplog.text


# ----------------------------------------------------------------------------- through the indexer


def new_indexer(root: Path, cache_dir: Path, name: str = "v", **options) -> VaultIndexer:
    return VaultIndexer([FolderSource(name, root)], ParseOptions(**options), IndexCache(cache_dir))


@pytest.mark.parametrize("variant", ["truncated", "garbage", "other format", "bad record"])
def test_damaged_cache_leads_to_a_full_index(make_vault, lore, tmp_path, variant):
    root = make_vault({f"N{i}.md": lore(f"Note {i}") for i in range(5)})
    cache_dir = tmp_path / "cache"
    run(new_indexer(root, cache_dir).sync_all())
    [path] = list(cache_dir.glob("*.idx"))
    path.write_bytes(_damage_variants(path.read_bytes(), "ignored")[variant])

    idx = new_indexer(root, cache_dir)
    assert idx.load_cache() is None
    assert idx.snapshot is None
    result = run(idx.sync_all())
    assert (result.read, result.parsed) == (5, 5)
    assert len(result.snapshot) == 5
    # And the rebuilt cache is good again.
    assert new_indexer(root, cache_dir).load_cache() is not None


def test_warm_start_publishes_the_cached_index_without_reading_files(make_vault, lore, tmp_path, helpers):
    defs = "fields:\n  - name: faction\n    label: Faction\n    type: string\n"
    files = {f"Folder/N{i}.md": lore(f"Note {i}", (f"k{i}",), extra="faction: Heron") for i in range(20)}
    files["Broken.md"] = "---\ntags: [lorebook\n---\n# Broken\n"
    files["DeepLore/field-definitions.yaml"] = defs
    root = make_vault(files)
    cache_dir = tmp_path / "cache"
    cold = run(new_indexer(root, cache_dir).sync_all())
    assert len(cold.snapshot) == 20

    # Take the vault away entirely: whatever load_cache publishes cannot have come from the files.
    shutil.move(str(root), str(tmp_path / "elsewhere"))
    warm_idx = new_indexer(root, cache_dir)
    warm = warm_idx.load_cache()
    assert warm is not None
    assert warm_idx.snapshot is warm
    assert entries_json(warm) == entries_json(cold.snapshot)
    assert [s.to_json() for s in warm.skipped] == [s.to_json() for s in cold.snapshot.skipped]
    assert warm.entries[0].custom_fields == {"faction": "Heron"}  # field definitions came from the cache too
    assert warm_idx.field_definitions.signature() == cold.snapshot.field_definitions.signature()
    assert any("loaded from cache" in w for w in warm.warnings)

    # Vault back in place and unchanged: reconciling reads nothing and reports no changes.
    shutil.move(str(tmp_path / "elsewhere"), str(root))
    result = run(warm_idx.sync_all())
    assert (result.read, result.parsed) == (0, 0)
    assert not result.changes.has_changes
    assert not any("loaded from cache" in w for w in result.snapshot.warnings)

    # One file edited while the app was closed: only it is read after a warm start.
    (root / "Folder" / "N7.md").write_text(lore("Note 7", ("k7", "more")), encoding="utf-8")
    helpers.bump_mtime(root / "Folder" / "N7.md")
    idx3 = new_indexer(root, cache_dir)
    idx3.load_cache()
    result = run(idx3.sync_all())
    assert (result.read, result.parsed) == (1, 1)
    assert result.changes.modified == ("v:Folder/N7.md",)


def test_warm_start_then_vault_missing_keeps_the_cached_index(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    cache_dir = tmp_path / "cache"
    run(new_indexer(root, cache_dir).sync_all())
    shutil.rmtree(root)
    idx = new_indexer(root, cache_dir)
    assert idx.load_cache() is not None
    result = run(idx.sync_all())
    assert [e.title for e in result.snapshot.entries] == ["Alpha"]
    assert "v" in result.vault_errors


def test_cache_key_changes_with_tag_settings(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta", tags="[lore]")})
    cache_dir = tmp_path / "cache"
    run(new_indexer(root, cache_dir).sync_all())
    other_tags = new_indexer(root, cache_dir, tags=TagConfig(lorebook="lore"))
    assert other_tags.load_cache() is None  # parsed with other tags: not reusable
    assert new_indexer(root, cache_dir, lenient=False).load_cache() is None
    assert new_indexer(root, cache_dir).load_cache() is not None
    result = run(other_tags.sync_all())
    assert [e.title for e in result.snapshot.entries] == ["Beta"]
    # Both configurations now have their own cache file.
    assert len(list(cache_dir.glob("*.idx"))) == 2
    assert [e.title for e in new_indexer(root, cache_dir).load_cache().entries] == ["Alpha"]


def test_cache_key_changes_with_vault_name_and_location(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    cache_dir = tmp_path / "cache"
    run(new_indexer(root, cache_dir).sync_all())
    assert new_indexer(root, cache_dir, name="other").load_cache() is None
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    assert new_indexer(copy, cache_dir).load_cache() is None


def test_unchanged_sync_does_not_rewrite_the_cache(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    cache_dir = tmp_path / "cache"
    idx = new_indexer(root, cache_dir)
    run(idx.sync_all())
    [path] = list(cache_dir.glob("*.idx"))
    before = path.stat().st_mtime_ns
    path.write_bytes(path.read_bytes())  # same bytes, new mtime marker we can compare against
    marker = path.stat().st_mtime_ns
    assert marker >= before
    run(idx.sync_all())
    assert path.stat().st_mtime_ns == marker


def test_failed_vault_is_not_saved_over_its_good_cache(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    cache_dir = tmp_path / "cache"
    idx = new_indexer(root, cache_dir)
    run(idx.sync_all())
    shutil.move(str(root), str(tmp_path / "away"))
    run(idx.sync_all(force=True))
    assert [e.title for e in new_indexer(root, cache_dir).load_cache().entries] == ["Alpha"]


def test_unwritable_cache_folder_does_not_break_sync(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    result = run(new_indexer(root, blocker).sync_all())
    assert [e.title for e in result.snapshot.entries] == ["Alpha"]
