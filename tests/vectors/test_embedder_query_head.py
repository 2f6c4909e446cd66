"""The query instruction's KV cache kept between queries (`LocalEmbedder.reuse_query_head`):
the same vectors as decoding every query in full, fewer tokens decoded, and a cache that never
leaks one text into another (documents, other queries, other models in between)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")

from dle_desktop.vectors.embedder import LocalEmbedder
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

QUERIES = [
    "The rain has not stopped since we tied up at the quay.",
    "Tell me about the bell people hear under the water before every flood.",
    "A favour? What kind of favour does a ferrywoman ask for?",
    "x",
    ":) starts with punctuation",
    "Über die Brücke — 橋を渡る",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("gguf") / "tiny-qwen3-F32.gguf")


def _pair(model: Path, **kw) -> tuple[LocalEmbedder, LocalEmbedder]:
    fast = LocalEmbedder(model, n_threads=1, **kw)
    full = LocalEmbedder(model, n_threads=1, **kw)
    full.reuse_query_head = False
    return fast, full


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape
    cos = np.sum(a * b, axis=1)
    assert np.all(cos > 0.99999), cos


@pytest.mark.parametrize("batch_tokens", [0, 256])
def test_reused_head_gives_the_vectors_of_a_full_decode(tiny: Path, batch_tokens: int) -> None:
    fast, full = _pair(tiny, batch_tokens=batch_tokens)
    try:
        for q in QUERIES:  # one at a time, as the semantic stage asks
            _same(fast.embed_sync([q], query=True), full.embed_sync([q], query=True))
        _same(fast.embed_sync(QUERIES, query=True), full.embed_sync(QUERIES, query=True))  # several at once
    finally:
        fast.close()
        full.close()


def test_only_the_texts_own_tokens_are_decoded_after_the_first_query(tiny: Path) -> None:
    fast, full = _pair(tiny)
    try:
        q = QUERIES[1]
        n_tokens = len(full.token_ids([q], query=True)[0])
        n_plain = len(full.token_ids([q], query=False)[0])
        head = n_tokens - n_plain  # the instruction's tokens (Qwen3 has no BOS)
        assert head > 10
        fast.embed_sync([QUERIES[0]], query=True)  # computes the head once
        before = fast.tokens_processed
        fast.embed_sync([q], query=True)
        assert fast.tokens_processed - before == n_plain
        before = full.tokens_processed
        full.embed_sync([q], query=True)
        assert full.tokens_processed - before == n_tokens
    finally:
        fast.close()
        full.close()


def test_documents_and_other_work_in_between_do_not_corrupt_the_kept_head(tiny: Path) -> None:
    fast, full = _pair(tiny)
    try:
        want = full.embed_sync(QUERIES[:3], query=True)
        for i, q in enumerate(QUERIES[:3]):
            _same(fast.embed_sync([q], query=True), want[i : i + 1])
            fast.embed_sync(["a long document " * 40, "short doc"], query=False)  # clears the KV cache
            _same(fast.embed_sync([q], query=True), want[i : i + 1])
            # raw work on the worker may touch the context's memory: the head is computed again
            fast.run_on_worker(lambda: None).result()
            _same(fast.embed_sync([q], query=True), want[i : i + 1])
    finally:
        fast.close()
        full.close()


def test_a_different_model_or_instruction_never_reuses_the_old_head(tiny: Path, tmp_path: Path) -> None:
    other = make_tiny_qwen3_gguf(tmp_path / "other.gguf", seed=3)
    fast = LocalEmbedder(tiny, n_threads=1)
    try:
        fast.embed_sync([QUERIES[0]], query=True)
        fast.set_model(other)
        ref = LocalEmbedder(other, n_threads=1)
        ref.reuse_query_head = False
        try:
            _same(fast.embed_sync([QUERIES[1]], query=True), ref.embed_sync([QUERIES[1]], query=True))
        finally:
            ref.close()
    finally:
        fast.close()
    custom = LocalEmbedder(tiny, n_threads=1, query_instruction="Represent this for search:")
    ref = LocalEmbedder(tiny, n_threads=1, query_instruction="Represent this for search:")
    ref.reuse_query_head = False
    try:
        for q in QUERIES[:3]:
            _same(custom.embed_sync([q], query=True), ref.embed_sync([q], query=True))
    finally:
        custom.close()
        ref.close()


def test_cancelled_query_leaves_the_head_usable(tiny: Path) -> None:
    fast, full = _pair(tiny)

    async def go() -> np.ndarray:
        task = asyncio.ensure_future(fast.embed(QUERIES * 20, query=True))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return await fast.embed([QUERIES[2]], query=True)

    try:
        _same(asyncio.run(go()), full.embed_sync([QUERIES[2]], query=True))
    finally:
        fast.close()
        full.close()
