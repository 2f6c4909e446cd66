"""One generation, end to end: DLE's keywords-only pipeline in DLE's order.

`run_generation` is pure: it reads the snapshot, the chat and the chat's state, and returns the
result plus the next state. Persisting that state (or not, for a dry run) is the caller's job."""

from __future__ import annotations

import heapq
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.ai_stage import (
    AiOutcome,
    ai_mode,
    apply_ai_outcome,
    budget_order,
    expand_links,
    match_first_order,
    selectable,
    whole_vault,
)
from dle_desktop.core.pipeline.chat import ChatMessage, should_skip_generation
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.formatting import Group, Injected, apply_budget, group, placement
from dle_desktop.core.pipeline.gating import contextual_gating, folder_filter
from dle_desktop.core.pipeline.match_stages import match_entries
from dle_desktop.core.pipeline.matcher import KeywordIndex
from dle_desktop.core.pipeline.post_stages import (
    apply_pins_and_blocks,
    forced_keys,
    reinjection_cooldown,
    requires_excludes,
    strip_dedup,
)
from dle_desktop.core.pipeline.priority_order import sort_by_priority
from dle_desktop.core.pipeline.semantic_query import SemanticQuery, build_semantic_query
from dle_desktop.core.pipeline.stage_context import Active, ConstantMatches, SemanticHit, StageContext
from dle_desktop.core.pipeline.state import SWIPE_SLOTS, ChatState
from dle_desktop.core.pipeline.trace import Trace, Verdict

_index_lock = threading.Lock()


@dataclass(frozen=True)
class GenerationResult:
    injected: tuple[Injected, ...] = ()
    groups: tuple[Group, ...] = ()
    total_tokens: int = 0
    verdicts: tuple[Verdict, ...] = ()
    timings_ms: dict[str, Any] = field(default_factory=dict)
    skipped_reason: str | None = None
    notes: tuple[str, ...] = ()
    swipe_rollback: bool = False
    #: what the semantic stage searched with, as the decision record shows it (None when off)
    semantic_query: str | None = None
    #: the number of the decision record this generation saved (None: a dry run or nothing saved)
    record: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "injected": [
                {
                    "title": i.entry.title,
                    "vault": i.entry.vault,
                    "tokens": i.entry.token_estimate,
                    "truncated": i.truncated,
                    "original_tokens": i.original_tokens,
                    "matched_by": i.matched_by,
                    "position": i.position,
                    "depth": i.depth,
                    "role": i.role,
                    "priority": i.entry.priority,
                }
                for i in self.injected
            ],
            "groups": [g.to_json() for g in self.groups],
            "total_tokens": self.total_tokens,
            "verdicts": [v.to_json() for v in self.verdicts],
            "timings_ms": dict(self.timings_ms),
            "skipped_reason": self.skipped_reason,
            "notes": list(self.notes),
            "swipe_rollback": self.swipe_rollback,
            "semantic_query": self.semantic_query,
            "record": self.record,
        }


@dataclass
class _SnapshotParts:
    visible: list[Entry]
    by_title: dict[str, list[Entry]]
    indexes: dict[bool, KeywordIndex]
    constants: list[Entry]
    bootstraps: list[Entry]
    exempt_keys: frozenset[str]
    entry_depths: frozenset[int]
    constant_matches: ConstantMatches


_SAME_FOR_MATCHING = (
    "vault",
    "path",
    "title",
    "keys",
    "refine_keys",
    "constant",
    "bootstrap",
    "seed",
    "guide",
    "scan_depth",
)


def _patched_parts(snapshot: IndexSnapshot, key: bool) -> tuple[Any, ...] | None:
    """Parts for a snapshot patched from one whose parts exist, when no edited entry changed
    anything the automaton or the per-snapshot lists depend on (an edit of body text)."""
    link = getattr(snapshot, "_patched_from", None)
    if link is None:
        return None
    previous, changed = link
    prev = getattr(previous, "_pipeline_parts", None)
    if prev is None or prev[0] != key:
        return None
    old_parts: _SnapshotParts = prev[1]
    if not old_parts.indexes:
        return None
    any_index = next(iter(old_parts.indexes.values()))
    visible = list(old_parts.visible)
    swap: dict[int, Entry] = {}
    for old, new in changed:
        if any(getattr(old, f) != getattr(new, f) for f in _SAME_FOR_MATCHING):
            return None
        pos = any_index.position.get(new.uid)
        if pos is None or visible[pos] is not old:
            return None
        visible[pos] = new
        swap[id(old)] = new
    by_title = {t: [swap.get(id(e), e) for e in es] for t, es in old_parts.by_title.items()}
    constants = [swap.get(id(e), e) for e in old_parts.constants]
    parts = _SnapshotParts(
        visible,
        by_title,
        {cs: idx.with_entries(visible) for cs, idx in old_parts.indexes.items()},
        constants=constants,
        bootstraps=[swap.get(id(e), e) for e in old_parts.bootstraps],
        exempt_keys=old_parts.exempt_keys,
        entry_depths=old_parts.entry_depths,
        constant_matches=ConstantMatches.of(constants),
    )
    snapshot._patched_from = None
    return (key, parts)


def _parts(snapshot: IndexSnapshot, cfg: MatchConfig) -> tuple[_SnapshotParts, KeywordIndex]:
    """Per-snapshot structures, built once and kept on the snapshot (it is immutable)."""
    with _index_lock:
        parts = getattr(snapshot, "_pipeline_parts", None)
        key = cfg.fix_guide_leak
        if parts is None or parts[0] != key:
            parts = _patched_parts(snapshot, key)
            if parts is not None:
                snapshot._pipeline_parts = parts  # type: ignore[attr-defined]  # a cache riding on the immutable snapshot
        if parts is None or parts[0] != key:
            # Guide entries are never writer-visible (DLE's getWriterVisibleEntries); with
            # fix_guide_leak off they still reach the prompt through BM25, as in DLE (§3.12).
            visible = [e for e in snapshot.entries if not e.guide]
            by_title: dict[str, list[Entry]] = {}
            for e in visible:
                by_title.setdefault(e.title.lower(), []).append(e)
            constants = [e for e in visible if e.constant]
            parts = (
                key,
                _SnapshotParts(
                    visible,
                    by_title,
                    {},
                    constants=constants,
                    bootstraps=[e for e in visible if e.bootstrap],
                    exempt_keys=frozenset(e.tracker_key for e in visible if e.constant or e.seed or e.bootstrap),
                    entry_depths=frozenset(e.scan_depth for e in visible if e.scan_depth),
                    constant_matches=ConstantMatches.of(constants),
                ),
            )
            snapshot._pipeline_parts = parts  # type: ignore[attr-defined]  # a cache riding on the immutable snapshot
        p = parts[1]
        index = p.indexes.get(cfg.case_sensitive)
        if index is None:
            index = KeywordIndex(p.visible, cfg.case_sensitive)
            p.indexes[cfg.case_sensitive] = index
        return p, index


def prepare(snapshot: IndexSnapshot, cfg: MatchConfig) -> None:
    """Build the keyword automaton ahead of the first generation (e.g. right after a sync)."""
    _parts(snapshot, cfg)


def semantic_query(messages: Sequence[ChatMessage], cfg: MatchConfig) -> SemanticQuery | None:
    """What the semantic stage searches with (the messages of the scan window without speaker
    names and out-of-character asides, the newest weighted most; see semantic_query.py), or None
    when the stage is off or there is nothing to search."""
    if not cfg.semantic_enabled:
        return None
    return build_semantic_query(messages, cfg.scan_depth, cfg.semantic_last_weight)


def swipe_key(messages: Sequence[ChatMessage]) -> str:
    if not messages:
        return "-1|0"
    return f"{len(messages) - 1}|{messages[-1].swipe_id or 0}"


@dataclass
class Pending:
    """A generation stopped where AI search reads its candidates. `begin_generation` makes it,
    the caller (optionally) asks an AI, `finish_generation` completes it. Pure data."""

    ctx: StageContext
    parts: _SnapshotParts
    state: ChatState  # after a swipe rollback
    before: dict[str, Any]
    slot: str
    rolled: bool
    t0: float
    mode: str  # keywords | two-stage | ai-only
    #: the keyword result (gated, folder-filtered): the whole answer in keywords mode, the
    #: fallback otherwise
    keyword: list[Active]
    #: what the AI chooses from (force-injected ones included); empty in keywords mode
    candidates: list[Active]
    #: the semantic query as shown in the decision record (None when the stage is off)
    query_shown: str | None = None

    @property
    def selectable(self) -> list[Entry]:
        return selectable(self.candidates)

    @property
    def needs_ai(self) -> bool:
        return self.mode != "keywords"


def begin_generation(
    snapshot: IndexSnapshot,
    messages: Sequence[ChatMessage],
    state: ChatState,
    cfg: MatchConfig = MatchConfig(),
    *,
    character_name: str | None = None,
    rng: random.Random | None = None,
    swipe: bool | None = None,
    semantic_hits: Sequence[SemanticHit] | None = None,
    semantic_note: str | None = None,
) -> Pending | GenerationResult:
    """Everything up to AI search: a `GenerationResult` when the generation is skipped, else a
    `Pending`. `semantic_hits` are (uid, similarity) pairs for `semantic_query(messages, cfg)`,
    looked up by the caller (embedding is I/O, this function is pure); `semantic_note` says why
    they are partial or missing, for the decision record."""
    t0 = time.perf_counter()
    trace = Trace()
    if semantic_note and cfg.semantic_enabled:
        trace.notes.append(semantic_note)
    skip = should_skip_generation(messages)
    if skip:
        return GenerationResult(skipped_reason=skip)

    slot = swipe_key(messages)
    rolled = False
    if state.before_last is not None and (swipe is True or (swipe is None and state.last_swipe_key == slot)):
        state = state.rolled_back()
        rolled = True
    before = state.tracking_snapshot()

    with trace.timed("index"):
        parts, index = _parts(snapshot, cfg)
    bm25 = None
    if cfg.fuzzy_search_enabled:
        bm25 = snapshot.bm25.search
    ctx = StageContext(
        entries=parts.visible,
        index=index,
        messages=list(messages),
        state=state,
        config=cfg,
        rng=rng or random.Random(),
        trace=trace,
        field_definitions=snapshot.field_definitions,
        character_name=character_name,
        bm25_search=bm25,
        by_title=parts.by_title,
        constants=parts.constants,
        bootstraps=parts.bootstraps,
        exempt_keys=parts.exempt_keys,
        entry_depths=parts.entry_depths,
        constant_matches=parts.constant_matches,
        semantic_hits=semantic_hits,
        hidden={} if cfg.fix_guide_leak else {e.uid: e for e in snapshot.entries if e.guide},
    )
    mode = ai_mode(cfg)
    matched = match_entries(ctx)
    with trace.timed("gating"):
        keyword = contextual_gating(ctx, matched, "contextual gating")
    with trace.timed("folder filter"):
        keyword = sort_by_priority(folder_filter(ctx, keyword))
    candidates: list[Active] = []
    if mode != "keywords":
        with trace.timed("candidates"):
            pool = expand_links(ctx, matched) if mode == "two-stage" else whole_vault(ctx, matched)
            # The keyword matches' gate verdicts are already recorded, and gate verdicts for a
            # whole vault (ai-only) would drown the record: the pool is gated silently.
            ctx.trace = Trace()
            try:
                candidates = sort_by_priority(folder_filter(ctx, contextual_gating(ctx, pool, "contextual gating")))
            finally:
                ctx.trace = trace
            kept = {a.entry.uid for a in candidates}
            for a in pool:
                if a.entry.uid not in kept and a.matched_by.startswith("(wiki-linked"):
                    trace.add(
                        a.entry,
                        "contextual gating",
                        "removed",
                        "a linked candidate outside the chat's gates or folders",
                    )
    query = semantic_query(messages, cfg)
    return Pending(
        ctx,
        parts,
        state,
        before,
        slot,
        rolled,
        t0,
        mode,
        keyword,
        candidates,
        query.shown() if query is not None else None,
    )


def finish_generation(pending: Pending, outcome: AiOutcome | None = None) -> tuple[GenerationResult, ChatState]:
    """Complete a generation: the AI's outcome (None = keywords only, or AI not asked) replaces
    the keyword result, then pins, cooldowns, requires/excludes, dedup, budget and tracking."""
    ctx, trace, cfg, state = pending.ctx, pending.ctx.trace, pending.ctx.config, pending.state
    if outcome is not None and pending.mode != "keywords":
        trace.timings_ms.update(outcome.timings_ms)
        with trace.timed("ai selection"):
            items = apply_ai_outcome(ctx, pending.mode, pending.candidates, pending.keyword, outcome)
    else:
        items = pending.keyword
    forced = forced_keys(ctx, pending.parts.visible)
    with trace.timed("pins"):
        items = apply_pins_and_blocks(ctx, items)
    with trace.timed("reinjection"):
        items = reinjection_cooldown(ctx, items, forced)
    with trace.timed("requires/excludes"):
        items = requires_excludes(ctx, items, forced)
    with trace.timed("strip duplicates"):
        items = strip_dedup(ctx, items, forced, lambda e: placement(e, cfg))
    with trace.timed("budget"):
        by_confidence = cfg.fix_ai_confidence_budget and outcome is not None and pending.mode != "keywords"
        walk = budget_order(items, outcome) if by_confidence else items
        if walk is items and cfg.fix_semantic_budget and cfg.semantic_enabled:
            walk = match_first_order(items)  # the surviving set; the prompt keeps priority order
        positional, outlets = apply_budget(walk, cfg, trace)
        if walk is not items and not by_confidence:
            _note_constants_left_out(walk, [*positional, *outlets], trace)
        if walk is not items:  # survivors chosen by confidence or match; the prompt keeps priority order
            rank = {a.entry.uid: i for i, a in enumerate(items)}
            positional.sort(key=lambda inj: rank.get(inj.entry.uid, len(rank)))
        groups = group(positional, outlets, cfg)
        if cfg.notebook_enabled and state.notebook.strip():
            groups.append(
                Group(
                    "deeplore_notebook",
                    cfg.notebook_position,
                    cfg.notebook_depth,
                    cfg.notebook_role,
                    state.notebook.strip(),
                )
            )
    injected = [*positional, *outlets]

    with trace.timed("tracking"):
        new_state = _track(state, pending.before, items, injected, cfg, pending.slot)
    trace.timings_ms["total"] = round((time.perf_counter() - pending.t0) * 1000, 3)
    result = GenerationResult(
        injected=tuple(injected),
        groups=tuple(groups),
        total_tokens=sum(i.entry.token_estimate for i in injected),
        verdicts=tuple(trace.verdicts),
        timings_ms=dict(trace.timings_ms),
        notes=tuple(trace.notes),
        swipe_rollback=pending.rolled,
        semantic_query=pending.query_shown,
    )
    return result, new_state


def run_generation(
    snapshot: IndexSnapshot,
    messages: Sequence[ChatMessage],
    state: ChatState,
    cfg: MatchConfig = MatchConfig(),
    *,
    character_name: str | None = None,
    rng: random.Random | None = None,
    swipe: bool | None = None,
    semantic_hits: Sequence[SemanticHit] | None = None,
    semantic_note: str | None = None,
    ai_outcome: AiOutcome | None = None,
) -> tuple[GenerationResult, ChatState]:
    """One generation without stopping for AI: `begin_generation` then `finish_generation`
    (with `ai_outcome` when the caller already has one, e.g. a replayed decision)."""
    pending = begin_generation(
        snapshot,
        messages,
        state,
        cfg,
        character_name=character_name,
        rng=rng,
        swipe=swipe,
        semantic_hits=semantic_hits,
        semantic_note=semantic_note,
    )
    if isinstance(pending, GenerationResult):
        return pending, state
    return finish_generation(pending, ai_outcome)


def _track(
    state: ChatState,
    before: dict[str, Any],
    matched: list[Active],
    injected: list[Injected],
    cfg: MatchConfig,
    slot: str,
) -> ChatState:
    gen = state.generation_count
    cooldowns = dict(state.cooldowns)
    history = dict(state.injection_history)
    for inj in injected:
        e = inj.entry
        if e.cooldown:
            cooldowns[e.tracker_key] = e.cooldown + 1
        if cfg.reinjection_cooldown > 0:
            history[e.tracker_key] = gen + 1
    log_entries = [
        {"title": i.entry.title, "pos": i.position, "depth": i.depth, "role": i.role, "hash": i.entry.content_hash}
        for i in injected
    ]
    log = (*state.injection_log, {"gen": gen, "entries": log_entries})[-(cfg.strip_lookback_depth + 1) :]

    # Copy on write: the records this generation touches are copied, the others are shared with
    # the previous state (no one changes a state's records in place), so the cost follows the
    # working set, not the up to 500 records kept.
    analytics = dict(state.analytics)
    copied: set[str] = set()

    def record(tracker_key: str) -> dict[str, Any]:
        rec = analytics.get(tracker_key)
        if rec is None:
            rec = analytics[tracker_key] = {"matched": 0, "injected": 0, "last_triggered": gen}
        elif tracker_key not in copied:
            rec = analytics[tracker_key] = dict(rec)
        copied.add(tracker_key)
        return rec

    for a in matched:
        rec = record(a.entry.tracker_key)
        rec["matched"] += 1
        rec["last_triggered"] = gen
    for inj in injected:
        record(inj.entry.tracker_key)["injected"] += 1
    if len(analytics) > 500:
        # nsmallest(n, ...) is sorted(...)[:n], ties included, without sorting all 500
        oldest = heapq.nsmallest(len(analytics) - 500, analytics.items(), key=lambda kv: kv[1].get("last_triggered", 0))
        for k, _ in oldest:
            del analytics[k]

    counts = dict(state.counts)
    swipe_keys = dict(state.swipe_keys)
    for tk in swipe_keys.get(slot, ()):  # the same slot generated again: undo its counts first
        counts[tk] = counts.get(tk, 0) - 1
        if counts[tk] <= 0:
            del counts[tk]
    keys = tuple(dict.fromkeys(i.entry.tracker_key for i in injected))
    for tk in keys:
        counts[tk] = counts.get(tk, 0) + 1
    swipe_keys[slot] = keys
    if len(swipe_keys) > SWIPE_SLOTS:
        ordered = sorted(swipe_keys, key=lambda k: int(k.split("|")[0]))
        for k in ordered[: len(swipe_keys) - SWIPE_SLOTS]:
            del swipe_keys[k]

    # DLE's `finally`: count the generation, then tick every cooldown down (removed at ≤ 1).
    ticked = {k: v - 1 for k, v in cooldowns.items() if v > 1}
    return state.replace(
        generation_count=gen + 1,
        cooldowns=ticked,
        injection_history=history,
        injection_log=log,
        analytics=analytics,
        counts=counts,
        swipe_keys=swipe_keys,
        last_swipe_key=slot,
        before_last=before,
    )


def _note_constants_left_out(walked: list[Active], injected: list[Injected], trace: Trace) -> None:
    """fix_semantic_budget walks the chat's own matches before constants: when that leaves a
    constant (or bootstrap) entry out, the summary says so rather than leave it to the verdicts."""
    kept = {inj.entry.uid for inj in injected}
    left_out = [a.entry.title for a in walked if (a.entry.constant or a.entry.bootstrap) and a.entry.uid not in kept]
    if left_out:
        shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
        trace.notes.append(
            f"the budget walked the chat's own matches before constants (fix_semantic_budget, with semantic "
            f"search on), so {len(left_out)} constant or bootstrap entr{'y' if len(left_out) == 1 else 'ies'} "
            f"did not fit: {shown}. Raise the budget, or turn the fix off in Settings → Retrieval to keep "
            "constants first."
        )
