"""Gap records: what the story asked for and the vault lacked (dle-behaviour §5.4(a)).

A search that found nothing and a flag ("this entry is missing / out of date") both become a
record; a new one that resembles an existing record (BM25 tokens, overlap/max > 0.6) merges into
it: frequency +1, urgency raised, the reason appended. Two-tier removal as DLE: *hidden* records
come back when flagged again, *dismissed* ones stay buried but still count and escalate."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from dle_desktop.core.bm25 import tokenize
from dle_desktop.librarian.store_io import read_json, write_json

URGENCIES = ("low", "medium", "high")
MAX_GAPS = 200
SIMILARITY = 0.6
#: a record flagged this many times is raised one urgency step (on top of the max rule)
ESCALATE_EVERY = 3


@dataclass
class GapRecord:
    id: str
    type: str  # search | flag
    query: str
    reason: str = ""
    subtype: str = "gap"  # gap | update
    entry_title: str = ""
    urgency: str = "medium"
    frequency: int = 1
    status: str = "pending"  # pending | written
    hidden: bool = False
    dismissed: bool = False
    had_results: bool = False
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict) -> GapRecord | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("query"), str):
            return None
        known = {f.name for f in fields(cls)}
        try:
            gap = cls(**{k: v for k, v in raw.items() if k in known})
        except TypeError:
            return None
        if gap.urgency not in URGENCIES:
            gap.urgency = "medium"
        return gap


def similar(a: str, b: str) -> bool:
    ta, tb = set(tokenize(a)), set(tokenize(b))
    if not ta or not tb:
        return a.strip().lower() == b.strip().lower()
    return len(ta & tb) / max(len(ta), len(tb)) > SIMILARITY


def _raise(current: str, new: str) -> str:
    return URGENCIES[max(URGENCIES.index(current), URGENCIES.index(new))]


class GapStore:
    """The gap records, kept in `path` (JSON). Thread-safe: the lore API, the librarian's tools
    and the view all add to it."""

    def __init__(self, path: Path | None, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self.now = now
        self._lock = threading.Lock()
        raw = read_json(path, []) if path is not None else []
        loaded = (GapRecord.from_json(r) for r in raw) if isinstance(raw, list) else ()
        self._gaps: list[GapRecord] = [g for g in loaded if g is not None]
        self.listeners: list[Callable[[], None]] = []

    # -- adding ---------------------------------------------------------------------------------
    def record_search_miss(self, query: str, reason: str = "", failure: str = "no results") -> GapRecord:
        return self._add(GapRecord(self._id(), "search", query.strip(), reason or failure, subtype="gap"))

    def flag(
        self, title: str, reason: str, urgency: str = "medium", subtype: str = "gap", entry_title: str = ""
    ) -> GapRecord:
        urgency = urgency if urgency in URGENCIES else "medium"
        subtype = subtype if subtype in ("gap", "update") else "gap"
        return self._add(
            GapRecord(
                self._id(),
                "flag",
                title.strip(),
                reason.strip(),
                subtype=subtype,
                entry_title=entry_title.strip(),
                urgency=urgency,
            )
        )

    def _add(self, new: GapRecord) -> GapRecord:
        with self._lock:
            new.created = new.updated = self.now()
            for gap in self._gaps:
                if gap.subtype == new.subtype and similar(gap.query, new.query) and gap.status == "pending":
                    gap.frequency += 1
                    gap.urgency = _raise(gap.urgency, new.urgency)
                    if gap.frequency % ESCALATE_EVERY == 0:
                        gap.urgency = URGENCIES[min(len(URGENCIES) - 1, URGENCIES.index(gap.urgency) + 1)]
                    if new.reason and new.reason not in gap.reason:
                        gap.reason = f"{gap.reason}; {new.reason}" if gap.reason else new.reason
                    if new.type == "flag":
                        gap.type = "flag"
                        gap.entry_title = gap.entry_title or new.entry_title
                    gap.hidden = False  # re-flagged: a hidden record resurfaces; a dismissed one does not
                    gap.updated = new.updated
                    self._save()
                    result = gap
                    break
            else:
                self._gaps.append(new)
                self._cap()
                self._save()
                result = new
        self._changed()
        return result

    def _cap(self) -> None:
        if len(self._gaps) <= MAX_GAPS:
            return
        # The least useful go first: written, then dismissed, then the oldest.
        order = sorted(self._gaps, key=lambda g: (g.status != "written", not g.dismissed, g.updated))
        drop = {id(g) for g in order[: len(self._gaps) - MAX_GAPS]}
        self._gaps = [g for g in self._gaps if id(g) not in drop]

    # -- changing -------------------------------------------------------------------------------
    def hide(self, gap_id: str) -> bool:
        return self._set(gap_id, hidden=True)

    def dismiss(self, gap_id: str) -> bool:
        return self._set(gap_id, dismissed=True)

    def restore(self, gap_id: str) -> bool:
        return self._set(gap_id, hidden=False, dismissed=False)

    def mark_written(self, gap_id: str) -> bool:
        return self._set(gap_id, status="written")

    def _set(self, gap_id: str, **changes) -> bool:
        with self._lock:
            gap = next((g for g in self._gaps if g.id == gap_id), None)
            if gap is None:
                return False
            for k, v in changes.items():
                setattr(gap, k, v)
            gap.updated = self.now()
            self._save()
        self._changed()
        return True

    # -- reading --------------------------------------------------------------------------------
    def get(self, gap_id: str) -> GapRecord | None:
        with self._lock:
            return next((GapRecord(**asdict(g)) for g in self._gaps if g.id == gap_id), None)

    def list(self, status: str | None = None, include_hidden: bool = False) -> list[GapRecord]:
        """Most urgent first, then most frequent, then newest; copies."""
        with self._lock:
            out = [
                GapRecord(**asdict(g))
                for g in self._gaps
                if (status is None or g.status == status) and (include_hidden or not (g.hidden or g.dismissed))
            ]
        return sorted(out, key=lambda g: (-URGENCIES.index(g.urgency), -g.frequency, -g.updated))

    # -- plumbing -------------------------------------------------------------------------------
    def _id(self) -> str:
        return f"gap-{uuid.uuid4().hex[:12]}"

    def _save(self) -> None:
        if self.path is not None:
            write_json(self.path, [g.to_json() for g in self._gaps])

    def subscribe(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn` after every change (on the thread that changed the store); returns the undo."""
        self.listeners.append(fn)
        return lambda: self.listeners.remove(fn) if fn in self.listeners else None

    def _changed(self) -> None:
        for fn in list(self.listeners):
            fn()
