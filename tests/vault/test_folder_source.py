"""FolderSource against real folders and files in tmp_path."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dle_desktop.errors import NoteOutsideVault, VaultError, VaultPathError
from dle_desktop.vault.sources import MAX_FOLDER_DEPTH, FolderSource, check_relative_path


def test_listing_walks_nested_folders_and_ignores_dot_folders_and_other_files(make_vault, lore):
    root = make_vault(
        {
            "Top.md": lore("Top"),
            "Places/Harbour.md": lore("Harbour"),
            "Places/Delta/Reeds.md": lore("Reeds"),
            "Places/Delta/Deeper/Still/Bottom.md": lore("Bottom"),
            "Shout.MD": lore("Shout"),  # extension check is case-insensitive, like Obsidian
            ".obsidian/workspace.md": "not a note",
            ".trash/Old.md": lore("Old"),
            "Places/.hidden/Secret.md": lore("Secret"),
            ".dotfile.md": lore("Dot"),
            "notes.txt": "plain text",
            "image.png": b"\x89PNG\r\n",
            "DeepLore/field-definitions.yaml": "fields: []\n",
            "folder.md/inside.md": lore("Inside"),  # a folder named like a note is walked, not listed
        }
    )
    listing = FolderSource("v", root).list_sync()
    assert sorted(listing.stamps) == [
        "Places/Delta/Deeper/Still/Bottom.md",
        "Places/Delta/Reeds.md",
        "Places/Harbour.md",
        "Shout.MD",
        "Top.md",
        "folder.md/inside.md",
    ]
    assert listing.partial is False
    assert listing.problems == ()
    assert all(isinstance(s, str) and s for s in listing.stamps.values())


def test_async_listing_matches_sync_listing(make_vault, lore):
    root = make_vault({"A.md": lore("A"), "B/C.md": lore("C")})
    src = FolderSource("v", root)
    assert asyncio.run(src.list_notes()).stamps == src.list_sync().stamps


def test_stamp_changes_when_a_note_is_edited(make_vault, lore, helpers):
    root = make_vault({"A.md": lore("A"), "B.md": lore("B")})
    src = FolderSource("v", root)
    before = src.list_sync().stamps
    (root / "A.md").write_text(lore("A", body="Changed and longer body text."), encoding="utf-8")
    helpers.bump_mtime(root / "A.md")
    after = src.list_sync().stamps
    assert after["A.md"] != before["A.md"]
    assert after["B.md"] == before["B.md"]
    assert src.stamp_sync("A.md") == after["A.md"]
    assert src.stamp_sync("Missing.md") is None


def test_touch_without_edit_changes_the_stamp(make_vault, lore, helpers):
    root = make_vault({"A.md": lore("A")})
    src = FolderSource("v", root)
    before = src.stamp_sync("A.md")
    helpers.bump_mtime(root / "A.md")
    assert src.stamp_sync("A.md") != before


def test_read_replaces_bad_utf8_bytes_instead_of_failing(make_vault):
    raw = b"---\ntags: [lorebook]\n---\n# Bad Bytes\nA stray \xff\xfe byte and a cut \xe2\x82 sequence.\n"
    root = make_vault({"Bad.md": raw})
    src = FolderSource("v", root)
    text = src.read_sync("Bad.md")
    assert "\ufffd" in text
    assert text.startswith("---\ntags: [lorebook]\n---\n# Bad Bytes\nA stray ")
    assert asyncio.run(src.read_text("Bad.md")) == text


def test_read_keeps_bom_and_crlf_as_written(make_vault):
    raw = "\ufeff---\r\ntags: [lorebook]\r\n---\r\n# Title\r\nText\r\n".encode()
    root = make_vault({"Crlf.md": raw})
    assert FolderSource("v", root).read_sync("Crlf.md") == raw.decode("utf-8")


def test_read_missing_file_and_folder(make_vault, lore):
    root = make_vault({"Sub.md/x.md": lore("X")})
    src = FolderSource("v", root)
    with pytest.raises(FileNotFoundError):
        src.read_sync("Nope.md")
    assert asyncio.run(src.read_optional("Nope.md")) is None
    with pytest.raises(VaultError, match="is a folder"):
        src.read_sync("Sub.md")


def test_write_creates_folders_and_leaves_no_temp_file(make_vault):
    root = make_vault({})
    src = FolderSource("v", root)
    text = "---\r\ntags: [lorebook]\r\n---\r\n# New – ünïcode 龍\r\nbody\r\n"
    asyncio.run(src.write_text("New Folder/Deeper/Note.md", text))
    target = root / "New Folder" / "Deeper" / "Note.md"
    assert target.read_bytes() == text.encode("utf-8")  # newlines written exactly as given
    assert src.read_sync("New Folder/Deeper/Note.md") == text
    leftovers = [p.name for p in root.rglob("*") if p.is_file() and p != target]
    assert leftovers == []


def test_write_replaces_the_file_atomically(make_vault, lore):
    root = make_vault({"A.md": lore("A")})
    target = root / "A.md"
    with open(target, "rb") as reader:  # a reader holding the old file still sees the old, whole file
        old_inode = target.stat().st_ino
        FolderSource("v", root).write_sync("A.md", lore("A", body="replaced"))
        assert target.read_text(encoding="utf-8") == lore("A", body="replaced")
        assert target.stat().st_ino != old_inode  # a new file renamed into place, not rewritten in place
        assert reader.read().decode("utf-8") == lore("A")
    assert sorted(p.name for p in root.iterdir()) == ["A.md"]


@pytest.mark.parametrize(
    "bad",
    [
        "../outside.md",
        "Sub/../../outside.md",
        "./A.md",
        "..",
        "/etc/passwd",
        "\\..\\outside.md",
        "C:/Windows/x.md",
        "c:evil.md",
        "",
        "   ",
        "a\x00b.md",
    ],
)
def test_paths_escaping_the_vault_are_refused(make_vault, tmp_path, lore, bad):
    root = make_vault({"Sub/A.md": lore("A")})
    src = FolderSource("v", root)
    with pytest.raises(VaultPathError):
        src.read_sync(bad)
    with pytest.raises(VaultPathError):
        src.write_sync(bad, "x")
    with pytest.raises(VaultPathError):
        asyncio.run(src.read_text(bad))
    with pytest.raises(VaultPathError):
        src.stamp_sync(bad)
    # Nothing was written anywhere outside (or inside) the vault.
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == ["vault/Sub/A.md"]


def test_vault_path_error_is_a_vault_error():
    assert issubclass(VaultPathError, VaultError)
    assert check_relative_path("a//b\\c.md") == "a/b/c.md"


def test_missing_root_is_a_vault_error(tmp_path):
    src = FolderSource("v", tmp_path / "does-not-exist")
    with pytest.raises(VaultError, match="does not exist"):
        src.list_sync()
    with pytest.raises(VaultError):
        asyncio.run(src.list_notes())


def test_root_that_is_a_file_is_a_vault_error(tmp_path):
    f = tmp_path / "file.md"
    f.write_text("x")
    with pytest.raises(VaultError):
        FolderSource("v", f).list_sync()


def test_symlink_loop_does_not_hang_the_listing(make_vault, lore):
    root = make_vault({"A/Note.md": lore("Note")})
    try:
        os.symlink(root, root / "A" / "loop", target_is_directory=True)
    except (OSError, NotImplementedError):
        pytest.skip("symlinks not available")
    listing = FolderSource("v", root).list_sync()
    assert "A/Note.md" in listing.stamps
    assert len(listing.stamps) == 1


def test_folders_deeper_than_the_limit_make_a_partial_listing(make_vault, lore):
    deep = "/".join(f"d{i}" for i in range(MAX_FOLDER_DEPTH + 1))
    root = make_vault({"Top.md": lore("Top"), f"{deep}/Deep.md": lore("Deep")})
    listing = FolderSource("v", root).list_sync()
    assert "Top.md" in listing.stamps
    assert not any(p.endswith("Deep.md") for p in listing.stamps)
    assert listing.partial is True
    assert any(f"deeper than {MAX_FOLDER_DEPTH}" in p for p in listing.problems)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root ignores folder permissions, so chmod 000 cannot make a folder unreadable",
)
def test_unreadable_subfolder_makes_a_partial_listing(make_vault, lore):
    root = make_vault({"Top.md": lore("Top"), "Locked/Inside.md": lore("Inside")})
    locked = root / "Locked"
    locked.chmod(0)
    try:
        listing = FolderSource("v", root).list_sync()
    finally:
        locked.chmod(0o755)
    assert "Top.md" in listing.stamps
    assert listing.partial is True
    assert any(p.startswith("Locked") for p in listing.problems)


def test_expanduser_on_root(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "vault").mkdir()
    src = FolderSource("v", Path("~/vault"))
    assert src.root == tmp_path / "vault"
    assert src.describe() == str(tmp_path / "vault")


def test_links_out_of_the_vault_are_refused_within_one_batch_of_reads(make_vault, lore, tmp_path):
    """The indexer reads a batch with one memo of resolved folders: a link out of the vault (the
    note itself, or a folder on its way) is refused whatever was read before it in the batch."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.md").write_text(lore("Secret"), encoding="utf-8")
    (outside / "folder" / "Hidden.md").write_text(lore("Hidden"), encoding="utf-8")
    root = make_vault({"Places/Quay.md": lore("Quay"), "Places/Deeper/Reeds.md": lore("Reeds")})
    try:
        (root / "link.md").symlink_to(outside / "secret.md")
        (root / "Places" / "linked").symlink_to(outside / "folder", target_is_directory=True)
        (root / "Places" / "inside.md").symlink_to(root / "Places" / "Quay.md")
        (root / "Places" / "also inside").symlink_to(root / "Places" / "Deeper", target_is_directory=True)
    except (OSError, NotImplementedError):
        pytest.skip("symlinks not available")
    src = FolderSource("v", root)
    memo: dict[str, str] = {}
    assert "Quay" in src.read_sync("Places/Quay.md", memo)
    with pytest.raises(NoteOutsideVault):
        src.read_sync("link.md", memo)
    with pytest.raises(NoteOutsideVault):
        src.read_sync("Places/linked/Hidden.md", memo)
    assert "Quay" in src.read_sync("Places/inside.md", memo)
    assert "Reeds" in src.read_sync("Places/also inside/Reeds.md", memo)
    with pytest.raises(NoteOutsideVault):  # the same refusal without a memo
        src.read_sync("Places/linked/Hidden.md")
    with pytest.raises(VaultError, match="is a folder"):
        src.read_sync("Places/Deeper", memo)
    with pytest.raises(FileNotFoundError):
        src.read_sync("Places/Gone.md", memo)
