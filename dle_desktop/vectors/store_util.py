"""Helpers of the vector store (store.py): input validation and L2 normalisation, a readers-writer
lock, and the fsync calls the commit protocol relies on. No state of its own."""

from __future__ import annotations

import numbers
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dle_desktop.fileio import private_opener
from dle_desktop.vectors.contracts import StoredItem

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_DIM = 65_536  # far above any embedding model; refuses arrays that are clearly not embeddings


# ----------------------------------------------------------------------------------------------
# validation


def check_name(value: object, what: str) -> str:
    """A scope name (collection, source, profile key): any `str` that SQLite can store."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {type(value).__name__}")
    _check_encodable(value, what)
    return value


def check_int64(value: object, what: str) -> int:
    """An integer (Python or numpy, never bool) within SQLite's signed 64-bit range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{what} must be an integer, not {type(value).__name__}")
    number = int(value)
    if not INT64_MIN <= number <= INT64_MAX:
        raise ValueError(f"{what} is outside the 64-bit integer range: {number}")
    return number


def check_items(items: object) -> list[StoredItem]:
    """Every item a StoredItem with integer hash and index and a str text; returned with plain ints."""
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"items must be a list of StoredItem, not {type(items).__name__}")
    out: list[StoredItem] = []
    for i, item in enumerate(items):
        if not isinstance(item, StoredItem):
            raise ValueError(f"item {i} is not a StoredItem but {type(item).__name__}")
        h = check_int64(item.hash, f"item {i}: hash")
        x = check_int64(item.index, f"item {i}: index")
        if not isinstance(item.text, str):
            raise ValueError(f"item {i}: text must be a string, not {type(item.text).__name__}")
        _check_encodable(item.text, f"item {i}: text")
        out.append(item if (type(item.hash) is int and type(item.index) is int) else StoredItem(h, x, item.text))
    return out


def check_hashes(hashes: object) -> list[int]:
    if not isinstance(hashes, (list, tuple)):
        raise ValueError(f"hashes must be a list of integers, not {type(hashes).__name__}")
    return [check_int64(h, f"hash {i}") for i, h in enumerate(hashes)]


def check_top_k(top_k: object) -> int:
    k = check_int64(top_k, "top_k")
    if k < 1:
        raise ValueError(f"top_k must be at least 1, not {k}")
    return k


def _check_encodable(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from JSON "\ud800"
        raise ValueError(f"{what} is not valid Unicode (position {exc.start})") from None


def _as_numeric_array(values: object, what: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        arr = values
    else:
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError) as exc:  # ragged nested lists and the like
            raise ValueError(f"{what} is not a numeric array: {exc}") from None
    if arr.dtype.kind not in "fiu":  # bool, complex, str, bytes, object, structured: refused
        raise ValueError(f"{what} must hold real numbers, not dtype {arr.dtype}")
    return arr


def _normalise(arr: np.ndarray, what: str) -> np.ndarray:
    """Rows of a 2-D real array scaled to unit L2 length, as float32. Computed in float64 after
    dividing by each row's largest magnitude, so huge (1e38) and tiny (1e-40) rows normalise
    without overflow or underflow. Raises ValueError naming the first bad row."""
    x = arr.astype(np.float64, copy=True)
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        raise ValueError(f"{what}: row {int(np.flatnonzero(~finite)[0])} has a NaN or infinite value")
    scale = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(len(x))
    zero = scale == 0
    if zero.any():
        raise ValueError(f"{what}: row {int(np.flatnonzero(zero)[0])} is a zero vector")
    x /= scale[:, None]
    x /= np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    return x.astype(np.float32)


def normalise_rows(vectors: object, n_items: int) -> np.ndarray:
    """The vectors of an insert: 2-D, one row per item, one dimension, finite, no zero row."""
    arr = _as_numeric_array(vectors, "vectors")
    if arr.ndim != 2:
        if n_items == 0 and arr.size == 0:
            return np.zeros((0, 0), np.float32)
        raise ValueError(f"vectors must be a 2-D array (one row per item), not {arr.ndim}-D")
    if arr.shape[0] != n_items:
        raise ValueError(f"{n_items} items but {arr.shape[0]} vectors")
    if n_items and not 1 <= arr.shape[1] <= MAX_DIM:
        raise ValueError(f"vector dimension must be between 1 and {MAX_DIM}, not {arr.shape[1]}")
    if n_items == 0:
        return np.zeros((0, arr.shape[1]), np.float32)
    return _normalise(arr, "vectors")


def normalise_query(vector: object) -> np.ndarray:
    """A query vector: 1-D (or one row), finite, non-zero; returned unit length, float32."""
    arr = _as_numeric_array(vector, "query vector")
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1:
        raise ValueError(f"query vector must be 1-D, not of shape {arr.shape}")
    if not 1 <= arr.shape[0] <= MAX_DIM:
        raise ValueError(f"query vector dimension must be between 1 and {MAX_DIM}, not {arr.shape[0]}")
    return _normalise(arr[None, :], "query vector")[0]


# ----------------------------------------------------------------------------------------------
# locking


class RWLock:
    """Many readers or one writer; a waiting writer holds off new readers (no writer starvation).
    Not re-entrant: a thread must not take it again while holding it."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


# ----------------------------------------------------------------------------------------------
# durable files


def fsync_file(path: Path) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` durable (POSIX; Windows cannot open directories and
    its NTFS journal orders metadata itself)."""
    if sys.platform == "win32":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_rows(path: Path, offset: int, data: np.ndarray) -> None:
    """Write `data` (C-contiguous float32) at byte `offset`, cut anything after it, fsync."""
    with open(path, "r+b" if path.exists() else "w+b", opener=private_opener) as f:
        f.seek(offset)
        f.write(np.ascontiguousarray(data, dtype=np.float32).data.cast("B"))
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


def truncate_file(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())
