"""SillyTavern's Vector API semantics on top of the vector store and the embedders.

What `/api/vector/*` does, route by route, is st-wire-contracts.md §1.2, with TauriTavern's fixes
(§2.2): the query threshold filters `hashes` and `metadata` together; re-inserting an identical
(hash, index, text) does not duplicate it; an insert is embedded whole, validated, then committed
at once (never half-written); a dimension change inside a scope is a 409.

A scope is (collectionId, source, embedding profile key). The profile comes from the embedder
that serves the request:
  * `transformers`: our local llama.cpp embedder (the `embedding_model_path` setting, or the
    model manager's default model);
  * `koboldcpp` / `webllm`: the vectors arrive precomputed in the request's `embeddings` map
    (text → vector) and are stored as given; the profile is the `model` the browser reported;
  * `llamacpp` / `vllm` / `ollama` / `extras` / cloud sources: a remote embedder calling the URL
    of the request (`remote_factory`, see `default_remote_factory`).

Every method raises `VectorApiError(status, message, cause)` for anything it refuses; the routes
turn that into `{"error": true, "message": ..., "cause": ...}`.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import logging
import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from dle_desktop.vectors.contracts import (
    Embedder,
    EmbeddingError,
    EmbeddingProfile,
    Hit,
    StoredItem,
    VectorConflict,
)
from dle_desktop.vectors.source_settings import (
    PRECOMPUTED_SOURCES,
    SourceSettings,
    SourceSettingsError,
    canonical_profile_key,
    js_number,
    parse_source_settings,
    scope_endpoint,
)

log = logging.getLogger(__name__)

#: ST's getBatchVector: remote providers get at most this many texts per call.
REMOTE_BATCH = 10
#: Texts per call to the local embedder: its one worker thread serves calls in order, so a big
#: insert in slices lets a query (ST's generation interceptor) in between them.
LOCAL_BATCH = 32
DEFAULT_TOP_K = 10
MAX_TOP_K = 1000
#: Items in one insert. 10,000 are accepted (a big lorebook or a whole book sent as one unit);
#: beyond this an insert is refused with a 400 before anything is embedded.
MAX_INSERT_ITEMS = 50_000
MAX_HASHES = 1_000_000
MAX_COLLECTIONS = 10_000
MAX_COLLECTION_ID_CHARS = 1024
MAX_DIMENSION = 65_536
STORE_THREADS = 4
_INT64 = 2**63

#: `cause` values, as TauriTavern's route answers them.
CAUSES = {
    400: "invalid_request",
    401: "embedding_auth_failed",
    403: "forbidden_origin",
    404: "vector_endpoint_unavailable",
    409: "vector_index_conflict",
    413: "request_too_large",
    429: "embedding_rate_limited",
    500: "embedding_unavailable",
}


class VectorApiError(Exception):
    """A refused or failed vector request: `status` is the HTTP status, `cause` TT's cause tag."""

    def __init__(self, status: int, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.cause = cause or CAUSES.get(status, "embedding_unavailable")

    def to_json(self) -> dict:
        return {"error": True, "message": self.message, "cause": self.cause}


def bad_request(message: str) -> VectorApiError:
    return VectorApiError(400, message)


def from_embedding_error(exc: EmbeddingError) -> VectorApiError:
    """TT's mapping: 400 / 401 / 429 pass through, every other failure is a 500."""
    status = getattr(exc, "status", 502)
    if status in (401, 403):
        return VectorApiError(401, f"the embedding source refused the credentials: {exc}")
    if status == 429:
        return VectorApiError(429, f"the embedding source is rate limiting: {exc}")
    if status in (400, 413, 422):
        return VectorApiError(400, str(exc))
    return VectorApiError(500, str(exc))


# -- request fields ------------------------------------------------------------------------------


def parse_collection_id(value: Any, name: str = "collectionId") -> str:
    """ST applies `String(...)`; we accept strings and numbers, and refuse blank ids (TT)."""
    if isinstance(value, bool) or value is None:
        raise bad_request(f"{name} is required and must be a non-empty string")
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise bad_request(f"{name} must be a non-empty string")
        value = str(int(value)) if value.is_integer() else repr(value)
    if not isinstance(value, str):
        raise bad_request(f"{name} must be a non-empty string")
    if not value.strip():
        raise bad_request(f"{name} must not be blank")
    if len(value) > MAX_COLLECTION_ID_CHARS:
        raise bad_request(f"{name} is longer than {MAX_COLLECTION_ID_CHARS} characters")
    if "\x00" in value:
        raise bad_request(f"{name} must not contain a NUL character")
    return value


def parse_collection_ids(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise bad_request("collectionIds is required and must be an array of collection ids")
    if len(value) > MAX_COLLECTIONS:
        raise bad_request(f"collectionIds has {len(value)} ids; the limit is {MAX_COLLECTIONS}")
    out: list[str] = []
    seen: set[str] = set()
    for i, v in enumerate(value):
        cid = parse_collection_id(v, f"collectionIds[{i}]")
        if cid not in seen:  # a repeated id would pool the same hits twice
            seen.add(cid)
            out.append(cid)
    return out


def _integer(value: Any, what: str) -> int:
    """A JSON number with an integral value in the signed 64-bit range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"{what} must be a number")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise bad_request(f"{what} must be a whole number")
        value = int(value)
    if not -_INT64 <= value < _INT64:
        raise bad_request(f"{what} is outside the 64-bit integer range")
    return value


def parse_items(value: Any) -> list[StoredItem]:
    """`items: [{hash, text, index}]`; other keys are dropped, as ST does."""
    if not isinstance(value, list):
        raise bad_request("items is required and must be an array of {hash, text, index}")
    if len(value) > MAX_INSERT_ITEMS:
        raise bad_request(
            f"items has {len(value)} entries; the limit is {MAX_INSERT_ITEMS} per insert "
            "(send them in several requests)"
        )
    items: list[StoredItem] = []
    for i, raw in enumerate(value):
        if not isinstance(raw, dict):
            raise bad_request(f"items[{i}] must be an object {{hash, text, index}}")
        for key in ("hash", "text", "index"):
            if key not in raw or raw[key] is None:
                raise bad_request(f"items[{i}] has no {key}")
        text = raw["text"]
        if not isinstance(text, str):
            raise bad_request(f"items[{i}].text must be a string")
        items.append(
            StoredItem(
                hash=_integer(raw["hash"], f"items[{i}].hash"),
                index=_integer(raw["index"], f"items[{i}].index"),
                text=text,
            )
        )
    return items


def parse_hashes(value: Any) -> list[int]:
    """`hashes`, each through `Number()` (so "123" matches 123); what is not a whole number is a 400."""
    if not isinstance(value, list):
        raise bad_request("hashes is required and must be an array of numbers")
    if len(value) > MAX_HASHES:
        raise bad_request(f"hashes has {len(value)} entries; the limit is {MAX_HASHES}")
    out: list[int] = []
    for i, v in enumerate(value):
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(_integer(v, f"hashes[{i}]"))
            continue
        if isinstance(v, str) and v.strip().lstrip("+-").isdigit():
            out.append(_integer(int(v.strip()), f"hashes[{i}]"))
            continue
        if isinstance(v, (float, str)) and not isinstance(v, bool):
            num = js_number(v)
            if math.isfinite(num) and num.is_integer():
                out.append(_integer(num, f"hashes[{i}]"))
                continue
        raise bad_request(f"hashes[{i}] must be a number, not {v!r:.40}")
    return out


def parse_top_k(value: Any) -> int:
    """`Number(topK) || 10`, then TT's rule: 0 or missing → 10, 1..1000, anything else a 400."""
    if value is None:
        return DEFAULT_TOP_K
    if isinstance(value, (list, dict, bool)):
        raise bad_request("topK must be a number")
    num = js_number(value)
    if num == 0:
        return DEFAULT_TOP_K
    if not math.isfinite(num) or not num.is_integer() or not 1 <= num <= MAX_TOP_K:
        raise bad_request(
            f"topK must be a whole number from 1 to {MAX_TOP_K} (0 or none means {DEFAULT_TOP_K}), not {value!r:.40}"
        )
    return int(num)


def parse_threshold(value: Any) -> float:
    """`Number(threshold) || 0`, then TT's rule: finite and within [-1, 1]."""
    if value is None:
        return 0.0
    if isinstance(value, (list, dict, bool)):
        raise bad_request("threshold must be a number")
    num = js_number(value)
    if not math.isfinite(num) or not -1.0 <= num <= 1.0:
        raise bad_request(f"threshold must be a number from -1 to 1, not {value!r:.40}")
    return num


def parse_search_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad_request("searchText is required and must be a non-blank string")
    return value


def parse_settings(body: Mapping[str, Any], headers: Mapping[str, str] | None) -> SourceSettings:
    try:
        return parse_source_settings(body, headers)
    except SourceSettingsError as exc:
        raise bad_request(str(exc)) from None


# -- vectors -------------------------------------------------------------------------------------


def check_vectors(vectors: Any, count: int, origin: str, status: int) -> np.ndarray:
    """(count, dim) float32, finite, non-zero rows. `status` is what a failure answers: 400 for
    vectors the request carried, 500 for what an embedder returned."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # a float64 beyond float32 becomes inf: refused below
            arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):
        raise VectorApiError(status, f"{origin} are not arrays of numbers") from None
    if arr.ndim != 2 or arr.shape[0] != count:
        raise VectorApiError(status, f"{origin}: expected {count} vectors of one length, got shape {tuple(arr.shape)}")
    if arr.shape[1] == 0:
        raise VectorApiError(status, f"{origin}: a vector is empty")
    if not np.isfinite(arr).all():
        raise VectorApiError(status, f"{origin}: a vector holds NaN or an infinite value")
    norms = np.linalg.norm(arr.astype(np.float64), axis=1)
    if (norms == 0).any():
        raise VectorApiError(status, f"{origin}: a vector is all zeros and cannot be normalised")
    return arr


_NUMBER_TYPES = frozenset({int, float})


def _precomputed_vector(settings: SourceSettings, text: str) -> list:
    """The request's vector for `text`, shape-checked one by one (bools, strings, nesting: 400)."""
    emb = settings.embeddings
    if emb is None:
        raise bad_request(
            f"source {settings.source} needs the vectors in `embeddings` (an object mapping each text to its vector)"
        )
    if text not in emb:
        raise bad_request(f"embeddings has no vector for the text {text[:60]!r}")
    vec = emb[text]
    if not isinstance(vec, list) or not vec:
        raise bad_request(f"the vector for {text[:60]!r} must be a non-empty array of numbers")
    if len(vec) > MAX_DIMENSION:
        raise bad_request(f"the vector for {text[:60]!r} has {len(vec)} numbers; the limit is {MAX_DIMENSION}")
    if not set(map(type, vec)) <= _NUMBER_TYPES:  # JSON numbers only: no bool, null, string or nesting
        bad = next(x for x in vec if type(x) not in _NUMBER_TYPES)
        raise bad_request(f"the vector for {text[:60]!r} holds {bad!r:.20}, which is not a number")
    return vec


@dataclass(frozen=True)
class Resolved:
    source: str
    profile: EmbeddingProfile
    embedder: Embedder | None  # None for precomputed sources
    remote: bool = False


RemoteFactory = Callable[[SourceSettings], "Embedder | None"]


def default_remote_factory(settings: SourceSettings) -> Embedder | None:
    """Hook for remote sources (llamacpp, vllm, ollama, extras, cloud providers): an embedder
    calling the URL the request names, built by dle_desktop.vectors.remote when it provides one
    (`embedder_for_st_source(settings)`). None means the source is not available here."""
    try:
        from dle_desktop.vectors import remote
    except ImportError:
        return None
    make = getattr(remote, "embedder_for_st_source", None)
    if make is None:
        return None
    return make(settings)


class VectorService:
    """The seven routes' behaviour. `store` is a VectorStore or a zero-argument callable making one
    on first use (off the event loop). The store is thread-safe; its calls run on a small pool so
    the engine loop never blocks on disk or numpy."""

    def __init__(
        self,
        store: Any,
        local_embedder_factory: Callable[[], Embedder] | None,
        remote_factory: RemoteFactory | None = default_remote_factory,
        own_port: Callable[[], int | None] = lambda: None,
    ) -> None:
        """`own_port`: the port our HTTP server listens on (None before it does); a remote
        source pointed at it is named OWN_SERVER in its scope, so a port change keeps it."""
        self._own_port = own_port
        #: (collection, source, canonical key) → the stored key to use (a scope written before
        #: endpoints were canonical, when one exists); cleared by purges.
        self._scope_keys: dict[tuple[str, str, str], str] = {}
        self._store_or_factory = store
        self._store: Any = None
        self._local_factory = local_embedder_factory
        self._local: Embedder | None = None
        self._remote_factory = remote_factory
        self._executor = ThreadPoolExecutor(max_workers=STORE_THREADS, thread_name_prefix="dle-vector-store")
        self._store_lock = threading.Lock()
        self._closed = False

    # -- plumbing ---------------------------------------------------------------------------
    def get_store(self) -> Any:
        """The store, opened on first use. One VectorStore per folder: other users of the vectors
        folder (the vault's semantic search) should share this one."""
        with self._store_lock:
            if self._closed:
                raise RuntimeError("the vector service is closed")
            if self._store is None:
                s = self._store_or_factory
                self._store = s() if callable(s) and not hasattr(s, "insert") else s
            return self._store

    async def _store_call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise VectorApiError(
                500, "the vector store is closed (DLE Desktop is shutting down)", "vector_store_unavailable"
            )

        def run():
            return getattr(self.get_store(), method)(*args)

        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, run)
        except VectorConflict as exc:
            raise VectorApiError(409, f"Conflict: {exc}") from None
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        except OSError as exc:
            log.exception("vector store %s failed", method)
            raise VectorApiError(
                500, f"the vector store could not {method}: {exc.strerror or exc}", "vector_store_unavailable"
            ) from None
        except Exception as exc:
            if not self._closed:
                log.exception("vector store %s failed", method)
            raise VectorApiError(
                500, f"the vector store could not {method}: {exc}", "vector_store_unavailable"
            ) from None

    def local_embedder(self) -> Embedder:
        """Our llama.cpp embedder; EmbeddingError(503) when no model is configured or it fails to load."""
        if self._local is None:
            if self._local_factory is None:
                raise EmbeddingError("no local embedding model is configured", 503)
            try:
                self._local = self._local_factory()
            except EmbeddingError:
                raise
            except Exception as exc:
                log.exception("the local embedding model could not be set up")
                raise EmbeddingError(f"the local embedding model could not be loaded: {exc}", 503) from exc
        return self._local

    async def embed_local(self, texts: list[str], *, query: bool = False) -> tuple[np.ndarray, EmbeddingProfile]:
        """For the embedding-backend endpoints: (vectors, profile); raises EmbeddingError."""
        embedder = self.local_embedder()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32), embedder.profile
        vectors = await embedder.embed(list(texts), query=query)
        try:
            arr = check_vectors(vectors, len(texts), "the local embedder's vectors", 500)
        except VectorApiError as exc:
            raise EmbeddingError(exc.message, 500) from None
        return arr, embedder.profile

    def _resolve(self, settings: SourceSettings) -> Resolved:
        source = settings.source
        if source in PRECOMPUTED_SOURCES:
            if not settings.model:
                raise bad_request(f"model is required for source {source} (the model that computed the embeddings)")
            profile = EmbeddingProfile(
                model_id=settings.model, quantisation="", prompt_version="precomputed", max_tokens=0, endpoint=""
            )
            return Resolved(source, profile, None)
        if source == "transformers":
            try:
                embedder = self.local_embedder()
            except EmbeddingError as exc:
                raise from_embedding_error(exc) from None
            return Resolved(source, embedder.profile, embedder)
        missing = {
            "llamacpp": [("apiUrl", settings.api_url)],
            "vllm": [("apiUrl", settings.api_url), ("model", settings.model)],
            "ollama": [("apiUrl", settings.api_url), ("model", settings.model)],
            "extras": [("extrasUrl", settings.extras_url)],
        }.get(source, [])
        for name, value in missing:
            if not value:
                raise bad_request(
                    f"{name} is required for source {source} (in the body, or in the ST 1.12 header for it)"
                )
        remote_embedder: Embedder | None = None
        if self._remote_factory is not None:
            try:
                remote_embedder = self._remote_factory(settings)
            except EmbeddingError as exc:
                raise from_embedding_error(exc) from None
            except (ValueError, TypeError) as exc:
                raise bad_request(f"source {source}: {exc}") from None
        if remote_embedder is None:
            raise bad_request(
                f"source {source} is not available in DLE Desktop; use transformers (our local model), "
                "llamacpp/vllm/ollama/koboldcpp pointed at a server, or precomputed embeddings"
            )
        profile = remote_embedder.profile
        if profile.endpoint:
            profile = dataclasses.replace(profile, endpoint=scope_endpoint(source, profile.endpoint, self._own_port()))
        return Resolved(source, profile, remote_embedder, remote=True)

    async def _scope_key(self, collection_id: str, resolved: Resolved) -> str:
        """The profile key a request's scope is stored under: the canonical one, or the key of a
        scope written under another spelling of the same server (localhost / 127.0.0.1, before
        endpoints were canonical), so its vectors are found (the largest, if several)."""
        key = resolved.profile.key()
        if not resolved.remote or not resolved.profile.endpoint:
            return key
        memo = (collection_id, resolved.source, key)
        found = self._scope_keys.get(memo)
        if found is None:
            stored = await self._store_call("profile_keys", collection_id, resolved.source)
            own = self._own_port()
            same = [
                (count, k) for k, count in stored if k == key or canonical_profile_key(resolved.source, k, own) == key
            ]
            found = key if not same or any(k == key for _, k in same) else max(same)[1]
            if found != key:
                log.info(
                    "vector collection %r: using its scope stored under the older endpoint spelling", collection_id
                )
            if len(self._scope_keys) >= 10_000:  # one entry per collection and source seen: bound it
                self._scope_keys.clear()
            self._scope_keys[memo] = found
        return found

    async def _embed(
        self, resolved: Resolved, settings: SourceSettings, texts: list[str], *, query: bool
    ) -> np.ndarray:
        """The vectors for `texts` (unique), validated; raises VectorApiError."""
        if resolved.embedder is None:
            return check_vectors(
                [_precomputed_vector(settings, t) for t in texts], len(texts), "the vectors in embeddings", 400
            )
        step = REMOTE_BATCH if resolved.remote else LOCAL_BATCH
        parts: list[np.ndarray] = []
        try:
            for start in range(0, len(texts), step):
                batch = texts[start : start + step]
                vectors = await resolved.embedder.embed(batch, query=query)
                parts.append(check_vectors(vectors, len(batch), f"the {resolved.source} embedder's vectors", 500))
        except EmbeddingError as exc:
            raise from_embedding_error(exc) from None
        except VectorApiError:
            raise
        except Exception as exc:
            log.exception("the %s embedder failed", resolved.source)
            raise VectorApiError(500, f"the {resolved.source} embedder failed: {exc}") from None
        if len(parts) == 1:
            return parts[0]
        if len({p.shape[1] for p in parts}) > 1:
            raise VectorApiError(
                500, f"the {resolved.source} embedder returned vectors of different lengths in one insert"
            )
        return np.concatenate(parts, axis=0)

    async def _query_vector(self, resolved: Resolved, settings: SourceSettings, search_text: str) -> np.ndarray:
        return (await self._embed(resolved, settings, [search_text], query=True))[0]

    # -- the routes -------------------------------------------------------------------------
    async def list(self, collection_id: str, settings: SourceSettings) -> list[int]:
        resolved = self._resolve(settings)
        hashes = await self._store_call(
            "list_hashes", collection_id, resolved.source, await self._scope_key(collection_id, resolved)
        )
        return [int(h) for h in hashes]

    async def insert(self, collection_id: str, settings: SourceSettings, items: builtins.list[StoredItem]) -> int:
        """Embeds every text (unique ones once), validates the whole batch, then one commit."""
        if not items:
            return 0
        resolved = self._resolve(settings)
        unique = list(dict.fromkeys(it.text for it in items))
        vectors = await self._embed(resolved, settings, unique, query=False)
        row = {text: i for i, text in enumerate(unique)}
        matrix = vectors[[row[it.text] for it in items]]
        return await self._store_call(
            "insert",
            collection_id,
            resolved.source,
            await self._scope_key(collection_id, resolved),
            list(items),
            matrix,
        )

    async def delete(self, collection_id: str, settings: SourceSettings, hashes: builtins.list[int]) -> int:
        resolved = self._resolve(settings)
        if not hashes:
            return 0
        return await self._store_call(
            "delete", collection_id, resolved.source, await self._scope_key(collection_id, resolved), list(hashes)
        )

    async def query(
        self, collection_id: str, settings: SourceSettings, search_text: str, top_k: int, threshold: float
    ) -> dict:
        resolved = self._resolve(settings)
        vector = await self._query_vector(resolved, settings, search_text)
        hits: list[Hit] = await self._store_call(
            "query", collection_id, resolved.source, await self._scope_key(collection_id, resolved), vector, top_k
        )
        kept = [h for h in hits[:top_k] if h.score >= threshold]  # TT: hashes and metadata filtered together
        return {"metadata": [_metadata(h) for h in kept], "hashes": [int(h.item.hash) for h in kept]}

    async def query_multi(
        self,
        collection_ids: builtins.list[str],
        settings: SourceSettings,
        search_text: str,
        top_k: int,
        threshold: float,
    ) -> dict:
        """One query vector; each collection's top-K pooled, sorted globally, thresholded, cut to top-K."""
        if not collection_ids:
            return {}
        resolved = self._resolve(settings)
        vector = await self._query_vector(resolved, settings, search_text)
        pooled: list[tuple[float, int, str, Hit]] = []
        order = 0
        for cid in collection_ids:
            hits = await self._store_call(
                "query", cid, resolved.source, await self._scope_key(cid, resolved), vector, top_k
            )
            for h in hits[:top_k]:
                pooled.append((h.score, order, cid, h))
                order += 1
        pooled.sort(key=lambda t: (-t[0], t[1]))
        kept = [t for t in pooled if t[0] >= threshold][:top_k]
        out: dict[str, dict] = {}
        for _, _, cid, h in kept:
            group = out.setdefault(cid, {"hashes": [], "metadata": []})
            group["hashes"].append(int(h.item.hash))
            group["metadata"].append(_metadata(h))
        return out

    async def purge(self, collection_id: str) -> int:
        """Every scope of the collection, whatever the source or model."""
        self._scope_keys = {k: v for k, v in self._scope_keys.items() if k[0] != collection_id}
        return await self._store_call("purge", collection_id)

    async def purge_all(self) -> None:
        """Every vector of every source (never the model cache)."""
        self._scope_keys.clear()
        await self._store_call("purge_all")

    # -- lifecycle --------------------------------------------------------------------------
    async def aclose(self) -> None:
        if self._closed:
            return
        await asyncio.to_thread(self.close)
        self._local = None  # the factory's owner (the engine) closes the embedder

    def close(self) -> None:
        """Synchronous close, for callers without a loop."""
        with self._store_lock:
            if self._closed:
                return
            self._closed = True
            store, self._store = self._store, None
        self._executor.shutdown(wait=True)  # calls in flight finish first
        if store is not None:
            try:
                store.close()
            except Exception:
                log.exception("closing the vector store failed")
        self._local = None


def _metadata(hit: Hit) -> dict:
    item = hit.item
    return {"hash": int(item.hash), "text": item.text, "index": int(item.index)}
