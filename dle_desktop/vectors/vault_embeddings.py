"""Semantic search over the vault's own entries.

Entries are embedded in the background into the vector store (one scope per embedding
profile) as passages (core/pipeline/passages.py: title + summary, then the body in chunks of
whole paragraphs). Each row is one passage, keyed by the entry, the passage's place and its text,
so an unchanged passage is never embedded again, an edited entry re-embeds only the passages
whose text changed, and rows of removed entries or passages are dropped. A query is scored per
entry by its best passage. A sync can be paused and resumes where it stopped; queries use
whatever is embedded so far."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.passages import MAX_PASSAGES, PASSAGE_VERSION, entry_passages
from dle_desktop.vectors.contracts import Embedder, StoredItem

log = logging.getLogger(__name__)

COLLECTION = "dle-vault"
SOURCE = "dle-local"
ProgressFn = Callable[[int, int], None]
#: Query texts (one per chat message) whose vectors are kept: a chat's window slides one or two
#: messages per generation, so most of the next query is already embedded.
QUERY_CACHE = 512
#: Rows fetched per wanted entry (entries match with several passages).
PASSAGES_PER_ENTRY_FETCH = 4


def passage_key(e: Entry, index: int, text: str) -> int:
    """A 53-bit key for (entry, passage place, passage text): changes whenever that text does."""
    raw = f"{e.uid}\x00{PASSAGE_VERSION}\x00{index}\x00{text}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") & ((1 << 53) - 1)


def entry_rows(e: Entry) -> list[tuple[int, int, str]]:
    """(key, passage index, passage text) for every passage of `e`."""
    return [(passage_key(e, i, t), i, t) for i, t in enumerate(entry_passages(e))]


def searchable(snapshot: IndexSnapshot) -> list[Entry]:
    return [e for e in snapshot.entries if not e.guide and e.content]


@dataclass
class EmbedStats:
    embedded: int = 0
    removed: int = 0
    total: int = 0
    paused: bool = False


class VaultEmbeddings:
    def __init__(self, store, embedder: Embedder, batch: int = 16) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self.resume = asyncio.Event()
        self.resume.set()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        #: Query texts being embedded now (a prefetch, or another lookup): a lookup that needs
        #: one waits for that embedding instead of queueing the same text again.
        self._inflight: dict[str, asyncio.Future] = {}
        self.query_cache_hits = 0
        self.query_cache_misses = 0
        self.prefetched = 0

    @property
    def profile_key(self) -> str:
        return self.embedder.profile.key()

    def pause(self, paused: bool) -> None:
        if paused:
            self.resume.clear()
        else:
            self.resume.set()

    async def sync(self, snapshot: IndexSnapshot, progress: ProgressFn | None = None) -> EmbedStats:
        """Embed the passages that are new or changed; drop rows of passages that are gone.
        `embedded` and `total` count entries (an entry is done when all its passages are);
        `removed` counts rows."""
        rows = {e.uid: entry_rows(e) for e in searchable(snapshot)}
        wanted = {k for rs in rows.values() for k, _, _ in rs}
        stored = set(await asyncio.to_thread(self.store.list_hashes, COLLECTION, SOURCE, self.profile_key))
        stale = [h for h in stored if h not in wanted]
        if stale:
            await asyncio.to_thread(self.store.delete, COLLECTION, SOURCE, self.profile_key, stale)
        todo = [(uid, [r for r in rs if r[0] not in stored]) for uid, rs in rows.items()]
        todo = [(uid, rs) for uid, rs in todo if rs]
        stats = EmbedStats(removed=len(stale), total=len(todo))
        if todo and progress:
            progress(0, stats.total)  # the counts show at once, also for a pass that starts paused
        queue = [(uid, r) for uid, rs in todo for r in rs]
        left = {uid: len(rs) for uid, rs in todo}
        for i in range(0, len(queue), self.batch):
            if not self.resume.is_set():
                stats.paused = True
                await self.resume.wait()
            chunk = queue[i : i + self.batch]
            vectors = await self.embedder.embed([text for _, (_, _, text) in chunk], query=False)
            items = [StoredItem(hash=key, index=idx, text=uid) for uid, (key, idx, _) in chunk]
            await asyncio.to_thread(self.store.insert, COLLECTION, SOURCE, self.profile_key, items, vectors)
            done_before = stats.embedded
            for uid, _ in chunk:
                left[uid] -= 1
                if left[uid] == 0:
                    stats.embedded += 1
            if progress and stats.embedded != done_before:
                progress(stats.embedded, stats.total)
        return stats

    def embedded_entries(self, snapshot: IndexSnapshot) -> int:
        """Entries of `snapshot` whose passages are all embedded (blocking)."""
        stored = set(self.store.list_hashes(COLLECTION, SOURCE, self.profile_key))
        return sum(1 for e in searchable(snapshot) if all(k in stored for k, _, _ in entry_rows(e)))

    async def query_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One query vector per text; texts seen recently come from the cache (or from the
        embedding already running for them), the others are embedded together in one call."""
        wanted = list(dict.fromkeys(texts))
        waiting = [self._inflight[t] for t in wanted if t not in self._queries and t in self._inflight]
        todo = [t for t in wanted if t not in self._queries and t not in self._inflight]
        self.query_cache_hits += len(wanted) - len(todo)
        self.query_cache_misses += len(todo)
        if todo:
            await self._embed_queries(todo)
        if waiting:
            await asyncio.gather(*waiting, return_exceptions=True)
        missing = [t for t in wanted if t not in self._queries]  # a prefetch that failed or was cancelled
        if missing:
            await self._embed_queries(missing)
        out = []
        for t in texts:
            self._queries.move_to_end(t)
            out.append(self._queries[t])
        self._trim()
        return out

    async def warm(self, texts: Sequence[str]) -> int:
        """Embed query texts ahead of the generation that will need them (the bridge sends a
        reply as soon as it arrives and the user's message while it is typed): the lookup then
        finds them cached. Returns how many texts were embedded."""
        todo = [t for t in dict.fromkeys(texts) if t.strip() and t not in self._queries and t not in self._inflight]
        if todo:
            await self._embed_queries(todo)
            self.prefetched += len(todo)
            self._trim()
        return len(todo)

    async def _embed_queries(self, todo: list[str]) -> None:
        future = asyncio.get_running_loop().create_future()
        for t in todo:
            self._inflight[t] = future
        try:
            vectors = await self.embedder.embed(todo, query=True)
            for t, v in zip(todo, vectors):
                self._queries[t] = np.asarray(v, dtype=np.float32)
        finally:
            for t in todo:
                if self._inflight.get(t) is future:
                    del self._inflight[t]
            if not future.done():
                future.set_result(None)

    def _trim(self) -> None:
        while len(self._queries) > QUERY_CACHE:
            self._queries.popitem(last=False)

    async def query_vector(self, parts: Sequence[str], last_weight: float = 1.0) -> np.ndarray | None:
        """The query for a window of messages (oldest first): `last_weight` × the newest
        message's vector + the rest × the mean of all of them, normalised."""
        parts = [p for p in parts if p.strip()]
        if not parts:
            return None
        vecs = await self.query_vectors(parts)
        last = vecs[-1]
        if len(vecs) == 1 or last_weight >= 1.0:
            q = last
        else:
            mean = np.mean(np.stack(vecs), axis=0)
            n = float(np.linalg.norm(mean))
            if n > 0:
                mean = mean / n
            w = max(0.0, last_weight)
            q = w * last + (1.0 - w) * mean
        n = float(np.linalg.norm(q))
        return q / n if n > 0 else q

    async def search(
        self, text: str | Sequence[str], top_k: int, last_weight: float = 1.0
    ) -> list[tuple[str, float, int]]:
        """(entry uid, cosine similarity of its best passage, that passage's index), best first,
        at most `top_k` entries. `text` is one query text or a window of message texts (oldest
        first; see `query_vector`)."""
        parts = [text] if isinstance(text, str) else list(text)
        q = await self.query_vector(parts, last_weight)
        if q is None:
            return []
        # Rows are passages: ask for enough of them that `top_k` distinct entries come back
        # even when the best entries match with several passages each.
        hits = await asyncio.to_thread(
            self.store.query,
            COLLECTION,
            SOURCE,
            self.profile_key,
            q,
            top_k * min(MAX_PASSAGES, PASSAGES_PER_ENTRY_FETCH),
        )
        best: dict[str, tuple[float, int]] = {}
        for h in hits:
            uid, score = h.item.text, float(h.score)
            if uid not in best or score > best[uid][0]:
                best[uid] = (score, h.item.index)
        ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[:top_k]
        return [(uid, score, idx) for uid, (score, idx) in ranked]
