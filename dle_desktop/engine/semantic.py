"""The vault's semantic search inside the engine: keeps the entries' embeddings in step with each
new snapshot (in the background, pausable, with progress) and answers lookups for the pipeline's
semantic stage.

Semantic search is an extra, never a precondition: when the model is missing, still loading,
or broken, or the entries are only partly embedded, a lookup answers with what it can and a note
that says why (the note lands in the decision record), and keyword retrieval goes on unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.semantic_query import SemanticQuery, clean_message
from dle_desktop.vectors.vault_embeddings import VaultEmbeddings, searchable

log = logging.getLogger(__name__)

#: Lookups ask for this many times `semantic_top_k` hits: the stage drops entries that keywords
#: already matched, constants and cooling ones, and still wants `semantic_top_k` left.
OVERFETCH = 4
MIN_FETCH = 20
#: Messages one prefetch embeds at most (a reply and the message being typed; a little slack).
PREFETCH_MAX = 4

#: (entry uid, similarity of its best passage, that passage's index), best first
Hits = list[tuple[str, float, int]]


@dataclass
class SemanticStatus:
    """What the window shows. state: off | waiting | embedding | paused | ready | error."""

    state: str = "off"
    done: int = 0
    total: int = 0
    embedded: int = 0  # entries with a vector in the current profile
    entries: int = 0  # entries that should have one
    error: str | None = None
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def fetch_count(top_k: int) -> int:
    return max(MIN_FETCH, OVERFETCH * top_k)


class SemanticSearch:
    """One per engine. `store_getter` and `embedder_getter` return the engine's shared vector
    store and local embedder (a second store on the same folder would be refused)."""

    def __init__(
        self,
        store_getter: Callable[[], Any],
        embedder_getter: Callable[[], Any],
        on_status: Callable[[SemanticStatus], None] | None = None,
    ) -> None:
        self._store_getter = store_getter
        self._embedder_getter = embedder_getter
        self._on_status = on_status
        self._vault: VaultEmbeddings | None = None
        self._task: asyncio.Task | None = None
        self._paused = False
        self._prefetches: set[asyncio.Task] = set()
        self.status = SemanticStatus()

    # -- state ------------------------------------------------------------------------------
    def _set(self, **changes: Any) -> None:
        for k, v in changes.items():
            setattr(self.status, k, v)
        if self._on_status is not None:
            try:
                self._on_status(SemanticStatus(**asdict(self.status)))
            except Exception:
                log.exception("semantic status listener failed")

    def _vault_embeddings(self) -> VaultEmbeddings:
        """Made on first need; raises EmbeddingError / VectorStoreBusy / OSError with a message."""
        if self._vault is None:
            embedder = self._embedder_getter()
            store = self._store_getter()
            self._vault = VaultEmbeddings(store, embedder)
            self._vault.pause(self._paused)
        return self._vault

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self, paused: bool) -> None:
        self._paused = paused
        if self._vault is not None:
            self._vault.pause(paused)
        if self.status.state in ("embedding", "paused"):
            self._set(state="paused" if paused else "embedding")

    # -- background embedding ---------------------------------------------------------------
    def schedule(self, snapshot: IndexSnapshot) -> asyncio.Task:
        """Embed what is new or changed in `snapshot` (a newer call supersedes a running one;
        what it already committed is kept, so nothing is embedded twice)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = asyncio.get_running_loop().create_task(self._run(snapshot))
        return self._task

    async def _run(self, snapshot: IndexSnapshot) -> None:
        try:
            vault = self._vault_embeddings()
        except Exception as exc:  # noqa: BLE001 - reported, never raised into the engine
            self._set(state="error", error=_describe(exc), done=0, total=0)
            return
        wanted = len(searchable(snapshot))
        self._set(
            state="paused" if self._paused else "embedding",
            error=None,
            done=0,
            total=0,
            entries=wanted,
            model=_model_name(vault),
        )

        def progress(done: int, total: int) -> None:
            self._set(done=done, total=total, state="paused" if self._paused else "embedding")

        try:
            stats = await vault.sync(snapshot, progress=progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the embedder is a status, not a crash of the engine
            log.warning("embedding the vault's entries failed: %s", exc)
            self._set(state="error", error=_describe(exc))
            return
        embedded = await asyncio.to_thread(vault.embedded_entries, snapshot)
        log.info(
            "semantic index: %d new, %d removed, %d of %d entries embedded",
            stats.embedded,
            stats.removed,
            embedded,
            wanted,
        )
        self._set(state="ready", done=stats.total, total=stats.total, embedded=embedded)

    async def wait_idle(self) -> SemanticStatus:
        """Until the running embedding pass (if any) ends (for the CLI and tests)."""
        while self._task is not None and not self._task.done():
            try:
                await asyncio.shield(self._task)
            except asyncio.CancelledError:
                if self._task.cancelled():
                    continue  # superseded by a newer pass: wait for that one
                raise
        return self.status

    async def aclose(self) -> None:
        pending = [t for t in (self._task, *self._prefetches) if t is not None and not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        self._vault = None

    # -- lookups ----------------------------------------------------------------------------
    def _note(self) -> str | None:
        s = self.status
        if s.state in ("embedding", "paused") and s.total:
            return f"semantic search used the entries embedded so far ({s.done} of {s.total} new ones done)"
        if s.state == "paused":
            return "semantic search: embedding the entries is paused; results cover what was embedded before"
        return None

    async def lookup(self, query: SemanticQuery | str, top_k: int) -> tuple[Hits, str | None]:
        """(entry uid, similarity) best first, and a note when the answer is partial or missing.
        `query` is the pipeline's `SemanticQuery` (each message embedded once and cached, the
        newest weighted most) or one text."""
        if isinstance(query, str):
            if not query.strip():
                return [], None
            parts, weight = [query], 1.0
        else:
            parts, weight = list(query.parts), query.weights()[0]
        try:
            vault = self._vault_embeddings()
            hits = await vault.search(parts, fetch_count(top_k), weight)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the generation goes on without semantic hits, and says why
            return [], f"semantic search unavailable: {_describe(exc)}"
        return hits, self._note()

    def query_counters(self) -> dict[str, int]:
        """The query cache's counters since the engine started: texts prefetched, lookups' texts
        found cached (a prefetch's included) and texts a lookup had to embed itself."""
        v = self._vault
        if v is None:
            return {"prefetched": 0, "query_cache_hits": 0, "query_cache_misses": 0}
        return {
            "prefetched": v.prefetched,
            "query_cache_hits": v.query_cache_hits,
            "query_cache_misses": v.query_cache_misses,
        }

    def prefetch(self, messages: Sequence[str]) -> asyncio.Task | None:
        """Embed chat messages as query parts in the background, cleaned as the semantic query
        cleans them, so the generation that includes them finds them cached. At most
        `PREFETCH_MAX` texts; a failure is logged, never raised (it only costs a cache miss)."""
        parts = [p for p in (clean_message(m) for m in list(messages)[-PREFETCH_MAX:]) if p]
        if not parts:
            return None
        try:
            vault = self._vault_embeddings()
        except Exception as exc:  # noqa: BLE001 - no model: nothing to warm
            log.debug("semantic prefetch skipped: %s", _describe(exc))
            return None

        async def run() -> None:
            try:
                await vault.warm(parts)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - prefetch is best effort; the generation embeds what is missing
                log.info("semantic prefetch failed: %s", _describe(exc))

        task = asyncio.get_running_loop().create_task(run())
        self._prefetches.add(task)
        task.add_done_callback(self._prefetches.discard)
        return task


def _model_name(vault: VaultEmbeddings) -> str | None:
    path = getattr(vault.embedder, "model_path", None)
    return getattr(path, "name", None) or None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
