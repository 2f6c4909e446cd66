"""The one rule for chat ids, wherever one arrives (a `/retrieve` body, a `/chats/{chat_id}` path,
a chat file for `match`): what SillyTavern produces is accepted as it is, nothing is trimmed, and
what could not be stored, shown or addressed faithfully is refused with a message saying why.

Accepted: 1 to 512 characters of any text, `/` included (SillyTavern's group chats have such ids).
Refused: control characters (NUL, newlines, tabs, ...; Unicode category Cc), the line and paragraph
separators U+2028/U+2029, and whitespace at either end. Refusing the ends instead of trimming them
keeps one id per chat: `" a "` used to be stored as `"a"` silently."""

from __future__ import annotations

import unicodedata

MAX_CHAT_ID_CHARS = 512

_SEPARATORS = "\u2028\u2029"
#: The same rule as a JSON Schema / Python regular expression, for the OpenAPI document (Python's
#: `\s` is `str.isspace`, so the two agree; tests/core/test_chat_id.py checks it). It ends with
#: "nothing follows" rather than `$`, which in Python also matches before a final newline.
_BAD = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
CHAT_ID_PATTERN = rf"^[^\s{_BAD}](?:[^{_BAD}]*[^\s{_BAD}])?(?![\s\S])"


class ChatIdError(ValueError):
    """The text is not a usable chat id; the message says why."""


def is_forbidden_char(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" or ch in _SEPARATORS


def check_chat_id(value: object, what: str = "chat id") -> str:
    """`value` unchanged if it is a valid chat id, else ChatIdError naming the problem."""
    if not isinstance(value, str):
        raise ChatIdError(f"{what} must be text, not {type(value).__name__}")
    if not value:
        raise ChatIdError(f"{what} is empty")
    if len(value) > MAX_CHAT_ID_CHARS:
        raise ChatIdError(f"{what} is {len(value)} characters; the limit is {MAX_CHAT_ID_CHARS}")
    for i, ch in enumerate(value):
        if is_forbidden_char(ch):
            raise ChatIdError(
                f"{what} has a control character (U+{ord(ch):04X}) at position {i}; "
                "newlines, tabs, NUL and other control characters are not allowed"
            )
    if value[0].isspace() or value[-1].isspace():
        raise ChatIdError(
            f"{what} starts or ends with whitespace; send the id exactly as SillyTavern has it, "
            "without surrounding spaces"
        )
    return value


def is_valid_chat_id(value: object) -> bool:
    try:
        check_chat_id(value)
    except ChatIdError:
        return False
    return True
