"""The pipeline's stages, in DLE's order. Each takes the working set and returns a new one,
writing a verdict for every entry it adds or removes."""

from __future__ import annotations

import functools
import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from dle_desktop.core.entry import Entry
from dle_desktop.core.fields import FieldDefinitions
from dle_desktop.core.pipeline.chat import ChatMessage, scan_lines, scan_text
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.matcher import (
    KeyHit,
    KeywordIndex,
    count_occurrences,
    first_matching_key,
    normalise,
)
from dle_desktop.core.pipeline.passages import passage_excerpt
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.core.pipeline.trace import Trace

RECURSION_TEXT_LIMIT = 50_000


@dataclass
class Active:
    """An entry in the working set and how it got there."""

    entry: Entry
    matched_by: str
    forced: bool = False  # constant, bootstrap or pinned: exempt from gating stages


@dataclass
class StageContext:
    entries: Sequence[Entry]  # writer-visible entries, in vault order
    index: KeywordIndex
    messages: Sequence[ChatMessage]
    state: ChatState
    config: MatchConfig
    rng: random.Random
    trace: Trace
    field_definitions: FieldDefinitions
    character_name: str | None = None
    bm25_search: object = None  # callable(query, top_k, min_score) -> [(uid, score)] or None
    #: uid → entries BM25 can reach that are not writer-visible (guides, with fix_guide_leak off)
    hidden: dict[str, Entry] = field(default_factory=dict)
    #: (uid, cosine similarity) of the vault's entries to the scan text, best first; computed
    #: by the caller (it needs the embedder) when semantic retrieval is on.
    semantic_hits: Sequence[tuple[str, float]] | None = None
    _fuzzy_ranked: list[str] = field(default_factory=list)
    by_title: dict[str, list[Entry]] = field(default_factory=dict)
    #: Per-snapshot facts (run.py caches them); computed from `entries` when not given.
    constants: Sequence[Entry] | None = None
    bootstraps: Sequence[Entry] | None = None
    exempt_keys: frozenset[str] | None = None
    entry_depths: frozenset[int] | None = None
    _windows: dict[int, KeyHit] = field(default_factory=dict)
    _full: KeyHit | None = None
    _offsets: dict[int, int] = field(default_factory=dict)

    # -- scan windows -------------------------------------------------------------------------
    def __post_init__(self) -> None:
        if self.constants is None:
            self.constants = [e for e in self.entries if e.constant]
        if self.bootstraps is None:
            self.bootstraps = [e for e in self.entries if e.bootstrap]
        if self.exempt_keys is None:
            self.exempt_keys = frozenset(e.tracker_key for e in self.entries if e.constant or e.seed or e.bootstrap)
        if self.entry_depths is None:
            self.entry_depths = frozenset(e.scan_depth for e in self.entries if e.scan_depth)
        if not self.by_title:
            for e in self.entries:
                self.by_title.setdefault(e.title.lower(), []).append(e)

    def prepare_windows(self) -> None:
        """Scan the widest window once; narrower windows are suffixes of it."""
        depths = {self.config.scan_depth}
        depths.update(self.entry_depths)
        widest = max(depths) if depths else 0
        lines = scan_lines(self.messages, widest)
        text = "\n".join(lines)
        self._full = self.index.scan(text)
        # Offsets of each window's start inside the widest text. Windows count messages
        # (filtered ones included), so find how many lines each depth keeps.
        kept = [not m.skipped_in_scan for m in self.messages[-widest:]] if widest > 0 else []
        line_starts = []
        pos = 0
        for ln in lines:
            line_starts.append(pos)
            pos += len(normalise(ln, self.index.case_sensitive)) + 1
        for d in depths:
            if d <= 0:
                continue
            lines_in_window = sum(kept[-d:]) if d <= len(kept) else sum(kept)
            first_line = len(lines) - lines_in_window
            self._offsets[d] = line_starts[first_line] if 0 <= first_line < len(lines) else len(self._full.text) + 1

    def window(self, depth: int) -> KeyHit:
        if depth not in self._windows:
            self._windows[depth] = self._full.after(self._offsets.get(depth, 0))
        return self._windows[depth]

    def entry_depth(self, e: Entry) -> int:
        return e.scan_depth if e.scan_depth is not None else self.config.scan_depth


def _roll(ctx: StageContext, e: Entry, stage: str) -> bool:
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


def _cooling(ctx: StageContext, e: Entry, stage: str) -> bool:
    left = ctx.state.cooldowns.get(e.tracker_key, 0)
    if left > 0:
        ctx.trace.add(e, stage, "skipped", f"on cooldown: {left} more generation{'s' if left != 1 else ''}")
        return True
    return False


def _warm_enough(ctx: StageContext, e: Entry, hit: KeyHit, idx: int, stage: str, index: KeywordIndex | None = None) -> bool:
    if not e.warmup:
        return True
    found = count_occurrences(hit, (index or ctx.index).keys[idx], ctx.config.match_whole_words)
    if found < e.warmup:
        ctx.trace.add(e, stage, "skipped", f"warmup: its keys occur {found} time{'s' if found != 1 else ''}, needs {e.warmup}")
        return False
    return True


def _test(ctx: StageContext, idx: int, hit: KeyHit) -> tuple[str | None, bool]:
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

    with trace.timed("constants"):
        for e in ctx.constants:
            active[e.uid] = Active(e, "(constant)", forced=True)
            trace.add(e, "constants", "matched", "constant: always in")
        if len(ctx.messages) <= cfg.new_chat_threshold:
            for e in ctx.bootstraps:
                if e.uid not in active:
                    active[e.uid] = Active(e, "(bootstrap)", forced=True)
                    trace.add(e, "bootstrap", "matched",
                              f"bootstrap: the chat has {len(ctx.messages)} messages (≤ {cfg.new_chat_threshold})")

    with trace.timed("keywords"):
        if cfg.scan_depth > 0:
            ctx.prepare_windows()
            widest = ctx._full
            for idx in ctx.index.candidates(widest):
                e = ctx.index.entries[idx]
                if e.constant or e.uid in active:
                    continue
                depth = ctx.entry_depth(e)
                if depth <= 0:
                    trace.add(e, "keywords", "skipped", "scanDepth 0: never matched by keywords (AI search only)")
                    continue
                hit = ctx.window(depth)
                key, refine_blocked = _test(ctx, idx, hit)
                if key is None:
                    trace.add(e, "keywords", "skipped", f"its keys occur only outside its scan window of {depth} messages")
                    continue
                if refine_blocked:
                    trace.add(e, "keywords", "skipped",
                              f"key '{_spelled(ctx, idx, key)}' matched but none of its refine keys did ({', '.join(e.refine_keys)})")
                    continue
                if not _warm_enough(ctx, e, hit, idx, "keywords") or not _roll(ctx, e, "keywords") or _cooling(ctx, e, "keywords"):
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
                target = next((ctx.index.entries[i] for i in sorted(owners)
                               if any(k.lower() == name for k in ctx.index.entries[i].keys)), None)
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
                        if linked.cooldown is not None and _cooling(ctx, linked, "cascade"):
                            continue
                        if not _roll(ctx, linked, "cascade"):
                            continue
                        active[linked.uid] = Active(linked, f"(cascade from: {src.entry.title})")
                        trace.add(linked, "cascade", "matched", f"cascade link from '{src.entry.title}'")

    with trace.timed("recursion"):
        if cfg.recursive_scan and cfg.scan_depth > 0:
            newly = list(active.values())
            for step in range(1, cfg.max_recursion_steps + 1):
                text = "\n".join(a.entry.content for a in newly if not a.entry.exclude_recursion)[:RECURSION_TEXT_LIMIT]
                if not text:
                    break
                hit = ctx.index.scan(text)
                found: list[Active] = []
                for idx in ctx.index.candidates(hit):
                    e = ctx.index.entries[idx]
                    if e.constant or e.uid in active:
                        continue
                    key, refine_blocked = _test(ctx, idx, hit)
                    if key is None:
                        continue
                    if refine_blocked:
                        trace.add(e, f"recursion {step}", "skipped",
                                  f"key '{_spelled(ctx, idx, key)}' found in matched lore but no refine key was")
                        continue
                    if _cooling(ctx, e, f"recursion {step}") or not _roll(ctx, e, f"recursion {step}"):
                        continue
                    if not _warm_enough(ctx, e, hit, idx, f"recursion {step}"):
                        continue
                    a = Active(e, f"{_spelled(ctx, idx, key)} (recursion step {step})")
                    active[e.uid] = a
                    found.append(a)
                    trace.add(e, f"recursion {step}", "matched", f"key '{_spelled(ctx, idx, key)}' found in the text of matched lore")
                if not found:
                    break
                newly = found

    with trace.timed("fuzzy"):
        if cfg.fuzzy_search_enabled and cfg.scan_depth > 0 and ctx.bm25_search is not None:
            # DLE queries the global scan window, whatever the widest per-entry window is.
            query = scan_text(ctx.messages, cfg.scan_depth)
            visible = ctx.index.position
            fuzzy_hits = ctx.bm25_search(query, 20, cfg.fuzzy_search_min_score)
            ctx._fuzzy_ranked = [uid for uid, _ in fuzzy_hits]
            for uid, score in fuzzy_hits:
                idx = visible.get(uid)
                kindex = ctx.index
                if idx is None:
                    # Not writer-visible. Only with fix_guide_leak off does a guide entry get
                    # through here, as in DLE (its BM25 index covers the whole vault, §3.12).
                    e = ctx.hidden.get(uid)
                    if e is None:
                        continue
                    kindex, idx = KeywordIndex([e], ctx.index.case_sensitive), 0
                e = kindex.entries[idx]
                if e.uid in active or e.constant:
                    continue
                depth = ctx.entry_depth(e) or cfg.scan_depth
                hit = ctx.window(depth) if kindex is ctx.index else kindex.scan(ctx._full.text).after(ctx._offsets.get(depth, 0))
                if cfg.fix_refine_keys_in_fuzzy and kindex.refine[idx]:
                    if first_matching_key(hit, kindex.refine[idx], cfg.match_whole_words) is None:
                        trace.add(e, "fuzzy", "skipped", f"BM25 score {score:.2f} but none of its refine keys matched")
                        continue
                if _cooling(ctx, e, "fuzzy"):
                    continue
                if not _warm_enough(ctx, e, hit, idx, "fuzzy", kindex) or not _roll(ctx, e, "fuzzy"):
                    continue
                active[e.uid] = Active(e, f"(fuzzy, score: {score:.1f})")
                trace.add(e, "fuzzy", "matched", f"BM25 score {score:.2f} ≥ {cfg.fuzzy_search_min_score:g}")

    with trace.timed("semantic"):
        if cfg.semantic_enabled and ctx.semantic_hits:
            semantic_stage(ctx, active)

    return sort_by_priority(list(active.values()))


#: The relative threshold needs this many hits to read a distribution from; with fewer, only
#: the absolute floor applies.
RELATIVE_MIN_HITS = 8


def semantic_threshold(hits: Sequence[tuple], cfg: MatchConfig) -> float:
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
    floor = semantic_threshold(ctx.semantic_hits, cfg)
    for hit in ctx.semantic_hits:
        uid, score = hit[0], hit[1]
        if score >= floor and uid in visible and uid not in passage:
            semantic.append((uid, score))
            passage[uid] = hit[2] if len(hit) > 2 else -1
    sem_rank = {uid: i + 1 for i, (uid, _) in enumerate(semantic)}
    bm_rank = {uid: i + 1 for i, uid in enumerate(ctx._fuzzy_ranked)}
    fused = {uid: 1 / (cfg.semantic_rrf_k + r) + (1 / (cfg.semantic_rrf_k + bm_rank[uid]) if uid in bm_rank else 0.0)
             for uid, r in sem_rank.items()}
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
                trace.add(e, "semantic", "matched",
                          f"meaning close to the chat: similarity {scores[uid]:.2f} (rank {sem_rank[uid]}, "
                          f"BM25 rank {bm_rank.get(uid, '-')}; fused {fused[uid]:.4f}; BM25 had matched it)"
                          + (f"; matched on: «{x}»" if passage[uid] >= 0 and (x := passage_excerpt(e, passage[uid]))
                             else ""))
            continue
        if _cooling(ctx, e, "semantic") or not _roll(ctx, e, "semantic"):
            continue
        both = f", BM25 rank {bm_rank[uid]}" if uid in bm_rank else ""
        excerpt = passage_excerpt(e, passage[uid]) if passage[uid] >= 0 else None
        on = f"; matched on: «{excerpt}»" if excerpt else ""
        active[uid] = Active(e, f"(semantic, score: {scores[uid]:.2f})")
        trace.add(e, "semantic", "matched",
                  f"meaning close to the chat: similarity {scores[uid]:.2f} (rank {sem_rank[uid]}{both}; "
                  f"fused {fused[uid]:.4f}){on}")
        added += 1


#: ICU's root order for ASCII punctuation and symbols (they all sort before digits and letters).
_ICU_ASCII_ORDER = {c: i for i, c in enumerate("_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$")}


def _collation_group(ch: str) -> tuple[int, int]:
    if ch in _ICU_ASCII_ORDER:
        return 1, _ICU_ASCII_ORDER[ch]
    cat = unicodedata.category(ch)
    if ch.isspace() or cat[0] == "Z":
        return 0, 0
    if cat == "Pd":
        return 1, _ICU_ASCII_ORDER["-"]
    if cat[0] == "P":
        return 1, 100
    if cat == "Sc":
        return 3, 0
    if cat[0] == "S":
        return 2, 0
    if cat[0] == "N":
        return 4, 0
    return 5, 0


#: Letters ICU sorts as two letters (ß already case-folds to "ss").
_EXPANSIONS = {"æ": "ae", "œ": "oe"}
#: Letters ICU sorts as a base letter with a secondary (accent-like) difference.
_STROKED = {"ø": ("o", "\u0338"), "đ": ("d", "\u0335"), "ł": ("l", "\u0337"), "ħ": ("h", "\u0335")}
#: ICU's secondary order of common combining marks; others follow by code point.
_MARK_ORDER = {chr(c): i for i, c in enumerate(
    (0x301, 0x300, 0x306, 0x302, 0x30C, 0x30A, 0x308, 0x30B, 0x303, 0x307, 0x338, 0x327, 0x328, 0x304,
     0x337, 0x335, 0x31B, 0x323))}


@functools.lru_cache(maxsize=65536)
def title_order_key(title: str) -> tuple:
    """An approximation of JavaScript's `localeCompare` (ICU root collation), which DLE uses to
    order titles: accents and case only break ties (é sorts with e, 'apple' before 'Apple'), and
    spaces, punctuation and symbols sort before digits, digits before letters."""
    primary: list[tuple] = []
    marks: list[tuple] = []
    tertiary: list[int] = []
    for ch in unicodedata.normalize("NFKD", title):
        if unicodedata.combining(ch) and primary:
            marks[-1] += ((_MARK_ORDER.get(ch, 100), ch),)
            continue
        folded = ch.casefold()
        folded = _EXPANSIONS.get(folded, folded)
        stroke = _STROKED.get(folded)
        if stroke:
            folded = stroke[0]
        expanded = len(folded) > 1
        case = (1 if ch.isupper() else 0) + (2 if expanded else 0)
        for i, f in enumerate(folded):
            primary.append((*_collation_group(f), f))
            if stroke:
                marks.append(((_MARK_ORDER.get(stroke[1], 100), stroke[1]),))
            elif expanded and ch.casefold() in _EXPANSIONS:
                marks.append(((200 + i, ""),))  # æ, œ also differ from "ae", "oe" at the accent level
            else:
                marks.append(())
            tertiary.append(case)
    return tuple(primary), tuple(marks), tuple(tertiary), title


def sort_by_priority(items: list[Active]) -> list[Active]:
    """DLE's final sort: priority ascending, then `title.localeCompare`."""
    return sorted(items, key=lambda a: (a.entry.priority, title_order_key(a.entry.title)))


# -- gating -------------------------------------------------------------------------------------
def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    text = str(value)
    return [text] if text != "" else []


def evaluate_operator(op: str, entry_value, active_value) -> bool:
    ev = [v.lower() for v in _as_list(entry_value)]
    av = [v.lower() for v in _as_list(active_value)]
    if op == "match_any":
        return any(v in av for v in ev)
    if op == "match_all":
        return all(v in av for v in ev)
    if op == "not_any":
        return not any(v in av for v in ev)
    if op == "exists":
        return bool(ev)
    if op == "not_exists":
        return not ev
    if op == "eq":
        return ",".join(ev) == ",".join(av)
    if op in ("gt", "lt"):
        try:
            a, b = float(ev[0]), float(av[0])
        except (IndexError, ValueError):
            return False
        if a != a or b != b:
            return False
        return a > b if op == "gt" else a < b
    return True


def _exempt(a: Active) -> bool:
    """DLE's forceInject policy (§3.6 P0): constants, seeds and bootstraps (even when bootstrap
    is no longer active) and pins are exempt from gating and the folder filter."""
    e = a.entry
    return a.forced or e.constant or e.seed or e.bootstrap


def contextual_gating(ctx: StageContext, items: list[Active], stage: str) -> list[Active]:
    """DLE's per-field gate: nothing is filtered unless some enabled field has an active value."""
    fields = [f for f in ctx.field_definitions.fields if f.gating_enabled]
    context = ctx.state.context
    active_values = {f.name: context.get(f.context_key or f.name) for f in fields}
    if not any(_as_list(v) for v in active_values.values()):
        return items
    out = []
    for a in items:
        if _exempt(a):
            out.append(a)
            continue
        blocked_by = None
        for f in fields:
            ev = a.entry.custom_fields.get(f.name)
            av = active_values[f.name]
            has_entry = bool(_as_list(ev)) or isinstance(ev, (int, float, bool))
            if f.operator in ("exists", "not_exists"):
                if not evaluate_operator(f.operator, ev, av):
                    blocked_by = f"{f.name} {f.operator}"
                    break
                continue
            if not has_entry:
                continue
            if not _as_list(av):
                if f.tolerance == "strict":
                    blocked_by = f"{f.name}: the entry has a value but the chat has none set (strict)"
                    break
                continue
            if not evaluate_operator(f.operator, ev, av):
                if f.tolerance == "lenient" and f.operator in ("match_any", "match_all"):
                    continue
                ev_text = ", ".join(_as_list(ev)) or str(ev)
                blocked_by = f"{f.name} is '{ev_text}', the chat's is '{', '.join(_as_list(av))}' ({f.operator})"
                break
        if blocked_by:
            ctx.trace.add(a.entry, stage, "removed", blocked_by)
        else:
            out.append(a)
    return out


def folder_filter(ctx: StageContext, items: list[Active]) -> list[Active]:
    folders = ctx.state.folder_filter
    if not folders:
        return items
    out = []
    for a in items:
        f = a.entry.folder
        if _exempt(a) or f is None or any(f == x or f.startswith(x.rstrip("/") + "/") for x in folders):
            out.append(a)
        else:
            ctx.trace.add(a.entry, "folder filter", "removed", f"its folder '{f}' is outside the chat's folder filter ({', '.join(folders)})")
    return out


def forced_keys(ctx: StageContext, all_entries: Sequence[Entry]) -> set[str]:
    """DLE's exemption policy: constants, seeds and bootstraps (even inactive), and pinned entries."""
    keys = set(ctx.exempt_keys)
    for pin in ctx.state.pins:
        keys.update(e.tracker_key for e in ctx.by_title.get(pin.title.lower(), ()) if pin.matches(e.title, e.vault))
    return keys


def apply_pins_and_blocks(ctx: StageContext, items: list[Active]) -> list[Active]:
    import dataclasses

    by_uid = {a.entry.uid: a for a in items}
    for pin in ctx.state.pins:
        hits = [e for e in ctx.by_title.get(pin.title.lower(), ()) if pin.matches(e.title, e.vault)]
        if not hits:
            ctx.trace.notes.append(f"pin '{pin.title}' matches no entry")
        for e in hits:
            pinned = dataclasses.replace(e, constant=True, priority=10)
            by_uid[e.uid] = Active(pinned, "(pinned)", forced=True)
            ctx.trace.add(e, "pins", "matched", "pinned in this chat (treated as constant, priority 10)")
    out = []
    for a in by_uid.values():
        if any(b.matches(a.entry.title, a.entry.vault) for b in ctx.state.blocks):
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
            ctx.trace.add(a.entry, "reinjection cooldown", "removed",
                          f"injected {ctx.state.generation_count - last + 1} generation(s) ago; re-injection cooldown is {n}")
        else:
            out.append(a)
    return out


def requires_excludes(ctx: StageContext, items: list[Active], forced: set[str]) -> list[Active]:
    """Drop entries whose requirements are missing or whose exclusions are present; repeat
    until stable (drops cascade), at most 10 passes, highest priority number first as DLE does."""
    current = sorted(items, key=lambda a: (-(a.entry.priority or 50), title_order_key(a.entry.title)))
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


def strip_dedup(ctx: StageContext, items: list[Active], forced: set[str], placement) -> list[Active]:
    cfg = ctx.config
    if not cfg.strip_duplicate_injections or not ctx.state.injection_log:
        return items
    recent = ctx.state.injection_log[-cfg.strip_lookback_depth:]
    seen: dict[str, int] = {}
    for record in recent:
        for x in record.get("entries", ()):
            seen[dedup_key(x["title"], x["pos"], x["depth"], x["role"], x["hash"])] = record.get("gen", 0)
    out = []
    for a in items:
        e = a.entry
        pos, depth, role = placement(e)
        key = dedup_key(e.title, pos, depth, role, e.content_hash)
        if e.tracker_key not in forced and key in seen:
            ctx.trace.add(e, "strip duplicates", "removed",
                          f"the same text was injected {ctx.state.generation_count - seen[key]} generation(s) ago "
                          f"(look-back {cfg.strip_lookback_depth})")
        else:
            out.append(a)
    return out
