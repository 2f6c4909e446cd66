"""The query instruction, and its KV cache kept between queries.

Qwen3's query instruction (`Instruct: ...\\nQuery:`) is about half of a chat message's tokens.
Its KV cache is kept between queries and only each message's own tokens are decoded
(`QueryHeadDecoding._decode_after_head`); documents are embedded raw.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from dle_desktop.vectors.batching import PackedDecoding
from dle_desktop.vectors.gguf_header import GgufInfo
from dle_desktop.vectors.llama_model import CAUSAL_UBATCH, DecodeCancelled, LoadedModel

#: TauriTavern's query prompt for Qwen3-Embedding (st-wire-contracts §2.2); text follows "Query:".
QWEN3_QUERY_INSTRUCTION = "Instruct: Given a conversation context, retrieve relevant passages and memories\nQuery:"
#: Passed as `query_instruction` to pick the instruction from the model (Qwen3 → the above, others none).
AUTO = "auto"


def query_instruction_for(setting: str | None, info: GgufInfo | None) -> str:
    """The text put before every query: `setting` itself, or with `AUTO` Qwen3-Embedding's
    instruction for Qwen3 models and none for others; `None` or "" means none."""
    if setting == AUTO:
        if info is not None and (info.arch.startswith("qwen3") or "qwen3" in info.name.lower()):
            return QWEN3_QUERY_INSTRUCTION
        return ""
    return setting or ""


class QueryHeadDecoding(PackedDecoding):
    """Query decoding on the kept KV cache of the texts' common head (special tokens and query
    instruction)."""

    def _decode_after_head(
        self,
        lc: Any,
        loaded: LoadedModel,
        head: tuple[int, ...],
        seqs: list[list[int]],
        out: np.ndarray,
        rows: Sequence[int],
    ) -> None:
        """Query texts that all start with `head` (the special tokens and the query instruction:
        about half of a chat message's tokens with Qwen3): the head's KV cache is computed once
        and kept in sequence 0 between requests, each text's sequence shares its cells, and only
        the text's own tokens are decoded. Attention is causal, so a token's state depends only
        on the tokens before it: the vectors are those of a full decode (to float rounding)."""
        mem = lc.llama_get_memory(loaded.ctx)
        p = len(head)
        if loaded.kv_prefix != head or lc.llama_memory_seq_pos_max(mem, 0) < p - 1:
            self._clear_memory(lc, loaded)
            self._fill_kv(lc, loaded, [(0, head, 0)])
            loaded.kv_prefix = head
        try:
            for s in range(1, len(seqs)):
                lc.llama_memory_seq_cp(mem, 0, s, 0, p)
            self._fill_kv(lc, loaded, [(s, toks[p:-1], p) for s, toks in enumerate(seqs)])
            self._decode_final_tokens(lc, loaded, seqs, out, rows)
        except BaseException:
            self._clear_memory(lc, loaded)
            raise
        finally:
            if loaded.kv_prefix:
                lc.llama_memory_seq_rm(mem, -1, p, -1)  # every text's own tokens
                for s in range(1, len(seqs)):
                    lc.llama_memory_seq_rm(mem, s, -1, -1)  # its share of the head

    def _decode_queries(
        self,
        lc: Any,
        loaded: LoadedModel,
        head: tuple[int, ...],
        seqs: list[list[int]],
        out: np.ndarray,
        cancel: threading.Event,
    ) -> list[int]:
        """Decode the query texts that start with `head` on its kept KV cache, as many per call as
        the batch and the sequences allow; returns the indexes of the texts left for the usual path
        (texts that do not start with the head's tokens, or are too long to share a batch)."""
        p = len(head)
        room = min(loaded.capacity, CAUSAL_UBATCH)
        left: list[int] = []
        group: list[int] = []
        used = 0

        def flush() -> None:
            nonlocal group, used
            if group:
                if cancel.is_set():
                    raise DecodeCancelled
                self._decode_after_head(lc, loaded, head, [seqs[k] for k in group], out, group)
            group, used = [], 0

        for k, toks in enumerate(seqs):
            own = len(toks) - p
            if own < 1 or tuple(toks[:p]) != head or own > room:
                left.append(k)
                continue
            if group and (used + own > room or len(group) >= loaded.n_seq_max):
                flush()
            group.append(k)
            used += own
        flush()
        return left
