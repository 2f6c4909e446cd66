"""The Vault table's row orders, worked out ahead of a sort click (no Qt).

At 100,000 entries `sorted(range(n), key=keys.__getitem__)` holds the interpreter lock ~0.1-0.3 s
in one C call, on the GUI thread or beside it alike. numpy's stable argsort lets go of the lock
while it sorts (text as a fixed-width unicode array, numbers as floats), so the orders of every
column can be worked out on a background thread while the window goes on answering; a sort click
then only picks the order it needs.

Both orders keep Python's `sorted` semantics exactly, `reverse=True` included: entries with equal
keys stay in their original order either way (checked against `sorted` in the tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: rows per piece when the keys are copied into numpy (the copy holds the lock; the sort does not)
PIECE = 10_000


def key_array(keys: Sequence[Any]) -> np.ndarray | None:
    """`keys` as one numpy array that sorts as Python sorts them, or None when they cannot be
    (mixed kinds, a NaN: Python's order among those is not numpy's)."""
    if not keys:
        return np.zeros(0, dtype=np.float64)
    if all(isinstance(k, str) for k in keys):
        if any("\x00" in k for k in keys):  # numpy drops trailing NULs, Python compares them
            return None
        # in pieces: between two of them the window gets the lock (numpy widens the narrower ones)
        return np.concatenate([np.array(keys[i : i + PIECE], dtype=str) for i in range(0, len(keys), PIECE)])
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in keys):
        numbers = np.array(keys, dtype=np.float64)
        if np.isnan(numbers).any() or any(isinstance(k, int) and abs(k) > 2**53 for k in keys):
            return None
        return numbers
    return None


def stable_orders(keys: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(ascending, descending) row orders of `keys` (int32 arrays: a tenth of a Python list's
    memory), each equal to `sorted(range(len(keys)), key=keys.__getitem__, reverse=…)`; None
    when numpy cannot sort them the same way."""
    array = key_array(keys)
    if array is None:
        return None
    n = len(array)
    ascending = np.argsort(array, kind="stable")
    # Sorting the reversed keys ascending puts equal keys in reverse original order; reading that
    # backwards gives descending keys with equal ones in original order, as reverse=True does.
    descending = (n - 1 - np.argsort(array[::-1], kind="stable"))[::-1]
    return ascending.astype(np.int32), descending.astype(np.int32)
