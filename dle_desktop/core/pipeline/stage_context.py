"""What every pipeline stage works on: the run's inputs and scan windows (`StageContext`) and
the working set's members (`Active`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dle_desktop.core.entry import Entry
from dle_desktop.core.fields import FieldDefinitions
from dle_desktop.core.pipeline.chat import ChatMessage, scan_lines
from dle_desktop.core.pipeline.collation import flat_title_order_key
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.matcher import KeyHit, KeywordIndex
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.core.pipeline.trace import Trace, Verdict


@dataclass
class Active:
    """An entry in the working set and how it got there."""

    entry: Entry
    matched_by: str
    forced: bool = False  # constant, bootstrap or pinned: exempt from gating stages

    @cached_property
    def priority_key(self) -> tuple[Any, ...]:
        """`sort_by_priority`'s key: priority, then the title's collation order. Cached, as
        nothing changes an Active's entry once it is made."""
        return (self.entry.priority, *flat_title_order_key(self.entry.title))


@dataclass(frozen=True)
class ConstantMatches:
    """What the constants stage adds: the same in every generation of one snapshot, so it is
    built once per snapshot. Generations share these objects; nothing changes an `Active` or a
    `Verdict` once made."""

    actives: dict[str, Active]
    verdicts: tuple[Verdict, ...]

    @classmethod
    def of(cls, constants: Sequence[Entry]) -> ConstantMatches:
        actives: dict[str, Active] = {}
        verdicts = []
        for e in constants:
            actives[e.uid] = Active(e, "(constant)", forced=True)
            verdicts.append(Verdict(e.title, e.vault, "constants", "matched", "constant: always in"))
        return cls(actives, tuple(verdicts))


#: (entry uid, similarity), or with the index of the passage that matched as a third item.
SemanticHit = tuple[str, float] | tuple[str, float, int]
#: BM25 over the vault: (query, top_k, min_score) -> [(uid, score)], best first.
Bm25Search = Callable[[str, int, float], list[tuple[str, float]]]


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
    bm25_search: Bm25Search | None = None
    #: uid → entries BM25 can reach that are not writer-visible (guides, with fix_guide_leak off)
    hidden: dict[str, Entry] = field(default_factory=dict)
    #: (uid, cosine similarity) of the vault's entries to the scan text, best first; computed
    #: by the caller (it needs the embedder) when semantic retrieval is on.
    semantic_hits: Sequence[SemanticHit] | None = None
    _fuzzy_ranked: list[str] = field(default_factory=list)
    by_title: dict[str, list[Entry]] = field(default_factory=dict)
    #: Per-snapshot facts (run.py caches them); computed from `entries` when not given.
    constants: Sequence[Entry] | None = None
    bootstraps: Sequence[Entry] | None = None
    exempt_keys: frozenset[str] | None = None
    entry_depths: frozenset[int] | None = None
    constant_matches: ConstantMatches | None = None
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
        if self.constant_matches is None:
            self.constant_matches = ConstantMatches.of(self.constants)
        if self.entry_depths is None:
            self.entry_depths = frozenset(e.scan_depth for e in self.entries if e.scan_depth)
        if not self.by_title:
            for e in self.entries:
                self.by_title.setdefault(e.title.lower(), []).append(e)

    def prepare_windows(self) -> None:
        """Scan the widest window once; narrower windows are suffixes of it."""
        assert self.entry_depths is not None  # __post_init__ fills it
        depths = {self.config.scan_depth}
        depths.update(self.entry_depths)
        widest = max(depths) if depths else 0
        lines = scan_lines(self.messages, widest)
        self._full, line_starts = self.index.scan_lines(lines)
        # Offsets of each window's start inside the widest text. Windows count messages
        # (filtered ones included), so find how many lines each depth keeps.
        kept = [not m.skipped_in_scan for m in self.messages[-widest:]] if widest > 0 else []
        for d in depths:
            if d <= 0:
                continue
            lines_in_window = sum(kept[-d:]) if d <= len(kept) else sum(kept)
            first_line = len(lines) - lines_in_window
            self._offsets[d] = line_starts[first_line] if 0 <= first_line < len(lines) else len(self._full.text) + 1

    def window(self, depth: int) -> KeyHit:
        if depth not in self._windows:
            assert self._full is not None  # prepare_windows() runs first
            self._windows[depth] = self._full.after(self._offsets.get(depth, 0))
        return self._windows[depth]

    def entry_depth(self, e: Entry) -> int:
        return e.scan_depth if e.scan_depth is not None else self.config.scan_depth
