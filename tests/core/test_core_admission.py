"""Reference §1.1 admission order and §1.6 skip codes, plus our SKIP_BAD_FRONTMATTER."""

import pytest

from dle_desktop.core.entry import Entry, Skip, TagConfig

from ._helpers import note, parse


def skip_code(text: str, **kw) -> str:
    r = parse(text, **kw)
    assert isinstance(r, Skip), r
    return r.code


def test_no_frontmatter_block_at_all():
    assert skip_code("# Just a note\nwith text") == "SKIP_NO_FRONTMATTER"


def test_empty_frontmatter_block():
    assert skip_code("---\n---\n# T\nbody") == "SKIP_NO_FRONTMATTER"
    assert skip_code("---\n\n---\n# T\nbody") == "SKIP_NO_FRONTMATTER"
    assert skip_code("---\n# only a comment\n---\n# T\nbody") == "SKIP_NO_FRONTMATTER"


def test_frontmatter_without_lorebook_tag():
    assert skip_code(note("keys: [a]")) == "SKIP_NO_LOREBOOK_TAG"
    assert skip_code(note("tags: [character]")) == "SKIP_NO_LOREBOOK_TAG"
    assert skip_code(note("tags: []")) == "SKIP_NO_LOREBOOK_TAG"


def test_inline_body_hashtags_do_not_admit():
    assert skip_code(note("keys: [a]", "# T\n#lorebook text")) == "SKIP_NO_LOREBOOK_TAG"


def test_comma_string_tags_are_one_tag_and_skip():
    r = parse(note("tags: lorebook, character"))
    assert isinstance(r, Skip) and r.code == "SKIP_NO_LOREBOOK_TAG"
    assert "lorebook, character" in r.reason


def test_single_string_tag_admits_case_insensitively():
    r = parse(note("tags: LoreBook"))
    assert isinstance(r, Entry) and r.tags == ()


def test_guide_tag_alone_admits_and_is_marked():
    r = parse(note("tags: [lorebook-guide, style]"))
    assert isinstance(r, Entry)
    assert r.guide is True
    assert r.tags == ("style",)  # guide is a marker tag: removed


def test_enabled_false_skips():
    assert skip_code(note("tags: [lorebook]\nenabled: false")) == "SKIP_ENABLED_FALSE"


@pytest.mark.parametrize("value", ["'false'", "no", "off", "0"])
def test_enabled_only_boolean_false_skips(value):
    r = parse(note(f"tags: [lorebook]\nenabled: {value}"))
    assert isinstance(r, Entry)
    assert "W_BAD_VALUE" in [w.code for w in r.warnings]


def test_enabled_true_admits():
    assert isinstance(parse(note("tags: [lorebook]\nenabled: true")), Entry)


def test_never_tag_skips():
    assert skip_code(note("tags: [lorebook, lorebook-never]")) == "SKIP_NEVER_INSERT_TAG"
    assert skip_code(note("tags: [lorebook-guide, Lorebook-Never]")) == "SKIP_NEVER_INSERT_TAG"


def test_order_tag_check_before_enabled():
    # no lorebook tag and enabled:false → the tag rule reports first
    assert skip_code(note("tags: [x]\nenabled: false")) == "SKIP_NO_LOREBOOK_TAG"


def test_order_enabled_before_never():
    assert skip_code(note("tags: [lorebook, lorebook-never]\nenabled: false")) == "SKIP_ENABLED_FALSE"


def test_order_never_tag_without_lorebook_is_no_lorebook():
    assert skip_code(note("tags: [lorebook-never]")) == "SKIP_NO_LOREBOOK_TAG"


def test_custom_tag_config():
    cfg = TagConfig(lorebook="lore", never="lore-off", constant="lore-on", guide="lore-guide")
    assert skip_code(note("tags: [lorebook]"), tags_config=cfg) == "SKIP_NO_LOREBOOK_TAG"
    r = parse(note("tags: [lore, lore-on]"), tags_config=cfg)
    assert isinstance(r, Entry) and r.constant is True and r.tags == ("lore-on",)
    assert skip_code(note("tags: [lore, lore-off]"), tags_config=cfg) == "SKIP_NEVER_INSERT_TAG"
    assert cfg.signature() != TagConfig().signature()


def test_bad_yaml_skip_with_file_line():
    text = "---\ntags: [lorebook]\nkeys: a: b\n---\n# T\nx"
    r = parse(text)
    assert isinstance(r, Skip)
    assert r.code == "SKIP_BAD_FRONTMATTER"
    assert r.line == 3  # `keys: a: b` is the third line of the file
    assert "YAML" in r.reason


def test_bad_yaml_tab_indent_line():
    r = parse("---\ntags: [lorebook]\npriority: 5\n\tkeys: [a]\n---\nx")
    assert isinstance(r, Skip) and r.code == "SKIP_BAD_FRONTMATTER" and r.line == 4


@pytest.mark.parametrize("block, kind", [("- lorebook\n- x", "list"), ("just text", "str"), ("42", "int")])
def test_non_mapping_frontmatter_skips(block, kind):
    r = parse(f"---\n{block}\n---\n# T\nx")
    assert isinstance(r, Skip)
    assert r.code == "SKIP_BAD_FRONTMATTER"
    assert r.line == 2
    assert kind in r.reason


def test_python_object_tag_is_refused_not_executed():
    r = parse("---\ntags: [lorebook]\nx: !!python/object/apply:os.system ['echo pwned']\n---\nx")
    assert isinstance(r, Skip) and r.code == "SKIP_BAD_FRONTMATTER" and r.line == 3


def test_skip_carries_vault_and_path_and_json():
    r = parse(note("tags: [x]"), path="Folder/A.md", vault="Lore")
    assert (r.vault, r.path) == ("Lore", "Folder/A.md")
    j = r.to_json()
    assert j["code"] == "SKIP_NO_LOREBOOK_TAG" and j["path"] == "Folder/A.md" and j["vault"] == "Lore"
    assert j["line"] is None


def test_marker_tags_removed_but_other_infra_tags_kept():
    r = parse(note("tags: [lorebook, lorebook-guide, lorebook-seed, lorebook-bootstrap, lorebook-always, npc]"))
    assert r.tags == ("lorebook-seed", "lorebook-bootstrap", "lorebook-always", "npc")
    assert r.seed and r.bootstrap and r.constant and r.guide


def test_tags_lowercased_and_deduplicated():
    r = parse(note("tags: [lorebook, NPC, npc, Npc]"))
    assert r.tags == ("npc",)
