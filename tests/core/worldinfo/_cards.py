"""Real PNG files and character cards built in the tests: chunks with their true CRCs, text
chunks in each of PNG's three forms."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def image_chunks() -> list[bytes]:
    """IHDR and IDAT of a real 1×1 RGB picture."""
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return [chunk(b"IHDR", ihdr), chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))]


def text_chunk(keyword: str, text: bytes, form: str = "tEXt") -> bytes:
    key = keyword.encode("latin-1") + b"\0"
    if form == "tEXt":
        return chunk(b"tEXt", key + text)
    if form == "zTXt":
        return chunk(b"zTXt", key + b"\0" + zlib.compress(text))
    if form == "iTXt":
        return chunk(b"iTXt", key + b"\0\0" + b"en\0" + b"\0" + text)
    if form == "iTXt-z":
        return chunk(b"iTXt", key + b"\1\0" + b"\0" + b"\0" + zlib.compress(text))
    raise ValueError(form)


def card_text(card: Any) -> bytes:
    return base64.b64encode(json.dumps(card).encode("utf-8"))


def png(*extra: bytes, end: bool = True) -> bytes:
    """A PNG with the picture, then `extra` chunks, then IEND."""
    parts = [SIGNATURE, *image_chunks(), *extra]
    if end:
        parts.append(chunk(b"IEND", b""))
    return b"".join(parts)


def card_v2(entries: list[dict[str, Any]], name: str = "Mira") -> dict[str, Any]:
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": name,
            "description": "A lighthouse keeper.",
            "first_mes": "Hello.",
            "character_book": {"name": f"{name}'s book", "entries": entries},
        },
    }


def card_v3(entries: list[dict[str, Any]], name: str = "Mira") -> dict[str, Any]:
    card = card_v2(entries, name)
    card["spec"], card["spec_version"] = "chara_card_v3", "3.0"
    return card
