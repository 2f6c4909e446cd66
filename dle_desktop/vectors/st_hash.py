"""SillyTavern's `getStringHash` (public/scripts/utils.js): cyrb53 with seed 0 over the UTF-16
code units of a string, so astral characters count as two units. ST uses it for item hashes
(`getStringHash(message.mes)`, chunk text, `entry.content`) and for collection ids
(`file_<hash(fileUrl)>`, `world_<hash(worldName)>`).

The port emulates JavaScript's `Math.imul` and 32-bit signed integers, and was checked against
Node (ASCII, Latin-1, CJK, emoji, long strings): `get_string_hash("Hello") == 4867314475583282`,
`get_string_hash("") == 3338908027751811`.
"""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF


def _s32(x: int) -> int:
    x &= _MASK32
    return x - 0x100000000 if x & 0x80000000 else x


def _imul(a: int, b: int) -> int:
    return _s32(a * b)


def get_string_hash(text: str, seed: int = 0) -> int:
    """cyrb53(text, seed): an integer in [0, 2**53)."""
    h1 = _s32(0xDEADBEEF ^ seed)
    h2 = _s32(0x41C6CE57 ^ seed)
    # surrogatepass: a lone surrogate is one UTF-16 code unit in JavaScript, so hash it as such.
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        ch = data[i] | (data[i + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _s32(_imul(h1 ^ ((h1 & _MASK32) >> 16), 2246822507) ^ _imul(h2 ^ ((h2 & _MASK32) >> 13), 3266489909))
    h2 = _s32(_imul(h2 ^ ((h2 & _MASK32) >> 16), 2246822507) ^ _imul(h1 ^ ((h1 & _MASK32) >> 13), 3266489909))
    return 4294967296 * (2097151 & h2) + (h1 & _MASK32)
