"""The seams between the vector modules, written down once so each can be built and tested on
its own: the embedder side (embedder.py, remote.py), the store (store.py), and the service with
SillyTavern's semantics (service.py) that joins them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class EmbeddingProfile:
    """Everything that makes two vectors comparable. Part of every vector scope, so vectors
    from different models, quantisations, prompts or endpoints never mix."""

    model_id: str  # e.g. "Qwen3-Embedding-0.6B-Q8_0" or the remote model name
    quantisation: str = ""  # e.g. "Q8_0"; "" for remote sources
    prompt_version: str = "v1"  # bump when the query instruction changes
    max_tokens: int = 0
    endpoint: str = ""  # remote base URL (without a trailing slash); "" for local

    def key(self) -> str:
        """A stable, human-readable text form (stored in each scope's metadata)."""
        return (
            f"model={self.model_id}\nquant={self.quantisation}\nprompt={self.prompt_version}\n"
            f"max={self.max_tokens}\nendpoint={self.endpoint}"
        )


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors (one row per text)."""

    profile: EmbeddingProfile

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """shape (len(texts), dim), float32, finite, rows of unit length. Raises EmbeddingError."""
        ...


class EmbeddingError(Exception):
    """An embedding could not be produced; `status` is the HTTP status to answer with
    (400 bad input, 401 auth refused by a remote, 429 rate limited, 502/503 backend down)."""

    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.status = status


class VectorConflict(Exception):
    """A write would mix dimensions inside one scope (HTTP 409); nothing was written."""


@dataclass(frozen=True)
class StoredItem:
    hash: int
    index: int
    text: str


@dataclass(frozen=True)
class Hit:
    score: float
    item: StoredItem
