"""Reading and writing files and JSON, in one place.

JSON: `parse_json_text` / `parse_json_bytes` turn text or bytes into data, or raise `InputError`
with a sentence that names what was read (`what`: "the request body", "chat file x.json") and why
it is not JSON. Request bodies and files share it, so a body and a file fail the same way.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from dle_desktop.core.pipeline.chat_input import has_lone_surrogate
from dle_desktop.errors import InputError

#: A \uD800-\uDFFF escape: JSON's grammar allows an unpaired one, but it is not Unicode text and
#: could be neither stored (SQLite wants UTF-8) nor sent back.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

#: Texts longer than this are parsed in a worker thread by `parse_json_bytes_async`, so an event
#: loop keeps answering other requests meanwhile.
OFF_LOOP_CHARS = 256 * 1024


def decode_utf8(data: bytes, what: str) -> str:
    """UTF-8 (a BOM is dropped). Decoded here rather than by json.loads(bytes), which would also
    guess UTF-16/32: text that is not UTF-8 must be named as such, not reported as bad JSON."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (invalid byte at offset {exc.start})") from None


def _loads(text: str, what: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{what} is not valid JSON: it is nested too deeply") from None
    except ValueError:  # an integer longer than Python's digit limit (4300)
        raise InputError(f"{what} is not valid JSON: a number in it is too long") from None
    if SURROGATE_ESCAPE.search(text) and has_lone_surrogate(data):
        raise InputError(f"{what} has a \\u escape of an unpaired surrogate (\\ud800-\\udfff), which is not text")
    return data


def parse_json_text(text: str, what: str) -> Any:
    return _loads(text, what)


def parse_json_bytes(data: bytes, what: str) -> Any:
    return _loads(decode_utf8(data, what), what)


async def parse_json_bytes_async(data: bytes, what: str) -> Any:
    """`parse_json_bytes` for an event loop: a big text is parsed in a worker thread."""
    text = decode_utf8(data, what)
    if len(text) < OFF_LOOP_CHARS:
        return _loads(text, what)
    return await asyncio.to_thread(_loads, text, what)


def read_text_file(path: str | Path, what: str) -> str:
    """A UTF-8 text file, or InputError naming `what` and `path` (missing, unreadable, not UTF-8)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} file {path} cannot be read: {exc}") from None


def read_json_file(path: str | Path, what: str) -> Any:
    """A JSON file, or InputError: `{what} file {path} ...` says what is wrong with it."""
    return parse_json_text(read_text_file(path, what), f"{what} file {path}")
