"""Remote embedding sources: the same `Embedder` protocol over HTTP (httpx).

Supported wire formats (st-wire-contracts.md §3 for the local servers; the providers' public APIs
for the clouds):

| kind       | request                                                    | answer                          |
|------------|------------------------------------------------------------|---------------------------------|
| openai     | POST <base>/embeddings or <base>/v1/embeddings {input, model} | data[].index/embedding       |
| llamacpp   | POST <base without /v1>/v1/embeddings {input}              | data[].index/embedding          |
| vllm       | POST <base without /v1>/v1/embeddings {input, model}       | data[].index/embedding          |
| ollama     | POST <origin>/api/embed {input, model, truncate}           | embeddings[][]                  |
| koboldcpp  | POST <origin>/api/extra/embeddings {input}                 | data[] (or [[...]]), model      |
| cohere     | POST <base>/v1/embed {texts, model, input_type}            | embeddings[][] or {float: ...}  |
| google     | POST <base>/v1beta/models/<m>:batchEmbedContents {requests}| embeddings[].values             |
| mistral    | POST <base>/v1/embeddings {input, model: mistral-embed}    | data[].index/embedding          |
| nomic      | POST <base>/v1/embedding/text {texts, model, task_type}    | embeddings[][]                  |
| extras     | POST <origin>/api/embeddings/compute {text: [...]}         | embedding[][]                   |

Queries and documents: Cohere (`input_type` search_query / search_document), Google (`taskType`
RETRIEVAL_QUERY / RETRIEVAL_DOCUMENT) and Nomic (`task_type`) are told; for the others a
`query_instruction` can be put before queries (needed when the server runs Qwen3-Embedding).

API keys come from the SecretStore (the OS keyring) by name, at request time, and are registered
with the log scrubber; they are sent in headers only (Google's too: `x-goog-api-key`, never in the
URL), and any text from the server that goes into an error message is scrubbed.

Failures become `EmbeddingError`s: 401/403 → 401 "the API key was refused"; 429 → 429; other
HTTP errors → 502 with the server's words; unreachable or too slow → 503; an answer that is not
JSON or has the wrong shape → 502 naming what was wrong (OpenAI-style `data[]` is ordered by
`index`; a count that does not match the texts is an error, never a silent misalignment).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np

from dle_desktop.logging_setup import register_secret, scrub
from dle_desktop.vectors.contracts import EmbeddingError, EmbeddingProfile
from dle_desktop.vectors.normalise import normalise_vectors
from dle_desktop.vectors.query_head import QWEN3_QUERY_INSTRUCTION

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProviderInfo:
    label: str
    default_url: str  # "" = the user must give one
    default_model: str  # "" = none needed / none known
    secret_name: str  # the SecretStore name (SillyTavern's secret keys)
    key_required: bool
    batch_size: int
    model_required: bool = False


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo(
        "OpenAI-compatible",
        "https://api.openai.com/v1",
        "text-embedding-3-small",
        "api_key_openai",
        False,
        256,
        model_required=True,
    ),
    "llamacpp": ProviderInfo("llama.cpp server", "", "", "api_key_llamacpp", False, 32),
    "vllm": ProviderInfo("vLLM", "", "", "api_key_vllm", False, 64, model_required=True),
    "ollama": ProviderInfo("Ollama", "http://127.0.0.1:11434", "", "api_key_ollama", False, 32, model_required=True),
    "koboldcpp": ProviderInfo("KoboldCpp", "", "", "api_key_koboldcpp", False, 32),
    "cohere": ProviderInfo("Cohere", "https://api.cohere.com", "embed-multilingual-v3.0", "api_key_cohere", True, 96),
    "google": ProviderInfo(
        "Google AI Studio",
        "https://generativelanguage.googleapis.com",
        "text-embedding-004",
        "api_key_makersuite",
        True,
        100,
    ),
    "mistral": ProviderInfo("Mistral", "https://api.mistral.ai", "mistral-embed", "api_key_mistralai", True, 64),
    "nomic": ProviderInfo("Nomic", "https://api-atlas.nomic.ai", "nomic-embed-text-v1.5", "api_key_nomicai", True, 64),
    "extras": ProviderInfo("SillyTavern Extras", "", "", "", False, 32),
}


@dataclass(frozen=True)
class RemoteSource:
    """Where and how to embed remotely. `base_url` "" → the provider's public URL; `model` "" →
    its default; `secret_name` None → the provider's usual secret name; `timeout` bounds each
    request as a whole (connect, send, wait, read)."""

    kind: str
    base_url: str = ""
    model: str = ""
    secret_name: str | None = None
    timeout: float = 60.0
    batch_size: int | None = None
    query_instruction: str = ""
    extra_headers: tuple[tuple[str, str], ...] = ()
    keep_alive: bool = False  # Ollama: keep the model loaded (keep_alive -1), as ST's "keep" does
    #: A key given with the request itself (SillyTavern Extras' key travels in ST's request);
    #: otherwise the key is read from the SecretStore.
    api_key: str | None = field(default=None, repr=False)


def _trim_v1(url: str) -> str:
    """SillyTavern's trimV1: one trailing '/' and then one trailing '/v1' removed."""
    url = url[:-1] if url.endswith("/") else url
    return url[:-3] if url.endswith("/v1") else url


def _origin(url: str) -> str:
    """scheme://host[:port] (IPv6 hosts keep their brackets; credentials in the URL stay)."""
    return str(httpx.URL(url).copy_with(raw_path=b"/", query=None, fragment=None)).rstrip("/")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return scrub(text[:limit] + ("…" if len(text) > limit else ""))


class RemoteEmbedder:
    """An `Embedder` backed by a remote server. Reuses one httpx client per event loop."""

    def __init__(
        self, source: RemoteSource, secrets: Any | None = None, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if source.kind not in PROVIDERS:
            raise EmbeddingError(f"unknown embedding source {source.kind!r}; known: {', '.join(PROVIDERS)}", 400)
        self.source = source
        self.provider = PROVIDERS[source.kind]
        base = (source.base_url or self.provider.default_url).strip()
        if not base:
            raise EmbeddingError(f"{self.provider.label} needs a server URL", 400)
        try:
            u = httpx.URL(base)
        except httpx.InvalidURL as exc:
            raise EmbeddingError(f"invalid URL for {self.provider.label}: {exc}", 400) from exc
        if u.scheme not in ("http", "https") or not u.host:
            raise EmbeddingError(f"the {self.provider.label} URL must be http(s)://host[:port][/path]", 400)
        self.base_url = base.rstrip("/")
        self.model = source.model.strip() or self.provider.default_model
        if self.provider.model_required and not self.model:
            raise EmbeddingError(f"{self.provider.label} needs a model name", 400)
        self.secret_name = source.secret_name or self.provider.secret_name
        self.batch_size = max(1, source.batch_size or self.provider.batch_size)
        self._secrets = secrets
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        #: The model name KoboldCpp reported in its last answer.
        self.reported_model: str | None = None

    # -- protocol ------------------------------------------------------------------------------

    @property
    def profile(self) -> EmbeddingProfile:
        qi = self.source.query_instruction
        version = "raw" if not qi else ("v1" if qi == QWEN3_QUERY_INSTRUCTION else "i-" + _hash(qi))
        if self.source.kind in ("cohere", "google", "nomic"):
            version = "task-type"
        return EmbeddingProfile(
            model_id=self.model or self.source.kind,
            quantisation="",
            prompt_version=version,
            max_tokens=0,
            endpoint=self.endpoint,
        )

    @property
    def endpoint(self) -> str:
        """The base URL without a trailing slash and without credentials (so the same model on two
        servers never mixes, and no password ends up in a vector scope's metadata)."""
        return str(httpx.URL(self.base_url).copy_with(userinfo=b"")).rstrip("/")

    @property
    def request_url(self) -> str:
        """The URL the embedding requests are posted to."""
        return self._url()

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise EmbeddingError("texts must be a list of strings", 400)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise EmbeddingError(f"text {i} is a {type(t).__name__}, not a string", 400)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        key = self._key()
        if query and self.source.query_instruction and self.source.kind not in ("cohere", "google", "nomic"):
            texts = [self.source.query_instruction + t for t in texts]
        parts: list[np.ndarray] = []
        client, temporary = self._get_client()
        try:
            for start in range(0, len(texts), self.batch_size):
                chunk = list(texts[start : start + self.batch_size])
                rows = await self._request(client, chunk, query, key)
                vectors = normalise_vectors(rows, expected=len(chunk), dim=parts[0].shape[1] if parts else None)
                parts.append(vectors)
        finally:
            if temporary:
                await client.aclose()
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    # -- plumbing ------------------------------------------------------------------------------

    def _key(self) -> str | None:
        key = self.source.api_key
        if not key and self._secrets is not None and self.secret_name:
            try:
                key = self._secrets.get(self.secret_name)
            except Exception as exc:  # noqa: BLE001 - a broken keyring must not leak details
                log.warning("reading the %s key failed: %s", self.provider.label, type(exc).__name__)
        if key:
            key = key.strip()
            register_secret(key)
        if not key and self.provider.key_required:
            raise EmbeddingError(f"no API key is set for {self.provider.label} (secret {self.secret_name!r})", 401)
        return key or None

    def _get_client(self) -> tuple[httpx.AsyncClient, bool]:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop and not self._client.is_closed:
            return self._client, False
        if self._client is not None and (self._client_loop is None or self._client_loop.is_closed()):
            self._client = None  # its loop is gone, and its connections with it
        client = httpx.AsyncClient(
            transport=self._transport,
            follow_redirects=False,
            timeout=httpx.Timeout(self.source.timeout, connect=min(self.source.timeout, 10.0)),
        )
        if self._client is None:
            self._client, self._client_loop = client, loop
            return client, False
        return client, True  # another loop is using the shared client: one for this call only

    def _url(self) -> str:
        kind, base = self.source.kind, self.base_url
        if kind == "openai":
            if base.endswith("/embeddings"):
                return base
            return base + ("/embeddings" if httpx.URL(base).path.strip("/") else "/v1/embeddings")
        if kind in ("llamacpp", "vllm"):
            return _trim_v1(base) + "/v1/embeddings"
        if kind == "ollama":
            return _origin(base) + "/api/embed"
        if kind == "koboldcpp":
            return _origin(base) + "/api/extra/embeddings"
        if kind == "extras":
            return _origin(base) + "/api/embeddings/compute"
        if kind == "cohere":
            return _trim_v1(base) + "/v1/embed"
        if kind == "google":
            root = base[: -len("/v1beta")] if base.endswith("/v1beta") else base
            return f"{root}/v1beta/models/{quote(self._google_model(), safe='-._~')}:batchEmbedContents"
        if kind == "mistral":
            return _trim_v1(base) + "/v1/embeddings"
        if kind == "nomic":
            return _trim_v1(base) + "/v1/embedding/text"
        raise AssertionError(kind)  # pragma: no cover

    def _google_model(self) -> str:
        return self.model[len("models/") :] if self.model.startswith("models/") else self.model

    def _body(self, texts: list[str], query: bool) -> dict[str, Any]:
        kind = self.source.kind
        if kind == "llamacpp":
            return {"input": texts}
        if kind == "koboldcpp":
            return {"input": texts}
        if kind == "ollama":
            body: dict[str, Any] = {"model": self.model, "input": texts, "truncate": True}
            if self.source.keep_alive:
                body["keep_alive"] = -1
            return body
        if kind == "extras":
            return {"text": texts}
        if kind == "cohere":
            return {
                "model": self.model,
                "texts": texts,
                "input_type": "search_query" if query else "search_document",
                "truncate": "END",
                "embedding_types": ["float"],
            }
        if kind == "google":
            task = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
            name = "models/" + self._google_model()
            return {"requests": [{"model": name, "content": {"parts": [{"text": t}]}, "taskType": task} for t in texts]}
        if kind == "nomic":
            return {"model": self.model, "texts": texts, "task_type": "search_query" if query else "search_document"}
        body = {"input": texts}
        if self.model:
            body["model"] = self.model
        if kind == "openai":
            body["encoding_format"] = "float"
        return body

    def _headers(self, key: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", **dict(self.source.extra_headers)}
        if key:
            if self.source.kind == "google":
                headers["x-goog-api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _request(self, client: httpx.AsyncClient, texts: list[str], query: bool, key: str | None) -> Any:
        label = self.provider.label
        url = self._url()
        try:
            async with asyncio.timeout(self.source.timeout):
                resp = await client.post(url, content=json.dumps(self._body(texts, query)), headers=self._headers(key))
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise EmbeddingError(f"{label} did not answer within {self.source.timeout:g} s", 503) from exc
        except httpx.ConnectError as exc:
            where = str(httpx.URL(_origin(url)).copy_with(userinfo=b""))
            raise EmbeddingError(
                f"cannot reach {label} at {where}: {_short(str(exc)) or 'connection refused'}", 503
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(
                f"the connection to {label} failed: {type(exc).__name__}: {_short(str(exc))}", 502
            ) from exc
        status = resp.status_code
        if status in (401, 403):
            raise EmbeddingError(f"{label}: the API key was refused (HTTP {status}): {_short(resp.text)}", 401)
        if status == 429:
            wait = resp.headers.get("retry-after")
            raise EmbeddingError(
                f"{label} is rate limiting requests (HTTP 429)"
                + (f"; retry after {_short(wait, 40)} s" if wait else ""),
                429,
            )
        if not 200 <= status < 300:
            raise EmbeddingError(f"{label} answered HTTP {status}: {_short(resp.text) or resp.reason_phrase}", 502)
        try:
            data = json.loads(resp.content)
        except ValueError as exc:
            raise EmbeddingError(f"{label} answered with invalid JSON: {_short(resp.text, 120)}", 502) from exc
        return self._parse(data, len(texts))

    def _parse(self, data: Any, n: int) -> list[Any]:
        label = self.provider.label
        kind = self.source.kind

        def fail(what: str) -> EmbeddingError:
            return EmbeddingError(f"{label} answered with an unexpected shape: {what}", 502)

        if not isinstance(data, dict):
            raise fail(f"expected a JSON object, got {type(data).__name__}")
        if kind in ("openai", "llamacpp", "vllm", "mistral", "koboldcpp"):
            items = data.get("data")
            if not isinstance(items, list):
                raise fail("'data' is missing or not a list")
            if kind == "koboldcpp":
                model = data.get("model")
                if isinstance(model, str) and model.strip():
                    self.reported_model = model.strip()
                items = [x[0] if isinstance(x, list) and x else x for x in items]
            return _by_index(items, n, fail)
        if kind in ("ollama", "nomic"):
            emb = data.get("embeddings")
            if not isinstance(emb, list):
                raise fail("'embeddings' is missing or not a list")
            return _vectors(emb, n, "embeddings", fail)
        if kind == "extras":
            emb = data.get("embedding")
            if not isinstance(emb, list):
                raise fail("'embedding' is missing or not a list")
            return _vectors(emb, n, "embedding", fail)
        if kind == "cohere":
            emb = data.get("embeddings")
            if isinstance(emb, dict):
                emb = emb.get("float")
            if not isinstance(emb, list):
                raise fail("'embeddings' (or 'embeddings.float') is missing or not a list")
            return _vectors(emb, n, "embeddings", fail)
        if kind == "google":
            emb = data.get("embeddings")
            if not isinstance(emb, list):
                raise fail("'embeddings' is missing or not a list")
            values = []
            for i, item in enumerate(emb):
                if not isinstance(item, dict) or "values" not in item:
                    raise fail(f"embeddings[{i}] has no 'values'")
                values.append(item["values"])
            return _vectors(values, n, "embeddings[].values", fail)
        raise AssertionError(kind)  # pragma: no cover


def _hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _vectors(rows: list[Any], n: int, where: str, fail: Callable[[str], EmbeddingError]) -> list[Any]:
    if len(rows) != n:
        raise fail(f"{n} texts were sent but {len(rows)} embeddings came back")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise fail(f"{where}[{i}] is not a non-empty list of numbers")
        if isinstance(row[0], list):
            raise fail(f"{where}[{i}] is a list of token vectors (is the server's pooling turned off?)")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row):
            raise fail(f"{where}[{i}] contains something that is not a number")
    return rows


def _by_index(items: list[Any], n: int, fail: Callable[[str], EmbeddingError]) -> list[Any]:
    """OpenAI-style `data[]`: each item {index, embedding}, put in `index` order; every index
    from 0 to n-1 exactly once."""
    if len(items) != n:
        raise fail(f"{n} texts were sent but {len(items)} embeddings came back")
    rows: list[Any] = [None] * n
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            raise fail(f"data[{pos}] is not an object")
        index = item.get("index", pos)
        if not isinstance(index, int) or isinstance(index, bool):
            raise fail(f"data[{pos}].index is not an integer")
        if not 0 <= index < n:
            raise fail(f"data[{pos}].index {index} is out of range for {n} texts")
        if rows[index] is not None:
            raise fail(f"data index {index} appears twice")
        if "embedding" not in item:
            raise fail(f"data[{pos}] has no 'embedding'")
        rows[index] = item["embedding"]
    return _vectors(rows, n, "data[].embedding", fail)


def make_remote_embedder(
    kind: str,
    *,
    base_url: str = "",
    model: str = "",
    secrets: Any | None = None,
    secret_name: str | None = None,
    timeout: float = 60.0,
    query_instruction: str = "",
    transport: httpx.AsyncBaseTransport | None = None,
) -> RemoteEmbedder:
    """A RemoteEmbedder for `kind` (one of PROVIDERS)."""
    return RemoteEmbedder(
        RemoteSource(
            kind=kind,
            base_url=base_url,
            model=model,
            secret_name=secret_name,
            timeout=timeout,
            query_instruction=query_instruction,
        ),
        secrets,
        transport=transport,
    )


# ----------------------------------------------------------------------------------------------
# SillyTavern sources → remote embedders (the vector service's hook)

#: ST source name → (our kind, fixed base URL for cloud sources).
ST_SOURCES: dict[str, tuple[str, str]] = {
    "llamacpp": ("llamacpp", ""),
    "vllm": ("vllm", ""),
    "ollama": ("ollama", ""),
    "extras": ("extras", ""),
    "openai": ("openai", "https://api.openai.com/v1"),
    "togetherai": ("openai", "https://api.together.xyz/v1"),
    "openrouter": ("openai", "https://openrouter.ai/api/v1"),
    "mistral": ("mistral", ""),
    "cohere": ("cohere", ""),
    "nomicai": ("nomic", ""),
    "palm": ("google", ""),
}
#: SillyTavern's secret names for the OpenAI-compatible clouds above.
_ST_SECRET_NAMES = {"togetherai": "api_key_togetherai", "openrouter": "api_key_openrouter"}
#: ST's default models where a request may come without one.
_ST_DEFAULT_MODELS = {
    "openai": "text-embedding-ada-002",
    "togetherai": "togethercomputer/m2-bert-80M-32k-retrieval",
    "openrouter": "openai/text-embedding-3-small",
}

_default_secrets: Any = None
_cache: collections.OrderedDict[tuple, RemoteEmbedder] = collections.OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 16


def configure_secrets(secrets: Any) -> None:
    """The SecretStore remote embedders built by `embedder_for_st_source` read keys from."""
    global _default_secrets
    _default_secrets = secrets
    with _cache_lock:
        _cache.clear()


def _secrets() -> Any:
    global _default_secrets
    if _default_secrets is None:
        from dle_desktop.state.secrets import SecretStore

        _default_secrets = SecretStore()
    return _default_secrets


def embedder_for_st_source(settings: Any, *, secrets: Any | None = None) -> RemoteEmbedder | None:
    """A remote embedder for a SillyTavern `/api/vector/*` request's source settings
    (`dle_desktop.vectors.source_settings.SourceSettings`), or None when the source is not a
    remote one we support (transformers is local; koboldcpp and webllm arrive precomputed).
    Embedders are cached per settings, so connections are reused. Raises EmbeddingError (400)
    for unusable settings (no URL, no model)."""
    st_source = getattr(settings, "source", "")
    if st_source not in ST_SOURCES:
        return None
    kind, fixed_url = ST_SOURCES[st_source]
    url = settings.extras_url if kind == "extras" else (fixed_url or getattr(settings, "api_url", ""))
    model = (getattr(settings, "model", "") or _ST_DEFAULT_MODELS.get(st_source, "")).strip()
    source = RemoteSource(
        kind=kind,
        base_url=(url or "").strip(),
        model=model,
        secret_name=_ST_SECRET_NAMES.get(st_source),
        keep_alive=bool(getattr(settings, "keep", False)) and kind == "ollama",
        api_key=(getattr(settings, "extras_key", "") or None) if kind == "extras" else None,
    )
    store = secrets if secrets is not None else _secrets()
    key = (source, id(store))
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    embedder = RemoteEmbedder(source, store)
    with _cache_lock:
        _cache[key] = embedder
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)  # its idle connections close when it is garbage-collected
    return embedder


__all__ = [
    "PROVIDERS",
    "ST_SOURCES",
    "ProviderInfo",
    "RemoteEmbedder",
    "RemoteSource",
    "configure_secrets",
    "embedder_for_st_source",
    "make_remote_embedder",
]
