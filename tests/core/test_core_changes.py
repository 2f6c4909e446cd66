"""Snapshot diff (reference §2.3 detectChanges): added / removed / modified / keys changed."""

from dle_desktop.core.changes import ChangeSet, diff_snapshots

from ._helpers import entry, one_vault, snapshot


def test_first_build_lists_everything_as_added():
    a, b = entry("A"), entry("B", path="dir/B.md")
    cs = diff_snapshots(None, one_vault(a, b))
    assert cs.first_build is True
    assert cs.added == ("v:A.md", "v:dir/B.md")
    assert cs.has_changes


def test_added_removed_modified_keys_changed():
    a, b, c = entry("A", fm="keys: [x]"), entry("B", fm="keys: [y]"), entry("C", fm="keys: [z]")
    old = one_vault(a, b, c)
    a2 = entry("A", fm="keys: [x]", body="new body")  # content changed, keys same
    b2 = entry("B", fm="keys: [y, y2]")  # keys changed
    d = entry("D")
    new = one_vault(a2, b2, d)
    cs = diff_snapshots(old, new)
    assert cs.first_build is False
    assert cs.added == ("v:D.md",)
    assert cs.removed == ("v:C.md",)
    assert set(cs.modified) == {"v:A.md", "v:B.md"}
    assert cs.keys_changed == ("v:B.md",)
    assert cs.summary() == "1 added, 1 removed, 2 modified"
    j = cs.to_json()
    assert j["has_changes"] is True and j["keys_changed"] == ["v:B.md"]


def test_reparsed_identical_text_is_not_modified():
    old = one_vault(entry("A", fm="keys: [x]"))
    new = one_vault(entry("A", fm="keys: [x]"))  # a fresh object from the same text
    assert old.entries[0] is not new.entries[0]
    cs = diff_snapshots(old, new)
    assert not cs.has_changes
    assert cs.summary() == "no changes"


def test_same_path_in_two_vaults_is_two_entries():
    a = entry("A", vault="V1", path="A.md")
    b = entry("A", vault="V2", path="A.md")
    cs = diff_snapshots(snapshot(("V1", [a])), snapshot(("V1", [a]), ("V2", [b])))
    assert cs.added == ("V2:A.md",) and cs.removed == ()


def test_frontmatter_only_edit_counts_as_modified():
    old = one_vault(entry("A", fm="priority: 10"))
    new = one_vault(entry("A", fm="priority: 20"))
    cs = diff_snapshots(old, new)
    assert cs.modified == ("v:A.md",) and cs.keys_changed == ()


def test_summary_counts_only():
    cs = ChangeSet(added=tuple(f"v:{i}" for i in range(5)))
    assert cs.summary() == "5 added"
    assert ChangeSet().has_changes is False
    # keys_changed alone is never a change on its own (it is a subset of modified)
    assert ChangeSet(keys_changed=("v:x",)).has_changes is False
