"""The per-generation fast paths (issue 24): each gives what the plain code gave."""

from __future__ import annotations

import copy
import random

from dle_desktop.core.pipeline.collation import flat_title_order_key, title_order_key
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.matcher import KeywordIndex
from dle_desktop.core.pipeline.state import ChatState

from .conftest import chat, note, run, snapshot, titles, verdicts
from .test_match_stages import LOCALE_COMPARE_ORDER


def _sign(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]  # tuples of the same shape compare


def test_the_packed_title_key_orders_titles_as_the_collation_key_does():
    rng = random.Random(7)
    alphabet = "aAbBeéEÉzZ  -_.!0195æœßøđłħ\u0301Δδмм東京"
    titles_ = list(LOCALE_COMPARE_ORDER) + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(400)
    ]
    titles_ += [t[:k] for t in LOCALE_COMPARE_ORDER for k in range(len(t))]  # prefixes sort first
    for _ in range(20_000):
        a, b = rng.choice(titles_), rng.choice(titles_)
        assert _sign(flat_title_order_key(a), flat_title_order_key(b)) == _sign(
            title_order_key(a), title_order_key(b)
        ), (a, b)
    assert sorted(titles_, key=flat_title_order_key) == sorted(titles_, key=title_order_key)


def test_constants_are_matched_alike_in_every_generation():
    snap = snapshot(
        note("Always", constant=True),
        note("Also Always", constant=True, priority=10),
        note("Dragon", ["dragon"]),
    )
    state = ChatState()
    records = []
    for text in ("a dragon here", "nothing", "the dragon again"):
        result, state = run(snap, chat(text, pad=4), state)
        records.append(result)
        assert [v.title for v in verdicts(result, "Always", "constants", "matched")] == ["Always"]
        assert [v.title for v in verdicts(result, "Also Always", "constants", "matched")] == ["Also Always"]
    assert titles(records[0])[:2] == ["Also Always", "Always"]
    assert "Dragon" in titles(records[0]) and "Dragon" not in titles(records[1])


def test_a_generation_leaves_the_previous_state_s_analytics_as_they_were():
    snap = snapshot(note("Dragon", ["dragon"]), note("Castle", ["castle"]))
    cfg = MatchConfig(strip_duplicate_injections=False)  # Dragon is matched again, not stripped
    _, first = run(snap, chat("a dragon", pad=4), cfg=cfg)
    kept = copy.deepcopy(first.analytics)
    _, second = run(snap, chat("a dragon at the castle", pad=5), first, cfg)  # a new message, not a swipe
    assert first.analytics == kept
    assert second.analytics["v:Dragon"]["matched"] == kept["v:Dragon"]["matched"] + 1
    assert second.analytics["v:Castle"]["matched"] == 1


def test_the_analytics_cap_drops_the_oldest_record_first_seen_first_on_ties():
    snap = snapshot(note("Dragon", ["dragon"]))
    rng = random.Random(3)
    old = {f"v:Old {i}": {"matched": 1, "injected": 0, "last_triggered": rng.randint(5, 9)} for i in range(500)}
    oldest = [k for k, v in old.items() if v["last_triggered"] == 5]
    state = ChatState(generation_count=10, analytics=old)
    _, after = run(snap, chat("a dragon", pad=4), state)
    assert len(after.analytics) == 500
    assert oldest[0] not in after.analytics
    assert all(k in after.analytics for k in oldest[1:]) and "v:Dragon" in after.analytics


def _index(*keys: str, case_sensitive: bool = False) -> KeywordIndex:
    snap = snapshot(*(note(f"Entry {i}", [k]) for i, k in enumerate(keys)))
    return KeywordIndex(snap.entries, case_sensitive)


LINES = [
    "Anon: the Dragon of ΟΔΥΣΣΕΥΣ sleeps",
    "Bot: e\u0301clair and éclair, dragon-fire",
    "",
    "Anon: ΣΑΣ dragon dragon",
    "Bot: nothing here",
]


def test_scanning_a_window_line_by_line_finds_what_one_scan_finds():
    for case_sensitive in (False, True):
        index = _index("dragon", "Dragon", "éclair", "οδυσσευς", "σας", "on d", "re", case_sensitive=case_sensitive)
        for lines in (LINES, LINES[1:], LINES[3:], [], [""]):
            for _ in range(2):  # the second time from the kept lines
                hit, starts = index.scan_lines(lines)
                whole = index.scan("\n".join(lines))
                assert hit == whole
                assert starts == [
                    len("\n".join(index.scan(ln).text for ln in lines[:i])) + (i > 0) for i in range(len(lines))
                ]


def test_a_key_with_a_line_break_is_found_across_lines():
    index = _index("sleeps\nbot")
    hit, _ = index.scan_lines(LINES)
    assert hit == index.scan("\n".join(LINES))
    assert "sleeps\nbot" in hit.spans


def test_recursion_s_joined_scan_finds_what_one_scan_of_the_cut_text_finds():
    index = _index("dragon", "éclair", "σας", "on d", "re", "a\nb")
    plain = _index("dragon", "éclair", "σας", "on d", "re")
    pieces = [*LINES, "", "dragon at the very end", "ΣΑΣ"]
    total = len("\n".join(pieces))
    for kx in (index, plain):
        for limit in (*range(60), *range(total - 40, total + 3)):
            for _ in range(2):  # the second time from the kept pieces
                assert kx.scan_joined(pieces, limit) == kx.scan("\n".join(pieces)[:limit]), limit
        assert kx.scan_joined([], 50) == kx.scan("")
        assert kx.scan_joined([""], 50) == kx.scan("")
