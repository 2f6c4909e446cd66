"""llama.cpp's side of the embedder: its log routed to ours, the model and context loaded
with a batch to fill, the tokenizer. Everything here runs on the embedder's one worker thread
(llama.cpp is not thread-safe)."""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dle_desktop.vectors.contracts import EmbeddingError
from dle_desktop.vectors.gguf_header import POOLING_NAMES, GgufInfo

#: The largest physical batch for causal models: a long text is decoded in chunks of this many
#: tokens (same result, the KV cache carries over). llama.cpp's compute buffer grows with it
#: (it is sized for a graph where every token's output covers the whole vocabulary): ~0.3 GB at
#: 512 against ~1.2 GB at 2,048 for the 0.6B model, reserved though only touched as used.
CAUSAL_UBATCH = 512

_log_lock = threading.Lock()
_log_installed = False
_log_callback_ref: Any = None
_recent_errors: collections.deque[str] = collections.deque(maxlen=8)
_llama_log = logging.getLogger("dle_desktop.vectors.llama_cpp")


def _install_llama_logging(lc: Any) -> None:
    """Route llama.cpp's log lines to our logger (errors and warnings at INFO, the rest at
    DEBUG) instead of stderr, and keep the last error lines for error messages."""
    global _log_installed, _log_callback_ref
    with _log_lock:
        if _log_installed:
            return

        @lc.llama_log_callback
        def _callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:  # pragma: no cover - C calls it
            try:
                line = text.decode("utf-8", errors="replace").rstrip()
                if not line:
                    return
                # ggml_log_level: 1 DEBUG, 2 INFO, 3 WARN, 4 ERROR, 5 CONT
                if level == 4:  # surfaces in the EmbeddingError message, so not repeated loudly
                    _recent_errors.append(line)
                    _llama_log.info("%s", line)
                elif level == 3:
                    _llama_log.info("%s", line)
                elif _llama_log.isEnabledFor(logging.DEBUG):
                    _llama_log.debug("%s", line)
            except Exception:  # noqa: BLE001 - never raise into C
                pass

        _log_callback_ref = _callback
        lc.llama_log_set(_callback, ctypes.c_void_p(0))
        lc.llama_backend_init()
        _log_installed = True


def llama_reason(default: str) -> str:
    """The most telling recent llama.cpp error line, without its function-name prefix."""
    lines = list(_recent_errors)
    for line in lines:
        if "error loading model:" in line:
            return line.split("error loading model:", 1)[1].strip()
    if lines:
        return re.sub(r"^[a-z_]+:\s*", "", lines[-1])
    return default


def cpu_has_amx() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "amx_tile" in line.split()
    except OSError:
        pass
    return False


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class DecodeCancelled(Exception):
    """The request was cancelled: the job stops before its next text."""


@dataclass
class LoadedModel:
    """A model and its context, owned by the worker thread."""

    path: Path
    stamp: tuple[int, int]
    info: GgufInfo
    model: Any
    ctx: Any
    batch: Any
    n_out: int
    capacity: int  # tokens the batch holds
    n_seq_max: int
    prefix: list[int]
    suffix: list[int]
    vocab: Any
    pooling: int
    token_view: np.ndarray
    pos_view: np.ndarray
    seq_views: list[Any]
    logits_view: np.ndarray
    #: Last-token pooling on a causal model: only each text's last token is an output (see
    #: `PackedDecoding._decode_last_tokens`), which keeps llama.cpp's output buffer small.
    last_token_only: bool = False
    #: The tokens sequence 0 of the KV cache holds at positions 0.. for re-use by the next query
    #: (the special tokens and the query instruction); () when the cache holds nothing re-usable.
    kv_prefix: tuple[int, ...] = ()


def load_model(
    path: Path,
    info: GgufInfo,
    stamp: tuple[int, int],
    *,
    pooling: int,
    max_tokens: int,
    batch_tokens: int,
    n_threads: int,
    cpu_extra_buffers: bool,
    last_token_outputs: bool,
) -> LoadedModel:
    """Load `path` with a context for texts of up to `max_tokens` tokens and, with `batch_tokens`
    above 0, up to 64 sequences packed in one batch. Raises EmbeddingError (503) with llama.cpp's
    reason."""
    try:
        import llama_cpp as lc
    except ImportError as exc:  # pragma: no cover - a broken install
        raise EmbeddingError(f"llama-cpp-python is not installed or failed to load: {exc}", 503) from exc
    _install_llama_logging(lc)

    if pooling == POOLING_NAMES["rank"]:
        raise EmbeddingError(f"{path.name} is a reranker (pooling 'rank'), not an embedding model", 503)

    _recent_errors.clear()
    mparams = lc.llama_model_default_params()
    mparams.n_gpu_layers = 0
    if hasattr(mparams, "use_extra_bufts"):
        mparams.use_extra_bufts = cpu_extra_buffers
    model = lc.llama_model_load_from_file(str(path).encode("utf-8"), mparams)
    if not model:
        reason = llama_reason("llama.cpp could not read it")
        raise EmbeddingError(f"the embedding model {path.name} could not be loaded: {reason}", 503)
    try:
        n_seq_max = 1
        n_ctx = max_tokens
        if batch_tokens > 0:
            n_seq_max = min(64, lc.llama_max_parallel_sequences())
            n_ctx = max(max_tokens, batch_tokens)
        n_batch = n_ctx
        n_ubatch = min(n_batch, max(CAUSAL_UBATCH, batch_tokens)) if info.causal else n_batch
        cparams = lc.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_ubatch
        cparams.n_seq_max = n_seq_max
        cparams.n_threads = n_threads
        cparams.n_threads_batch = n_threads
        cparams.embeddings = True
        last_only = info.causal and pooling == POOLING_NAMES["last"] and last_token_outputs
        cparams.pooling_type = pooling
        if hasattr(cparams, "kv_unified"):
            cparams.kv_unified = True
        ctx = lc.llama_init_from_model(model, cparams)
        if not ctx:
            reason = llama_reason("out of memory?")
            raise EmbeddingError(f"llama.cpp could not create a context for {path.name}: {reason}", 503)
    except BaseException:
        lc.llama_model_free(model)
        raise
    try:
        n_out = (
            lc.llama_model_n_embd_out(model) if hasattr(lc, "llama_model_n_embd_out") else 0
        ) or lc.llama_model_n_embd(model)
        vocab = lc.llama_model_get_vocab(model)
        prefix, suffix = special_tokens(lc, vocab, pooling)
        if len(prefix) + len(suffix) >= max_tokens:
            raise EmbeddingError(f"n_ctx {max_tokens} leaves no room for text with {path.name}", 503)
        batch = lc.llama_batch_init(n_batch, 0, n_seq_max)
        token_view = np.ctypeslib.as_array(batch.token, shape=(n_batch,))
        pos_view = np.ctypeslib.as_array(batch.pos, shape=(n_batch,))
        np.ctypeslib.as_array(batch.n_seq_id, shape=(n_batch,))[:] = 1
        logits_view = np.ctypeslib.as_array(batch.logits, shape=(n_batch,))
        logits_view[:] = 1
        seq_views = [batch.seq_id[i] for i in range(n_batch)]
        for ptr in seq_views:
            ptr[0] = 0
    except BaseException:
        lc.llama_free(ctx)
        lc.llama_model_free(model)
        raise
    return LoadedModel(
        path=path,
        stamp=stamp,
        info=info,
        model=model,
        ctx=ctx,
        batch=batch,
        n_out=n_out,
        capacity=n_batch,
        n_seq_max=n_seq_max,
        prefix=prefix,
        suffix=suffix,
        vocab=vocab,
        pooling=pooling,
        token_view=token_view,
        pos_view=pos_view,
        seq_views=seq_views,
        logits_view=logits_view,
        last_token_only=last_only,
    )


def free_model(loaded: LoadedModel) -> None:
    import llama_cpp as lc

    lc.llama_batch_free(loaded.batch)
    lc.llama_free(loaded.ctx)
    lc.llama_model_free(loaded.model)


def tokenize(lc: Any, vocab: Any, data: bytes, add_special: bool) -> list[int]:
    n_max = len(data) + 16
    buf = (lc.llama_token * n_max)()
    n = lc.llama_tokenize(vocab, data, len(data), buf, n_max, add_special, False)
    if n < 0:
        n_max = -n
        buf = (lc.llama_token * n_max)()
        n = lc.llama_tokenize(vocab, data, len(data), buf, n_max, add_special, False)
        if n < 0:
            raise EmbeddingError("the model's tokenizer failed on this text", 400)
    return list(buf[:n])


def special_tokens(lc: Any, vocab: Any, pooling: int) -> tuple[list[int], list[int]]:
    """The tokens the model's tokenizer puts before and after a text (BERT: [CLS] … [SEP]),
    found by tokenizing a probe with and without specials. Last-token pooling needs the
    end-of-text token last (Qwen3-Embedding's own usage appends `<|endoftext|>`), so it is
    appended when the tokenizer does not add it itself."""
    probe = b"probe text"
    plain = tokenize(lc, vocab, probe, False)
    full = tokenize(lc, vocab, probe, True)
    prefix: list[int] = []
    suffix: list[int] = []
    for i in range(len(full) - len(plain) + 1):
        if full[i : i + len(plain)] == plain:
            prefix, suffix = full[:i], full[i + len(plain) :]
            break
    eos = lc.llama_vocab_eos(vocab)
    if pooling == POOLING_NAMES["last"] and eos != lc.LLAMA_TOKEN_NULL and not suffix:
        suffix = [eos]
    return prefix, suffix
