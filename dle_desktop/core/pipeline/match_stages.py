"""The stages that bring entries in, in DLE's order: constants and bootstraps, keywords in each
entry's scan window, the active character, cascade links, recursion through matched lore, BM25
(fuzzy) and semantic search."""

from __future__ import annotations

from dle_desktop.core.pipeline.admission import on_cooldown, passes_probability, warm_enough
from dle_desktop.core.pipeline.chat import scan_text
from dle_desktop.core.pipeline.matcher import KeyHit, KeywordIndex, first_matching_key, normalise
from dle_desktop.core.pipeline.priority_order import sort_by_priority
from dle_desktop.core.pipeline.semantic_stage import semantic_stage
from dle_desktop.core.pipeline.stage_context import Active, StageContext

RECURSION_TEXT_LIMIT = 50_000


def _keyword_match(ctx: StageContext, idx: int, hit: KeyHit) -> tuple[str | None, bool]:
    """(matched key as written, refine-blocked?) for entry `idx` against `hit`."""
    ww = ctx.config.match_whole_words
    key = first_matching_key(hit, ctx.index.keys[idx], ww)
    if key is None:
        return None, False
    refine = ctx.index.refine[idx]
    if refine and first_matching_key(hit, refine, ww) is None:
        return key, True
    return key, False


def _spelled(ctx: StageContext, idx: int, key: str) -> str:
    return ctx.index.spelling[idx].get(key, key)


# -- matchEntries -------------------------------------------------------------------------------
def match_entries(ctx: StageContext) -> list[Active]:
    cfg, trace = ctx.config, ctx.trace
    active: dict[str, Active] = {}

    assert ctx.constant_matches is not None and ctx.bootstraps is not None  # StageContext.__post_init__ fills them
    with trace.timed("constants"):
        active.update(ctx.constant_matches.actives)
        trace.verdicts.extend(ctx.constant_matches.verdicts)
        if len(ctx.messages) <= cfg.new_chat_threshold:
            for e in ctx.bootstraps:
                if e.uid not in active:
                    active[e.uid] = Active(e, "(bootstrap)", forced=True)
                    trace.add(
                        e,
                        "bootstrap",
                        "matched",
                        f"bootstrap: the chat has {len(ctx.messages)} messages (≤ {cfg.new_chat_threshold})",
                    )

    with trace.timed("keywords"):
        if cfg.scan_depth > 0:
            ctx.prepare_windows()
            widest = ctx._full
            assert widest is not None  # prepare_windows() sets it
            for idx in ctx.index.candidates(widest):
                e = ctx.index.entries[idx]
                if e.constant or e.uid in active:
                    continue
                depth = ctx.entry_depth(e)
                if depth <= 0:
                    trace.add(e, "keywords", "skipped", "scanDepth 0: never matched by keywords (AI search only)")
                    continue
                hit = ctx.window(depth)
                key, refine_blocked = _keyword_match(ctx, idx, hit)
                if key is None:
                    trace.add(
                        e, "keywords", "skipped", f"its keys occur only outside its scan window of {depth} messages"
                    )
                    continue
                if refine_blocked:
                    trace.add(
                        e,
                        "keywords",
                        "skipped",
                        f"key '{_spelled(ctx, idx, key)}' matched but none of its refine keys did ({', '.join(e.refine_keys)})",
                    )
                    continue
                if (
                    not warm_enough(ctx, e, hit, idx, "keywords")
                    or not passes_probability(ctx, e, "keywords")
                    or on_cooldown(ctx, e, "keywords")
                ):
                    continue
                active[e.uid] = Active(e, _spelled(ctx, idx, key))
                trace.add(e, "keywords", "matched", f"key '{_spelled(ctx, idx, key)}' in the last {depth} messages")

    with trace.timed("character"):
        if cfg.character_context_scan and cfg.scan_depth > 0 and ctx.character_name:
            name = ctx.character_name.strip().lower()
            titled = ctx.by_title.get(name)
            target = titled[0] if titled else None
            if target is None:
                # Keys are indexed in normalised form; confirm the exact (case-folded) key.
                owners = ctx.index.owners.get(normalise(ctx.character_name.strip(), ctx.index.case_sensitive), ())
                target = next(
                    (
                        ctx.index.entries[i]
                        for i in sorted(owners)
                        if any(k.lower() == name for k in ctx.index.entries[i].keys)
                    ),
                    None,
                )
            if target is not None and target.uid not in active:
                active[target.uid] = Active(target, "(active character)")
                trace.add(target, "character", "matched", f"it is the active character ({ctx.character_name})")

    with trace.timed("cascade"):
        if cfg.scan_depth > 0:
            for src in list(active.values()):
                for title in src.entry.cascade_links:
                    for linked in ctx.by_title.get(title.lower(), ()):
                        if linked.uid in active:
                            continue
                        if linked.cooldown is not None and on_cooldown(ctx, linked, "cascade"):
                            continue
                        if not passes_probability(ctx, linked, "cascade"):
                            continue
                        active[linked.uid] = Active(linked, f"(cascade from: {src.entry.title})")
                        trace.add(linked, "cascade", "matched", f"cascade link from '{src.entry.title}'")

    with trace.timed("recursion"):
        if cfg.recursive_scan and cfg.scan_depth > 0:
            newly = list(active.values())
            for step in range(1, cfg.max_recursion_steps + 1):
                pieces = [a.entry.content for a in newly if not a.entry.exclude_recursion]
                if not pieces or pieces == [""]:  # the joined text would be empty
                    break
                hit = ctx.index.scan_joined(pieces, RECURSION_TEXT_LIMIT)
                found: list[Active] = []
                for idx in ctx.index.candidates(hit):
                    e = ctx.index.entries[idx]
                    if e.constant or e.uid in active:
                        continue
                    key, refine_blocked = _keyword_match(ctx, idx, hit)
                    if key is None:
                        continue
                    if refine_blocked:
                        trace.add(
                            e,
                            f"recursion {step}",
                            "skipped",
                            f"key '{_spelled(ctx, idx, key)}' found in matched lore but no refine key was",
                        )
                        continue
                    if on_cooldown(ctx, e, f"recursion {step}") or not passes_probability(ctx, e, f"recursion {step}"):
                        continue
                    if not warm_enough(ctx, e, hit, idx, f"recursion {step}"):
                        continue
                    a = Active(e, f"{_spelled(ctx, idx, key)} (recursion step {step})")
                    active[e.uid] = a
                    found.append(a)
                    trace.add(
                        e,
                        f"recursion {step}",
                        "matched",
                        f"key '{_spelled(ctx, idx, key)}' found in the text of matched lore",
                    )
                if not found:
                    break
                newly = found

    with trace.timed("fuzzy"):
        if cfg.fuzzy_search_enabled and cfg.scan_depth > 0 and ctx.bm25_search is not None:
            # DLE queries the global scan window, whatever the widest per-entry window is.
            query = scan_text(ctx.messages, cfg.scan_depth)
            visible = ctx.index.position
            assert ctx._full is not None  # prepare_windows() ran: scan_depth > 0
            fuzzy_hits = ctx.bm25_search(query, 20, cfg.fuzzy_search_min_score)
            ctx._fuzzy_ranked = [uid for uid, _ in fuzzy_hits]
            for uid, score in fuzzy_hits:
                row = visible.get(uid)
                kindex = ctx.index
                if row is None:
                    # Not writer-visible. Only with fix_guide_leak off does a guide entry get
                    # through here, as in DLE (its BM25 index covers the whole vault, §3.12).
                    hidden = ctx.hidden.get(uid)
                    if hidden is None:
                        continue
                    kindex, row = KeywordIndex([hidden], ctx.index.case_sensitive), 0
                e = kindex.entries[row]
                if e.uid in active or e.constant:
                    continue
                depth = ctx.entry_depth(e) or cfg.scan_depth
                hit = (
                    ctx.window(depth)
                    if kindex is ctx.index
                    else kindex.scan(ctx._full.text).after(ctx._offsets.get(depth, 0))
                )
                if (
                    cfg.fix_refine_keys_in_fuzzy
                    and kindex.refine[row]
                    and first_matching_key(hit, kindex.refine[row], cfg.match_whole_words) is None
                ):
                    trace.add(e, "fuzzy", "skipped", f"BM25 score {score:.2f} but none of its refine keys matched")
                    continue
                if on_cooldown(ctx, e, "fuzzy"):
                    continue
                if not warm_enough(ctx, e, hit, row, "fuzzy", kindex) or not passes_probability(ctx, e, "fuzzy"):
                    continue
                active[e.uid] = Active(e, f"(fuzzy, score: {score:.1f})")
                trace.add(e, "fuzzy", "matched", f"BM25 score {score:.2f} ≥ {cfg.fuzzy_search_min_score:g}")

    with trace.timed("semantic"):
        if cfg.semantic_enabled and ctx.semantic_hits:
            semantic_stage(ctx, active)

    return sort_by_priority(list(active.values()))
