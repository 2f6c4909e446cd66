"""How often each entry was injected, summed over every chat's analytics (the per-chat
`analytics` records the pipeline keeps in `state.sqlite`: tracker key → matched / injected /
last injected). The Graph view colours by it ("injection frequency"); the Vault view and
SillyTavern's `/dle-analytics` list it.

Read-only: the database is opened with `mode=ro`, so reading never moves a broken chat aside
or takes a write lock the engine would wait for."""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EntryUsage:
    """One entry's use summed over chats: times matched, times injected, when it last was."""

    matched: int = 0
    injected: int = 0
    last_injected_at: float | None = None

    def add(self, rec: dict) -> EntryUsage:
        matched, injected, at = rec.get("matched"), rec.get("injected"), rec.get("last_injected_at")
        latest = self.last_injected_at
        if isinstance(at, (int, float)) and not isinstance(at, bool) and at > 0 and (latest is None or at > latest):
            latest = float(at)
        return EntryUsage(
            self.matched + (matched if isinstance(matched, int) and _is_count(matched) else 0),
            self.injected + (injected if isinstance(injected, int) and _is_count(injected) else 0),
            latest,
        )

    def to_json(self) -> dict[str, int | float | None]:
        return {"matched": self.matched, "injected": self.injected, "last_injected_at": self.last_injected_at}


def _is_count(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0


def _chat_states(path: Path) -> list[str]:
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        log.warning("cannot read injection counts from %s: %s", path, exc)
        return []
    try:
        return [state for (state,) in db.execute("SELECT state FROM chats").fetchall()]
    except sqlite3.Error as exc:
        log.warning("cannot read injection counts from %s: %s", path, exc)
        return []
    finally:
        db.close()


def entry_usage(db_path: Path | str) -> tuple[dict[str, EntryUsage], int]:
    """(tracker key → use over all chats, chats that had analytics). A missing or unreadable
    database gives ({}, 0); an unreadable chat is left out."""
    path = Path(db_path)
    if not path.exists():
        return {}, 0
    totals: dict[str, EntryUsage] = {}
    chats = 0
    for state in _chat_states(path):
        try:
            analytics = json.loads(state).get("analytics") or {}
        except (ValueError, AttributeError, TypeError):
            continue
        if not isinstance(analytics, dict) or not analytics:
            continue
        chats += 1
        for key, rec in analytics.items():
            if isinstance(rec, dict):
                totals[key] = totals.get(key, EntryUsage()).add(rec)
    return totals, chats


def injection_totals(db_path: Path | str) -> tuple[dict[str, int], int]:
    """(tracker key → injections over all chats, chats that had analytics). A missing or
    unreadable database gives ({}, 0)."""
    usage, chats = entry_usage(db_path)
    return {k: u.injected for k, u in usage.items() if u.injected > 0}, chats
