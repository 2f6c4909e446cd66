"""The chat-id rule, and its regular expression (published in the OpenAPI document) agreeing with it."""

from __future__ import annotations

import re
import sys

import pytest

from dle_desktop.core.chat_id import CHAT_ID_PATTERN, MAX_CHAT_ID_CHARS, ChatIdError, check_chat_id, is_valid_chat_id


@pytest.mark.parametrize(
    "chat_id", ["a", "group/abc", "Seraphina - 2024-05-01@12h00m00s", "龍 🐉", "%2F", "a b", "x" * MAX_CHAT_ID_CHARS]
)
def test_valid_ids_come_back_unchanged(chat_id):
    assert check_chat_id(chat_id) is chat_id


@pytest.mark.parametrize(
    "value,words",
    [
        (None, "must be text"),
        (5, "must be text"),
        ("", "empty"),
        (" a", "whitespace"),
        ("a\u3000", "whitespace"),
        ("a\x00", "(U+0000) at position 1"),
        ("a\nb", "U+000A"),
        ("\x9f", "U+009F"),
        ("a\u2029", "U+2029"),
        ("x" * (MAX_CHAT_ID_CHARS + 1), "513 characters; the limit is 512"),
    ],
)
def test_invalid_ids_say_why(value, words):
    with pytest.raises(ChatIdError, match=re.escape(words)):
        check_chat_id(value)


def test_the_published_pattern_is_the_rule():
    pattern = re.compile(CHAT_ID_PATTERN)
    # Every code point of the Basic Multilingual Plane's first block of scripts and punctuation,
    # at the start, in the middle and at the end of an id, plus a few astral ones.
    chars = [chr(c) for c in range(0x3100) if not 0xD800 <= c <= 0xDFFF] + ["\U0001f409", chr(sys.maxunicode)]
    for ch in chars:
        for candidate in (ch, f"{ch}a", f"a{ch}", f"a{ch}b"):
            # `search`, as JSON Schema validators apply a pattern.
            assert bool(pattern.search(candidate)) == is_valid_chat_id(candidate), repr(candidate)
