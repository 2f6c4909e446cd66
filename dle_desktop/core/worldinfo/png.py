"""The character card inside a PNG: its `ccv3` or `chara` text chunk (base64 JSON), read by
walking the chunks ourselves (no image library: we never decode the picture)."""

from __future__ import annotations

import base64
import binascii
import struct
import zlib

from dle_desktop.core.worldinfo.model import MAX_BOOK_BYTES, WorldInfoError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: SillyTavern reads `ccv3` (card V3) before `chara` (V2), whatever their order in the file.
CARD_KEYWORDS = ("ccv3", "chara")
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")


def is_png(data: bytes) -> bool:
    return data.startswith(PNG_SIGNATURE)


def _inflate(data: bytes, where: str) -> bytes:
    # Bounded: a few kilobytes of zlib can inflate to gigabytes.
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_BOOK_BYTES + 1)
    except zlib.error as exc:
        raise WorldInfoError(f"this PNG is damaged: its {where} text chunk does not decompress ({exc})") from exc
    if len(out) > MAX_BOOK_BYTES:
        raise WorldInfoError(
            f"this PNG's {where} text chunk holds more than {MAX_BOOK_BYTES // (1024 * 1024)} MB; "
            "that is no character card"
        )
    return out


def _text_chunk(kind: bytes, data: bytes) -> tuple[str, bytes] | None:
    """(keyword lowercased, text bytes) of a tEXt/zTXt/iTXt chunk; None for one without a
    keyword. Only a card chunk's text is read (and inflated); a malformed one is an error."""
    keyword, sep, rest = data.partition(b"\0")
    if not sep:
        return None
    name = keyword.decode("latin-1").lower()
    if name not in CARD_KEYWORDS:
        return name, b""
    damaged = WorldInfoError(f"this PNG is damaged: its '{name}' {kind.decode()} chunk is malformed")
    if kind == b"tEXt":
        return name, rest
    if kind == b"zTXt":
        if not rest or rest[0] != 0:  # 0 = deflate, the only method PNG defines
            raise damaged
        return name, _inflate(rest[1:], name)
    # iTXt: compression flag, method, language tag \0, translated keyword \0, UTF-8 text
    if len(rest) < 2:
        raise damaged
    flag, method, tail = rest[0], rest[1], rest[2:]
    _language, sep1, tail = tail.partition(b"\0")
    _translated, sep2, text = tail.partition(b"\0")
    if not (sep1 and sep2) or flag not in (0, 1) or (flag == 1 and method != 0):
        raise damaged
    if flag == 1:
        text = _inflate(text, name)
    return name, text


def card_json_from_png(data: bytes) -> bytes:
    """The card's JSON bytes (decoded from base64) from a PNG character card."""
    if not is_png(data):
        raise WorldInfoError("this is not a PNG file")
    found: dict[str, bytes] = {}
    pos = len(PNG_SIGNATURE)
    saw_end = False
    while pos < len(data):
        if pos + 8 > len(data):
            raise WorldInfoError("this PNG is truncated: it ends inside a chunk header")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        end = pos + 8 + length + 4
        if length > 0x7FFFFFFF or end > len(data):
            raise WorldInfoError(
                f"this PNG is truncated or damaged: a {kind.decode('latin-1', 'replace')!r} chunk "
                f"claims {length} bytes but the file ends before them"
            )
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : end])
        if zlib.crc32(kind + body) != crc:
            raise WorldInfoError(
                f"this PNG is damaged: the checksum of its {kind.decode('latin-1', 'replace')!r} chunk does not match"
            )
        if kind in _TEXT_CHUNKS:
            chunk = _text_chunk(kind, body)
            if chunk is not None and chunk[0] in CARD_KEYWORDS and chunk[0] not in found:
                found[chunk[0]] = chunk[1]
        pos = end
        if kind == b"IEND":
            saw_end = True
            break
    if not found:
        if not saw_end:
            raise WorldInfoError(
                "this PNG is truncated: it ends before its IEND chunk, and no character card was found"
            )
        raise WorldInfoError(
            "this PNG holds no character card (no 'ccv3' or 'chara' text chunk); "
            "export the character from SillyTavern as a PNG card, or import its lorebook as JSON"
        )
    keyword = next(k for k in CARD_KEYWORDS if k in found)
    text = found[keyword]
    try:
        return base64.b64decode(b"".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise WorldInfoError(
            f"this PNG's '{keyword}' chunk is not valid base64, so its character card is unreadable"
        ) from exc
