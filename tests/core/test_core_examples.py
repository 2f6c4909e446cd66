"""The three worked examples of reference §1.8 parse to the documented results.

One deliberate difference: YAML's `|` block scalar strips the common indentation, so example 3's
summary has no leading spaces on its second line (DLE's line parser keeps them)."""

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import VaultSlice, build_snapshot
from dle_desktop.core.note_parser import parse_note

from ._helpers import entry

GORDUIN = """---
tags: [lorebook, character]
keys: [Gorduin, Head Archivist]
priority: 20
summary: "Head Archivist of the Oracles of Might. Select when the Archive, artifacts or Oracles politics come up."
requires: [Oracles of Might]
cascade_links: [Bellsummit]
location: Bellsummit
---
# Gorduin Wynlar
Head Archivist of the [[Oracles of Might]], based in [[Bellsummit|the Summit]].
![[gorduin.png]]
%%deeplore-exclude%%
Author note: keep him ambiguous.
%%/deeplore-exclude%%
"""

DUSKFROST = """---
tags:
  - lorebook
  - lorebook-always
priority: 5
position: in_chat
depth: 0
role: system
---
# Duskfrost World Rules
Magic always has a cost. %%todo: expand%%
"""

ANGEL_CROWN = """---
tags: [lorebook]
keys:
  - Angel Crown
  - the Crown
refine_keys: [vault, artifact]
warmup: 2
cooldown: 2
probability: 0.7
scanDepth: 6
excludeRecursion: true
character_present:
  - Gorduin Wynlar
summary: |
  Pre-Calamity artifact in the Oracles vault.
  Select when artifacts or forbidden relics come up.
---
# Angel Crown
A circlet of pale metal. See [[War of Glimmering Hope]].
"""


def test_example_1_gorduin():
    e = parse_note("Main", "Characters/Gorduin Wynlar.md", GORDUIN)
    assert isinstance(e, Entry)
    assert e.title == "Gorduin Wynlar"
    assert e.tags == ("character",)  # the lorebook marker tag is removed
    assert e.folder == "Characters"
    assert e.content == "Head Archivist of the Oracles of Might, based in the Summit."
    assert e.links == ("Oracles of Might", "Bellsummit")
    assert e.custom_fields == {"location": ("Bellsummit",)}
    assert e.keys == ("Gorduin", "Head Archivist")
    assert e.priority == 20
    assert e.summary.startswith("Head Archivist of the Oracles of Might. Select when")
    assert e.original_requires == ("Oracles of Might",)
    assert e.original_cascade_links == ("Bellsummit",)
    assert e.vault == "Main"
    assert e.warnings == ()
    # the embed and the exclude block leave no trace
    assert "gorduin.png" not in e.content and "Author note" not in e.content


def test_example_1_dangling_cascade_stripped_at_finalize():
    e = parse_note("Main", "Characters/Gorduin Wynlar.md", GORDUIN)
    snap = build_snapshot([VaultSlice("Main", (e,))])
    g = snap.find("Gorduin Wynlar")
    assert g.cascade_links == ()
    assert g.original_cascade_links == ("Bellsummit",)
    assert g.requires == ()  # Oracles of Might is not an entry either
    assert g.original_requires == ("Oracles of Might",)


def test_example_1_cascade_kept_when_target_exists():
    e = parse_note("Main", "Characters/Gorduin Wynlar.md", GORDUIN)
    bell = entry("Bellsummit", vault="Main")
    oracles = entry("Oracles of Might", vault="Main")
    snap = build_snapshot([VaultSlice("Main", (e, bell, oracles))])
    g = snap.find("gorduin wynlar")
    assert g.cascade_links == ("Bellsummit",)
    assert g.requires == ("Oracles of Might",)
    assert g.resolved_links == ("Oracles of Might", "Bellsummit")


def test_example_2_duskfrost():
    e = parse_note("Main", "Duskfrost World Rules.md", DUSKFROST)
    assert isinstance(e, Entry)
    assert e.title == "Duskfrost World Rules"
    assert e.constant is True
    # DLE maps in_chat to ST's enum 1 and system to role 0; we keep the names.
    assert e.position == "in_chat"
    assert e.depth == 0
    assert e.role == "system"
    assert e.priority == 5
    assert e.content == "Magic always has a cost."
    assert e.tags == ("lorebook-always",)  # the constant tag stays, the marker goes
    assert e.folder is None


def test_example_3_angel_crown():
    e = parse_note("Main", "Angel Crown.md", ANGEL_CROWN)
    assert isinstance(e, Entry)
    assert e.title == "Angel Crown"
    assert e.priority == 100  # default
    assert e.keys == ("Angel Crown", "the Crown")
    assert e.refine_keys == ("vault", "artifact")
    assert e.warmup == 2 and e.cooldown == 2
    assert e.probability == 0.7
    assert e.scan_depth == 6
    assert e.exclude_recursion is True
    assert e.custom_fields == {"character_present": ("Gorduin Wynlar",)}
    # YAML `|`: common indentation removed, a single trailing newline then stripped
    assert e.summary == (
        "Pre-Calamity artifact in the Oracles vault.\nSelect when artifacts or forbidden relics come up."
    )
    assert e.content == "A circlet of pale metal. See War of Glimmering Hope."
    assert e.links == ("War of Glimmering Hope",)
    assert e.tags == ()
    assert e.constant is False and e.position is None and e.depth is None and e.role is None
    assert e.warnings == ()


def test_examples_token_estimate_is_ceil_len_over_4():
    for text in (GORDUIN, DUSKFROST, ANGEL_CROWN):
        e = parse_note("v", "x.md", text)
        assert e.token_estimate == -(-len(e.content) // 4)
        assert e.token_estimate > 0
