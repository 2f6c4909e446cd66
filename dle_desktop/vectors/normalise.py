"""Embedding vectors checked and L2-normalised, whoever computed them (the local model or a
remote source)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dle_desktop.vectors.contracts import EmbeddingError


def normalise_rows(rows: np.ndarray) -> np.ndarray:
    """L2-normalise float32 rows in place; every row must be finite and non-zero."""
    if rows.ndim != 2 or rows.shape[1] == 0:
        raise EmbeddingError("the model returned vectors of dimension 0", 502)
    if not np.isfinite(rows).all():
        bad = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
        raise EmbeddingError(f"the model returned a non-finite vector (NaN or infinity) for text {bad}", 502)
    norms = np.linalg.norm(rows.astype(np.float64), axis=1)
    if not (norms > 0).all() or not np.isfinite(norms).all():
        bad = int(np.flatnonzero(~(norms > 0))[0]) if not (norms > 0).all() else 0
        raise EmbeddingError(f"the model returned a zero vector for text {bad}", 502)
    rows /= norms[:, None].astype(np.float32)
    return rows


def normalise_vectors(vectors: Any, *, expected: int | None = None, dim: int | None = None) -> np.ndarray:
    """Check and L2-normalise vectors from anywhere (remote sources use it): a 2-D array of
    numbers, `expected` rows, one dimension (`dim` if given), finite, non-zero."""
    try:
        raw = np.asarray(vectors)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise EmbeddingError("the embeddings are not a list of equally long vectors", 502) from exc
    if raw.dtype.kind not in "iuf":  # strings, booleans, None, nested objects: never coerced
        raise EmbeddingError("the embeddings are not arrays of numbers", 502)
    with np.errstate(over="ignore"):  # too large for float32 → inf → refused below as non-finite
        arr = raw.astype(np.float32)
    if arr.ndim != 2:
        raise EmbeddingError("the embeddings are not a list of equally long vectors", 502)
    if expected is not None and arr.shape[0] != expected:
        raise EmbeddingError(f"expected {expected} embeddings, got {arr.shape[0]}", 502)
    if dim is not None and arr.shape[1] != dim:
        raise EmbeddingError(f"expected vectors of dimension {dim}, got {arr.shape[1]}", 502)
    return normalise_rows(np.ascontiguousarray(arr))
