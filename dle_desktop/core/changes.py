"""What changed between two snapshots, for notifications and the sync log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dle_desktop.core.index import IndexSnapshot


@dataclass(frozen=True)
class ChangeSet:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    keys_changed: tuple[str, ...] = ()
    first_build: bool = False

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.removed or self.modified)

    def summary(self) -> str:
        """One short line for a notification: counts, never one line per file."""
        parts = []
        for label, items in (("added", self.added), ("removed", self.removed), ("modified", self.modified)):
            if items:
                parts.append(f"{len(items)} {label}")
        return ", ".join(parts) if parts else "no changes"

    def to_json(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "modified": list(self.modified),
            "keys_changed": list(self.keys_changed),
            "has_changes": self.has_changes,
        }


def _label(uid: str) -> str:
    vault, _, path = uid.partition("\x00")
    return f"{vault}:{path}"


def diff_snapshots(old: IndexSnapshot | None, new: IndexSnapshot) -> ChangeSet:
    if old is None:
        return ChangeSet(added=tuple(_label(u) for u in new.by_uid), first_build=True)
    added, removed, modified, keys_changed = [], [], [], []
    for uid, entry in new.by_uid.items():
        prev = old.by_uid.get(uid)
        if prev is None:
            added.append(_label(uid))
        elif prev is not entry and prev.content_hash != entry.content_hash:
            modified.append(_label(uid))
            if prev.keys != entry.keys:
                keys_changed.append(_label(uid))
    removed = [_label(uid) for uid in old.by_uid if uid not in new.by_uid]
    return ChangeSet(tuple(added), tuple(removed), tuple(modified), tuple(keys_changed))
