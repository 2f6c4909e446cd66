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

Queries. Qwen3's query instruction is about half of a chat message's tokens. Its KV cache is
kept between queries and only each message's own tokens are decoded (`_decode_after_head`). What stays per context: the KV
cache (n_ctx tokens), the compute buffer (sized for n_ubatch tokens) and that buffer; the figures
are in `benchmarks/results/embedder.txt` (`benchmarks/bench_embedder_memory.py`). Encoder models
(BERT) and other poolings read every token and keep the one-pass decode; their vocabularies are
small (30,522 for MiniLM) and their texts short (512 tokens).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import ctypes
import hashlib
import logging
import mmap
import os
import re
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dle_desktop.vectors.contracts import EmbeddingError, EmbeddingProfile

log = logging.getLogger(__name__)

#: TauriTavern's query prompt for Qwen3-Embedding (st-wire-contracts §2.2); text follows "Query:".
QWEN3_QUERY_INSTRUCTION = "Instruct: Given a conversation context, retrieve relevant passages and memories\nQuery:"
#: Passed as `query_instruction` to pick the instruction from the model (Qwen3 → the above, others none).
AUTO = "auto"
#: The default cap on tokens per text (instruction and special tokens included).
DEFAULT_MAX_TOKENS = 2048
#: Texts of at most PACK_TEXT_TOKENS_DEFAULT tokens share a llama_decode, up to BATCH_TOKENS_DEFAULT
#: tokens (0 = one text per llama_decode). Chosen with benchmarks/bench_embedder.py (module docstring).
BATCH_TOKENS_DEFAULT = 256
PACK_TEXT_TOKENS_DEFAULT = 32
#: The largest physical batch for causal models: a long text is decoded in chunks of this many
#: tokens (same result, the KV cache carries over). llama.cpp's compute buffer grows with it
#: (it is sized for a graph where every token's output covers the whole vocabulary): ~0.3 GB at
#: 512 against ~1.2 GB at 2,048 for the 0.6B model, reserved though only touched as used.
CAUSAL_UBATCH = 512

POOLING_NAMES = {"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}
_POOLING_BY_ID = {v: k for k, v in POOLING_NAMES.items()}
# Encoder (bidirectional) architectures pool by mean when the file does not say; every other
# architecture is a decoder whose last token has seen the whole text.
_ENCODER_ARCHS = {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert",
                  "neo-bert", "t5encoder", "xlm-roberta", "roberta", "gemma-embedding"}

# general.file_type → name (llama.h `enum llama_ftype`).
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
               11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
               17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
               23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
               29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE"}
_QUANT_IN_NAME = re.compile(r"(?i)(?:^|[-_.])((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32)$")

GGUF_MAGIC = b"GGUF"


# ----------------------------------------------------------------------------------------------
# GGUF header (metadata only; no llama.cpp needed)


class GgufFormatError(ValueError):
    """The file is not a readable GGUF model (wrong magic, unsupported version, truncated)."""


@dataclass(frozen=True)
class GgufInfo:
    """The key/value metadata of a GGUF file. Arrays are kept as their length only."""

    path: Path
    version: int
    n_tensors: int
    metadata: dict[str, Any] = field(repr=False)
    size: int = 0

    @property
    def arch(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    def arch_value(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(f"{self.arch}.{key}", default)

    @property
    def context_length(self) -> int:
        return int(self.arch_value("context_length", 0) or 0)

    @property
    def embedding_length(self) -> int:
        return int(self.arch_value("embedding_length", 0) or 0)

    @property
    def causal(self) -> bool:
        declared = self.arch_value("attention.causal")
        if declared is not None:
            return bool(declared)
        return self.arch not in _ENCODER_ARCHS

    @property
    def quantisation(self) -> str:
        ft = self.metadata.get("general.file_type")
        if isinstance(ft, int) and ft in _FILE_TYPES:
            return _FILE_TYPES[ft]
        m = _QUANT_IN_NAME.search(self.path.stem)
        return m.group(1).upper() if m else ""

    @property
    def declared_pooling(self) -> int | None:
        value = self.arch_value("pooling_type")
        return int(value) if isinstance(value, int) else None

    def pooling(self) -> int:
        """The pooling the model declares; when it declares none, last token for decoder
        architectures (Qwen3, Llama…) and mean for encoders (BERT…)."""
        declared = self.declared_pooling
        if declared is not None and declared != POOLING_NAMES["none"]:
            return declared
        return POOLING_NAMES["mean"] if not self.causal else POOLING_NAMES["last"]


_U64 = struct.Struct("<Q")
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf_info(path: str | os.PathLike[str]) -> GgufInfo:
    """Read a GGUF file's header metadata. Raises GgufFormatError (or OSError) with a clear reason."""
    p = Path(path)
    with open(p, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(4)
        if head != GGUF_MAGIC:
            raise GgufFormatError(f"{p.name} is not a GGUF file (it does not start with 'GGUF')")
        if size < 24:
            raise GgufFormatError(f"{p.name} is truncated (a GGUF header needs 24 bytes, the file has {size})")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse_header(p, mm, size)


def _parse_header(p: Path, mm: mmap.mmap, size: int) -> GgufInfo:
    pos = 4

    def take(n: int) -> int:
        nonlocal pos
        start = pos
        if n < 0 or pos + n > size:
            raise GgufFormatError(f"{p.name} is truncated or corrupt (its header runs past the end of the file)")
        pos += n
        return start

    def u32() -> int:
        return struct.unpack_from("<I", mm, take(4))[0]

    def u64() -> int:
        return struct.unpack_from("<Q", mm, take(8))[0]

    def string() -> str:
        n = u64()
        start = take(n)
        return bytes(mm[start:start + n]).decode("utf-8", errors="replace")

    def value(vtype: int) -> Any:
        nonlocal pos
        if vtype in _SCALARS:
            fmt = _SCALARS[vtype]
            return struct.unpack_from(fmt, mm, take(struct.calcsize(fmt)))[0]
        if vtype == 8:
            return string()
        if vtype == 9:
            itype, count = u32(), u64()
            if itype in _SCALARS:
                take(count * struct.calcsize(_SCALARS[itype]))
            elif itype == 8:  # e.g. a 151k-token vocabulary: skip it in a tight loop
                off, unpack = pos, _U64.unpack_from
                for _ in range(count):
                    if off + 8 > size:
                        raise GgufFormatError(f"{p.name} is truncated or corrupt (its header runs past the end "
                                              "of the file)")
                    off += 8 + unpack(mm, off)[0]
                if off > size:
                    raise GgufFormatError(f"{p.name} is truncated or corrupt (its header runs past the end of the file)")
                pos = off
            elif itype == 9:
                raise GgufFormatError(f"{p.name} has nested arrays in its metadata, which GGUF does not allow")
            else:
                raise GgufFormatError(f"{p.name} has an unknown metadata type {itype}")
            return ("array", count)
        raise GgufFormatError(f"{p.name} has an unknown metadata type {vtype} (corrupt header?)")

    version = u32()
    if version not in (2, 3):
        raise GgufFormatError(f"{p.name} is GGUF version {version}; only versions 2 and 3 are supported")
    n_tensors, n_kv = u64(), u64()
    if n_kv > 1_000_000 or n_tensors > 10_000_000:
        raise GgufFormatError(f"{p.name} has an implausible header (corrupt file?)")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(u32())
    return GgufInfo(path=p, version=version, n_tensors=n_tensors, metadata=meta, size=size)


# ----------------------------------------------------------------------------------------------
# llama.cpp plumbing (worker thread only)

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


def _llama_reason(default: str) -> str:
    """The most telling recent llama.cpp error line, without its function-name prefix."""
    lines = list(_recent_errors)
    for line in lines:
        if "error loading model:" in line:
            return line.split("error loading model:", 1)[1].strip()
    if lines:
        return re.sub(r"^[a-z_]+:\s*", "", lines[-1])
    return default


def _cpu_has_amx() -> bool:
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


class _Cancelled(Exception):
    pass


@dataclass
class _Loaded:
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
    #: `_decode_last_tokens`), which keeps llama.cpp's output buffer small.
    last_token_only: bool = False
    #: The tokens sequence 0 of the KV cache holds at positions 0.. for re-use by the next query
    #: (the special tokens and the query instruction); () when the cache holds nothing re-usable.
    kv_prefix: tuple[int, ...] = ()


class LocalEmbedder:
    """An `Embedder` over a local GGUF embedding model, run by llama.cpp in-process.

    `n_ctx` caps tokens per text (instruction and special tokens included; longer texts are cut
    at the end); it is also limited by the model's trained context. `query_instruction` is the
    text put before every query: `AUTO` picks Qwen3-Embedding's retrieval instruction for Qwen3
    models and none for others; `None` or "" means none. Texts of at most `pack_text_tokens`
    tokens (None: any) share one llama_decode, each its own sequence, up to `batch_tokens`
    tokens; 0 decodes one text per call (see the module docstring). `pooling` ("mean", "cls", "last")
    overrides what the model declares. `cpu_extra_buffers` (llama.cpp's repacked/AMX weight
    buffers): None turns them off on CPUs that advertise AMX, where llama.cpp's AMX kernels were
    seen to crash the process with SIGILL under virtualisation, and leaves them on elsewhere.
    """

    def __init__(self, model_path: str | os.PathLike[str], *, n_ctx: int = DEFAULT_MAX_TOKENS,
                 n_threads: int | None = None, query_instruction: str | None = AUTO,
                 batch_tokens: int = BATCH_TOKENS_DEFAULT, pack_text_tokens: int | None = PACK_TEXT_TOKENS_DEFAULT,
                 pooling: str | None = None,
                 cpu_extra_buffers: bool | None = None, prompt_version: str | None = None,
                 last_token_outputs: bool = True) -> None:
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
        self.cpu_extra_buffers = (not _cpu_has_amx()) if cpu_extra_buffers is None else bool(cpu_extra_buffers)
        self._prompt_version = prompt_version
        #: Last-token models: decode every text's tokens but the last without outputs (see
        #: `_decode_last_tokens`); False: one plain decode, every token an output (tests compare).
        self.last_token_outputs = bool(last_token_outputs)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dle-embedder")
        self._lock = threading.Lock()
        self._info: GgufInfo | None = None
        self._info_key: tuple[Path, int, int] | None = None
        self._loaded: _Loaded | None = None  # worker thread only
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
        qi = self._query_instruction
        if qi == AUTO:
            if info is not None and (info.arch.startswith("qwen3") or "qwen3" in info.name.lower()):
                return QWEN3_QUERY_INSTRUCTION
            return ""
        return qi or ""

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
        return EmbeddingProfile(model_id=stem, quantisation=info.quantisation if info else "",
                                prompt_version=version, max_tokens=self._max_tokens(info), endpoint="")

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
        if loaded is None:
            return
        import llama_cpp as lc

        lc.llama_batch_free(loaded.batch)
        lc.llama_free(loaded.ctx)
        lc.llama_model_free(loaded.model)

    def _ensure_loaded(self) -> _Loaded:
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
        log.info("embedding model %s loaded in %.2f s (dim %d, pooling %s, max %d tokens, %d threads)",
                 path.name, time.perf_counter() - t0, self._loaded.n_out, _POOLING_BY_ID.get(self._loaded.pooling),
                 self.profile.max_tokens, self.n_threads)
        return self._loaded

    def _load(self, path: Path, info: GgufInfo, stamp: tuple[int, int]) -> _Loaded:
        try:
            import llama_cpp as lc
        except ImportError as exc:  # pragma: no cover - a broken install
            raise EmbeddingError(f"llama-cpp-python is not installed or failed to load: {exc}", 503) from exc
        _install_llama_logging(lc)

        pooling = POOLING_NAMES[self._pooling_override] if self._pooling_override else info.pooling()
        if pooling == POOLING_NAMES["rank"]:
            raise EmbeddingError(f"{path.name} is a reranker (pooling 'rank'), not an embedding model", 503)

        _recent_errors.clear()
        mparams = lc.llama_model_default_params()
        mparams.n_gpu_layers = 0
        if hasattr(mparams, "use_extra_bufts"):
            mparams.use_extra_bufts = self.cpu_extra_buffers
        model = lc.llama_model_load_from_file(str(path).encode("utf-8"), mparams)
        if not model:
            reason = _llama_reason("llama.cpp could not read it")
            raise EmbeddingError(f"the embedding model {path.name} could not be loaded: {reason}", 503)
        try:
            max_tokens = self._max_tokens(info)
            n_seq_max = 1
            n_ctx = max_tokens
            if self.batch_tokens > 0:
                n_seq_max = min(64, lc.llama_max_parallel_sequences())
                n_ctx = max(max_tokens, self.batch_tokens)
            n_batch = n_ctx
            n_ubatch = min(n_batch, max(CAUSAL_UBATCH, self.batch_tokens)) if info.causal else n_batch
            cparams = lc.llama_context_default_params()
            cparams.n_ctx = n_ctx
            cparams.n_batch = n_batch
            cparams.n_ubatch = n_ubatch
            cparams.n_seq_max = n_seq_max
            cparams.n_threads = self.n_threads
            cparams.n_threads_batch = self.n_threads
            cparams.embeddings = True
            last_only = info.causal and pooling == POOLING_NAMES["last"] and self.last_token_outputs
            cparams.pooling_type = pooling
            if hasattr(cparams, "kv_unified"):
                cparams.kv_unified = True
            ctx = lc.llama_init_from_model(model, cparams)
            if not ctx:
                reason = _llama_reason("out of memory?")
                raise EmbeddingError(f"llama.cpp could not create a context for {path.name}: {reason}", 503)
        except BaseException:
            lc.llama_model_free(model)
            raise
        try:
            n_out = (lc.llama_model_n_embd_out(model) if hasattr(lc, "llama_model_n_embd_out") else 0) \
                or lc.llama_model_n_embd(model)
            vocab = lc.llama_model_get_vocab(model)
            prefix, suffix = self._special_tokens(lc, vocab, pooling)
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
        return _Loaded(path=path, stamp=stamp, info=info, model=model, ctx=ctx, batch=batch, n_out=n_out, capacity=n_batch,
                       n_seq_max=n_seq_max, prefix=prefix, suffix=suffix, vocab=vocab, pooling=pooling,
                       token_view=token_view, pos_view=pos_view, seq_views=seq_views, logits_view=logits_view,
                       last_token_only=last_only)

    @staticmethod
    def _tokenize(lc: Any, vocab: Any, data: bytes, add_special: bool) -> list[int]:
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

    def _special_tokens(self, lc: Any, vocab: Any, pooling: int) -> tuple[list[int], list[int]]:
        """The tokens the model's tokenizer puts before and after a text (BERT: [CLS] … [SEP]),
        found by tokenizing a probe with and without specials. Last-token pooling needs the
        end-of-text token last (Qwen3-Embedding's own usage appends `<|endoftext|>`), so it is
        appended when the tokenizer does not add it itself."""
        probe = b"probe text"
        plain = self._tokenize(lc, vocab, probe, False)
        full = self._tokenize(lc, vocab, probe, True)
        prefix: list[int] = []
        suffix: list[int] = []
        for i in range(len(full) - len(plain) + 1):
            if full[i:i + len(plain)] == plain:
                prefix, suffix = full[:i], full[i + len(plain):]
                break
        eos = lc.llama_vocab_eos(vocab)
        if pooling == POOLING_NAMES["last"] and eos != lc.LLAMA_TOKEN_NULL and not suffix:
            suffix = [eos]
        return prefix, suffix

    def _tokens_for(self, lc: Any, loaded: _Loaded, text: str, instruction: str, max_tokens: int,
                    count: bool = True) -> list[int]:
        full = instruction + text
        room = max_tokens - len(loaded.prefix) - len(loaded.suffix)
        # Tokenizing a 10 MB text to keep its first 2,048 tokens wastes time: cut the characters
        # first, far beyond what `room` tokens can cover.
        char_cap = room * 64 + len(instruction)
        if len(full) > char_cap:
            full = full[:char_cap]
        body = self._tokenize(lc, loaded.vocab, full.encode("utf-8", errors="replace"), False)
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
        except Exception as exc:  # noqa: BLE001 - whatever llama.cpp's binding raised
            raise EmbeddingError(f"the embedding model {self._model_path.name} could not be loaded: {exc}", 503) from exc
        info = loaded.info
        instruction = self._instruction_for(info) if query else ""
        max_tokens = self._max_tokens(info)
        seqs = [self._tokens_for(lc, loaded, t, instruction, max_tokens) for t in texts]
        out = np.empty((len(seqs), loaded.n_out), dtype=np.float32)
        try:
            todo = list(range(len(seqs)))
            if instruction and loaded.last_token_only and self.reuse_query_head:
                head = tuple(loaded.prefix + self._tokenize(lc, loaded.vocab, instruction.encode("utf-8"), False))
                todo = self._decode_queries(lc, loaded, head, seqs, out, cancel)
            if todo:
                rest = np.empty((len(todo), loaded.n_out), dtype=np.float32)
                sub = [seqs[k] for k in todo]
                if self.batch_tokens > 0:
                    self._decode_packed(lc, loaded, sub, rest, cancel)
                else:
                    for i, toks in enumerate(sub):
                        if cancel.is_set():
                            raise _Cancelled
                        self._decode_one(lc, loaded, toks, rest, i)
                out[todo] = rest
        except _Cancelled:
            raise EmbeddingError("the embedding request was cancelled", 503) from None
        return _normalise(out)

    @staticmethod
    def _clear_memory(lc: Any, loaded: _Loaded) -> None:
        lc.llama_memory_clear(lc.llama_get_memory(loaded.ctx), True)
        loaded.kv_prefix = ()

    def _decode_one(self, lc: Any, loaded: _Loaded, toks: list[int], out: np.ndarray, row: int) -> None:
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
            raise EmbeddingError(f"llama.cpp failed to decode a text of {n} tokens (code {rc}) {_llama_reason('')}".rstrip(),
                                 502)
        self.tokens_processed += n
        self._read_pooled(lc, loaded, 0, out, row)

    def _decode_packed(self, lc: Any, loaded: _Loaded, seqs: list[list[int]], out: np.ndarray,
                       cancel: threading.Event) -> None:
        """Texts in the groups `plan_batches` makes: a group of one is decoded alone; a bigger
        group is one llama_decode with each text its own sequence (positions from 0, its own seq
        id)."""
        groups = plan_batches([len(x) for x in seqs], self.batch_tokens, self.pack_text_tokens, loaded.n_seq_max)
        for group in groups:
            if cancel.is_set():
                raise _Cancelled
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
                loaded.token_view[n:n + m] = toks
                loaded.pos_view[n:n + m] = np.arange(m, dtype=np.int32)
                for ptr in loaded.seq_views[n:n + m]:
                    ptr[0] = s
                n += m
            self._clear_memory(lc, loaded)
            self._decode_batch(lc, loaded, n)
            for s, k in enumerate(group):
                self._read_pooled(lc, loaded, s, out, k)

    def _decode_last_tokens(self, lc: Any, loaded: _Loaded, seqs: list[list[int]], out: np.ndarray,
                            rows: Sequence[int]) -> None:
        """Last-token pooling on a causal model, in two steps. With embeddings on, llama.cpp makes
        every token of a decode an output, with a row of the whole vocabulary each, and keeps its
        output buffer at the largest size it ever needed (a 2,048-token text with Qwen3's 151,669
        tokens: 1.2 GB, for good). So every token but each text's last is decoded with embeddings
        off and no outputs (that only fills the KV cache), then the last tokens alone (text `s`
        is sequence `s`) with embeddings on: one output per text, the same vector."""
        self._clear_memory(lc, loaded)
        self._fill_kv(lc, loaded, [(s, toks[:-1], 0) for s, toks in enumerate(seqs)])
        self._decode_final_tokens(lc, loaded, seqs, out, rows)

    def _fill_kv(self, lc: Any, loaded: _Loaded, parts: Sequence[tuple[int, Sequence[int], int]]) -> None:
        """Decode (sequence, tokens, first position) parts with embeddings off and no outputs:
        only the KV cache fills (in as few llama_decode calls as the batch allows)."""
        ctx = loaded.ctx
        loaded.logits_view[:loaded.capacity] = 0
        lc.llama_set_embeddings(ctx, False)
        try:
            n = 0
            for s, body, first in parts:
                start = 0
                while start < len(body):
                    m = min(len(body) - start, loaded.capacity - n)
                    loaded.token_view[n:n + m] = body[start:start + m]
                    loaded.pos_view[n:n + m] = np.arange(first + start, first + start + m, dtype=np.int32)
                    for ptr in loaded.seq_views[n:n + m]:
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
            loaded.logits_view[:loaded.capacity] = 1

    def _decode_final_tokens(self, lc: Any, loaded: _Loaded, seqs: Sequence[Sequence[int]], out: np.ndarray,
                             rows: Sequence[int]) -> None:
        """Each text's last token (text `s` is sequence `s`, its KV cache filled up to there),
        with embeddings on: the pooled vector of every text."""
        for s, toks in enumerate(seqs):
            loaded.token_view[s] = toks[-1]
            loaded.pos_view[s] = len(toks) - 1
            loaded.seq_views[s][0] = s
        self._decode_batch(lc, loaded, len(seqs))
        for s, row in enumerate(rows):
            self._read_pooled(lc, loaded, s, out, row)

    def _decode_after_head(self, lc: Any, loaded: _Loaded, head: tuple[int, ...], seqs: list[list[int]],
                           out: np.ndarray, rows: Sequence[int]) -> None:
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

    def _decode_queries(self, lc: Any, loaded: _Loaded, head: tuple[int, ...], seqs: list[list[int]],
                        out: np.ndarray, cancel: threading.Event) -> list[int]:
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
                    raise _Cancelled
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

    def _decode_batch(self, lc: Any, loaded: _Loaded, n: int) -> None:
        """llama_decode the first `n` tokens of the batch (positions, sequences and output flags as
        set); sequence ids go back to 0 afterwards."""
        loaded.batch.n_tokens = n
        rc = lc.llama_decode(loaded.ctx, loaded.batch)
        for ptr in loaded.seq_views[:n]:
            ptr[0] = 0
        if rc != 0:
            raise EmbeddingError(f"llama.cpp failed to decode a batch of {n} tokens (code {rc}) "
                                 f"{_llama_reason('')}".rstrip(), 502)
        self.tokens_processed += n

    @staticmethod
    def _read_pooled(lc: Any, loaded: _Loaded, seq: int, out: np.ndarray, row: int) -> None:
        """Copy sequence `seq`'s pooled vector into `out[row]` (a memmove: ~1 µs)."""
        ptr = lc.llama_get_embeddings_seq(loaded.ctx, seq)
        if not ptr:
            raise EmbeddingError("llama.cpp returned no pooled embedding (is this an embedding model?)", 502)
        ctypes.memmove(out[row].ctypes.data, ptr, loaded.n_out * 4)


def plan_batches(lengths: Sequence[int], batch_tokens: int, pack_text_tokens: int | None,
                 n_seq_max: int) -> list[list[int]]:
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


def _normalise(rows: np.ndarray) -> np.ndarray:
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
    return _normalise(np.ascontiguousarray(arr))


__all__ = ["AUTO", "DEFAULT_MAX_TOKENS", "GgufFormatError", "GgufInfo", "LocalEmbedder", "QWEN3_QUERY_INSTRUCTION",
           "default_threads", "normalise_vectors", "plan_batches", "read_gguf_info"]
