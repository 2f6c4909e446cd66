"""The write history's batches as a whole (the World Info imports list): newest first, filtered by
id prefix (LIKE wildcards in the prefix are literal), with how much of each was undone."""

from __future__ import annotations

from dle_desktop.vault.write_history import WriteHistory


def record(history: WriteHistory, path: str, batch: str | None) -> int:
    written = history.record(
        vault="v",
        path=path,
        feature="wi-import",
        action="create",
        before_text=None,
        after_text=f"# {path}\n",
        before_hash=None,
        after_hash="h",
        batch=batch,
    )
    return written.id


def test_batches_are_summed_up_newest_first(tmp_path):
    history = WriteHistory(tmp_path / "h.sqlite")
    for path in ("A/one.md", "A/two.md"):
        record(history, path, "wi-1")
    record(history, "B/three.md", "wi-2")
    record(history, "C/four.md", "other-3")
    record(history, "D/five.md", None)
    summaries = history.batches("wi-")
    assert [(s.batch, s.writes, s.undone, s.first_path) for s in summaries] == [
        ("wi-2", 1, 0, "B/three.md"),
        ("wi-1", 2, 0, "A/one.md"),
    ]
    assert [s.batch for s in history.batches()] == ["other-3", "wi-2", "wi-1"]
    assert history.batches("wi_") == []  # `_` is not a wildcard here
    history.close()
