"""VaultIndexer reuse sync against real folders: what gets read, what gets re-parsed, what the
ChangeSet reports, and that failures and cancellation never lose the last good index."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from dle_desktop.core.entry import Entry, Skip, TagConfig
from dle_desktop.errors import VaultError
from dle_desktop.vault.cache import IndexCache
from dle_desktop.vault.indexer import BATCH, ParseOptions, SyncResult, VaultIndexer
from dle_desktop.vault.sources import MAX_FOLDER_DEPTH, FolderSource


def run(coro):
    return asyncio.run(coro)


def indexer_for(
    *roots: Path, names: tuple[str, ...] | None = None, cache_dir: Path | None = None, **options
) -> VaultIndexer:
    names = names or tuple("v" if len(roots) == 1 else f"v{i}" for i in range(len(roots)))
    sources = [FolderSource(n, r) for n, r in zip(names, roots)]
    return VaultIndexer(sources, ParseOptions(**options), IndexCache(cache_dir) if cache_dir else None)


def uid(path: str, vault: str = "v") -> str:
    return f"{vault}\x00{path}"


def titles(result_or_snap) -> list[str]:
    snap = getattr(result_or_snap, "snapshot", result_or_snap)
    return sorted(e.title for e in snap.entries)


# ----------------------------------------------------------------------------- reuse


def test_first_sync_reads_and_parses_everything(make_vault, lore):
    root = make_vault({"A.md": lore("Alpha", ("a",)), "Sub/B.md": lore("Beta", ("b",)), "Notes.md": "no frontmatter"})
    result = run(indexer_for(root).sync_all())
    assert isinstance(result, SyncResult)
    assert (result.read, result.parsed) == (3, 3)
    assert titles(result) == ["Alpha", "Beta"]
    assert result.changes.first_build
    assert sorted(result.changes.added) == ["v:A.md", "v:Sub/B.md"]
    assert [s.path for s in result.snapshot.skipped] == ["Notes.md"]
    assert result.vault_errors == {}


def test_second_sync_with_nothing_changed_reads_nothing(make_vault, lore):
    root = make_vault({f"N{i}.md": lore(f"Note {i}", (f"k{i}",)) for i in range(12)})
    idx = indexer_for(root)
    first = run(idx.sync_all())
    second = run(idx.sync_all())
    assert (second.read, second.parsed) == (0, 0)
    assert not second.changes.has_changes
    assert not second.changes.first_build
    assert second.changes.summary() == "no changes"
    # The same Entry objects are carried into the new snapshot.
    for u, e in first.snapshot.by_uid.items():
        assert second.snapshot.by_uid[u] is e
    assert second.snapshot is first.snapshot  # nothing changed: the published index stays


def test_editing_one_file_rereads_and_reparses_only_it(make_vault, lore, helpers):
    root = make_vault({f"N{i}.md": lore(f"Note {i}", (f"k{i}",)) for i in range(10)})
    idx = indexer_for(root)
    first = run(idx.sync_all())
    (root / "N3.md").write_text(lore("Note 3", ("k3", "new key"), body="A longer, different body."), encoding="utf-8")
    helpers.bump_mtime(root / "N3.md")
    result = run(idx.sync_all())
    assert (result.read, result.parsed) == (1, 1)
    assert result.changes.modified == ("v:N3.md",)
    assert result.changes.keys_changed == ("v:N3.md",)
    assert result.changes.added == () and result.changes.removed == ()
    assert result.changes.summary() == "1 modified"
    assert result.snapshot.by_uid[uid("N3.md")].keys == ("k3", "new key")
    for i in range(10):
        if i != 3:
            assert result.snapshot.by_uid[uid(f"N{i}.md")] is first.snapshot.by_uid[uid(f"N{i}.md")]


def test_body_only_edit_is_modified_but_keys_unchanged(make_vault, lore, helpers):
    root = make_vault({"A.md": lore("Alpha", ("a",))})
    idx = indexer_for(root)
    run(idx.sync_all())
    (root / "A.md").write_text(lore("Alpha", ("a",), body="Only the body changed here."), encoding="utf-8")
    helpers.bump_mtime(root / "A.md")
    result = run(idx.sync_all())
    assert result.changes.modified == ("v:A.md",)
    assert result.changes.keys_changed == ()


def test_touch_without_content_change_rereads_but_does_not_reparse(make_vault, lore, helpers):
    root = make_vault({"A.md": lore("Alpha", ("a",)), "B.md": lore("Beta", ("b",))})
    idx = indexer_for(root)
    first = run(idx.sync_all())
    helpers.bump_mtime(root / "A.md")
    result = run(idx.sync_all())
    assert (result.read, result.parsed) == (1, 0)
    assert not result.changes.has_changes
    assert result.snapshot.by_uid[uid("A.md")] is first.snapshot.by_uid[uid("A.md")]
    # The new stamp was recorded: a third sync reads nothing.
    third = run(idx.sync_all())
    assert (third.read, third.parsed) == (0, 0)


def test_deleted_added_and_renamed_files_appear_in_the_changeset(make_vault, lore):
    root = make_vault({"Keep.md": lore("Keep"), "Gone.md": lore("Gone"), "Old Name.md": lore("Moving")})
    idx = indexer_for(root)
    run(idx.sync_all())
    (root / "Gone.md").unlink()
    (root / "New").mkdir()
    (root / "New" / "Fresh.md").write_text(lore("Fresh"), encoding="utf-8")
    os.rename(root / "Old Name.md", root / "New" / "New Name.md")
    result = run(idx.sync_all())
    assert sorted(result.changes.removed) == ["v:Gone.md", "v:Old Name.md"]
    assert sorted(result.changes.added) == ["v:New/Fresh.md", "v:New/New Name.md"]
    assert result.changes.modified == ()
    assert result.changes.summary() == "2 added, 2 removed"
    assert titles(result) == ["Fresh", "Keep", "Moving"]
    assert result.snapshot.by_uid[uid("New/New Name.md")].folder == "New"
    # A rename is re-read at its new path (the stamp is new there) but its content is unchanged.
    assert result.read == 2


def test_field_definitions_change_forces_a_reparse_of_every_file(make_vault, lore, helpers):
    notes = {f"N{i}.md": lore(f"Note {i}", extra="faction: Vantreel" if i == 0 else "") for i in range(6)}
    notes["Plain.md"] = "no frontmatter, skipped but still a file"
    root = make_vault(notes)
    idx = indexer_for(root)
    first = run(idx.sync_all())
    assert "faction" not in first.snapshot.by_uid[uid("N0.md")].custom_fields

    helpers.write_files(
        root, {"DeepLore/field-definitions.yaml": "fields:\n  - name: faction\n    label: Faction\n    type: string\n"}
    )
    result = run(idx.sync_all())
    assert result.read == 7 and result.parsed == 7  # every note, though no note changed
    assert result.snapshot.by_uid[uid("N0.md")].custom_fields == {"faction": "Vantreel"}
    assert idx.field_definitions.source.endswith("field-definitions.yaml")
    # Unchanged definitions on the next sync: back to reading nothing.
    again = run(idx.sync_all())
    assert (again.read, again.parsed) == (0, 0)

    # Removing the file goes back to the defaults, again re-parsing everything.
    (root / "DeepLore" / "field-definitions.yaml").unlink()
    back = run(idx.sync_all())
    assert back.parsed == 7
    assert "faction" not in back.snapshot.by_uid[uid("N0.md")].custom_fields


def test_force_reparses_everything(make_vault, lore):
    root = make_vault({f"N{i}.md": lore(f"Note {i}") for i in range(4)})
    idx = indexer_for(root)
    run(idx.sync_all())
    result = run(idx.sync_all(force=True))
    assert (result.read, result.parsed) == (4, 4)
    assert not result.changes.has_changes  # same content: nothing to report


def test_a_forced_sync_that_changes_nothing_keeps_the_index_and_its_version(make_vault, lore, helpers):
    root = make_vault({f"N{i}.md": lore(f"Note {i}", (f"k{i}",)) for i in range(4)} | {"Plain.md": "skipped"})
    idx = indexer_for(root)
    first = run(idx.sync_all()).snapshot
    forced = run(idx.sync_all(force=True))
    assert forced.parsed == 5
    assert forced.snapshot is first and idx.snapshot.version == first.version
    # The next edit is still patched into the kept snapshot (no full rebuild).
    (root / "N2.md").write_text(lore("Note 2", ("k2",), body="Edited."), encoding="utf-8")
    helpers.bump_mtime(root / "N2.md")
    edited = run(idx.sync_paths("v", ["N2.md"]))
    assert edited.changes.modified == ("v:N2.md",) and edited.snapshot.version != first.version
    assert edited.snapshot._patched_from is not None and edited.snapshot._patched_from[0] is first


# ----------------------------------------------------------------------------- failures


def test_partial_listing_keeps_entries_it_could_not_see(make_vault, lore):
    """A folder too deep to list makes the listing partial: notes not seen are kept, not deleted."""
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta")})
    idx = indexer_for(root)
    run(idx.sync_all())
    (root / "B.md").unlink()
    deep = "/".join(f"d{i}" for i in range(MAX_FOLDER_DEPTH + 1))
    (root / deep).mkdir(parents=True)
    result = run(idx.sync_all())
    assert titles(result) == ["Alpha", "Beta"]
    assert result.changes.removed == ()
    assert any(f"deeper than {MAX_FOLDER_DEPTH}" in w for w in result.snapshot.warnings)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root ignores folder permissions, so chmod 000 cannot make a folder unreadable",
)
def test_unreadable_subfolder_keeps_its_previous_entries(make_vault, lore):
    root = make_vault({"A.md": lore("Alpha"), "Locked/B.md": lore("Beta"), "Locked/C.md": lore("Gamma")})
    idx = indexer_for(root)
    first = run(idx.sync_all())
    locked = root / "Locked"
    locked.chmod(0)
    try:
        result = run(idx.sync_all())
    finally:
        locked.chmod(0o755)
    assert titles(result) == ["Alpha", "Beta", "Gamma"]
    assert result.changes.removed == ()
    assert result.snapshot.by_uid[uid("Locked/B.md")] is first.snapshot.by_uid[uid("Locked/B.md")]
    assert any("Locked" in w for w in result.snapshot.warnings)


def test_vanished_vault_keeps_the_last_index_and_reports_an_error(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta")})
    idx = indexer_for(root)
    first = run(idx.sync_all())
    shutil.move(str(root), str(tmp_path / "moved-away"))
    result = run(idx.sync_all())
    assert titles(result) == ["Alpha", "Beta"]
    assert not result.changes.has_changes
    assert "v" in result.vault_errors and "does not exist" in result.vault_errors["v"]
    assert any("could not be read" in w for w in result.snapshot.warnings)
    assert result.snapshot.by_uid[uid("A.md")] is first.snapshot.by_uid[uid("A.md")]
    # The vault comes back: the error clears and nothing needed re-parsing.
    shutil.move(str(tmp_path / "moved-away"), str(root))
    back = run(idx.sync_all())
    assert back.vault_errors == {}
    assert back.parsed == 0
    assert titles(back) == ["Alpha", "Beta"]


def test_vault_missing_from_the_start_raises(tmp_path):
    idx = indexer_for(tmp_path / "never-existed")
    with pytest.raises(VaultError, match="does not exist"):
        run(idx.sync_all())
    assert idx.snapshot is None


def test_one_missing_vault_of_two_still_indexes_the_other(make_vault, lore, tmp_path):
    good = make_vault({"A.md": lore("Alpha")}, name="good")
    idx = indexer_for(good, tmp_path / "missing", names=("good", "bad"))
    result = run(idx.sync_all())
    assert titles(result) == ["Alpha"]
    assert set(result.vault_errors) == {"bad"}


def test_malformed_notes_are_skipped_with_path_line_and_reason(make_vault, lore):
    root = make_vault(
        {
            "Good.md": lore("Good"),
            "Creatures/Broken.md": "---\ntags: [lorebook]\nkeys: [crab, stilt\npriority: 3\n---\n# Broken\n",
            "Tabs.md": "---\ntags: [lorebook]\n\tkeys: bad indent\n---\n# Tabs\n",
            "NotADict.md": "---\n- just\n- a list\n---\n# List\n",
            "Binary.md": b"\x00\x01\x02\xff\xfe",
            "Also Good.md": lore("Also Good"),
        }
    )
    result = run(indexer_for(root).sync_all())
    assert titles(result) == ["Also Good", "Good"]
    skipped = {s.path: s for s in result.snapshot.skipped}
    assert set(skipped) == {"Creatures/Broken.md", "Tabs.md", "NotADict.md", "Binary.md"}
    broken = skipped["Creatures/Broken.md"]
    assert isinstance(broken, Skip)
    assert broken.code == "SKIP_BAD_FRONTMATTER"
    assert broken.vault == "v"
    assert isinstance(broken.line, int) and broken.line >= 2
    assert broken.reason
    for s in skipped.values():
        assert s.reason and s.path
        assert s.to_json()["path"] == s.path


def test_cancelled_sync_leaves_the_previous_snapshot_and_records(make_generated_vault, helpers):
    root = make_generated_vault(2000)
    idx = indexer_for(root)
    first = run(idx.sync_all())
    assert len(first.snapshot) == 2000
    records_before = {p: (r.stamp, r.content_hash, r.result) for p, r in idx._records["v"].items()}

    # Change every note, so that a completed sync would change every record.
    files = helpers.generate_vault_files(2000)
    for rel, text in files.items():
        path = root / rel
        path.write_text(text.replace("lanterns burn all night", "the lanterns are out"), encoding="utf-8")

    calls: list[tuple[int, int]] = []

    async def cancelled_sync():
        task: asyncio.Task | None = None

        def progress(done: int, total: int, what: str) -> None:
            calls.append((done, total))
            if len(calls) == 1:
                task.cancel()

        task = asyncio.create_task(idx.sync_all(progress=progress))
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancelled_sync())
    assert calls and calls[0][0] == BATCH and calls[0][1] == 2000  # cancelled after the first batch
    assert len(calls) == 1
    assert idx.snapshot is first.snapshot
    records_after = {p: (r.stamp, r.content_hash, r.result) for p, r in idx._records["v"].items()}
    assert records_after.keys() == records_before.keys()
    assert all(
        records_after[p][0] == records_before[p][0]
        and records_after[p][1] == records_before[p][1]
        and records_after[p][2] is records_before[p][2]
        for p in records_before
    )

    # The next sync does the whole job, as if the cancelled one never happened.
    result = run(idx.sync_all())
    assert result.read == 2000
    assert len(result.changes.modified) == 2000
    assert all("the lanterns are out" in e.content for e in result.snapshot.entries)


# ----------------------------------------------------------------------------- sync_paths


def test_sync_paths_handles_modified_created_and_deleted_files(make_vault, lore, helpers):
    root = make_vault({"A.md": lore("Alpha", ("a",)), "B.md": lore("Beta", ("b",)), "C.md": lore("Gamma")})
    idx = indexer_for(root)
    first = run(idx.sync_all())

    (root / "A.md").write_text(lore("Alpha", ("a", "aa")), encoding="utf-8")
    helpers.bump_mtime(root / "A.md")
    r1 = run(idx.sync_paths("v", ["A.md"]))
    assert (r1.read, r1.parsed) == (1, 1)
    assert r1.changes.modified == ("v:A.md",) and r1.changes.keys_changed == ("v:A.md",)
    assert r1.snapshot.by_uid[uid("B.md")] is first.snapshot.by_uid[uid("B.md")]

    helpers.write_files(root, {"Sub/D.md": lore("Delta")})
    r2 = run(idx.sync_paths("v", ["Sub/D.md"]))
    assert r2.changes.added == ("v:Sub/D.md",)

    (root / "B.md").unlink()
    r3 = run(idx.sync_paths("v", ["B.md"]))
    assert r3.changes.removed == ("v:B.md",)
    assert r3.read == 0
    assert titles(r3) == ["Alpha", "Delta", "Gamma"]

    # Non-notes are ignored; an unchanged note is re-read but not re-parsed.
    r4 = run(idx.sync_paths("v", ["picture.png", "C.md"]))
    assert (r4.read, r4.parsed) == (1, 0)
    assert not r4.changes.has_changes

    # A later full sync agrees with what the path syncs built and reads nothing new.
    full = run(idx.sync_all())
    assert not full.changes.has_changes
    assert titles(full) == ["Alpha", "Delta", "Gamma"]


def test_sync_paths_marks_the_cache_dirty_instead_of_saving(make_vault, lore, tmp_path):
    root = make_vault({"A.md": lore("Alpha")})
    idx = indexer_for(root, cache_dir=tmp_path / "cache")
    run(idx.sync_all())
    assert idx.cache_dirty is False
    (root / "B.md").write_text(lore("Beta"), encoding="utf-8")
    run(idx.sync_paths("v", ["B.md"]))
    assert idx.cache_dirty is True


def test_sync_paths_unknown_vault_is_an_error(make_vault, lore):
    idx = indexer_for(make_vault({"A.md": lore("Alpha")}))
    run(idx.sync_all())
    with pytest.raises(VaultError, match="no enabled vault"):
        run(idx.sync_paths("nope", ["A.md"]))


def test_sync_paths_refuses_escaping_paths(make_vault, lore):
    idx = indexer_for(make_vault({"A.md": lore("Alpha")}))
    run(idx.sync_all())
    with pytest.raises(VaultError):
        run(idx.sync_paths("v", ["../outside.md"]))
    assert titles(idx.snapshot) == ["Alpha"]


# ----------------------------------------------------------------------------- multi-vault


@pytest.fixture
def two_vaults(make_vault, lore):
    a = make_vault(
        {"Shared.md": lore("Shared", ("from-a",), body="Text from A."), "Only A.md": lore("Only A", ("oa",))}, name="a"
    )
    b = make_vault(
        {"Folder/Shared.md": lore("Shared", ("from-b",), body="Text from B."), "Only B.md": lore("Only B", ("ob",))},
        name="b",
    )
    return a, b


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("all", {("A", "Shared"), ("B", "Shared")}),
        ("first", {("A", "Shared")}),
        ("last", {("B", "Shared")}),
    ],
)
def test_conflict_modes_through_the_indexer(two_vaults, mode, expected):
    a, b = two_vaults
    result = run(indexer_for(a, b, names=("A", "B"), conflict_mode=mode).sync_all())
    shared = {(e.vault, e.title) for e in result.snapshot.entries if e.title == "Shared"}
    assert shared == expected
    assert {e.title for e in result.snapshot.entries} == {"Shared", "Only A", "Only B"}
    if mode != "all":
        assert any(f"mode {mode}" in w for w in result.snapshot.warnings)
    counts = result.snapshot.vault_counts()
    assert counts == {"A": 2 if ("A", "Shared") in expected else 1, "B": 2 if ("B", "Shared") in expected else 1}


def test_merge_mode_unites_the_copies(two_vaults):
    a, b = two_vaults
    result = run(indexer_for(a, b, names=("A", "B"), conflict_mode="merge").sync_all())
    shared = [e for e in result.snapshot.entries if e.title == "Shared"]
    assert len(shared) == 1
    merged = shared[0]
    assert merged.keys == ("from-a", "from-b")
    assert "Text from A." in merged.content and "Text from B." in merged.content
    assert any("mode merge" in w for w in result.snapshot.warnings)


def test_disabled_vault_is_not_indexed(two_vaults):
    a, b = two_vaults
    idx = VaultIndexer([FolderSource("A", a), FolderSource("B", b, enabled=False)])
    result = run(idx.sync_all())
    assert {e.vault for e in result.snapshot.entries} == {"A"}


def test_multi_vault_reuse_and_per_vault_changes(two_vaults, lore):
    a, b = two_vaults
    idx = indexer_for(a, b, names=("A", "B"))
    run(idx.sync_all())
    (b / "New.md").write_text(lore("New in B"), encoding="utf-8")
    result = run(idx.sync_all())
    assert result.read == 1
    assert result.changes.added == ("B:New.md",)


def test_field_definitions_come_from_the_primary_vault_only(make_vault, lore):
    defs = "fields:\n  - name: faction\n    label: Faction\n    type: string\n"
    a = make_vault({"A.md": lore("Alpha", extra="faction: Heron")}, name="a")
    b = make_vault({"B.md": lore("Beta", extra="faction: Eel"), "DeepLore/field-definitions.yaml": defs}, name="b")
    result = run(indexer_for(a, b, names=("A", "B")).sync_all())
    assert all("faction" not in e.custom_fields for e in result.snapshot.entries)
    result = run(indexer_for(b, a, names=("B", "A")).sync_all())
    assert {e.title: e.custom_fields.get("faction") for e in result.snapshot.entries} == {
        "Alpha": "Heron",
        "Beta": "Eel",
    }


def test_custom_tag_settings_change_what_is_admitted(make_vault, lore):
    root = make_vault({"A.md": lore("Alpha"), "B.md": lore("Beta", tags="[lore]")})
    default = run(indexer_for(root).sync_all())
    custom = run(indexer_for(root, tags=TagConfig(lorebook="lore")).sync_all())
    assert titles(default) == ["Alpha"]
    assert titles(custom) == ["Beta"]


def test_sample_vault_indexes_with_the_documented_skips(sample_vault):
    result = run(VaultIndexer([FolderSource("Sample vault", sample_vault)]).sync_all())
    assert len(result.snapshot) == 61
    skipped = {s.path: s.code for s in result.snapshot.skipped}
    assert skipped == {
        "README.md": "SKIP_NO_FRONTMATTER",
        "Scratch — Plot Hooks.md": "SKIP_NO_LOREBOOK_TAG",
        "History/Session 1 Notes.md": "SKIP_NO_LOREBOOK_TAG",
        "History/The Salt Famine.md": "SKIP_ENABLED_FALSE",
        "Creatures/The Thing Beneath.md": "SKIP_NEVER_INSERT_TAG",
        "Creatures/Stiltcrabs.md": "SKIP_BAD_FRONTMATTER",
    }
    assert all(isinstance(e, Entry) for e in result.snapshot.entries)
