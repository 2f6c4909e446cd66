"""Unicode in titles, keys and bodies never crashes and survives intact."""

import random
import unicodedata

import pytest

from dle_desktop.core.entry import Entry, Skip
from dle_desktop.core.index import VaultSlice, build_snapshot
from dle_desktop.core.note_parser import parse_note

from ._helpers import note

CASES = [
    ("\u9f8d\u738b", ["\u9f8d", "\u9f8d\u738b\u6bbf"]),  # CJK
    ("\U0001f409 Dragon \U0001f525", ["\U0001f409", "fire \U0001f525"]),  # emoji (astral)
    ("\u05d4\u05de\u05dc\u05da \u05e9\u05dc\u05de\u05d4", ["\u05e9\u05dc\u05de\u05d4"]),  # Hebrew RTL
    ("\u0627\u0644\u0645\u0644\u0643", ["\u0627\u0644\u0645\u0644\u0643"]),  # Arabic RTL
    ("Cafe\u0301 Noir", ["cafe\u0301"]),  # combining acute
    ("Z\u0351\u0352\u0353algo", ["Z\u0351\u0352\u0353"]),  # stacked marks
    ("\u0939\u093f\u0928\u094d\u0926\u0940", ["\u0939\u093f\u0928\u094d\u0926\u0940"]),  # Devanagari
]


@pytest.mark.parametrize("title, keys", CASES)
def test_unicode_titles_and_keys_survive(title, keys):
    fm = "tags: [lorebook]\nkeys: [" + ", ".join(f'"{k}"' for k in keys) + "]"
    e = parse_note("v", "n.md", note(fm, f"# {title}\nBody mentions [[{title}]] and {keys[0]}."))
    assert isinstance(e, Entry)
    assert e.title == title
    assert e.keys == tuple(keys)
    assert e.links == (title,)
    assert keys[0] in e.content


@pytest.mark.parametrize("title, keys", CASES)
def test_unicode_filename_fallback(title, keys):
    e = parse_note("v", f"Folder/{title}.md", note("tags: [lorebook]", "no heading"))
    assert e.title == title


def test_unicode_link_resolution_case_insensitive():
    a = parse_note("v", "a.md", note("tags: [lorebook]", "# \u00c9LAN\nx"))
    b = parse_note("v", "b.md", note("tags: [lorebook]", "# B\nsee [[\u00e9lan]]"))
    snap = build_snapshot([VaultSlice("v", (a, b))])
    assert snap.find("B").resolved_links == ("\u00c9LAN",)


def _random_text(rng, n):
    cps = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            cps.append(rng.choice("#[]|!%-:\n <>/`*\\"))
        elif r < 0.5:
            cps.append(chr(rng.randint(0x20, 0x7E)))
        else:
            cp = rng.randint(0x80, 0x10FFFF)
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xE9
            cps.append(chr(cp))
    return "".join(cps)


def test_random_unicode_bodies_never_crash():
    rng = random.Random(2024)
    for _ in range(300):
        body = _random_text(rng, rng.randint(0, 200))
        key = _random_text(rng, rng.randint(1, 10)).replace("\n", " ")
        fm = f"tags: [lorebook]\nkeys: [{key!r}]"  # may or may not be valid YAML
        r = parse_note("v", "n.md", note(fm, body))
        assert isinstance(r, (Entry, Skip))
        if isinstance(r, Entry):
            assert isinstance(r.title, str) and r.title
            assert r.token_estimate == -(-len(r.content) // 4)


def test_nfc_and_nfd_titles_are_distinct_but_both_parse():
    nfc = unicodedata.normalize("NFC", "Caf\u00e9")
    nfd = unicodedata.normalize("NFD", nfc)
    a = parse_note("v", "a.md", note("tags: [lorebook]", f"# {nfc}\nx"))
    b = parse_note("v", "b.md", note("tags: [lorebook]", f"# {nfd}\nx"))
    assert a.title == nfc and b.title == nfd
