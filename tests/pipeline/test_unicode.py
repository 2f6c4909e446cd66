"""Unicode in keys, chats and titles (issue: bad input): CJK, emoji, combining marks, RTL;
matched by DLE's rule and never a crash."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.config import MatchConfig

from .conftest import chat, matched_by, msg, note, run, snapshot, titles

WHOLE = MatchConfig(match_whole_words=True)


def fires(key, text, cfg=MatchConfig()):
    result, _ = run(snapshot(note("Entry", [key])), chat(text), cfg=cfg)
    return titles(result) == ["Entry"]


@pytest.mark.parametrize(
    "key,text",
    [
        ("東京", "私は東京に行きます"),
        ("東京", "東京都"),
        ("서울", "나는 서울에 산다"),
        ("ドラゴン", "巨大なドラゴンが現れた"),
        ("龍", "一條龍。"),
    ],
)
def test_cjk_keys_match_inside_cjk_text_in_both_modes(key, text):
    assert fires(key, text)
    assert fires(key, text, WHOLE)  # no ASCII word characters around them


def test_cjk_key_next_to_ascii_letters_in_whole_word_mode():
    assert fires("東京", "東京abc")
    assert not fires("東京", "東京abc", WHOLE)


@pytest.mark.parametrize(
    "key,text",
    [
        ("🐉", "a 🐉 appears"),
        ("👩‍🚀", "the 👩‍🚀 lands"),
        ("🇯🇵", "flag 🇯🇵 here"),
        ("dragon🔥", "the dragon🔥 roars"),
    ],
)
def test_emoji_keys(key, text):
    assert fires(key, text)


def test_emoji_whole_word_uses_ascii_lookarounds():
    assert fires("🐉", "a🐉b")
    assert not fires("🐉", "a🐉b", WHOLE)
    assert fires("🐉", "a 🐉 b", WHOLE)
    assert fires("🐉", "龍🐉龍", WHOLE)


@pytest.mark.parametrize(
    "key,text",
    [
        ("Ångström", "A\u030angstro\u0308m units"),
        ("A\u030angstro\u0308m", "Ångström units"),
        ("Ελλάδα", "Ε\u03bb\u03bb\u03b1\u0301δα"),
        ("nguyễn", "NGUYỄN"),
    ],
)
def test_combining_marks_are_normalised_by_nfc(key, text):
    assert fires(key, text)
    assert fires(key, text, WHOLE)


@pytest.mark.parametrize(
    "key,text",
    [
        ("ירושלים", "הם הלכו לירושלים היום"),
        ("القاهرة", "سافرنا إلى القاهرة أمس"),
        ("القاهرة", "\u200fسافرنا إلى \u202bالقاهرة\u202c أمس\u200f"),
    ],
)
def test_rtl_keys_match(key, text):
    assert fires(key, text)


def test_unicode_titles_render_and_group():
    snap = snapshot(note("東京 & <龍>", ["東京"], "首都。🐉"))
    result, _ = run(snap, chat("東京"))
    [g] = result.groups
    assert g.text == "<東京 &amp; &lt;龍&gt;>\n首都。🐉\n</東京 &amp; &lt;龍&gt;>"
    assert matched_by(result, "東京 & <龍>") == "東京"


def test_case_folding_that_changes_length_keeps_scan_windows_exact():
    # 'İ'.lower() is two characters; per-entry windows must still start at the right message.
    snap = snapshot(note("Near", ["dragon"], scanDepth=1))
    assert titles(run(snap, chat("İİİİ dragon", "İstanbul"))[0]) == []
    assert titles(run(snap, chat("İİİİ", "İstanbul dragon"))[0]) == ["Near"]
    assert titles(run(snap, chat("İİİİ", "İİ dragon"), cfg=WHOLE)[0]) == ["Near"]


WEIRD = [
    "\ud800 lone surrogate",
    "nul \x00 byte",
    "zero\u200bwidth",
    "\ufeffbom",
    "a" * 100_000,
    "\u0301\u0301 leading marks",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "ﬃ ligature",
    "ß ẞ",
    "İ ı",
    "\r\n\t",
    "",
]


@pytest.mark.parametrize("text", WEIRD, ids=[f"weird{i}" for i in range(len(WEIRD))])
def test_odd_text_never_crashes(text):
    snap = snapshot(
        note("Dragon", ["dragon", "ß", "ı"], refine_keys=["ﬃ", "dragon"], warmup=1),
        note("Other", ["𝔘𝔫𝔦"], scanDepth=1),
        note("Keyless", [], "text"),
    )
    cfg = MatchConfig(fuzzy_search_enabled=True, recursive_scan=True, match_whole_words=True)
    for c in (MatchConfig(), cfg, MatchConfig(case_sensitive=True)):
        result, state = run(snap, [msg(text, text[:20]), msg(text + " dragon")], cfg=c)
        result.to_json()
        state.to_json()
