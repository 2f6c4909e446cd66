"""The hierarchical pre-filter's pure parts (§4.5)."""

from __future__ import annotations

from dle_desktop.ai.prefilter import (
    DEFAULT_INFRA_TAGS,
    apply_category_selection,
    category_manifest,
    category_of,
    category_user_message,
    cluster_entries,
    infra_tags_for,
    should_prefilter,
)
from dle_desktop.core.entry import TagConfig
from tests.ai._entries import entry


def test_category_is_the_first_non_infra_tag():
    assert category_of(entry("A", tags=("lorebook-seed", "Faction", "Place"), path="Places/A.md")) == "Faction"


def test_category_falls_back_to_the_top_folder_then_uncategorized():
    assert category_of(entry("A", tags=("lorebook-always",), path="Places/Towns/A.md")) == "Places"
    assert category_of(entry("A", tags=(), path="Places/A.md")) == "Places"
    assert category_of(entry("A", tags=("lorebook-bootstrap",), path="A.md")) == "Uncategorized"


def test_infra_tags_are_compared_case_insensitively_and_follow_settings():
    e = entry("A", tags=("Lorebook-Always", "canon-only", "Faction"))
    assert category_of(e) == "canon-only"
    infra = infra_tags_for(TagConfig(constant="canon-only"))
    assert "canon-only" in infra and infra >= DEFAULT_INFRA_TAGS
    assert category_of(e, infra) == "Faction"


def test_clusters_keep_entry_order_and_merge_case_variants():
    a = entry("A", tags=("Faction",))
    b = entry("B", tags=("place",))
    c = entry("C", tags=("faction",))
    clusters = cluster_entries([a, b, c])
    assert clusters == {"Faction": [a, c], "place": [b]}


def _vault(per_category: int, categories: int):
    return [
        entry(f"{cat}-{i}", tags=(f"Cat{cat}",), keys=(f"key{cat}x{i}",))
        for cat in range(categories)
        for i in range(per_category)
    ]


def test_should_prefilter_needs_40_entries_and_more_than_three_clusters():
    forty_in_four = _vault(10, 4)
    assert should_prefilter(forty_in_four, cluster_entries(forty_in_four))
    thirty_nine = forty_in_four[:39]
    assert not should_prefilter(thirty_nine, cluster_entries(thirty_nine))
    forty_in_three = _vault(14, 3)[:40]
    assert not should_prefilter(forty_in_three, cluster_entries(forty_in_three))


def test_category_manifest_lines():
    clusters = {
        "Places": [entry(f"P{i}") for i in range(7)],
        "factions": [entry("F")],
        "Beasts": [entry("B1"), entry("B2")],
    }
    assert category_manifest(clusters) == (
        "[Beasts] (2 entries): B1, B2\n[factions] (1 entry): F\n[Places] (7 entries): P0, P1, P2, P3, P4 (+2 more)"
    )


def test_category_user_message():
    assert category_user_message("[A] (1 entry): x", "Ann (user): hi") == (
        "## Categories\n[A] (1 entry): x\n\n## Recent Chat\nAnn (user): hi"
    )


def test_selection_keeps_chosen_categories_case_insensitively_and_adds_forced():
    entries = _vault(10, 4)
    clusters = cluster_entries(entries)
    const = entry("Rules", constant=True)
    kept = apply_category_selection(
        entries, clusters, [" cat0 ", "CAT1", "Unknown", 3], "", forced=[const], aggressiveness=0.8
    )
    assert kept == entries[:20] + [const]


def test_entries_whose_key_is_in_the_chat_are_rescued():
    entries = _vault(10, 4)
    kept = apply_category_selection(
        entries, cluster_entries(entries), ["Cat0"], "she shouts KEY3X7 at the sky", aggressiveness=0.8
    )
    assert kept == entries[:10] + [entries[37]]


def test_forced_entries_are_not_doubled():
    entries = _vault(10, 4)
    kept = apply_category_selection(
        entries, cluster_entries(entries), ["Cat0"], "", forced=[entries[0]], aggressiveness=0.8
    )
    assert kept == entries[:10]


def test_safety_valve_returns_none_when_too_little_is_left():
    entries = _vault(10, 4)
    clusters = cluster_entries(entries)
    # 10 of 40 kept: enough at aggressiveness 0.8 (needs 8), too few at 0.5 (needs 20)
    assert apply_category_selection(entries, clusters, ["Cat0"], "", aggressiveness=0.8) is not None
    assert apply_category_selection(entries, clusters, ["Cat0"], "", aggressiveness=0.5) is None
    assert apply_category_selection(entries, clusters, [], "", aggressiveness=0.0) is None
    assert (
        apply_category_selection(entries, clusters, ["Cat0", "Cat1", "Cat2", "Cat3"], "", aggressiveness=0.0) == entries
    )
