"""Semantic search over the vault's own entries.

Entries are embedded in the background into the vector store (one scope per embedding
profile). Each row is keyed by the entry and its content hash, so an unchanged entry is never
embedded again, an edited one is re-embedded once, and a removed one is dropped. A sync can be
paused and resumes where it stopped; queries use whatever is embedded so far."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.vectors.contracts import Embedder, StoredItem

log = logging.getLogger(__name__)

COLLECTION = "dle-vault"
SOURCE = "dle-local"
#: Characters of an entry that are embedded (title, summary, then content).
MAX_CHARS = 4000

ProgressFn = Callable[[int, int], None]


def entry_key(e: Entry) -> int:
    """A 53-bit key for (entry, content): changes whenever the entry's text changes."""
    digest = hashlib.blake2b(f"{e.uid}\x00{e.content_hash}\x00{e.title}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big") & ((1 << 53) - 1)


def entry_text(e: Entry) -> str:
    parts = [e.title]
    if e.summary:
        parts.append(e.summary)
    parts.append(e.content)
    return "\n".join(parts)[:MAX_CHARS]


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

    @property
    def profile_key(self) -> str:
        return self.embedder.profile.key()

    def pause(self, paused: bool) -> None:
        if paused:
            self.resume.clear()
        else:
            self.resume.set()

    async def sync(self, snapshot: IndexSnapshot, progress: ProgressFn | None = None) -> EmbedStats:
        """Embed entries that are new or changed; drop rows of entries that are gone."""
        visible = [e for e in snapshot.entries if not e.guide and e.content]
        wanted = {entry_key(e): e for e in visible}
        stored = set(await asyncio.to_thread(self.store.list_hashes, COLLECTION, SOURCE, self.profile_key))
        stale = [h for h in stored if h not in wanted]
        if stale:
            await asyncio.to_thread(self.store.delete, COLLECTION, SOURCE, self.profile_key, stale)
        todo = [e for k, e in wanted.items() if k not in stored]
        stats = EmbedStats(removed=len(stale), total=len(todo))
        if todo and progress:
            progress(0, stats.total)  # the counts show at once, also for a pass that starts paused
        for i in range(0, len(todo), self.batch):
            if not self.resume.is_set():
                stats.paused = True
                await self.resume.wait()
            chunk = todo[i:i + self.batch]
            vectors = await self.embedder.embed([entry_text(e) for e in chunk], query=False)
            items = [StoredItem(hash=entry_key(e), index=0, text=e.uid) for e in chunk]
            await asyncio.to_thread(self.store.insert, COLLECTION, SOURCE, self.profile_key, items, vectors)
            stats.embedded += len(chunk)
            if progress:
                progress(stats.embedded, stats.total)
        return stats

    async def search(self, text: str, top_k: int) -> list[tuple[str, float]]:
        """(entry uid, cosine similarity), best first."""
        if not text.strip():
            return []
        q = await self.embedder.embed([text], query=True)
        hits = await asyncio.to_thread(self.store.query, COLLECTION, SOURCE, self.profile_key, np.asarray(q[0]), top_k)
        return [(h.item.text, float(h.score)) for h in hits]
