"""The decision record: for every entry a stage touched, what it decided and why."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dle_desktop.core.entry import Entry


class Verdict(NamedTuple):
    """One stage's decision on one entry. A named tuple: a generation at 10k entries writes
    over a hundred of them, and a frozen dataclass costs several times more to build."""

    title: str
    vault: str
    stage: str
    outcome: str  # matched | skipped | removed | injected | truncated | cut | info
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "vault": self.vault,
            "stage": self.stage,
            "outcome": self.outcome,
            "reason": self.reason,
        }


class StageTimer:
    """Adds the time spent inside a `with` block to one stage's total (ms, 3 decimals)."""

    __slots__ = ("_stage", "_t0", "_timings")

    def __init__(self, timings: dict[str, float], stage: str) -> None:
        self._timings = timings
        self._stage = stage
        self._t0 = 0.0

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *_exc: object) -> None:
        elapsed = (time.perf_counter() - self._t0) * 1000
        self._timings[self._stage] = round(self._timings.get(self._stage, 0.0) + elapsed, 3)


@dataclass
class Trace:
    verdicts: list[Verdict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, entry: Entry, stage: str, outcome: str, reason: str) -> None:
        self.verdicts.append(Verdict(entry.title, entry.vault, stage, outcome, reason))

    def timed(self, stage: str) -> StageTimer:
        return StageTimer(self.timings_ms, stage)
