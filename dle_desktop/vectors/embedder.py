"""The in-process embedder: llama.cpp (through llama-cpp-python's C bindings) on one dedicated
worker thread.

- llama.cpp is not thread-safe, so one model lives on one single-thread executor and every call
  (load, tokenize, decode, free) runs there; asyncio callers queue up behind each other.
- The model loads lazily on the first request. A failed load fails that request only, with an
  `EmbeddingError` that says why; the next request tries again (the file may have been fixed or
  finished downloading), and nothing else in the app is affected.
- Every text is its own sequence (llama.cpp's per-sequence decoding), pooled as the model
  declares (last token for Qwen3, mean for BERT), L2-normalised and checked (finite, non-zero,
  one dimension). Texts over 32 tokens get a `llama_decode` call each; shorter ones share one,
  up to 256 tokens (see "Batching" below).
- Query texts get the retrieval instruction in front (Qwen3-Embedding's
  `Instruct: ...\\nQuery:`), documents are embedded raw.
- Texts longer than `max_tokens` (the profile says how many) are cut at the end, keeping the
  model's special tokens (and the instruction).
- Empty or whitespace-only texts are embedded as they are (the model's special tokens plus any
  whitespace tokens), not refused: an empty chat message is a legitimate input and refusing it
  would fail a whole insert. Only a model that would then see zero tokens refuses, with 400.

How texts share a llama_decode and how last-token models avoid llama.cpp's vocabulary-sized
outputs: `dle_desktop.vectors.batching`. The query instruction's KV cache kept between queries:
`dle_desktop.vectors.query_head`. The GGUF header: `dle_desktop.vectors.gguf_header`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dle_desktop.vectors.batching import BATCH_TOKENS_DEFAULT, PACK_TEXT_TOKENS_DEFAULT, plan_batches
from dle_desktop.vectors.contracts import EmbeddingError, EmbeddingProfile
from dle_desktop.vectors.gguf_header import GGUF_MAGIC, POOLING_NAMES, GgufFormatError, GgufInfo, read_gguf_info
from dle_desktop.vectors.llama_model import (
    DecodeCancelled,
    LoadedModel,
    cpu_has_amx,
    default_threads,
    free_model,
    load_model,
    tokenize,
)
from dle_desktop.vectors.normalise import normalise_rows, normalise_vectors
from dle_desktop.vectors.query_head import AUTO, QWEN3_QUERY_INSTRUCTION, QueryHeadDecoding, query_instruction_for

log = logging.getLogger(__name__)

#: The default cap on tokens per text (instruction and special tokens included).
DEFAULT_MAX_TOKENS = 2048
_POOLING_BY_ID = {v: k for k, v in POOLING_NAMES.items()}


class LocalEmbedder(QueryHeadDecoding):
    """An `Embedder` over a local GGUF embedding model, run by llama.cpp in-process.

    `n_ctx` caps tokens per text (instruction and special tokens included; longer texts are cut
    at the end); it is also limited by the model's trained context. `query_instruction` is the
    text put before every query: `AUTO` picks Qwen3-Embedding's retrieval instruction for Qwen3
    models and none for others; `None` or "" means none. Texts of at most `pack_text_tokens`
    tokens (None: any) share one llama_decode, each its own sequence, up to `batch_tokens`
    tokens; 0 decodes one text per call (see `dle_desktop.vectors.batching`). `pooling` ("mean", "cls", "last")
    overrides what the model declares. `cpu_extra_buffers` (llama.cpp's repacked/AMX weight
    buffers): None turns them off on CPUs that advertise AMX, where llama.cpp's AMX kernels were
    seen to crash the process with SIGILL under virtualisation, and leaves them on elsewhere.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = DEFAULT_MAX_TOKENS,
        n_threads: int | None = None,
        query_instruction: str | None = AUTO,
        batch_tokens: int = BATCH_TOKENS_DEFAULT,
        pack_text_tokens: int | None = PACK_TEXT_TOKENS_DEFAULT,
        pooling: str | None = None,
        cpu_extra_buffers: bool | None = None,
        prompt_version: str | None = None,
        last_token_outputs: bool = True,
    ) -> None:
        if n_ctx < 8:
            raise ValueError("n_ctx must be at least 8 tokens")
        if pooling is not None and pooling not in ("mean", "cls", "last"):
            raise ValueError("pooling must be 'mean', 'cls' or 'last'")
        self._model_path = Path(model_path)
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads) if n_threads else default_threads()
        self._query_instruction = query_instruction
        self.batch_tokens = max(0, int(batch_tokens))
        self.pack_text_tokens = None if pack_text_tokens is None else max(0, int(pack_text_tokens))
        self._pooling_override = pooling
        self.cpu_extra_buffers = (not cpu_has_amx()) if cpu_extra_buffers is None else bool(cpu_extra_buffers)
        self._prompt_version = prompt_version
        #: Last-token models: decode every text's tokens but the last without outputs (see
        #: `_decode_last_tokens`); False: one plain decode, every token an output (tests compare).
        self.last_token_outputs = bool(last_token_outputs)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dle-embedder")
        self._lock = threading.Lock()
        self._info: GgufInfo | None = None
        self._info_key: tuple[Path, int, int] | None = None
        self._loaded: LoadedModel | None = None  # worker thread only
        self._closed = False
        self._pending: set[threading.Event] = set()
        #: Tokens decoded so far (for throughput figures).
        self.tokens_processed = 0
        #: Texts that were cut to fit `max_tokens`.
        self.truncated_texts = 0
        #: Keep the query instruction's KV cache between queries (see `_decode_after_head`).
        self.reuse_query_head = True

    # -- description ------------------------------------------------------------------------

    @property
    def model_path(self) -> Path:
        return self._model_path

    def set_model(self, model_path: str | os.PathLike[str]) -> None:
        """Point the embedder at another GGUF. The current model is freed and the new one loaded
        by the next request (a bad file fails that request, and the embedder stays usable)."""
        with self._lock:
            self._model_path = Path(model_path)
            self._info, self._info_key = None, None

    def info(self) -> GgufInfo:
        """The model file's header metadata (cached per path, size and mtime). Raises
        EmbeddingError (503) if the file is missing or not a GGUF."""
        path = self._model_path
        try:
            st = path.stat()
        except OSError as exc:
            raise EmbeddingError(f"the embedding model file {path} cannot be read: {exc.strerror or exc}", 503) from exc
        key = (path, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._info is not None and self._info_key == key:
                return self._info
        try:
            info = read_gguf_info(path)
        except GgufFormatError as exc:
            raise EmbeddingError(f"the embedding model {path.name} is not usable: {exc}", 503) from exc
        except OSError as exc:
            raise EmbeddingError(f"the embedding model file {path} cannot be read: {exc.strerror or exc}", 503) from exc
        with self._lock:
            if self._model_path == path:
                self._info, self._info_key = info, key
        return info

    def _instruction_for(self, info: GgufInfo | None) -> str:
        return query_instruction_for(self._query_instruction, info)

    def _max_tokens(self, info: GgufInfo | None) -> int:
        trained = info.context_length if info is not None else 0
        return min(self.n_ctx, trained) if trained > 0 else self.n_ctx

    @property
    def query_instruction(self) -> str:
        try:
            info = self.info()
        except EmbeddingError:
            info = None
        return self._instruction_for(info)

    @property
    def profile(self) -> EmbeddingProfile:
        """model id = the file name without `.gguf`; quantisation from the GGUF file type;
        prompt version "v1" for Qwen3's instruction, "raw" for none, else a hash of the
        instruction; max_tokens = tokens per text after which text is cut. Never raises: for an
        unreadable file it describes the path (and embedding will fail with the reason)."""
        try:
            info = self.info()
        except EmbeddingError:
            info = None
        instruction = self._instruction_for(info)
        if self._prompt_version:
            version = self._prompt_version
        elif instruction == QWEN3_QUERY_INSTRUCTION:
            version = "v1"
        elif not instruction:
            version = "raw"
        else:
            version = "i-" + hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:12]
        if self._pooling_override and (info is None or POOLING_NAMES[self._pooling_override] != info.pooling()):
            version += f"+pool-{self._pooling_override}"  # other pooling, other vectors
        stem = self._model_path.name
        if stem.lower().endswith(".gguf"):
            stem = stem[:-5]
        return EmbeddingProfile(
            model_id=stem,
            quantisation=info.quantisation if info else "",
            prompt_version=version,
            max_tokens=self._max_tokens(info),
            endpoint="",
        )

    @property
    def dim(self) -> int | None:
        """The vector dimension, once known (after a load, or from the header)."""
        loaded = self._loaded
        if loaded is not None:
            return loaded.n_out
        try:
            return self.info().embedding_length or None
        except EmbeddingError:
            return None

    # -- public embedding API ----------------------------------------------------------------

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        texts = self._check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        cancel = threading.Event()
        future = self._submit(lambda: self._embed_job(texts, query, cancel), cancel)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            cancel.set()  # a job already running stops before its next text
            raise

    def embed_sync(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """The same as `embed`, blocking (for the CLI, scripts and benchmarks; not on the event loop)."""
        texts = self._check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        cancel = threading.Event()
        return self._submit(lambda: self._embed_job(texts, query, cancel), cancel).result()

    async def load(self) -> EmbeddingProfile:
        """Load the model now (instead of on the first request) and return the profile."""
        await asyncio.wrap_future(self._submit(self._ensure_loaded, threading.Event()))
        return self.profile

    def token_ids(self, texts: list[str], *, query: bool = False) -> list[list[int]]:
        """The exact tokens `embed` would decode for each text (instruction, special tokens and
        truncation applied). Blocking; loads the model if needed."""
        texts = self._check_texts(texts)

        def job() -> list[list[int]]:
            import llama_cpp as lc

            loaded = self._ensure_loaded()
            instruction = self._instruction_for(loaded.info) if query else ""
            cap = self._max_tokens(loaded.info)
            return [self._tokens_for(lc, loaded, t, instruction, cap, count=False) for t in texts]

        return self._submit(job, threading.Event()).result()

    def run_on_worker(self, fn: Callable[[], Any]) -> concurrent.futures.Future:
        """Run `fn` on the embedder's worker thread (benchmarks use it to time raw llama.cpp on
        the same thread and context)."""

        def job() -> Any:
            if self._loaded is not None:
                self._loaded.kv_prefix = ()  # `fn` may use the context's memory
            return fn()

        return self._submit(job, threading.Event())

    def close(self) -> None:
        """Free the model and stop the worker thread. Waits for a running text to finish;
        queued requests fail with EmbeddingError (503)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for ev in list(self._pending):
                ev.set()
        try:
            self._executor.submit(self._free).result()
        except RuntimeError:
            pass
        self._executor.shutdown(wait=True, cancel_futures=True)

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def __enter__(self) -> LocalEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------

    @staticmethod
    def _check_texts(texts: Sequence[str]) -> list[str]:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise EmbeddingError("texts must be a list of strings", 400)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise EmbeddingError(f"text {i} is a {type(t).__name__}, not a string", 400)
        return list(texts)

    def _submit(self, fn: Callable[[], Any], cancel: threading.Event) -> concurrent.futures.Future:
        with self._lock:
            if self._closed:
                raise EmbeddingError("the embedder is closed", 503)
            self._pending.add(cancel)

        def run() -> Any:
            if cancel.is_set():
                raise EmbeddingError("the embedder is closed" if self._closed else "cancelled", 503)
            return fn()

        def forget(_: concurrent.futures.Future) -> None:  # also when cancelled before it ran
            with self._lock:
                self._pending.discard(cancel)

        try:
            future = self._executor.submit(run)
        except RuntimeError as exc:  # shut down between the check and the submit
            with self._lock:
                self._pending.discard(cancel)
            raise EmbeddingError("the embedder is closed", 503) from exc
        future.add_done_callback(forget)
        return future

    # Everything below runs on the worker thread.

    def _free(self) -> None:
        loaded, self._loaded = self._loaded, None
        if loaded is not None:
            free_model(loaded)

    def _ensure_loaded(self) -> LoadedModel:
        path = self._model_path
        info = self.info()  # raises EmbeddingError for missing / non-GGUF files
        st = path.stat()
        stamp = (st.st_size, st.st_mtime_ns)
        loaded = self._loaded
        if loaded is not None and loaded.path == path and loaded.stamp == stamp:
            return loaded
        self._free()
        t0 = time.perf_counter()
        self._loaded = self._load(path, info, stamp)
        log.info(
            "embedding model %s loaded in %.2f s (dim %d, pooling %s, max %d tokens, %d threads)",
            path.name,
            time.perf_counter() - t0,
            self._loaded.n_out,
            _POOLING_BY_ID.get(self._loaded.pooling),
            self.profile.max_tokens,
            self.n_threads,
        )
        return self._loaded

    def _load(self, path: Path, info: GgufInfo, stamp: tuple[int, int]) -> LoadedModel:
        pooling = POOLING_NAMES[self._pooling_override] if self._pooling_override else info.pooling()
        return load_model(
            path,
            info,
            stamp,
            pooling=pooling,
            max_tokens=self._max_tokens(info),
            batch_tokens=self.batch_tokens,
            n_threads=self.n_threads,
            cpu_extra_buffers=self.cpu_extra_buffers,
            last_token_outputs=self.last_token_outputs,
        )

    def _tokens_for(
        self, lc: Any, loaded: LoadedModel, text: str, instruction: str, max_tokens: int, count: bool = True
    ) -> list[int]:
        full = instruction + text
        room = max_tokens - len(loaded.prefix) - len(loaded.suffix)
        # Tokenizing a 10 MB text to keep its first 2,048 tokens wastes time: cut the characters
        # first, far beyond what `room` tokens can cover.
        char_cap = room * 64 + len(instruction)
        if len(full) > char_cap:
            full = full[:char_cap]
        body = tokenize(lc, loaded.vocab, full.encode("utf-8", errors="replace"), False)
        if len(body) > room:
            body = body[:room]
            if count:
                self.truncated_texts += 1
        tokens = loaded.prefix + body + loaded.suffix
        if not tokens:
            raise EmbeddingError("an empty text gives this model no tokens to embed", 400)
        return tokens

    def _embed_job(self, texts: list[str], query: bool, cancel: threading.Event) -> np.ndarray:
        import llama_cpp as lc

        try:
            loaded = self._ensure_loaded()
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"the embedding model {self._model_path.name} could not be loaded: {exc}", 503
            ) from exc
        info = loaded.info
        instruction = self._instruction_for(info) if query else ""
        max_tokens = self._max_tokens(info)
        seqs = [self._tokens_for(lc, loaded, t, instruction, max_tokens) for t in texts]
        out = np.empty((len(seqs), loaded.n_out), dtype=np.float32)
        try:
            todo = list(range(len(seqs)))
            if instruction and loaded.last_token_only and self.reuse_query_head:
                head = tuple(loaded.prefix + tokenize(lc, loaded.vocab, instruction.encode("utf-8"), False))
                todo = self._decode_queries(lc, loaded, head, seqs, out, cancel)
            if todo:
                rest = np.empty((len(todo), loaded.n_out), dtype=np.float32)
                sub = [seqs[k] for k in todo]
                if self.batch_tokens > 0:
                    self._decode_packed(lc, loaded, sub, rest, cancel)
                else:
                    for i, toks in enumerate(sub):
                        if cancel.is_set():
                            raise DecodeCancelled
                        self._decode_one(lc, loaded, toks, rest, i)
                out[todo] = rest
        except DecodeCancelled:
            raise EmbeddingError("the embedding request was cancelled", 503) from None
        return normalise_rows(out)


__all__ = [
    "AUTO",
    "BATCH_TOKENS_DEFAULT",
    "DEFAULT_MAX_TOKENS",
    "GGUF_MAGIC",
    "PACK_TEXT_TOKENS_DEFAULT",
    "QWEN3_QUERY_INSTRUCTION",
    "GgufFormatError",
    "GgufInfo",
    "LocalEmbedder",
    "default_threads",
    "normalise_vectors",
    "plan_batches",
    "read_gguf_info",
]
