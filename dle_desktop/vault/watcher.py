"""Watches folder vaults with the OS's change notifications (inotify, FSEvents, ReadDirectoryChangesW
through watchdog): no polling of unchanged files. Bursts of events are coalesced, so an editor's
save (write temp, rename, touch) becomes one re-sync of the touched notes."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Set
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

log = logging.getLogger(__name__)

#: Wait this long after the last event before reporting, to gather a burst into one batch.
DEBOUNCE_S = 0.15

#: The events a vault's notes change by. Left out: opens and read-only closes (the indexer's own
#: reads of 10,000 notes were 20,000 events handled in Python while it read, slowing it and the
#: window) and folder "modified" (a note's own event says which note).
WATCHED_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]

#: (vault name, changed vault-relative paths, whether a full re-sync is needed)
ChangeCallback = Callable[[str, set[str], bool], None]


class _VaultHandler(FileSystemEventHandler):
    def __init__(self, watcher: FolderWatcher, vault: str, root: Path, special: set[str]) -> None:
        self.watcher = watcher
        self.vault = vault
        self.root = str(root)
        self.special = special  # non-note files whose change means "reload everything"

    def _rel(self, path: str | bytes) -> str | None:
        path = os.fsdecode(path)
        try:
            rel = os.path.relpath(path, self.root)
        except ValueError:
            return None
        if rel.startswith(".."):
            return None
        rel = rel.replace(os.sep, "/")
        if any(part.startswith(".") for part in rel.split("/")):
            return None  # .obsidian, .trash, editors' temp files
        return rel

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path] + ([event.dest_path] if getattr(event, "dest_path", None) else [])
        for raw in paths:
            rel = self._rel(raw)
            if rel is None:
                continue
            if event.is_directory:
                if event.event_type in ("moved", "deleted", "created"):
                    self.watcher._note(self.vault, None, full=True)
                continue
            if rel in self.special:
                self.watcher._note(self.vault, None, full=True)
            elif rel.lower().endswith(".md"):
                self.watcher._note(self.vault, rel, full=False)


class FolderWatcher:
    """One watchdog observer for all folder vaults; reports coalesced batches to `callback`
    from its own thread (the caller hops onto its loop)."""

    def __init__(
        self, callback: ChangeCallback, debounce_s: float = DEBOUNCE_S, on_held: Callable[[int], None] | None = None
    ) -> None:
        self.callback = callback
        self.on_held = on_held  # told how many changes wait, each time a paused batch is held
        self.debounce_s = debounce_s
        self._observer = Observer()
        self._observer.daemon = True
        self._pending: dict[str, tuple[set[str], bool]] = {}
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._started = False
        self.paused = False

    def watch(self, vault: str, root: Path, special: Set[str] = frozenset()) -> None:
        handler = _VaultHandler(self, vault, Path(root), set(special))
        self._observer.schedule(handler, str(root), recursive=True, event_filter=WATCHED_EVENTS)

    def start(self) -> None:
        if not self._started:
            self._observer.start()
            self._started = True

    def stop(self) -> None:
        with self._lock:
            if self._timer:
                self._timer.cancel()
                self._timer = None
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._started = False

    def _note(self, vault: str, rel: str | None, full: bool) -> None:
        with self._lock:
            paths, was_full = self._pending.get(vault, (set(), False))
            if rel is not None:
                paths.add(rel)
            self._pending[vault] = (paths, was_full or full)
            if self._timer:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._timer = None
        if self.paused:
            # Keep the changes for when sync resumes: nothing is lost while paused.
            with self._lock:
                for vault, (paths, full) in pending.items():
                    old_paths, old_full = self._pending.get(vault, (set(), False))
                    self._pending[vault] = (old_paths | paths, old_full or full)
            if self.on_held is not None:
                self.on_held(self.held())
            return
        for vault, (paths, full) in pending.items():
            try:
                self.callback(vault, paths, full)
            except Exception:
                log.exception("vault change callback failed")

    def held(self) -> int:
        """How many changes wait: one per touched path (a change that needs a full re-sync and
        names no path counts once)."""
        with self._lock:
            return sum(len(paths) or int(full) for paths, full in self._pending.values())

    def resume(self) -> None:
        self.paused = False
        self._flush()
