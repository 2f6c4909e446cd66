"""The decision record: for every entry a stage touched, what it decided and why."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.entry import Entry


@dataclass(frozen=True)
class Verdict:
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


@dataclass
class Trace:
    verdicts: list[Verdict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, entry: Entry, stage: str, outcome: str, reason: str) -> None:
        self.verdicts.append(Verdict(entry.title, entry.vault, stage, outcome, reason))

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[stage] = round(self.timings_ms.get(stage, 0.0) + (time.perf_counter() - t0) * 1000, 3)
