"""DLE's `simpleHash`, bit for bit, so content hashes mean the same thing as in DLE.

DLE hashes JavaScript strings, i.e. UTF-16 code units, with two djb2 passes
(`h = h * 33 + unit`, unsigned 32-bit). A Python loop over every character would cost
seconds on a large vault, so the sum is computed in closed form with numpy:
h_n = 33^n * h0 + sum(unit_i * 33^(n-1-i))  (mod 2^32), where uint32 arithmetic wraps for us.
"""

from __future__ import annotations

import numpy as np

_POW_CACHE = np.ones(1, dtype=np.uint32)


def _powers(n: int) -> np.ndarray:
    """33^0 .. 33^(n) mod 2^32, grown on demand and shared between calls."""
    global _POW_CACHE
    if len(_POW_CACHE) <= n:
        size = max(n + 1, 2 * len(_POW_CACHE))
        pw = np.empty(size, dtype=np.uint32)
        pw[0] = 1
        # Doubling: fill blocks by multiplying the known prefix by 33^k.
        filled = 1
        with np.errstate(over="ignore"):
            while filled < size:
                step = min(filled, size - filled)
                pw[filled : filled + step] = pw[:step] * pw[filled - 1] * np.uint32(33)
                filled += step
        _POW_CACHE = pw
    return _POW_CACHE


def _to36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if value == 0:
        return "0"
    out = []
    while value:
        value, r = divmod(value, 36)
        out.append(digits[r])
    return "".join(reversed(out))


def simple_hash(text: str) -> str:
    units = np.frombuffer(text.encode("utf-16-le", errors="surrogatepass"), dtype="<u2").astype(np.uint32)
    n = len(units)
    pw = _powers(n)
    with np.errstate(over="ignore"):
        # weights for unit i: 33^(n-1-i)
        tail = np.dot(units, pw[:n][::-1]) if n else 0
        tail = int(np.uint64(tail) & np.uint64(0xFFFFFFFF)) if n else 0
        lead = int(pw[n])
    h1 = (lead * 5381 + tail) & 0xFFFFFFFF
    h2 = (lead * 52711 + tail) & 0xFFFFFFFF
    return f"{n}_{_to36(h1)}_{_to36(h2)}"


def simple_hash_reference(text: str) -> str:
    """The obvious loop; used by tests to check the fast version."""
    units = np.frombuffer(text.encode("utf-16-le", errors="surrogatepass"), dtype="<u2")
    h1, h2 = 5381, 52711
    for u in units.tolist():
        h1 = (h1 * 33 + u) & 0xFFFFFFFF
        h2 = (h2 * 33 + u) & 0xFFFFFFFF
    return f"{len(units)}_{_to36(h1)}_{_to36(h2)}"
