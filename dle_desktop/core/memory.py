"""Handing freed memory back to the system.

Every sync builds a new index (at 10,000 entries tens of MB of short-lived objects, made and
dropped on several threads). glibc keeps what Python frees in per-thread arenas, so the app's
resident memory climbed with each sync although the objects were gone: in a compressed working
session at 10,000 entries (`benchmarks/bench_soak.py`) from about 290 to 590 MB in ten minutes.
`malloc_trim` returns the arenas' free pages. Elsewhere (macOS, Windows, musl) the call is not
there and this does nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim  # ctypes lets go of the interpreter lock during the call
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return free heap memory to the system (call off the GUI thread: it can take tens of ms at
    a large heap). True if the C library could do it."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
