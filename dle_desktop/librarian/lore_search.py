"""The lore API's search and flag (dle-behaviour §5.4(a) `searchLoreAction` / `flagLoreAction`):
what a tool-calling chat model asks of the vault while it writes, and what it reports missing.

Search: BM25 over each query, leaving out guide entries and the titles the caller already has
(its injected lore); the single best hit across all queries comes back in full (`### Title\\n…`)
with up to 3 of the entries it links to as manifest lines; each query that found nothing becomes
(or merges into) a gap record. Pure apart from the gap store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dle_desktop.ai.manifest import build_manifest
from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.librarian.gaps import GapRecord, GapStore

#: DLE's librarianMaxResults default (1-20); this app has no such setting yet
MAX_RESULTS = 5
MAX_LINKED = 3
MISS_REASON = "the lore API's search found nothing"


@dataclass(frozen=True)
class LoreSearchResult:
    best: Entry | None
    linked: list[Entry] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    gaps: list[GapRecord] = field(default_factory=list)

    def to_json(self) -> dict:
        best = None
        if self.best is not None:
            e = self.best
            best = {"title": e.title, "vault": e.vault, "path": e.path, "content": f"### {e.title}\n{e.content}"}
        return {
            "best": best,
            "linked": [
                {"title": e.title, "vault": e.vault, "summary": e.summary, "manifest": manifest_line(e)}
                for e in self.linked
            ],
            "misses": list(self.misses),
            "gap_ids": [g.id for g in self.gaps],
        }


def manifest_line(entry: Entry) -> str:
    """The entry as the AI-search manifest shows it (title, tokens, links, summary)."""
    return build_manifest([entry], unlimited_budget=True).text


def _excluded(entry: Entry, exclude: set[str]) -> bool:
    return entry.guide or entry.title.lower() in exclude


def search_lore(
    snap: IndexSnapshot,
    gaps: GapStore,
    queries: Sequence[str],
    *,
    reason: str = "",
    exclude_titles: Sequence[str] = (),
    top_k: int = MAX_RESULTS,
    min_score: float = 0.5,
) -> LoreSearchResult:
    exclude = {t.strip().lower() for t in exclude_titles if t.strip()}
    # Guides and excluded titles are dropped after ranking, so ask for enough to still fill top_k.
    room = top_k + len(exclude) + sum(1 for e in snap.entries if e.guide)
    best: tuple[float, Entry] | None = None
    misses: list[str] = []
    # One call naming the same query twice is one miss, not a gap seen twice.
    for query in dict.fromkeys(q.strip() for q in queries):
        hits = []
        for uid, score in snap.bm25.search(query, top_k=room, min_score=min_score):
            e = snap.by_uid.get(uid)
            if e is not None and not _excluded(e, exclude):
                hits.append((score, e))
        hits = hits[:top_k]
        if not hits:
            misses.append(query)
        elif best is None or hits[0][0] > best[0]:
            best = hits[0]
    linked: list[Entry] = []
    if best is not None:
        for title in best[1].resolved_links:
            e = snap.find(title)
            if (
                e is not None
                and e.uid != best[1].uid
                and not _excluded(e, exclude)
                and all(e.uid != other.uid for other in linked)
            ):
                linked.append(e)
            if len(linked) == MAX_LINKED:
                break
    recorded = [gaps.record_search_miss(q, reason.strip(), MISS_REASON) for q in misses]
    return LoreSearchResult(best[1] if best else None, linked, misses, recorded)


def flag_lore(
    gaps: GapStore, title: str, reason: str, urgency: str = "medium", flag_type: str = "gap", entry_title: str = ""
) -> GapRecord:
    # An update is about an existing entry; without an entry_title, the flagged title is it.
    entry = entry_title.strip() or (title.strip() if flag_type == "update" else "")
    return gaps.flag(title, reason, urgency=urgency, subtype=flag_type, entry_title=entry)
