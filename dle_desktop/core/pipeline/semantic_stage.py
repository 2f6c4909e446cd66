"""The semantic stage: entries whose meaning is close to the scan text, fused with BM25's
ranking, above a threshold that adapts to each query's scores."""

from __future__ import annotations

from collections.abc import Sequence

from dle_desktop.core.pipeline.admission import on_cooldown, passes_probability
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.passages import passage_excerpt
from dle_desktop.core.pipeline.stage_context import Active, SemanticHit, StageContext

#: The relative threshold needs this many hits to read a distribution from; with fewer, only
#: the absolute floor applies.
RELATIVE_MIN_HITS = 8


def semantic_threshold(hits: Sequence[SemanticHit], cfg: MatchConfig) -> float:
    """The similarity a semantic hit needs. Always `semantic_min_score` (an absolute cosine);
    with `semantic_relative_margin` > 0 also median + margin × (best − median) of this query's
    hits (the entries the lookup fetched, best passage each): a share of the way from the
    query's typical score to its best one, which means the same on every model's scale."""
    floor = cfg.semantic_min_score
    margin = cfg.semantic_relative_margin
    if margin <= 0 or len(hits) < RELATIVE_MIN_HITS:
        return floor
    scores = sorted((h[1] for h in hits), reverse=True)
    n = len(scores)
    median = scores[n // 2] if n % 2 else (scores[n // 2 - 1] + scores[n // 2]) / 2
    return max(floor, median + min(1.0, margin) * (scores[0] - median))


def semantic_stage(ctx: StageContext, active: dict[str, Active]) -> None:
    """Entries whose meaning is close to the scan text, beside keywords and BM25. The semantic
    list is fused with the BM25 list by reciprocal rank (1 / (k + rank), summed), so an entry
    both searches rank high comes first; the best `semantic_top_k` not yet matched are added,
    subject to cooldown and probability like a cascade (warmup counts keywords, so it does not
    apply). An entry BM25 already matched that also passes here becomes a semantic match (not
    counted against `semantic_top_k`, which counts entries added). A hit may name the passage
    that matched ((uid, score, passage index)); the verdict then quotes it."""
    cfg, trace = ctx.config, ctx.trace
    visible = ctx.index.position
    passage: dict[str, int] = {}
    semantic = []
    hits = ctx.semantic_hits
    assert hits is not None  # match_entries runs this stage only with hits
    floor = semantic_threshold(hits, cfg)
    for hit in hits:
        uid, score = hit[0], hit[1]
        if score >= floor and uid in visible and uid not in passage:
            semantic.append((uid, score))
            passage[uid] = hit[2] if len(hit) > 2 else -1
    sem_rank = {uid: i + 1 for i, (uid, _) in enumerate(semantic)}
    bm_rank = {uid: i + 1 for i, uid in enumerate(ctx._fuzzy_ranked)}
    fused = {
        uid: 1 / (cfg.semantic_rrf_k + r) + (1 / (cfg.semantic_rrf_k + bm_rank[uid]) if uid in bm_rank else 0.0)
        for uid, r in sem_rank.items()
    }
    scores = dict(semantic)
    added = 0
    for uid in sorted(fused, key=lambda u: (-fused[u], sem_rank[u])):
        if added >= cfg.semantic_top_k:
            break
        e = ctx.index.entries[visible[uid]]
        if e.constant:
            continue
        if uid in active:
            if active[uid].matched_by.startswith("(fuzzy"):
                # BM25 found it too: it counts as a semantic match (what the budget keeps first
                # with fix_semantic_budget), not as a second-hand one.
                active[uid] = Active(e, f"(semantic, score: {scores[uid]:.2f})")
                trace.add(
                    e,
                    "semantic",
                    "matched",
                    f"meaning close to the chat: similarity {scores[uid]:.2f} (rank {sem_rank[uid]}, "
                    f"BM25 rank {bm_rank.get(uid, '-')}; fused {fused[uid]:.4f}; BM25 had matched it)"
                    + (f"; matched on: «{x}»" if passage[uid] >= 0 and (x := passage_excerpt(e, passage[uid])) else ""),
                )
            continue
        if on_cooldown(ctx, e, "semantic") or not passes_probability(ctx, e, "semantic"):
            continue
        both = f", BM25 rank {bm_rank[uid]}" if uid in bm_rank else ""
        excerpt = passage_excerpt(e, passage[uid]) if passage[uid] >= 0 else None
        on = f"; matched on: «{excerpt}»" if excerpt else ""
        active[uid] = Active(e, f"(semantic, score: {scores[uid]:.2f})")
        trace.add(
            e,
            "semantic",
            "matched",
            f"meaning close to the chat: similarity {scores[uid]:.2f} (rank {sem_rank[uid]}{both}; "
            f"fused {fused[uid]:.4f}){on}",
        )
        added += 1
