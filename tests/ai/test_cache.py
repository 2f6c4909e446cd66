"""The AI-search cache tiers (§4.4), one slot per chat."""

from __future__ import annotations

import pytest

from dle_desktop.ai.cache import AiSearchCache, compile_entity_pattern, manifest_key
from dle_desktop.ai.extract import Pick

PICKS = (Pick("Gorduin Wynlar", "high", "named"),)
LINES = ["Ann (user): hello", "Narrator (character): The quay is quiet."]
UIDS = {"v\x00a.md", "v\x00b.md"}
NAMES = compile_entity_pattern(["Gorduin Wynlar", "gorduin", "Lantern Quay", "C++"])


def key(**overrides) -> str:
    args = dict(
        manifest_text='<entry name="A">…</entry>',
        mode="two-stage",
        scan_depth=4,
        max_entries=10,
        unlimited_entries=False,
        system_prompt="sys",
        connection_mode="profile",
        profile_id="p",
        model="m",
        threshold="low",
        summary_mode="prefer_summary",
        summary_length=600,
    )
    args.update(overrides)
    return manifest_key(**args)


def stored(mode_lines=LINES, uids=UIDS, version=1) -> AiSearchCache:
    cache = AiSearchCache()
    cache.store("chat", key(), mode_lines, uids, version, PICKS)
    return cache


def look(cache, lines, uids=UIDS, mode="two-stage", version=1, pattern=NAMES, chat="chat", mkey=None):
    return cache.lookup(chat, mkey or key(), lines, uids, mode, version, pattern)


# ---------------------------------------------------------------- the key


@pytest.mark.parametrize(
    "change",
    [
        {"manifest_text": "other"},
        {"mode": "ai-only"},
        {"scan_depth": 5},
        {"max_entries": 11},
        {"unlimited_entries": True},
        {"system_prompt": "sys2"},
        {"connection_mode": "proxy"},
        {"profile_id": "q"},
        {"model": "n"},
        {"threshold": "high"},
        {"summary_mode": "summary_only"},
        {"summary_length": 601},
    ],
)
def test_every_setting_changes_the_manifest_key(change):
    assert key(**change) != key()


def test_manifest_key_is_stable():
    assert key() == key()


# ---------------------------------------------------------------- tiers


def test_exact_hit():
    hit = look(stored(), list(LINES), uids=set(), mode="ai-only")
    assert hit is not None and hit.tier == "exact" and hit.picks == PICKS


def test_nothing_for_another_chat_or_another_manifest():
    cache = stored()
    assert look(cache, LINES, chat="other") is None
    assert look(cache, LINES, mkey=key(model="other")) is None


def test_keyword_stable_hit_when_candidates_are_a_subset():
    changed = ["Ann (user): something else entirely", "x"]
    hit = look(stored(), changed, uids={"v\x00a.md"})
    assert hit is not None and hit.tier == "keyword-stable"


def test_keyword_stable_near_misses():
    changed = ["Ann (user): something else entirely", "x"]
    assert look(stored(), changed, uids=UIDS | {"v\x00new.md"}) is None  # a new candidate
    assert look(stored(), changed, mode="ai-only") is None  # not in ai-only mode


def test_shrink_hit():
    hit = look(stored(), LINES[:1], uids=UIDS | {"new"})
    assert hit is not None and hit.tier == "shrink"


def test_shrink_near_misses():
    cache = stored()
    assert look(cache, ["Ann (user): hello!"], uids=UIDS | {"new"}) is None  # prefix changed
    assert look(cache, [], uids=UIDS | {"new"}) is None  # nothing left to compare


def test_sliding_window_hit():
    grown = [*LINES, "Ann (user): I sit down and wait."]
    hit = look(stored(), grown, uids=UIDS | {"new"}, mode="ai-only")
    assert hit is not None and hit.tier == "sliding-window"


@pytest.mark.parametrize(
    "new_line",
    [
        "Ann (user): Where is Gorduin Wynlar?",
        "Ann (user): GORDUIN!",
        "Ann (user): I write C++ on the quay.",
    ],
)
def test_sliding_window_miss_when_a_new_line_names_an_entity(new_line):
    assert look(stored(), [*LINES, new_line], uids=UIDS | {"new"}, mode="ai-only") is None


def test_entity_names_match_whole_words_only():
    assert (
        look(stored(), [*LINES, "Ann (user): the gorduinish style"], uids={"new"}, mode="ai-only").tier
        == "sliding-window"
    )


def test_sliding_window_near_misses():
    grown = [*LINES, "Ann (user): I wait."]
    assert look(stored(), grown, uids={"new"}, mode="ai-only", version=2) is None  # names changed since
    assert look(stored(), ["Ann (user): hi", *LINES[1:], "x"], uids={"new"}, mode="ai-only") is None  # prefix changed


def test_sliding_window_without_any_entity_names():
    grown = [*LINES, "Ann (user): Gorduin Wynlar!"]
    assert look(stored(), grown, uids={"new"}, mode="ai-only", pattern=None).tier == "sliding-window"


def test_tiers_are_tried_in_order():
    # the chat grew and the candidates are a subset: keyword-stable comes before sliding-window
    assert look(stored(), [*LINES, "more"], uids={"v\x00a.md"}).tier == "keyword-stable"


# ---------------------------------------------------------------- slots


def test_store_replaces_the_chats_slot():
    cache = stored()
    cache.store("chat", key(), ["new line"], UIDS, 1, ())
    assert look(cache, LINES, uids={"zzz"}) is None
    assert look(cache, ["new line"]).picks == ()


def test_slots_are_per_chat_and_least_recently_used_go_first():
    cache = AiSearchCache(max_chats=2)
    cache.store("a", key(), LINES, UIDS, 1, PICKS)
    cache.store("b", key(), LINES, UIDS, 1, PICKS)
    assert look(cache, LINES, chat="a") is not None  # a is now the most recent
    cache.store("c", key(), LINES, UIDS, 1, PICKS)
    assert len(cache) == 2
    assert look(cache, LINES, chat="b") is None
    assert look(cache, LINES, chat="a") is not None and look(cache, LINES, chat="c") is not None


def test_clear_one_chat_or_all():
    cache = AiSearchCache()
    for chat in ("a", "b"):
        cache.store(chat, key(), LINES, UIDS, 1, PICKS)
    cache.clear("a")
    assert look(cache, LINES, chat="a") is None and look(cache, LINES, chat="b") is not None
    cache.clear("missing")
    cache.clear()
    assert len(cache) == 0


def test_cache_needs_room():
    with pytest.raises(ValueError):
        AiSearchCache(max_chats=0)


def test_entity_pattern():
    assert compile_entity_pattern([]) is None
    assert compile_entity_pattern(["", "  "]) is None
    pattern = compile_entity_pattern(["Dr.", "a.b"])
    assert pattern.search("ask dr. who")
    assert not pattern.search("axb")  # names are literal text, not regexes
