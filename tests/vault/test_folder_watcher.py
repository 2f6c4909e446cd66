"""The folder watcher asks the OS only for the events that change notes: reading a vault (the
indexer opens and closes every note) sends it nothing, a write does. Real inotify (or the
platform's own notifications) on a real folder; waits are bounded polls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from dle_desktop.vault import watcher as watcher_module
from dle_desktop.vault.watcher import FolderWatcher

WAIT_S = 10.0


def _wait(check, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {WAIT_S} s for {what}")
        time.sleep(0.02)


def test_reading_notes_sends_the_watcher_nothing_and_a_write_is_reported(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "vault"
    (root / "People").mkdir(parents=True)
    for i in range(50):
        (root / "People" / f"n{i}.md").write_text(f"---\nkeys: [k{i}]\n---\nNote {i}.\n", encoding="utf-8")
    seen: list[str] = []  # every event type that reached Python, from the observer's thread
    lock = threading.Lock()
    handle = watcher_module._VaultHandler.on_any_event

    def recording(self, event) -> None:
        with lock:
            seen.append(event.event_type)
        handle(self, event)

    monkeypatch.setattr(watcher_module._VaultHandler, "on_any_event", recording)
    batches: list[tuple[str, set[str], bool]] = []
    watcher = FolderWatcher(lambda vault, paths, full: batches.append((vault, set(paths), full)), debounce_s=0.05)
    watcher.watch("v", root)
    watcher.start()
    try:
        for note in sorted((root / "People").iterdir()):
            note.read_bytes()  # what the indexer does to each note
        (root / "People" / "n7.md").write_text("---\nkeys: [seven]\n---\nChanged.\n", encoding="utf-8")
        _wait(lambda: any("People/n7.md" in paths for _v, paths, _f in batches), "the write reported")
    finally:
        watcher.stop()
    with lock:
        kinds = set(seen)
    assert not kinds & {"opened", "closed_no_write"}, kinds
    assert kinds & {"modified", "closed"}, kinds
    assert set().union(*(paths for _v, paths, _f in batches)) == {"People/n7.md"}
    assert not any(full for _v, _p, full in batches)
