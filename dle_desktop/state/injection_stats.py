"""How often each entry was injected, summed over every chat's analytics (the per-chat
`analytics` records the pipeline keeps in `state.sqlite`: tracker key → matched / injected).
The Graph view colours by it ("injection frequency").

Read-only: the database is opened with `mode=ro`, so reading never moves a broken chat aside
or takes a write lock the engine would wait for."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)


def injection_totals(db_path: Path | str) -> tuple[dict[str, int], int]:
    """(tracker key → injections over all chats, chats that had analytics). A missing or
    unreadable database gives ({}, 0)."""
    path = Path(db_path)
    if not path.exists():
        return {}, 0
    totals: dict[str, int] = {}
    chats = 0
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        log.warning("cannot read injection counts from %s: %s", path, exc)
        return {}, 0
    try:
        rows = db.execute("SELECT state FROM chats").fetchall()
    except sqlite3.Error as exc:
        log.warning("cannot read injection counts from %s: %s", path, exc)
        return {}, 0
    finally:
        db.close()
    for (state,) in rows:
        try:
            analytics = json.loads(state).get("analytics") or {}
        except (ValueError, AttributeError, TypeError):
            continue
        if not isinstance(analytics, dict) or not analytics:
            continue
        chats += 1
        for key, rec in analytics.items():
            n = rec.get("injected") if isinstance(rec, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                totals[key] = totals.get(key, 0) + n
    return totals, chats
