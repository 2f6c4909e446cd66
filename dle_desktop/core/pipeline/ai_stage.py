"""The pure half of AI search: which entries the AI chooses from, and how its answer (or its
failure) becomes the working set, with a verdict for every entry it touched.

The AI call itself is I/O and lives in `dle_desktop/ai/`; it receives the candidates from
`run.begin_generation` and hands back an `AiOutcome`, which `apply_ai_outcome` turns into the
entries that go on through pins, cooldowns, gating and the budget (dle-behaviour §3.5, §4.6, §4.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.priority_order import sort_by_priority
from dle_desktop.core.pipeline.stage_context import Active, StageContext

STAGE = "ai search"
TIER_RANK = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class AiPick:
    """One entry the AI chose: `how` says how its title was matched ("exact", "fuzzy 0.72")."""

    uid: str
    confidence: str
    reason: str
    how: str = "exact"


@dataclass(frozen=True)
class AiOutcome:
    """What the AI step produced for one generation.

    status: picked | empty (the AI chose nothing) | error (call, parse, breaker, throttle or
    offline) | empty-manifest (nothing to choose from) | skipped (no chat context to send).
    """

    status: str
    picks: tuple[AiPick, ...] = ()
    #: picks dropped by the confidence threshold
    below_threshold: tuple[AiPick, ...] = ()
    #: titles the AI named that match no candidate
    unmatched: tuple[str, ...] = ()
    message: str = ""
    cache_tier: str | None = None
    notes: tuple[str, ...] = ()
    timings_ms: dict[str, Any] = field(default_factory=dict)


def ai_mode(cfg: MatchConfig) -> str:
    if not getattr(cfg, "ai_search_enabled", False):
        return "keywords"
    return cfg.ai_search_mode


def expand_links(ctx: StageContext, items: list[Active]) -> list[Active]:
    """Two-stage mode: the non-constant notes that matched entries link to become candidates too."""
    active = {a.entry.uid: a for a in items}
    out = list(items)
    for a in items:
        for target in a.entry.resolved_links:
            for e in ctx.by_title.get(target.lower(), ()):
                if e.constant or e.uid in active:
                    continue
                linked = Active(e, f"(wiki-linked from: {a.entry.title})")
                active[e.uid] = linked
                out.append(linked)
                ctx.trace.add(e, "link expansion", "matched", f"linked from '{a.entry.title}', a matched entry")
    return out


def whole_vault(ctx: StageContext, matched: Sequence[Active]) -> list[Active]:
    """AI-only mode: every writer-visible entry is a candidate; constants and active bootstraps
    are always in (the keyword matcher already marked them forced)."""
    forced = [a for a in matched if a.forced]
    seen = {a.entry.uid for a in forced}
    return forced + [Active(e, "(AI-only candidate)") for e in ctx.entries if e.uid not in seen and not e.constant]


def selectable(candidates: Sequence[Active]) -> list[Entry]:
    """What the manifest lists: every candidate that is not force-injected."""
    return [a.entry for a in candidates if not a.forced]


def _fallback(candidates: list[Active], keyword: list[Active], fallback: str) -> list[Active]:
    forced = [a for a in candidates if a.forced]
    if fallback == "keyword":
        return keyword
    if fallback in ("constants", "constants_only"):
        return [a for a in forced if a.entry.constant]
    if fallback == "constants_bootstrap":
        return forced
    if fallback == "bootstrap_only":
        return [a for a in forced if a.entry.bootstrap and not a.entry.constant]
    return []  # none


def apply_ai_outcome(
    ctx: StageContext, mode: str, candidates: list[Active], keyword: list[Active], outcome: AiOutcome
) -> list[Active]:
    """The working set after AI search: force-injected candidates plus the AI's picks, or the
    configured fallback, with a verdict for every selectable candidate."""
    cfg, trace = ctx.config, ctx.trace
    trace.notes.extend(outcome.notes)
    by_uid = {a.entry.uid: a for a in candidates}
    picked_uids = {p.uid for p in outcome.picks}

    if outcome.status == "picked":
        out = [a for a in candidates if a.forced]
        for p in outcome.picks:
            a = by_uid.get(p.uid)
            if a is None or a.forced:
                continue
            reason = p.reason.strip() or "no reason given"
            label = f"AI: {reason} ({p.confidence})"
            matched_by = label if mode == "ai-only" or a.matched_by.startswith("(") else f"{a.matched_by} + {label}"
            out.append(Active(a.entry, matched_by))
            fuzzy = f"; title matched {p.how}" if p.how != "exact" else ""
            cached = f"; from the cache ({outcome.cache_tier})" if outcome.cache_tier else ""
            trace.add(a.entry, STAGE, "matched", f"picked with {p.confidence} confidence: {reason}{fuzzy}{cached}")
        low = {p.uid: p for p in outcome.below_threshold}
        for a in candidates:
            if a.forced or a.entry.uid in picked_uids:
                continue
            if a.entry.uid in low:
                trace.add(
                    a.entry,
                    STAGE,
                    "removed",
                    f"picked with {low[a.entry.uid].confidence} confidence, below the threshold "
                    f"({cfg.ai_confidence_threshold})",
                )
            elif mode == "two-stage":
                trace.add(a.entry, STAGE, "removed", "a keyword candidate the AI did not pick")
        if outcome.unmatched:
            trace.notes.append("the AI named entries that are not candidates: " + ", ".join(outcome.unmatched[:10]))
        return sort_by_priority(out)

    if outcome.status == "empty-manifest":
        trace.notes.append("AI search had nothing to choose from (every candidate is always included)")
        return keyword if mode == "two-stage" else [a for a in candidates if a.forced]

    if outcome.status == "skipped":
        trace.notes.append(f"AI search skipped: {outcome.message}")
        return keyword if mode == "two-stage" else [a for a in candidates if a.forced]

    if outcome.status == "empty":
        fallback = cfg.ai_empty_fallback
        result = _fallback(candidates, keyword, fallback)
        trace.notes.append(f"the AI picked no entries; fallback: {fallback}")
        why = f"the AI picked no entries (fallback: {fallback})"
    else:
        fallback = cfg.ai_error_fallback
        result = _fallback(candidates, keyword, fallback)
        trace.notes.append(f"AI search failed: {outcome.message}; fallback: {fallback}")
        why = f"AI search failed (fallback: {fallback})"
        if mode == "ai-only" and fallback == "keyword" and all(a.entry.constant for a in result):
            trace.notes.append("the keyword fallback found nothing beyond the constants")
    kept = {a.entry.uid for a in result}
    keyword_uids = {k.entry.uid for k in keyword}
    for a in candidates:  # in ai-only mode only the keyword matches are worth a verdict
        if not a.forced and a.entry.uid not in kept and (mode == "two-stage" or a.entry.uid in keyword_uids):
            trace.add(a.entry, STAGE, "removed", why)
    return sort_by_priority(result)


def match_first_order(items: list[Active]) -> list[Active]:
    """The order the budget walks with `fix_semantic_budget` (semantic search on): pins, then the
    entries the chat itself asked for (keys found in the chat, semantic matches), then the
    always-in ones (constants, bootstrap, seed), then what came in second-hand (cascades,
    recursion, BM25); priority order inside each. So a strong match is not cut because
    constants or lower-value matches filled the budget first."""

    def rank(a: Active) -> int:
        how = a.matched_by
        if how == "(pinned)":
            return 0
        if how.startswith("(semantic") or (not how.startswith("(") and "(recursion" not in how and not a.forced):
            return 1
        if a.forced or a.entry.constant:
            return 2
        return 3

    return sorted(items, key=rank)  # stable: priority order kept inside each rank


def budget_order(items: list[Active], outcome: AiOutcome | None) -> list[Active]:
    """The order the budget walks when AI confidence decides who survives a cut: always-in
    entries first, then the AI's picks by confidence tier, then the rest; priority and title
    break ties. (DLE sorts by priority only, which throws the AI's confidence away, §3.12.)"""
    if outcome is None or outcome.status != "picked":
        return items
    tiers = {p.uid: TIER_RANK.get(p.confidence, 1) for p in outcome.picks}

    def rank(a: Active) -> int:
        if a.forced or a.entry.constant:
            return 0
        tier = tiers.get(a.entry.uid)
        return 1 + tier if tier is not None else 4

    return sorted(items, key=rank)  # stable: priority order kept inside each rank
