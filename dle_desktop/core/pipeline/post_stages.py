"""The post-match stages (dle-behaviour §3.6): pins and blocks, re-injection cooldown,
requires/excludes, and stripping text injected in recent generations."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from dle_desktop.core.entry import Entry
from dle_desktop.core.pipeline.priority_order import sort_by_priority, sort_by_priority_descending
from dle_desktop.core.pipeline.stage_context import Active, StageContext


def forced_keys(ctx: StageContext, all_entries: Sequence[Entry]) -> set[str]:
    """DLE's exemption policy: constants, seeds and bootstraps (even inactive), and pinned entries."""
    assert ctx.exempt_keys is not None  # StageContext.__post_init__ fills it
    keys = set(ctx.exempt_keys)
    for pin in ctx.state.pins:
        keys.update(e.tracker_key for e in ctx.by_title.get(pin.title.lower(), ()) if pin.matches(e.title, e.vault))
    return keys


def apply_pins_and_blocks(ctx: StageContext, items: list[Active]) -> list[Active]:
    by_uid = {a.entry.uid: a for a in items}
    for pin in ctx.state.pins:
        hits = [e for e in ctx.by_title.get(pin.title.lower(), ()) if pin.matches(e.title, e.vault)]
        if not hits:
            ctx.trace.notes.append(f"pin '{pin.title}' matches no entry")
        for e in hits:
            pinned = dataclasses.replace(e, constant=True, priority=10)
            by_uid[e.uid] = Active(pinned, "(pinned)", forced=True)
            ctx.trace.add(e, "pins", "matched", "pinned in this chat (treated as constant, priority 10)")
    blocks = ctx.state.blocks
    if not blocks:
        return sort_by_priority(list(by_uid.values()))
    out = []
    for a in by_uid.values():
        if any(b.matches(a.entry.title, a.entry.vault) for b in blocks):
            ctx.trace.add(a.entry, "blocks", "removed", "blocked in this chat")
        else:
            out.append(a)
    return sort_by_priority(out)


def reinjection_cooldown(ctx: StageContext, items: list[Active], forced: set[str]) -> list[Active]:
    n = ctx.config.reinjection_cooldown
    if n <= 0:
        return items
    out = []
    for a in items:
        last = ctx.state.injection_history.get(a.entry.tracker_key)
        if a.entry.tracker_key not in forced and last is not None and ctx.state.generation_count - last < n:
            ctx.trace.add(
                a.entry,
                "reinjection cooldown",
                "removed",
                f"injected {ctx.state.generation_count - last + 1} generation(s) ago; re-injection cooldown is {n}",
            )
        else:
            out.append(a)
    return out


def requires_excludes(ctx: StageContext, items: list[Active], forced: set[str]) -> list[Active]:
    """Drop entries whose requirements are missing or whose exclusions are present; repeat
    until stable (drops cascade), at most 10 passes, highest priority number first as DLE does."""
    if not any((a.entry.requires or a.entry.excludes) and a.entry.tracker_key not in forced for a in items):
        return sort_by_priority(items)  # nothing to check: what the passes below would return
    current = sort_by_priority_descending(items)
    for _ in range(10):
        titles = {a.entry.title.lower() for a in current}
        kept, changed = [], False
        for a in current:
            e = a.entry
            if e.tracker_key in forced:
                kept.append(a)
                continue
            missing = [t for t in e.requires if t.lower() not in titles]
            present = [t for t in e.excludes if t.lower() in titles]
            if missing:
                ctx.trace.add(e, "requires/excludes", "removed", f"requires {', '.join(missing)}, which is not active")
                titles.discard(e.title.lower())
                changed = True
            elif present:
                ctx.trace.add(e, "requires/excludes", "removed", f"excludes {', '.join(present)}, which is active")
                titles.discard(e.title.lower())
                changed = True
            else:
                kept.append(a)
        current = kept
        if not changed:
            break
    return sort_by_priority(current)


def dedup_key(title: str, pos: int, depth: int, role: int, content_hash: str) -> str:
    return f"{title}|{pos}|{depth}|{role}|{content_hash}"


def strip_dedup(
    ctx: StageContext, items: list[Active], forced: set[str], placement: Callable[[Entry], tuple[int, int, int]]
) -> list[Active]:
    cfg = ctx.config
    if not cfg.strip_duplicate_injections or not ctx.state.injection_log:
        return items
    recent = ctx.state.injection_log[-cfg.strip_lookback_depth :]
    seen: dict[str, int] = {}
    for record in recent:
        for x in record.get("entries", ()):
            seen[dedup_key(x["title"], x["pos"], x["depth"], x["role"], x["hash"])] = record.get("gen", 0)
    out = []
    for a in items:
        e = a.entry
        if e.tracker_key in forced:  # exempt: its text may repeat
            out.append(a)
            continue
        pos, depth, role = placement(e)
        key = dedup_key(e.title, pos, depth, role, e.content_hash)
        if key in seen:
            ctx.trace.add(
                e,
                "strip duplicates",
                "removed",
                f"the same text was injected {ctx.state.generation_count - seen[key]} generation(s) ago "
                f"(look-back {cfg.strip_lookback_depth})",
            )
        else:
            out.append(a)
    return out
