"""Token budget, sentence-boundary truncation, the injection template and prompt groups
(DLE's formatAndGroup)."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.pipeline.config import POSITION_IDS, POSITION_NAMES, ROLE_IDS, ROLE_NAMES, MatchConfig
from dle_desktop.core.pipeline.stage_context import Active
from dle_desktop.core.pipeline.trace import Trace

MIN_TRUNCATION_TOKENS = 50
_SENTENCE_ENDERS = set('.!?*")}`]$。！？”）】’」_')


@dataclass(frozen=True)
class Injected:
    entry: Entry  # possibly truncated copy
    matched_by: str
    position: int  # ST enum: 0 after, 1 in chat, 2 before, -1 outlet
    depth: int
    role: int
    truncated: bool = False
    original_tokens: int | None = None


@dataclass(frozen=True)
class Group:
    key: str
    position: int
    depth: int
    role: int
    text: str
    outlet: str | None = None
    titles: tuple[str, ...] = ()
    #: SillyTavern's allowWIScan flag for this prompt (setting allow_wi_scan)
    scan: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "position": self.position,
            "position_name": POSITION_NAMES.get(self.position, str(self.position)),
            "depth": self.depth,
            "role": self.role,
            "role_name": ROLE_NAMES.get(self.role, str(self.role)),
            "outlet": self.outlet,
            "text": self.text,
            "entries": list(self.titles),
            "scan": self.scan,
        }


def placement(entry: Entry, cfg: MatchConfig) -> tuple[int, int, int]:
    if entry.position is None and entry.depth is None and entry.role is None:  # most entries
        return cfg.injection_position, max(0, min(10000, cfg.injection_depth)), cfg.injection_role
    pos = POSITION_IDS.get(entry.position or "", cfg.injection_position)
    depth = entry.depth if entry.depth is not None else cfg.injection_depth
    role = ROLE_IDS.get(entry.role or "", cfg.injection_role)
    return pos, max(0, min(10000, depth)), role


def _is_emoji(ch: str) -> bool:
    return unicodedata.category(ch) == "So" and ord(ch) > 0x2000


def truncate_to_sentence(text: str, max_chars: int) -> str:
    """Cut at the last sentence end if that keeps over 40 % of the room; else hard-cut + '...'."""
    if len(text) <= max_chars:
        return text
    window = text[:max_chars]
    cut = -1
    for i in range(len(window) - 1, -1, -1):
        if window[i] in _SENTENCE_ENDERS or _is_emoji(window[i]):
            cut = i
            break
    if cut + 1 > 0.4 * max_chars:
        return window[: cut + 1].rstrip()
    return window.rstrip() + "..."


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_PLACEHOLDER = re.compile(r"\{\{(title|content)\}\}")


@functools.lru_cache(maxsize=64)
def _template_parts(template: str) -> tuple[str, ...]:
    """The template split at its placeholders: literal text at even positions, the names
    ("title" or "content") at odd ones."""
    return tuple(_PLACEHOLDER.split(template))


def render(entry: Entry, template: str) -> str:
    # One pass over the template's own text, so a `{{content}}` inside a title (or a title
    # placeholder inside the content) is never expanded.
    title = _xml_escape(entry.title)
    parts = _template_parts(template)
    out = list(parts)
    for i in range(1, len(parts), 2):
        out[i] = title if parts[i] == "title" else entry.content
    return "".join(out)


def apply_budget(items: list[Active], cfg: MatchConfig, trace: Trace) -> tuple[list[Injected], list[Injected]]:
    """(positional entries that fit, outlet entries). Constants and pins count against the
    budget and the entry cap, as in DLE; the walk stops at the first entry that does not fit."""
    outlets: list[Injected] = []
    positional: list[Injected] = []
    total = 0
    stopped = False
    for a in items:
        e = a.entry
        if e.outlet:
            _, depth, role = placement(e, cfg)
            outlets.append(Injected(e, a.matched_by, -1, depth, role))
            trace.add(e, "budget", "injected", f"outlet '{e.outlet}' (outside the budget and entry cap)")
            continue
        if stopped:
            trace.add(e, "budget", "cut", "the walk stopped at an earlier entry that did not fit")
            continue
        pos, depth, role = placement(e, cfg)
        if not cfg.unlimited_entries and len(positional) >= cfg.max_entries:
            trace.add(e, "budget", "cut", f"max entries ({cfg.max_entries}) reached")
            stopped = True
            continue
        tokens = e.token_estimate
        if not cfg.unlimited_budget and total + tokens > cfg.max_tokens_budget:
            remaining = cfg.max_tokens_budget - total
            if remaining >= MIN_TRUNCATION_TOKENS:
                cpt = (len(e.content) / e.token_estimate) if e.token_estimate else 4.0
                text = truncate_to_sentence(e.content, math.floor(remaining * cpt))
                new_tokens = math.ceil(len(text) / cpt) if cpt else 0
                cut = dataclasses.replace(
                    e, content=text, token_estimate=new_tokens, content_hash=e.content_hash + "_trunc"
                )
                positional.append(Injected(cut, a.matched_by, pos, depth, role, truncated=True, original_tokens=tokens))
                total += new_tokens
                trace.add(
                    e,
                    "budget",
                    "truncated",
                    f"{tokens} tokens did not fit in the {remaining} left of {cfg.max_tokens_budget}; cut to {new_tokens}",
                )
                stopped = True
                continue
            if positional:
                trace.add(e, "budget", "cut", f"{tokens} tokens; only {remaining} of {cfg.max_tokens_budget} left")
                stopped = True
                continue
            trace.add(
                e,
                "budget",
                "cut",
                f"{tokens} tokens; only {remaining} of {cfg.max_tokens_budget} left (nothing injected yet, trying the next)",
            )
            continue
        positional.append(Injected(e, a.matched_by, pos, depth, role))
        total += tokens
        how = a.matched_by if a.matched_by.startswith("(") else f"({a.matched_by})"
        trace.add(e, "budget", "injected", f"{tokens} tokens {how}")
    return positional, outlets


def group(positional: list[Injected], outlets: list[Injected], cfg: MatchConfig) -> list[Group]:
    buckets: dict[str, list[Injected]] = {}
    meta: dict[str, tuple[int, int, int, str | None]] = {}
    for inj in positional:
        if cfg.injection_mode == "prompt_list":
            e = inj.entry
            if e.position is not None or e.depth is not None or e.role is not None:
                key = f"deeplore_override_p{inj.position}_d{inj.depth}_r{inj.role}"
                meta.setdefault(key, (inj.position, inj.depth, inj.role, None))
            elif e.constant:
                key = "deeplore_constants"
                meta.setdefault(key, (0, 0, 0, None))
            else:
                key = "deeplore_lore"
                meta.setdefault(key, (0, 0, 0, None))
        else:
            key = f"deeplore_p{inj.position}_d{inj.depth}_r{inj.role}"
            meta.setdefault(key, (inj.position, inj.depth, inj.role, None))
        buckets.setdefault(key, []).append(inj)
    for inj in outlets:
        key = f"customWIOutlet_{inj.entry.outlet}"
        if key not in meta:
            first_role = ROLE_IDS.get(inj.entry.role or "", 0)
            meta[key] = (-1, 0, first_role, inj.entry.outlet)
        buckets.setdefault(key, []).append(inj)
    out = []
    for key, items in buckets.items():
        pos, depth, role, outlet = meta[key]
        text = "\n\n".join(render(i.entry, cfg.injection_template) for i in items)
        out.append(Group(key, pos, depth, role, text, outlet, tuple(i.entry.title for i in items), cfg.allow_wi_scan))
    return out
