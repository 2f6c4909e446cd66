"""Which texts share a llama_decode, and the decoding itself (worker thread only).

Batching (measured with `benchmarks/bench_embedder.py`; figures in `benchmarks/results/embedder.txt`).
Two costs pull apart. Each llama_decode streams all the weights through the CPU once (~60 ms for
the 0.6B Q8_0 model on 2 cores), which dominates a 15-token text; and in a packed decode every
token attends over the whole batch (one unified KV cache), a cost that grows with the square of
the batch (the architecture note's 190 → 90 tok/s at 32 texts in 4,096 tokens). Measured on a
Qwen3-0.6B-shaped model: for 64 texts of 20–200 tokens packing brought nothing (one text per
decode was as fast or faster); for 64 texts of 8–24 tokens packing was 20–35 % faster. So texts of
at most `pack_text_tokens` (32) share a decode up to `batch_tokens` (256) tokens, and longer texts
are decoded alone. A text decoded alone gets the same bits whatever else is in the request; a
packed short text can differ in its last bits (cosine > 0.9999) with other neighbours.
`batch_tokens=0` decodes every text alone.

Memory. With embeddings on, llama.cpp makes every token of a llama_decode an output: a row of
floats the size of the vocabulary each (151,669 for Qwen3), in an output buffer that only ever
grows. One 2,048-token text made it 1.2 GB, kept until the model was unloaded. For last-token
pooling on a causal model (Qwen3-Embedding) only the last token's output is used, so every other
token is decoded with embeddings off and no outputs (that fills the KV cache and computes no
vocabulary rows), and then each text's last token with embeddings on (`_decode_last_tokens`):
the buffer holds at most one row per text of a packed group.
What stays per context: the KV cache (n_ctx tokens), the compute buffer (sized for n_ubatch
tokens) and that buffer; the figures are in `benchmarks/results/embedder.txt`
(`benchmarks/bench_embedder_memory.py`). Encoder models (BERT) and other poolings read every
token and keep the one-pass decode; their vocabularies are small (30,522 for MiniLM) and their
texts short (512 tokens).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from dle_desktop.vectors.contracts import EmbeddingError
from dle_desktop.vectors.llama_model import DecodeCancelled, LoadedModel, llama_reason

#: Texts of at most PACK_TEXT_TOKENS_DEFAULT tokens share a llama_decode, up to BATCH_TOKENS_DEFAULT
#: tokens (0 = one text per llama_decode). Chosen with benchmarks/bench_embedder.py (module docstring).
BATCH_TOKENS_DEFAULT = 256
PACK_TEXT_TOKENS_DEFAULT = 32


def plan_batches(
    lengths: Sequence[int], batch_tokens: int, pack_text_tokens: int | None, n_seq_max: int
) -> list[list[int]]:
    """Which texts share a llama_decode. Texts longer than `pack_text_tokens` (None: no limit)
    go alone; the others are packed in their order, greedily, up to `batch_tokens` tokens and
    `n_seq_max` texts per group. `batch_tokens` 0 puts every text alone. Groups come in the
    order of their first text."""
    if batch_tokens <= 0:
        return [[i] for i in range(len(lengths))]
    groups: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i, n in enumerate(lengths):
        if pack_text_tokens is not None and n > pack_text_tokens:
            groups.append([i])
            continue
        if current and (total + n > batch_tokens or len(current) >= n_seq_max):
            groups.append(current)
            current, total = [], 0
        current.append(i)
        total += n
    if current:
        groups.append(current)
    groups.sort(key=lambda g: g[0])
    return groups


class PackedDecoding:
    """The decoding half of `LocalEmbedder`: one text per sequence, short texts packed (see
    `plan_batches`), last-token models decoded without their vocabulary rows."""

    batch_tokens: int
    pack_text_tokens: int | None
    #: Tokens decoded so far (for throughput figures).
    tokens_processed: int

    @staticmethod
    def _clear_memory(lc: Any, loaded: LoadedModel) -> None:
        lc.llama_memory_clear(lc.llama_get_memory(loaded.ctx), True)
        loaded.kv_prefix = ()

    def _decode_one(self, lc: Any, loaded: LoadedModel, toks: list[int], out: np.ndarray, row: int) -> None:
        if loaded.last_token_only:
            self._decode_last_tokens(lc, loaded, [toks], out, [row])
            return
        n = len(toks)
        loaded.token_view[:n] = toks
        loaded.pos_view[:n] = np.arange(n, dtype=np.int32)
        loaded.batch.n_tokens = n
        self._clear_memory(lc, loaded)
        rc = lc.llama_decode(loaded.ctx, loaded.batch)
        if rc != 0:
            raise EmbeddingError(
                f"llama.cpp failed to decode a text of {n} tokens (code {rc}) {llama_reason('')}".rstrip(), 502
            )
        self.tokens_processed += n
        self._read_pooled(lc, loaded, 0, out, row)

    def _decode_packed(
        self, lc: Any, loaded: LoadedModel, seqs: list[list[int]], out: np.ndarray, cancel: threading.Event
    ) -> None:
        """Texts in the groups `plan_batches` makes: a group of one is decoded alone; a bigger
        group is one llama_decode with each text its own sequence (positions from 0, its own seq
        id)."""
        groups = plan_batches([len(x) for x in seqs], self.batch_tokens, self.pack_text_tokens, loaded.n_seq_max)
        for group in groups:
            if cancel.is_set():
                raise DecodeCancelled
            if len(group) == 1:
                self._decode_one(lc, loaded, seqs[group[0]], out, group[0])
                continue
            if loaded.last_token_only:
                self._decode_last_tokens(lc, loaded, [seqs[k] for k in group], out, group)
                continue
            n = 0
            for s, k in enumerate(group):
                toks = seqs[k]
                m = len(toks)
                loaded.token_view[n : n + m] = toks
                loaded.pos_view[n : n + m] = np.arange(m, dtype=np.int32)
                for ptr in loaded.seq_views[n : n + m]:
                    ptr[0] = s
                n += m
            self._clear_memory(lc, loaded)
            self._decode_batch(lc, loaded, n)
            for s, k in enumerate(group):
                self._read_pooled(lc, loaded, s, out, k)

    def _decode_last_tokens(
        self, lc: Any, loaded: LoadedModel, seqs: list[list[int]], out: np.ndarray, rows: Sequence[int]
    ) -> None:
        """Last-token pooling on a causal model, in two steps. With embeddings on, llama.cpp makes
        every token of a decode an output, with a row of the whole vocabulary each, and keeps its
        output buffer at the largest size it ever needed (a 2,048-token text with Qwen3's 151,669
        tokens: 1.2 GB, for good). So every token but each text's last is decoded with embeddings
        off and no outputs (that only fills the KV cache), then the last tokens alone (text `s`
        is sequence `s`) with embeddings on: one output per text, the same vector."""
        self._clear_memory(lc, loaded)
        self._fill_kv(lc, loaded, [(s, toks[:-1], 0) for s, toks in enumerate(seqs)])
        self._decode_final_tokens(lc, loaded, seqs, out, rows)

    def _fill_kv(self, lc: Any, loaded: LoadedModel, parts: Sequence[tuple[int, Sequence[int], int]]) -> None:
        """Decode (sequence, tokens, first position) parts with embeddings off and no outputs:
        only the KV cache fills (in as few llama_decode calls as the batch allows)."""
        ctx = loaded.ctx
        loaded.logits_view[: loaded.capacity] = 0
        lc.llama_set_embeddings(ctx, False)
        try:
            n = 0
            for s, body, first in parts:
                start = 0
                while start < len(body):
                    m = min(len(body) - start, loaded.capacity - n)
                    loaded.token_view[n : n + m] = body[start : start + m]
                    loaded.pos_view[n : n + m] = np.arange(first + start, first + start + m, dtype=np.int32)
                    for ptr in loaded.seq_views[n : n + m]:
                        ptr[0] = s
                    n += m
                    start += m
                    if n == loaded.capacity:
                        self._decode_batch(lc, loaded, n)
                        n = 0
            if n:
                self._decode_batch(lc, loaded, n)
        finally:
            lc.llama_set_embeddings(ctx, True)
            loaded.logits_view[: loaded.capacity] = 1

    def _decode_final_tokens(
        self, lc: Any, loaded: LoadedModel, seqs: Sequence[Sequence[int]], out: np.ndarray, rows: Sequence[int]
    ) -> None:
        """Each text's last token (text `s` is sequence `s`, its KV cache filled up to there),
        with embeddings on: the pooled vector of every text."""
        for s, toks in enumerate(seqs):
            loaded.token_view[s] = toks[-1]
            loaded.pos_view[s] = len(toks) - 1
            loaded.seq_views[s][0] = s
        self._decode_batch(lc, loaded, len(seqs))
        for s, row in enumerate(rows):
            self._read_pooled(lc, loaded, s, out, row)

    def _decode_batch(self, lc: Any, loaded: LoadedModel, n: int) -> None:
        """llama_decode the first `n` tokens of the batch (positions, sequences and output flags as
        set); sequence ids go back to 0 afterwards."""
        loaded.batch.n_tokens = n
        rc = lc.llama_decode(loaded.ctx, loaded.batch)
        for ptr in loaded.seq_views[:n]:
            ptr[0] = 0
        if rc != 0:
            raise EmbeddingError(
                f"llama.cpp failed to decode a batch of {n} tokens (code {rc}) {llama_reason('')}".rstrip(), 502
            )
        self.tokens_processed += n

    @staticmethod
    def _read_pooled(lc: Any, loaded: LoadedModel, seq: int, out: np.ndarray, row: int) -> None:
        """Copy sequence `seq`'s pooled vector into `out[row]` (a memmove: ~1 µs)."""
        ptr = lc.llama_get_embeddings_seq(loaded.ctx, seq)
        if not ptr:
            raise EmbeddingError("llama.cpp returned no pooled embedding (is this an embedding model?)", 502)
        ctypes.memmove(out[row].ctypes.data, ptr, loaded.n_out * 4)
