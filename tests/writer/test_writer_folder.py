"""The note writer on a real folder vault: create, edit, conflicts, history, undo, paths."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import stat
import time
from pathlib import Path

import pytest

from dle_desktop.core.hashing import simple_hash
from dle_desktop.core.note_parser import parse_note
from dle_desktop.errors import (
    FrontmatterEditError,
    NoteExists,
    VaultPathError,
    WriteConflict,
    WriteRefused,
)
from dle_desktop.vault.frontmatter_edit import REMOVE
from dle_desktop.vault.note_files import TEMP_SUFFIX
from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.write_history import WriteHistory
from dle_desktop.vault.writer import NoteWriter

NOTE = "---\n# why\ntags: [lorebook]  # needed\nkeys:\n  - Quay\npriority: 50\n---\n# Quay\nThe quay.\n"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def vault(tmp_path) -> Path:
    root = tmp_path / "vault"
    (root / "Places").mkdir(parents=True)
    (root / "Places" / "Quay.md").write_bytes(NOTE.encode())
    return root


@pytest.fixture
def written():
    return []


@pytest.fixture
def writer(vault, tmp_path, written) -> NoteWriter:
    history = WriteHistory(tmp_path / "data" / "write-history.sqlite")
    yield NoteWriter(
        [FolderSource("v", vault)], history=history, on_written=lambda name, paths: written.append((name, paths))
    )
    history.close()


def test_create_writes_the_exact_text_records_it_and_reindexes(writer, vault, written):
    text = "---\r\ntags: [lorebook]\r\n---\r\n# New\r\nno final newline"
    result = run(writer.create("v", "Places/New.md", text, feature="librarian"))
    assert (vault / "Places" / "New.md").read_bytes() == text.encode()
    assert result.written and result.before_text is None and result.after_text == text
    assert result.record.action == "create" and result.record.feature == "librarian"
    assert written == [("v", {"Places/New.md"})]


def test_create_makes_missing_folders(writer, vault):
    run(writer.create("v", "Deep/Er/Note.md", "x", feature="manual"))
    assert (vault / "Deep" / "Er" / "Note.md").read_text() == "x"


def test_create_over_an_existing_note_is_refused(writer, vault, written):
    with pytest.raises(NoteExists) as err:
        run(writer.create("v", "Places/Quay.md", "replacement", feature="librarian"))
    assert err.value.current_text == NOTE
    assert (vault / "Places" / "Quay.md").read_text() == NOTE
    assert written == [] and writer.history_for("v", "Places/Quay.md") == []


def test_create_titled_uses_dles_file_name_rules(writer, vault):
    result = run(
        writer.create_titled("v", 'Mirela: "the" Archivist', "# Mirela\n", folder="Characters", feature="librarian")
    )
    assert result.path == "Characters/Mirela_ _the_ Archivist.md"
    assert (vault / "Characters" / "Mirela_ _the_ Archivist.md").is_file()


def test_set_fields_changes_only_the_field_and_keeps_the_file_mode(writer, vault, written):
    note = vault / "Places" / "Quay.md"
    os.chmod(note, 0o640)
    version = run(writer.read("v", "Places/Quay.md"))
    result = run(
        writer.set_fields("v", "Places/Quay.md", {"keys": ["Quay", "harbour"]}, base=version, feature="optimize-keys")
    )
    assert note.read_text() == NOTE.replace("  - Quay\n", "  - Quay\n  - harbour\n")
    assert stat.S_IMODE(note.stat().st_mode) == 0o640
    assert parse_note("v", "Places/Quay.md", note.read_text()).keys == ("Quay", "harbour")
    assert result.record.before_text == NOTE and result.record.after_text == note.read_text()
    assert written == [("v", {"Places/Quay.md"})]


def test_a_write_can_be_based_on_the_index_content_hash(writer, vault):
    entry = parse_note("v", "Places/Quay.md", NOTE)
    run(writer.set_fields("v", "Places/Quay.md", {"priority": 20}, base=entry.content_hash, feature="manual"))
    assert "priority: 20\n" in (vault / "Places" / "Quay.md").read_text()


def test_conflict_when_the_note_changed_on_disk_carries_all_three_versions(writer, vault, written):
    note = vault / "Places" / "Quay.md"
    version = run(writer.read("v", "Places/Quay.md"))
    theirs = NOTE.replace("The quay.", "Edited in Obsidian meanwhile.")
    note.write_text(theirs)
    with pytest.raises(WriteConflict) as err:
        run(writer.set_fields("v", "Places/Quay.md", {"priority": 10}, base=version, feature="manual"))
    conflict = err.value
    assert conflict.expected_text == NOTE
    assert conflict.current_text == theirs
    assert conflict.proposed_text == NOTE.replace("priority: 50", "priority: 10")
    assert note.read_text() == theirs
    assert written == [] and writer.history_for("v", "Places/Quay.md") == []


def test_conflict_with_only_a_hash_proposes_the_change_on_the_current_text(writer, vault):
    note = vault / "Places" / "Quay.md"
    theirs = NOTE.replace("The quay.", "Theirs.")
    note.write_text(theirs)
    with pytest.raises(WriteConflict) as err:
        run(writer.set_fields("v", "Places/Quay.md", {"priority": 10}, base=simple_hash(NOTE), feature="manual"))
    assert err.value.expected_text is None and err.value.expected_hash == simple_hash(NOTE)
    assert err.value.proposed_text == theirs.replace("priority: 50", "priority: 10")


def test_conflict_when_the_note_was_deleted(writer, vault):
    version = run(writer.read("v", "Places/Quay.md"))
    (vault / "Places" / "Quay.md").unlink()
    with pytest.raises(WriteConflict, match="deleted") as err:
        run(writer.replace_body("v", "Places/Quay.md", "# New body\n", base=version, feature="manual"))
    assert err.value.current_text is None
    assert not (vault / "Places" / "Quay.md").exists()


def test_malformed_frontmatter_writes_nothing(writer, vault):
    bad = "---\nkeys: [a, b\n---\nbody\n"
    (vault / "Bad.md").write_text(bad)
    version = run(writer.read("v", "Bad.md"))
    with pytest.raises(FrontmatterEditError, match="not valid YAML"):
        run(writer.set_fields("v", "Bad.md", {"priority": 1}, base=version, feature="manual"))
    assert (vault / "Bad.md").read_text() == bad
    assert writer.history_for("v", "Bad.md") == []


def test_replace_body_keeps_the_frontmatter_bytes(writer, vault):
    text = "\ufeff---\r\ntags: [lorebook]  # c\r\n---\r\n# Old\r\n"
    (vault / "Crlf.md").write_bytes(text.encode())
    version = run(writer.read("v", "Crlf.md"))
    run(writer.replace_body("v", "Crlf.md", "# New\nline\n", base=version, feature="manual"))
    assert (vault / "Crlf.md").read_bytes() == "\ufeff---\r\ntags: [lorebook]  # c\r\n---\r\n# New\r\nline\r\n".encode()


def test_a_change_that_changes_nothing_writes_nothing(writer, vault, written):
    version = run(writer.read("v", "Places/Quay.md"))
    result = run(writer.set_fields("v", "Places/Quay.md", {"priority": 50}, base=version, feature="manual"))
    assert not result.written and result.record is None and written == []


def test_a_base_is_required(writer):
    with pytest.raises(WriteRefused, match="based on"):
        run(writer.write("v", "Places/Quay.md", "x", base="", feature="manual"))


@pytest.mark.parametrize("path", ["../escape.md", "/abs.md", "Places/../../escape.md", ".obsidian/x.md", "x.txt"])
def test_paths_outside_the_vault_or_not_notes_are_refused(writer, vault, path):
    with pytest.raises(VaultPathError):
        run(writer.create("v", path, "x", feature="manual"))
    assert not (vault.parent / "escape.md").exists()


def test_a_symlink_out_of_the_vault_is_refused(writer, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, vault / "Linked")
    with pytest.raises(VaultPathError, match="outside the vault"):
        run(writer.create("v", "Linked/Evil.md", "x", feature="manual"))
    assert list(outside.iterdir()) == []


def test_a_symlinked_note_inside_the_vault_is_written_where_it_really_is(writer, vault, written):
    os.symlink(vault / "Places" / "Quay.md", vault / "Alias.md")
    version = run(writer.read("v", "Alias.md"))
    run(writer.set_fields("v", "Alias.md", {"priority": 7}, base=version, feature="manual"))
    assert (vault / "Alias.md").is_symlink()
    assert "priority: 7" in (vault / "Places" / "Quay.md").read_text()
    assert written == [("v", {"Alias.md", "Places/Quay.md"})]


def test_read_only_vaults_and_unknown_vaults_are_refused(vault, tmp_path):
    writer = NoteWriter([FolderSource("Sample vault", vault)], read_only={"Sample vault": "the sample is read-only"})
    with pytest.raises(WriteRefused, match="read-only"):
        run(writer.create("Sample vault", "x.md", "x", feature="manual"))
    with pytest.raises(WriteRefused, match="no vault is named"):
        run(writer.create("nope", "x.md", "x", feature="manual"))
    assert run(writer.read("Sample vault", "Places/Quay.md")).text == NOTE


def test_a_note_that_is_not_utf8_is_not_rewritten(writer, vault):
    raw = b"---\ntags: [lorebook]\n---\ncaf\xe9\n"
    (vault / "Latin1.md").write_bytes(raw)
    with pytest.raises(WriteRefused, match="not UTF-8"):
        run(
            writer.set_fields(
                "v", "Latin1.md", {"priority": 1}, base=simple_hash(raw.decode("utf-8", "replace")), feature="manual"
            )
        )
    assert (vault / "Latin1.md").read_bytes() == raw


def test_writes_leave_no_visible_temporary_files(writer, vault):
    for i in range(5):
        version = run(writer.read("v", "Places/Quay.md"))
        run(writer.set_fields("v", "Places/Quay.md", {"priority": i}, base=version, feature="manual"))
    assert sorted(p.name for p in (vault / "Places").iterdir()) == ["Quay.md"]
    assert set(FolderSource("v", vault).list_sync().stamps) == {"Places/Quay.md"}


def test_a_crashed_writes_leftover_temp_file_is_swept_by_the_next_write(writer, vault):
    stale = vault / "Places" / f".Quay.md.deadbeef{TEMP_SUFFIX}"
    fresh = vault / "Places" / f".Quay.md.cafef00d{TEMP_SUFFIX}"
    stale.write_text("half a note")
    fresh.write_text("a write in progress")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert set(FolderSource("v", vault).list_sync().stamps) == {"Places/Quay.md"}  # hidden from the index
    version = run(writer.read("v", "Places/Quay.md"))
    run(writer.set_fields("v", "Places/Quay.md", {"priority": 1}, base=version, feature="manual"))
    assert not stale.exists() and fresh.exists()


def test_undo_restores_the_text_before_and_is_recorded(writer, vault, written):
    note = vault / "Places" / "Quay.md"
    version = run(writer.read("v", "Places/Quay.md"))
    edit = run(
        writer.set_fields(
            "v", "Places/Quay.md", {"keys": ["X"], "priority": REMOVE}, base=version, feature="optimize-keys"
        )
    )
    undo = run(writer.undo(edit.record.id))
    assert note.read_text() == NOTE
    assert undo.record.action == "undo" and undo.record.undoes == edit.record.id
    history = writer.history_for("v", "Places/Quay.md")
    assert [r.id for r in history] == [undo.record.id, edit.record.id]
    assert history[1].undone_by == undo.record.id
    assert len(written) == 2
    with pytest.raises(WriteRefused, match="already undone"):
        run(writer.undo(edit.record.id))


def test_undo_is_refused_when_the_note_changed_since(writer, vault):
    note = vault / "Places" / "Quay.md"
    version = run(writer.read("v", "Places/Quay.md"))
    edit = run(writer.set_fields("v", "Places/Quay.md", {"priority": 1}, base=version, feature="manual"))
    theirs = edit.after_text.replace("The quay.", "Changed by hand.")
    note.write_text(theirs)
    with pytest.raises(WriteConflict) as err:
        run(writer.undo(edit.record.id))
    assert (err.value.expected_text, err.value.current_text, err.value.proposed_text) == (edit.after_text, theirs, NOTE)
    assert note.read_text() == theirs
    assert not writer.history.get(edit.record.id).undone


def test_undo_of_a_create_deletes_only_an_unchanged_note(writer, vault):
    created = run(writer.create("v", "New.md", "# New\n", feature="librarian"))
    undo = run(writer.undo(created.record.id))
    assert not (vault / "New.md").exists() and undo.after_text is None
    redo = run(writer.undo(undo.record.id))  # undoing the delete makes it again
    assert (vault / "New.md").read_text() == "# New\n"
    (vault / "New.md").write_text("# New\nedited by hand\n")
    with pytest.raises(WriteConflict):
        run(writer.undo(redo.record.id))
    assert (vault / "New.md").read_text() == "# New\nedited by hand\n"


def test_history_is_private_and_pruned(vault, tmp_path):
    history = WriteHistory(tmp_path / "h.sqlite", keep_per_note=3)
    writer = NoteWriter([FolderSource("v", vault)], history=history)
    for i in range(5):
        version = run(writer.read("v", "Places/Quay.md"))
        run(writer.set_fields("v", "Places/Quay.md", {"priority": i}, base=version, feature="manual"))
    records = writer.history_for("v", "Places/Quay.md")
    assert [r.after_text.count(f"priority: {4 - n}\n") for n, r in enumerate(records)] == [1, 1, 1]
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / "h.sqlite").stat().st_mode) == 0o600
    history.close()


def test_the_reindex_hook_may_be_async_or_return_a_future(vault):
    seen = []

    async def async_hook(name, paths):
        seen.append(("async", paths))

    def future_hook(name, paths):
        future = concurrent.futures.Future()
        future.set_result(None)
        seen.append(("future", paths))
        return future

    def failing_hook(name, paths):
        raise RuntimeError("index is down")

    for hook in (async_hook, future_hook, failing_hook):
        writer = NoteWriter([FolderSource("v", vault)], on_written=hook)
        version = run(writer.read("v", "Places/Quay.md"))
        result = run(
            writer.set_fields("v", "Places/Quay.md", {"priority": len(seen) + 100}, base=version, feature="manual")
        )
        assert result.written  # a failing index does not undo or hide the write
    assert seen == [("async", {"Places/Quay.md"}), ("future", {"Places/Quay.md"})]
