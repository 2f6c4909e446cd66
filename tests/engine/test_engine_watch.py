"""The Engine on its own thread with a real FolderWatcher: edits on disk reach the index and the
subscribers. Waits are bounded polls; nothing asserts on how long anything took."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from dle_desktop.engine.engine import Engine, EngineEvent
from dle_desktop.engine.thread import EngineThread
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.watcher import FolderWatcher

WAIT = 5.0


class Harness:
    def __init__(self, root: Path, data: Path, settings: Settings | None = None) -> None:
        self.root = root
        self.events: list[EngineEvent] = []
        self._lock = threading.Lock()
        self.thread = EngineThread().start()
        self.engine = Engine(
            AppPaths(data, data).ensure(), settings or Settings(), vault_override=[FolderSource("v", root)]
        )
        self.engine.subscribe(self._collect)

    def _collect(self, event: EngineEvent) -> None:
        with self._lock:
            self.events.append(event)

    def index_events(self) -> list[EngineEvent]:
        with self._lock:
            return [e for e in self.events if e.kind == "index"]

    def titles(self) -> set[str]:
        snap = self.engine.snapshot
        return {e.title for e in snap.entries} if snap else set()

    def call(self, fn, *args):
        """Run a plain function on the engine loop (engine state belongs to that thread)."""

        async def go():
            return fn(*args)

        return self.thread.call(go(), timeout=WAIT)

    def start(self) -> Harness:
        self.thread.call(self.engine.start(), timeout=30)
        self.thread.call(self.engine.wait_ready(), timeout=30)
        return self

    def close(self) -> None:
        try:
            if self.thread.alive:
                self.thread.call(self.engine.stop(), timeout=15)
        finally:
            self.thread.stop()


@pytest.fixture
def harness(make_vault, lore, tmp_path):
    made: list[Harness] = []

    def make(files: dict | None = None, settings: Settings | None = None) -> Harness:
        root = make_vault(files if files is not None else {"A.md": lore("Alpha", ("alpha",)), "B.md": lore("Beta")})
        h = Harness(root, tmp_path / "data", settings).start()
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def test_engine_starts_watching_and_publishes_the_first_index(harness):
    h = harness()
    assert h.titles() == {"Alpha", "Beta"}
    assert isinstance(h.engine.watcher, FolderWatcher)
    kinds = [e.kind for e in h.events]
    assert "sync_state" in kinds and "index" in kinds
    first = h.index_events()[0]
    assert first.data["source"] == "start"
    assert first.data["changes"].first_build
    assert first.data["snapshot"] is h.engine.snapshot
    status = h.engine.status()
    assert status["entries"] == 2 and status["vaults"][0]["entries"] == 2
    assert status["syncing"] is False and status["last_error"] is None


def test_created_note_appears(harness, lore, wait_for):
    h = harness()
    (h.root / "Sub").mkdir()
    (h.root / "Sub" / "Gamma.md").write_text(lore("Gamma", ("g",)), encoding="utf-8")
    wait_for(lambda: "Gamma" in h.titles(), WAIT)
    # The index event follows the snapshot swap (the cache is saved in between).
    wait_for(
        lambda: any(
            e.data.get("changes") is not None and "v:Sub/Gamma.md" in e.data["changes"].added for e in h.index_events()
        ),
        WAIT,
    )


def test_created_note_in_existing_folder_appears_through_a_path_sync(harness, lore, wait_for):
    h = harness({"A.md": lore("Alpha"), "Sub/B.md": lore("Beta")})
    (h.root / "Sub" / "Gamma.md").write_text(lore("Gamma"), encoding="utf-8")
    wait_for(lambda: "Gamma" in h.titles(), WAIT)
    event = wait_for(
        lambda: next(
            (
                e
                for e in h.index_events()
                if e.data["changes"] is not None and e.data["changes"].added == ("v:Sub/Gamma.md",)
            ),
            None,
        ),
        WAIT,
    )
    assert event.data["source"] == "file change"
    assert event.data["changes"].summary() == "1 added"


def test_modified_note_is_reindexed(harness, lore, wait_for):
    h = harness()
    (h.root / "A.md").write_text(lore("Alpha", ("alpha", "first letter"), body="Rewritten."), encoding="utf-8")
    wait_for(lambda: h.engine.snapshot.find("Alpha").keys == ("alpha", "first letter"), WAIT)
    assert h.engine.snapshot.find("Alpha").content.strip() == "Rewritten."
    event = wait_for(
        lambda: next(
            (e for e in h.index_events() if e.data["changes"] is not None and e.data["changes"].modified), None
        ),
        WAIT,
    )
    assert event.data["changes"].modified == ("v:A.md",)
    assert event.data["changes"].keys_changed == ("v:A.md",)


def test_deleted_note_disappears(harness, wait_for):
    h = harness()
    (h.root / "B.md").unlink()
    wait_for(lambda: h.titles() == {"Alpha"}, WAIT)
    wait_for(
        lambda: any(
            e.data["changes"] is not None and e.data["changes"].removed == ("v:B.md",) for e in h.index_events()
        ),
        WAIT,
    )


def test_renamed_note_moves(harness, wait_for):
    h = harness()
    os.rename(h.root / "B.md", h.root / "Renamed.md")
    wait_for(
        lambda: (
            h.engine.snapshot is not None
            and "v\x00Renamed.md" in h.engine.snapshot.by_uid
            and "v\x00B.md" not in h.engine.snapshot.by_uid
        ),
        WAIT,
    )
    assert h.titles() == {"Alpha", "Beta"}


def test_renamed_folder_moves_its_notes(harness, lore, wait_for):
    h = harness({"Old/A.md": lore("Alpha"), "Old/B.md": lore("Beta")})
    os.rename(h.root / "Old", h.root / "New")
    wait_for(lambda: sorted(e.path for e in h.engine.snapshot.entries) == ["New/A.md", "New/B.md"], WAIT)


def test_dot_folders_and_non_notes_do_not_trigger_syncs(harness, lore, wait_for):
    h = harness()
    before = len(h.index_events())
    (h.root / ".obsidian").mkdir()
    (h.root / ".obsidian" / "workspace.json").write_text("{}")
    (h.root / "picture.png").write_bytes(b"\x89PNG")
    # Then a real change: once it is indexed, nothing before it produced an index event.
    (h.root / "C.md").write_text(lore("Gamma"), encoding="utf-8")
    wait_for(
        lambda: any(
            e.data["changes"] is not None and "v:C.md" in e.data["changes"].added for e in h.index_events()[before:]
        ),
        WAIT,
    )
    changes = [e.data["changes"] for e in h.index_events()[before:]]
    assert all(c is not None and c.has_changes for c in changes)


def test_editing_field_definitions_triggers_a_full_sync(harness, lore, wait_for):
    h = harness(
        {
            "A.md": lore("Alpha", extra="faction: Heron"),
            "B.md": lore("Beta"),
            "DeepLore/field-definitions.yaml": "fields: []\n",
        }
    )
    assert "faction" not in h.engine.snapshot.find("Alpha").custom_fields
    (h.root / "DeepLore" / "field-definitions.yaml").write_text(
        "fields:\n  - name: faction\n    label: Faction\n    type: string\n", encoding="utf-8"
    )
    wait_for(lambda: h.engine.snapshot.find("Alpha").custom_fields.get("faction") == "Heron", WAIT)
    full = wait_for(lambda: [e for e in h.index_events() if e.data["source"] == "folder changed"], WAIT)
    assert full[-1].data["snapshot"].find("Alpha").custom_fields == {"faction": "Heron"}
    assert h.engine.last_sync.parsed == 2  # every note re-parsed under the new definitions


def test_pause_holds_changes_and_resume_applies_them_in_one_batch(harness, lore, wait_for):
    h = harness({f"N{i}.md": lore(f"Note {i}") for i in range(4)})
    h.call(h.engine.set_sync_paused, True)
    assert h.engine.status()["sync_paused"] is True
    before = len(h.index_events())
    for name in ("X", "Y", "Z"):
        (h.root / f"{name}.md").write_text(lore(name), encoding="utf-8")
    (h.root / "N0.md").write_text(lore("Note 0", body="edited while paused"), encoding="utf-8")
    (h.root / "N1.md").unlink()
    # The watcher has seen the events (its pending batch is held, not delivered).
    wait_for(
        lambda: h.engine.watcher._pending.get("v", (set(), False))[0] >= {"X.md", "Y.md", "Z.md", "N0.md", "N1.md"},
        WAIT,
    )
    assert len(h.index_events()) == before
    assert h.titles() == {f"Note {i}" for i in range(4)}

    h.call(h.engine.set_sync_paused, False)
    wait_for(lambda: h.titles() == {"Note 0", "Note 2", "Note 3", "X", "Y", "Z"}, WAIT)
    wait_for(lambda: any(e.data["changes"] is not None for e in h.index_events()[before:]), WAIT)
    # Late duplicate notifications (e.g. a close-after-write) may add a no-change re-read later;
    # the held changes themselves arrive as one batch.
    new = [e for e in h.index_events()[before:] if e.data["changes"] is not None and e.data["changes"].has_changes]
    assert len(new) == 1, [e.data["changes"].summary() for e in new]
    changes = new[0].data["changes"]
    assert changes.summary() == "3 added, 1 removed, 1 modified"
    assert sorted(changes.added) == ["v:X.md", "v:Y.md", "v:Z.md"]
    paused_states = [e.data.get("paused") for e in h.events if e.kind == "sync_state" and "paused" in e.data]
    assert paused_states == [True, False]


def test_sync_now_and_cancel(harness, lore):
    h = harness()
    (h.root / "C.md").write_text(lore("Gamma"), encoding="utf-8")
    result = h.thread.call(h.engine.sync_now(), timeout=30)
    assert "Gamma" in {e.title for e in result.snapshot.entries}
    assert h.call(h.engine.cancel_sync) is False  # nothing running any more


def test_subscriber_errors_do_not_stop_the_engine(harness, lore, wait_for):
    h = harness()

    def bad(event):
        raise RuntimeError("subscriber bug")

    h.call(h.engine.subscribe, bad)
    (h.root / "C.md").write_text(lore("Gamma"), encoding="utf-8")
    wait_for(lambda: "Gamma" in h.titles(), WAIT)


def test_stop_saves_a_dirty_cache_for_the_next_start(make_vault, lore, tmp_path, wait_for):
    root = make_vault({"A.md": lore("Alpha")})
    data = tmp_path / "data"
    h = Harness(root, data).start()
    try:
        (root / "B.md").write_text(lore("Beta"), encoding="utf-8")
        wait_for(lambda: "Beta" in h.titles(), WAIT)
    finally:
        h.close()
    # A new engine warm-starts with Beta from the cache, before any sync.
    h2 = Harness(root, data)
    try:
        h2.thread.call(h2.engine.start(initial_sync=False, watch=False), timeout=30)
        assert h2.titles() == {"Alpha", "Beta"}
        assert h2.index_events()[0].data["source"] == "cache"
    finally:
        h2.close()


def test_engine_with_missing_vault_reports_an_error(tmp_path):
    h = Harness(tmp_path / "missing", tmp_path / "data")
    try:
        h.thread.call(h.engine.start(), timeout=30)
        with pytest.raises(Exception, match="does not exist"):
            h.thread.call(h.engine.wait_ready(), timeout=30)
        assert h.engine.watcher is None
        assert any(e.kind == "sync_error" for e in h.events)
        assert "does not exist" in h.engine.status()["last_error"]
    finally:
        h.close()


def test_atomic_save_through_the_source_is_seen(harness, lore, wait_for):
    """Editors (and our own writer) save to a temp file and rename it over the note."""
    h = harness()
    FolderSource("v", h.root).write_sync("A.md", lore("Alpha", ("alpha", "saved atomically")))
    wait_for(lambda: h.engine.snapshot.find("Alpha").keys == ("alpha", "saved atomically"), WAIT)
    tmp = h.root / "B.md.tmp"
    tmp.write_text(lore("Beta", ("beta", "renamed over")), encoding="utf-8")
    os.replace(tmp, h.root / "B.md")
    wait_for(lambda: h.engine.snapshot.find("Beta").keys == ("beta", "renamed over"), WAIT)


# ----------------------------------------------------------------------------- the watcher alone


class Calls:
    def __init__(self) -> None:
        self.items: list[tuple[str, set[str], bool]] = []
        self.lock = threading.Lock()

    def __call__(self, vault: str, paths: set[str], full: bool) -> None:
        with self.lock:
            self.items.append((vault, set(paths), full))

    def paths(self) -> set[str]:
        with self.lock:
            return set().union(*(p for _, p, _ in self.items)) if self.items else set()

    def fulls(self) -> list[bool]:
        with self.lock:
            return [f for _, _, f in self.items]


@pytest.fixture
def watched(make_vault, lore):
    started: list[FolderWatcher] = []

    def make(callback, special=frozenset()):
        root = make_vault({"A.md": lore("Alpha"), "Sub/B.md": lore("Beta")})
        w = FolderWatcher(callback)
        w.watch("v", root, set(special))
        w.start()
        started.append(w)
        return w, root

    yield make
    for w in started:
        w.stop()


def test_watcher_reports_note_paths_relative_to_the_vault(watched, lore, wait_for):
    calls = Calls()
    _w, root = watched(calls)
    (root / "A.md").write_text(lore("Alpha", ("x",)), encoding="utf-8")
    (root / "Sub" / "C.md").write_text(lore("Gamma"), encoding="utf-8")
    (root / "Sub" / "B.md").unlink()
    (root / "ignored.txt").write_text("not a note")
    (root / ".hidden.md").write_text("dot file")
    wait_for(lambda: calls.paths() >= {"A.md", "Sub/C.md", "Sub/B.md"}, WAIT)
    assert calls.paths() == {"A.md", "Sub/C.md", "Sub/B.md"}
    assert not any(calls.fulls())
    assert all(v == "v" for v, _, _ in calls.items)


def test_watcher_coalesces_a_burst(watched, lore, wait_for):
    calls = Calls()
    w, root = watched(calls)
    w.paused = True  # hold everything, so that the burst is delivered in one batch on resume
    for i in range(20):
        (root / f"N{i}.md").write_text(lore(f"N{i}"), encoding="utf-8")
    wait_for(lambda: len(w._pending.get("v", (set(), False))[0]) == 20, WAIT)
    assert calls.items == []
    w.resume()
    wait_for(lambda: calls.items, WAIT)
    assert calls.items[0][1] == {f"N{i}.md" for i in range(20)}  # all twenty in the first batch


def test_watcher_special_file_and_folder_changes_ask_for_a_full_sync(watched, wait_for):
    calls = Calls()
    _w, root = watched(calls, special={"DeepLore/field-definitions.yaml"})
    (root / "DeepLore").mkdir()
    wait_for(lambda: any(calls.fulls()), WAIT)
    with calls.lock:
        calls.items.clear()
    (root / "DeepLore" / "field-definitions.yaml").write_text("fields: []\n")
    wait_for(lambda: any(calls.fulls()), WAIT)


def test_watcher_survives_a_failing_callback(watched, lore, wait_for):
    calls = Calls()
    failures = []

    def callback(vault, paths, full):
        if not failures:
            failures.append(paths)
            raise RuntimeError("first call fails")
        calls(vault, paths, full)

    _w, root = watched(callback)
    (root / "X.md").write_text(lore("X"), encoding="utf-8")
    wait_for(lambda: failures, WAIT)
    (root / "Y.md").write_text(lore("Y"), encoding="utf-8")
    wait_for(lambda: "Y.md" in calls.paths(), WAIT)


def test_watcher_stop_is_idempotent_and_delivers_nothing_after(watched, lore):
    calls = Calls()
    w, root = watched(calls)
    w.stop()
    w.stop()
    (root / "Late.md").write_text(lore("Late"), encoding="utf-8")
    time.sleep(w.debounce_s * 3)  # the observer thread is joined: nothing can arrive, however long we wait
    assert calls.items == []


def test_cancel_sync_from_a_progress_event_keeps_the_previous_index(make_generated_vault, helpers, tmp_path, wait_for):
    root = make_generated_vault(2000)
    h = Harness(root, tmp_path / "data")
    try:
        h.thread.call(h.engine.start(watch=False), timeout=60)
        h.thread.call(h.engine.wait_ready(60), timeout=90)
        before = h.engine.snapshot
        for rel, text in helpers.generate_vault_files(2000).items():
            (root / rel).write_text(text.replace("all night", "until dawn"), encoding="utf-8")

        cancelled: list[bool] = []

        def on_event(event: EngineEvent) -> None:  # runs on the engine loop
            if event.kind == "progress" and not cancelled:
                cancelled.append(h.engine.cancel_sync())

        h.call(h.engine.subscribe, on_event)
        future = h.thread.submit(h.engine.sync_now())
        with pytest.raises(BaseException) as err:  # concurrent.futures.CancelledError
            future.result(60)
        assert "Cancelled" in type(err.value).__name__
        assert cancelled == [True]
        wait_for(lambda: any(e.kind == "sync_state" and e.data.get("reason") == "cancelled" for e in h.events), WAIT)
        assert h.engine.snapshot is before
        assert h.engine.syncing is False
        # A later sync (the subscriber cancels only once) completes normally and sees every edit.
        result = h.thread.call(h.engine.sync_now(), timeout=90)
        assert len(result.changes.modified) == 2000
    finally:
        h.close()
