"""The per-entry checks a matching stage applies before it adds an entry: probability,
cooldown, warmup. Each writes its verdict when it turns the entry away."""

from __future__ import annotations

from dle_desktop.core.entry import Entry
from dle_desktop.core.pipeline.matcher import KeyHit, KeywordIndex, count_occurrences
from dle_desktop.core.pipeline.stage_context import StageContext


def passes_probability(ctx: StageContext, e: Entry, stage: str) -> bool:
    """DLE's probability: None always passes, 0 never, else skip when random() > p."""
    p = e.probability
    if p is None or p >= 1:
        return True
    if p <= 0:
        ctx.trace.add(e, stage, "skipped", "probability is 0 (never injected)")
        return False
    roll = ctx.rng.random()
    if roll > p:
        ctx.trace.add(e, stage, "skipped", f"probability {p:g}: rolled {roll:.3f}, needed ≤ {p:g}")
        return False
    return True


def on_cooldown(ctx: StageContext, e: Entry, stage: str) -> bool:
    left = ctx.state.cooldowns.get(e.tracker_key, 0)
    if left > 0:
        ctx.trace.add(e, stage, "skipped", f"on cooldown: {left} more generation{'s' if left != 1 else ''}")
        return True
    return False


def warm_enough(
    ctx: StageContext, e: Entry, hit: KeyHit, idx: int, stage: str, index: KeywordIndex | None = None
) -> bool:
    if not e.warmup:
        return True
    found = count_occurrences(hit, (index or ctx.index).keys[idx], ctx.config.match_whole_words)
    if found < e.warmup:
        ctx.trace.add(
            e, stage, "skipped", f"warmup: its keys occur {found} time{'s' if found != 1 else ''}, needs {e.warmup}"
        )
        return False
    return True
