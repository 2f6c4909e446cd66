"""The Graph view's saved positions (state/graph_layout.py) and the injection counts it colours by
(state/injection_stats.py): real files in tmp_path, a real SQLite written by the real ChatStore."""

from __future__ import annotations

import json
import os
import stat

import pytest

from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.state.chat_store import ChatStore
from dle_desktop.state.graph_layout import LayoutStore, SavedLayout, vault_set_key
from dle_desktop.state.injection_stats import injection_totals


def test_round_trip_is_exact_and_per_vault_set(tmp_path):
    store = LayoutStore(tmp_path / "graph-layouts")
    pos = {"v\x00a.md": (0.1 + 0.2, -1e-17), "v\x00b.md": (12345.678901234567, 3.0)}
    store.save(["v"], pos, pinned={"v\x00b.md", "gone"}, preset="spacious", seed=7)
    got = store.load(["v"])
    assert got.positions == pos  # floats survive JSON exactly
    assert got.pinned == {"v\x00b.md"}  # a pin without a position is dropped
    assert (got.preset, got.seed, got.vaults) == ("spacious", 7, ("v",))
    assert store.load(["v", "w"]) is None  # another vault set has its own file
    assert store.path_for(["w", "v", "v"]) == store.path_for(["v", "w"])


def test_save_replaces_atomically_and_leaves_no_temp_files(tmp_path):
    store = LayoutStore(tmp_path / "gl")
    store.save(["v"], {"a": (1.0, 2.0)})
    store.save(["v"], {"a": (3.0, 4.0), "b": (5.0, 6.0)})
    assert store.load(["v"]).positions == {"a": (3.0, 4.0), "b": (5.0, 6.0)}
    assert [p.name for p in (tmp_path / "gl").iterdir()] == [store.path_for(["v"]).name]
    if os.name == "posix":
        assert stat.S_IMODE(store.path_for(["v"]).stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "gl").stat().st_mode) == 0o700


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    store = LayoutStore(tmp_path)
    store.save(["v"], {"a": (1.0, 2.0)})

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        store.save(["v"], {"a": (9.0, 9.0)})
    assert store.load(["v"]).positions == {"a": (1.0, 2.0)}
    assert sorted(p.name for p in tmp_path.iterdir()) == [store.path_for(["v"]).name]


def test_unreadable_or_foreign_files_give_none_and_bad_values_are_skipped(tmp_path):
    store = LayoutStore(tmp_path)
    path = store.path_for(["v"])
    path.write_text("{not json", encoding="utf-8")
    assert store.load(["v"]) is None
    path.write_text(json.dumps({"format": "something-else"}), encoding="utf-8")
    assert store.load(["v"]) is None
    path.write_text(
        json.dumps(
            {
                "format": "dle-graph-layout/1",
                "positions": {
                    "ok": [1, 2],
                    "nan": [float("nan"), 1],
                    "short": [1],
                    "text": ["a", "b"],
                    "bool": [True, 1],
                },
                "pinned": ["ok", "nan", 5],
                "seed": "x",
            }
        ),
        encoding="utf-8",
    )
    got = store.load(["v"])
    assert got.positions == {"ok": (1.0, 2.0)}
    assert got.pinned == {"ok"} and got.seed == 0 and got.preset == "balanced"
    assert SavedLayout.from_json(got.to_json()).positions == got.positions


def test_vault_set_key_is_order_free_and_file_safe():
    k = vault_set_key(["b/../x", "a"])
    assert k == vault_set_key(["a", "b/../x", "a"])
    assert k.isalnum() and len(k) == 16
    assert k != vault_set_key(["a"])


def test_injection_totals_sum_every_chats_analytics(tmp_path):
    db = tmp_path / "state.sqlite"
    assert injection_totals(db) == ({}, 0)  # no database yet
    store = ChatStore(db)
    store.save(
        "chat-1",
        ChatState(
            analytics={
                "v:Alpha": {"matched": 5, "injected": 3, "last_triggered": 2},
                "v:Beta": {"matched": 1, "injected": 0, "last_triggered": 1},
            }
        ),
    )
    store.save("chat-2", ChatState(analytics={"v:Alpha": {"matched": 2, "injected": 2, "last_triggered": 4}}))
    store.save("chat-3", ChatState())
    store.close()
    totals, chats = injection_totals(db)
    assert totals == {"v:Alpha": 5}
    assert chats == 2
