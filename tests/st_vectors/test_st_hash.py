"""getStringHash (cyrb53 over UTF-16 code units) against the values in st-wire-contracts.md."""

from __future__ import annotations

import pytest

from dle_desktop.vectors.st_hash import get_string_hash


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello", 4867314475583282),  # §1.1, checked against Node
        ("", 3338908027751811),  # §1.1
        ("Eldoria", 59964539520806),  # world_59964539520806 (§1.1 collection ids)
        ("/user/files/1719330000000_1234567.txt", 4473160753641173),  # file_4473160753641173
        ("The dragon sleeps in the northern mountains", 4522783205579122),  # §1.2 insert example
    ],
)
def test_documented_values(text, expected):
    assert get_string_hash(text) == expected


def test_range_and_determinism():
    for text in ("a", "ä", "漢字", "🐉", "x" * 5000):
        h = get_string_hash(text)
        assert 0 <= h < 2**53
        assert get_string_hash(text) == h


def test_astral_characters_count_as_two_utf16_units():
    # "🐉" is U+1F409 = the surrogate pair D83D DC09: hashing the pair gives the same value.
    assert get_string_hash("🐉") == get_string_hash("\ud83d\udc09".encode("utf-16", "surrogatepass").decode("utf-16"))
    assert get_string_hash("🐉") != get_string_hash("\ud83d")


def test_lone_surrogate_is_one_code_unit_not_an_error():
    assert 0 <= get_string_hash("a\ud800b") < 2**53


def test_seed_changes_the_hash():
    assert get_string_hash("Hello", seed=1) != get_string_hash("Hello")
