"""Index snapshots (reference §2.1 finalize, §2.5 multi-vault conflict modes)."""

import dataclasses

import pytest

from dle_desktop.core.bm25 import Bm25Index, document_text
from dle_desktop.core.fields import parse_field_definitions
from dle_desktop.core.index import VaultSlice, build_snapshot, resolve_conflicts

from ._helpers import entry, one_vault, snapshot

MOOD_DEFS = parse_field_definitions("fields:\n  - name: mood\n    type: string\n  - name: era\n    multi: true\n")


def _two_vaults():
    a = entry(
        "Dragon",
        vault="A",
        path="Beasts/Dragon.md",
        tags="lorebook, beast",
        fm="keys: [dragon, wyrm]\nrequires: [Lair]\nera: [Dawn]\nmood: grim",
        body="Big. See [[Lair]].",
        field_definitions=MOOD_DEFS,
    )
    b = entry(
        "dragon",
        vault="B",
        path="Dragon.md",
        tags="lorebook, lorebook-always, myth",
        fm="keys: [drake, Dragon]\nsummary: A myth.\nexcludes: [Knight]\nera: [Dusk, Dawn]\nmood: sad",
        body="Old. See [[Knight]].",
        field_definitions=MOOD_DEFS,
    )
    lair = entry("Lair", vault="A")
    knight = entry("Knight", vault="B")
    return a, b, lair, knight


def _titles(snap):
    return [(e.vault, e.title) for e in snap.entries]


# ---------------------------------------------------------------- conflict modes
def test_mode_all_keeps_every_copy():
    a, b, lair, knight = _two_vaults()
    snap = snapshot(("A", [a, lair]), ("B", [b, knight]), mode="all")
    assert _titles(snap) == [("A", "Dragon"), ("A", "Lair"), ("B", "dragon"), ("B", "Knight")]
    assert len(snap.by_title["dragon"]) == 2
    assert not any("Dragon" in w for w in snap.warnings)


def test_mode_first_keeps_first_vault_copy():
    a, b, lair, knight = _two_vaults()
    snap = snapshot(("A", [a, lair]), ("B", [b, knight]), mode="first")
    assert _titles(snap) == [("A", "Dragon"), ("A", "Lair"), ("B", "Knight")]
    assert any("mode first" in w for w in snap.warnings)


def test_mode_last_keeps_last_vault_copy():
    a, b, lair, knight = _two_vaults()
    snap = snapshot(("A", [a, lair]), ("B", [b, knight]), mode="last")
    assert ("B", "dragon") in _titles(snap) and ("A", "Dragon") not in _titles(snap)
    assert len(snap.by_title["dragon"]) == 1
    assert any("mode last" in w for w in snap.warnings)


def test_mode_merge():
    a, b, lair, knight = _two_vaults()
    snap = snapshot(("A", [a, lair]), ("B", [b, knight]), mode="merge")
    assert len(snap.by_title["dragon"]) == 1
    m = snap.find("DRAGON")
    assert (m.vault, m.path, m.title) == ("A", "Beasts/Dragon.md", "Dragon")  # a clone of the first copy
    assert m.keys == ("dragon", "wyrm", "drake", "Dragon")
    assert m.tags == ("beast", "lorebook-always", "myth")
    assert m.links == ("Lair", "Knight")
    assert m.resolved_links == ("Lair", "Knight")
    assert m.requires == ("Lair",) and m.excludes == ("Knight",)
    assert m.content == a.content + "\n\n---\n\n" + b.content
    assert m.token_estimate == -(-len(m.content) // 4)
    assert m.constant is True  # OR of flags: only B's copy is constant
    assert m.summary == "A myth."  # first non-empty
    assert m.custom_fields["era"] == ("Dawn", "Dusk")  # list union
    assert m.custom_fields["mood"] == "grim"  # first scalar
    assert m.content_hash == a.content_hash
    assert any("merged" in w for w in snap.warnings)


def test_merge_three_copies_and_flags():
    x = entry("Hub", vault="A", fm="keys: [h1]", body="one")
    y = entry("Hub", vault="B", fm="keys: [h2]", tags="lorebook, lorebook-seed", body="two")
    z = entry("Hub", vault="C", fm="keys: [h1, h3]", tags="lorebook, lorebook-bootstrap", body="three")
    snap = snapshot(("A", [x]), ("B", [y]), ("C", [z]), mode="merge")
    m = snap.find("hub")
    assert len(snap) == 1
    assert m.content == "one\n\n---\n\ntwo\n\n---\n\nthree"
    assert m.keys == ("h1", "h2", "h3")
    assert (m.seed, m.bootstrap, m.constant, m.guide) == (True, True, False, False)


def test_single_vault_never_resolves_conflicts():
    a1 = entry("Same", path="a.md")
    a2 = entry("same", path="b.md")
    for mode in ("first", "last", "merge"):
        snap = snapshot(("A", [a1, a2]), mode=mode)
        assert len(snap) == 2


def test_titles_unique_to_one_vault_untouched():
    _a, _b, lair, knight = _two_vaults()
    out, notes = resolve_conflicts([VaultSlice("A", (lair,)), VaultSlice("B", (knight,))], "merge")
    assert out == [lair, knight] and notes == []


def test_unknown_mode_rejected():
    with pytest.raises(ValueError):
        build_snapshot([VaultSlice("A", ())], conflict_mode="newest")


# ---------------------------------------------------------------- finalize
def test_link_resolution_case_insensitive_to_canonical():
    target = entry("Oracles of Might")
    src = entry("Gorduin", body="[[oracles of MIGHT]] and [[Missing]] and [[Oracles of Might|again]]")
    snap = one_vault(target, src)
    g = snap.find("gorduin")
    assert g.links == ("oracles of MIGHT", "Missing", "Oracles of Might")
    assert g.resolved_links == ("Oracles of Might",)  # canonical, deduplicated, missing dropped


def test_dangling_references_stripped_originals_kept():
    lair = entry("Lair")
    e = entry("Dragon", fm="requires: [lair, Nowhere]\nexcludes: [Ghost, LAIR]\ncascade_links: [Lair, Void]")
    snap = one_vault(lair, e)
    d = snap.find("Dragon")
    assert d.requires == ("lair",) and d.original_requires == ("lair", "Nowhere")
    assert d.excludes == ("LAIR",) and d.original_excludes == ("Ghost", "LAIR")
    assert d.cascade_links == ("Lair",) and d.original_cascade_links == ("Lair", "Void")


def test_unchanged_entries_are_reused():
    plain = entry("Plain", fm="keys: [p]")
    snap = one_vault(plain)
    assert snap.entries[0] is plain


def test_backlinks():
    a = entry("A", body="to [[B]] and [[C]]")
    b = entry("B", body="to [[c]]")
    c = entry("C", body="to [[Nowhere]]")
    snap = one_vault(a, b, c)
    assert snap.backlinks == {"B": ("A",), "C": ("A", "B")}
    assert "Nowhere" not in snap.backlinks


def test_find_and_by_title():
    a = entry("Angel Crown")
    snap = one_vault(a)
    assert snap.find("angel crown") is a and snap.find("ANGEL CROWN") is a
    assert snap.find("Angel") is None
    assert list(snap.by_title) == ["angel crown"]
    assert snap.by_uid[a.uid] is a


def test_skips_warnings_counts_and_json():
    from dle_desktop.core.entry import Skip

    sk = Skip("A", "bad.md", "SKIP_BAD_FRONTMATTER", "broken", 3)
    s1 = VaultSlice("A", (entry("X", vault="A"),), skipped=(sk,), problems=("listing partial",))
    s2 = VaultSlice("B", (), error="unreachable")
    snap = build_snapshot([s1, s2], field_definitions=parse_field_definitions("fields: []"), extra_warnings=["hello"])
    assert snap.skipped == (sk,)
    assert snap.warnings[0] == "hello"
    assert "A: listing partial" in snap.warnings and "B: unreachable" in snap.warnings
    assert any("default fields" in w for w in snap.warnings)
    assert snap.vault_counts() == {"A": 1, "B": 0}
    j = snap.to_json(with_content=False)
    assert j["entries"][0]["title"] == "X" and "content" not in j["entries"][0]
    assert j["skipped"][0]["line"] == 3


def test_versions_increase():
    s1, s2 = one_vault(), one_vault()
    assert s2.version > s1.version


# ---------------------------------------------------------------- BM25 on snapshots
def _scores(bm, q):
    return {d: round(s, 9) for d, s in bm.search(q, top_k=1000, min_score=-1)}


def test_snapshot_bm25_lazy_and_uses_title_keys_content():
    e = entry("Angel Crown", fm="keys: [halo]", body="A circlet of pale metal.")
    snap = one_vault(e)
    assert not snap.bm25_ready
    hits = snap.bm25.search("halo circlet", min_score=0)
    assert snap.bm25_ready
    assert [d for d, _ in hits] == [e.uid]


def test_snapshot_incremental_bm25_matches_full_rebuild():
    es = [entry(f"Note {i}", fm=f"keys: [k{i}]", body=f"word{i % 3} shared text {i}") for i in range(8)]
    prev = one_vault(*es)
    _ = prev.bm25  # make it ready so the next build goes incremental
    changed = dataclasses.replace(es[2], content="entirely different words now", content_hash="x")
    retitled = entry("Note 3 renamed", path=es[3].path, body="word0 shared text 3")
    new_entries = [es[0], es[1], changed, retitled, *es[5:], entry("Fresh", body="word1 brand new")]
    nxt = build_snapshot([VaultSlice("v", tuple(new_entries))], previous=prev)
    assert nxt.bm25_ready
    full = Bm25Index.build({e.uid: document_text(e.title, e.keys, e.content) for e in nxt.entries})
    for q in ("word0", "word1 shared", "different", "renamed", "brand new k5", "k4"):
        assert _scores(nxt.bm25, q) == _scores(full, q), q
    # the previous snapshot still answers with its own documents
    assert es[4].uid in _scores(prev.bm25, "k4")
    assert es[4].uid not in _scores(nxt.bm25, "k4")
