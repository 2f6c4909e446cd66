"""The hnswlib path of the vector store: recall against exact search, the graph kept in step with
inserts and deletes (never returning a deleted row, always finding a new one), persistence, a stale
or damaged index file rebuilt rather than trusted, and the background builder. The graph leaves out
the newest rows of a scope on purpose (held-out calibration queries, scanned exactly): `in_graph`."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dle_desktop.vectors.contracts import StoredItem
from dle_desktop.vectors.store import VectorStore
from dle_desktop.vectors.store_ann import HOLDOUT_MAX, HOLDOUT_SHARE

SCOPE = ("world_59964539520806", "llamacpp", "model=m")


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def random_rows(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def items(n: int, start: int = 0) -> list[StoredItem]:
    return [StoredItem(hash=i, index=i, text=f"row {i}") for i in range(start, start + n)]


def exact_top(data: np.ndarray, alive: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    scores = unit(data) @ unit(q)
    scores[~alive] = -np.inf
    return np.argsort(-scores, kind="stable")[:k].tolist()


def in_graph(live: int) -> int:
    """Live rows the graph holds once built: all but the newest held-out ones."""
    return live - min(HOLDOUT_MAX, live // HOLDOUT_SHARE)


def scope_dir(root: Path) -> Path:
    [s] = [p for p in root.glob("c-*/s-*") if p.is_dir()]
    return s


def ann_record(root: Path) -> tuple:
    db = sqlite3.connect(scope_dir(root) / "meta.sqlite")
    try:
        return db.execute("SELECT ann_file, ann_count, ann_labels, ann_ef FROM info").fetchone()
    finally:
        db.close()


@pytest.mark.slow
def test_hnsw_recall_at_10_on_30k_random_64d_rows(tmp_path):
    """Uniform random 64-d rows are about the hardest case for a graph index (no structure at all);
    the calibrated ef must still give recall@10 >= 0.99 on fresh random queries."""
    n, d = 30_000, 64
    data = random_rows(n, d, seed=1)
    store = VectorStore(tmp_path / "vectors", ann_threshold=1_000, ann_background=False)
    try:
        for start in range(0, n, 5_000):
            store.insert(*SCOPE, items(5_000, start), data[start : start + 5_000])
        info = store.build_index(*SCOPE)
        assert info["count"] == info["covered"] == in_graph(n) and info["uncovered"] == n - in_graph(n)
        assert info["calibration"] == "held-out rows" and info["recall"] >= 0.995
        queries = random_rows(200, d, seed=2)
        truth = np.argsort(-(unit(queries) @ unit(data).T), axis=1)[:, :10]
        found = [[h.item.index for h in store.query(*SCOPE, q, 10)] for q in queries]
        recall = np.mean([len(set(f) & set(t.tolist())) / 10 for f, t in zip(found, truth)])
        assert recall >= 0.99, (recall, info)
        assert store.index_info(*SCOPE)["count"] == in_graph(n)  # answered by the graph (+ the held-out rows)
        # the scores are exact whatever path found the rows
        hits = store.query(*SCOPE, queries[0], 10)
        assert [h.score for h in hits] == pytest.approx(
            (unit(data)[[h.item.index for h in hits]] @ unit(queries[0])).tolist(), abs=1e-6
        )
    finally:
        store.close()


def test_graph_results_match_exact_search_on_structured_data(tmp_path):
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((40, 32))
    data = (centres[rng.integers(0, 40, 4_000)] + 0.3 * rng.standard_normal((4_000, 32))).astype(np.float32)
    store = VectorStore(tmp_path / "vectors", ann_threshold=500, ann_background=False)
    try:
        store.insert(*SCOPE, items(4_000), data)
        store.build_index(*SCOPE)
        alive = np.ones(4_000, bool)
        for q in data[:50] + 0.05:
            assert [h.item.index for h in store.query(*SCOPE, q, 5)] == exact_top(data, alive, q, 5)
    finally:
        store.close()


def test_deleted_rows_are_never_returned_and_new_rows_are_found_at_once(tmp_path):
    d = 16
    data = random_rows(3_000, d, seed=3)
    store = VectorStore(tmp_path / "vectors", ann_threshold=500, ann_background=False)
    try:
        store.insert(*SCOPE, items(2_000), data[:2_000])
        built = store.build_index(*SCOPE)["covered"]
        assert built == in_graph(2_000)
        gone = list(range(0, 2_000, 3))
        store.delete(*SCOPE, gone)  # a third: compacts the file, the graph only marks them
        assert store.index_info(*SCOPE)["covered"] == built
        for i in gone[:100]:
            hits = store.query(*SCOPE, data[i], 10)
            assert i not in [h.item.index for h in hits] and len(hits) == 10
        # rows added after the graph was built are found without rebuilding it
        store.insert(*SCOPE, items(1_000, 2_000), data[2_000:])
        assert store.index_info(*SCOPE)["covered"] == built
        for i in (2_000, 2_500, 2_999, 1, 1_999):
            assert store.query(*SCOPE, data[i], 1)[0].item.index == i
        alive = np.ones(3_000, bool)
        alive[gone] = False
        q = random_rows(1, d, seed=9)[0]
        got = [h.item.index for h in store.query(*SCOPE, q, 20)]
        assert len(set(got) & set(exact_top(data, alive, q, 20))) >= 19
        # extend the graph, then reopen: the saved graph is loaded (not rebuilt) and still correct
        info = store.build_index(*SCOPE)
        record = ann_record(store.root)
        assert record[1:3] == (info["count"], info["covered"]) and info["uncovered"] == HOLDOUT_MAX
    finally:
        store.close()
    again = VectorStore(tmp_path / "vectors", ann_threshold=500, ann_background=False)
    try:
        assert again.build_index(*SCOPE)["covered"] == record[2]  # loaded as saved, nothing to add
        assert ann_record(again.root) == record
        for i in gone[100:150]:
            assert i not in [h.item.index for h in again.query(*SCOPE, data[i], 10)]
        assert again.query(*SCOPE, data[2_999], 1)[0].item.index == 2_999
    finally:
        again.close()


def test_deletes_made_after_the_index_was_saved_are_respected_after_reopening(tmp_path):
    data = random_rows(1_500, 16, seed=4)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=100, ann_background=False)
    store.insert(*SCOPE, items(1_500), data)
    store.build_index(*SCOPE)
    saved = ann_record(root)
    store.delete(*SCOPE, list(range(100, 130)))  # few: no compaction; the file on disk is not rewritten
    store.close()
    assert ann_record(root) == saved
    again = VectorStore(root, ann_threshold=100, ann_background=False)
    try:
        again.build_index(*SCOPE)
        for i in range(100, 130):
            assert i not in [h.item.index for h in again.query(*SCOPE, data[i], 5)]
        assert again.query(*SCOPE, data[131], 1)[0].item.index == 131
    finally:
        again.close()


def test_a_stale_index_file_is_rebuilt_not_trusted(tmp_path):
    d = 16
    data = random_rows(2_000, d, seed=6)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=100, ann_background=False)
    store.insert(*SCOPE, items(1_000), data[:1_000])
    store.build_index(*SCOPE)
    old_name = ann_record(root)[0]
    old_copy = tmp_path / "old.bin"
    shutil.copy(scope_dir(root) / old_name, old_copy)
    store.insert(*SCOPE, items(1_000, 1_000), data[1_000:])
    store.build_index(*SCOPE)
    name, count, covered, _ = ann_record(root)
    assert (count, covered) == (in_graph(2_000), in_graph(2_000)) and name != old_name
    store.close()
    # the recorded file now holds the 1,000-row graph: its count does not match the record
    shutil.copy(old_copy, scope_dir(root) / name)
    again = VectorStore(root, ann_threshold=100, ann_background=False)
    try:
        info = again.build_index(*SCOPE)
        assert (info["count"], info["covered"]) == (in_graph(2_000), in_graph(2_000))
        assert ann_record(root)[0] != name  # a new file replaced the stale one
        assert sorted(p.name for p in scope_dir(root).glob("hnsw.*")) == [ann_record(root)[0]]
        for i in (0, 999, 1_000, 1_999):
            assert again.query(*SCOPE, data[i], 1)[0].item.index == i
    finally:
        again.close()


def test_a_damaged_or_missing_index_file_is_rebuilt(tmp_path):
    data = random_rows(800, 8, seed=7)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=100, ann_background=False)
    store.insert(*SCOPE, items(800), data)
    store.build_index(*SCOPE)
    store.close()
    name = ann_record(root)[0]
    (scope_dir(root) / name).write_bytes(b"\x00garbage" * 50)
    for _damage in ("garbage", "missing"):
        again = VectorStore(root, ann_threshold=100, ann_background=False)
        try:
            assert again.query(*SCOPE, data[5], 1)[0].item.index == 5  # exact until rebuilt
            assert again.build_index(*SCOPE)["count"] == in_graph(800)
            assert again.query(*SCOPE, data[6], 1)[0].item.index == 6
        finally:
            again.close()
        (scope_dir(root) / ann_record(root)[0]).unlink()


def test_the_background_builder_indexes_large_scopes_after_a_query(tmp_path):
    data = random_rows(3_000, 16, seed=8)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=1_000)
    try:
        store.insert(*SCOPE, items(500), data[:500])
        assert store.query(*SCOPE, data[0], 1)[0].item.index == 0
        assert store.wait_for_index(30) and store.index_info(*SCOPE) == {}  # below the threshold
        store.insert(*SCOPE, items(2_500, 500), data[500:])
        assert store.query(*SCOPE, data[7], 1)[0].item.index == 7  # exact while the graph is built
        assert store.wait_for_index(60)
        info = store.index_info(*SCOPE)
        built = in_graph(3_000)
        assert (info["covered"], info["unsaved"], info["calibration"]) == (built, 0, "held-out rows")
        assert ann_record(root)[1:3] == (built, built)
        store.insert(*SCOPE, [StoredItem(-1, -1, "new")], np.ones((1, 16), np.float32))
        assert store.query(*SCOPE, np.ones(16), 1)[0].item.text == "new"  # found before any re-index
        assert store.wait_for_index(30) and store.index_info(*SCOPE)["covered"] == built + 1
    finally:
        store.close()
    assert ann_record(root)[1:3] == (built, built)  # a one-row extension is not worth a save...
    again = VectorStore(root, ann_threshold=1_000)
    try:
        assert again.query(*SCOPE, np.ones(16), 1)[0].item.text == "new"
        assert again.wait_for_index(30)
        info = again.index_info(*SCOPE)  # ...the saved graph is loaded and extended by that row
        assert (info["count"], info["covered"], info["saved_count"], info["unsaved"]) == (
            built + 1,
            built + 1,
            built,
            1,
        )
    finally:
        again.close()


def test_compaction_keeps_the_graph_valid(tmp_path):
    data = random_rows(2_000, 16, seed=10)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=100, ann_background=False)
    try:
        store.insert(*SCOPE, items(2_000), data)
        store.build_index(*SCOPE)
        name = ann_record(root)[0]
        store.delete(*SCOPE, list(range(0, 2_000, 2)))  # half: the vector file is rewritten
        assert sorted(p.name for p in scope_dir(root).glob("vectors.*")) == ["vectors.1.f32"]
        assert store.index_info(*SCOPE)["count"] == in_graph(2_000)  # same graph, labels unchanged
        alive = np.zeros(2_000, bool)
        alive[1::2] = True
        for i in range(1, 200, 2):
            assert store.query(*SCOPE, data[i], 1)[0].item.index == i
        q = random_rows(1, 16, seed=11)[0]
        got = [h.item.index for h in store.query(*SCOPE, q, 10)]
        assert len(set(got) & set(exact_top(data, alive, q, 10))) >= 9
        assert ann_record(root)[0] == name
    finally:
        store.close()


def test_ef_is_at_least_twice_top_k_and_large_top_k_works(tmp_path):
    data = random_rows(2_000, 16, seed=12)
    store = VectorStore(tmp_path / "vectors", ann_threshold=100, ann_ef=4, ann_background=False)
    try:
        store.insert(*SCOPE, items(2_000), data)
        store.build_index(*SCOPE)
        q = random_rows(1, 16, seed=13)[0]
        alive = np.ones(2_000, bool)
        for k in (1, 10, 100, 1_999, 2_000, 5_000):
            got = [h.item.index for h in store.query(*SCOPE, q, k)]
            assert len(got) == len(set(got)) == min(k, 2_000)
            if k >= 100:  # ef = max(4, 2 * k): wide enough for near-exact results
                assert len(set(got) & set(exact_top(data, alive, q, k))) >= 0.98 * min(k, 2_000)
    finally:
        store.close()


def test_a_graph_mostly_of_deleted_rows_is_rebuilt(tmp_path):
    data = random_rows(2_000, 16, seed=14)
    root = tmp_path / "vectors"
    store = VectorStore(root, ann_threshold=100, ann_background=False)
    try:
        store.insert(*SCOPE, items(2_000), data)
        built = store.build_index(*SCOPE)["count"]
        assert built == in_graph(2_000) == 1_750
        store.delete(*SCOPE, list(range(800)))  # 800 of 1,750 in the graph: marked, kept
        assert store.index_info(*SCOPE)["count"] == built
        store.delete(*SCOPE, list(range(800, 1_000)))  # now more deleted than live in the graph
        for i in (1_100, 1_500, 1_999):
            assert store.query(*SCOPE, data[i], 1)[0].item.index == i
        info = store.build_index(*SCOPE)
        assert info["count"] == in_graph(1_000) and info["covered"] == 1_000 + in_graph(1_000)
        assert ann_record(root)[1] == in_graph(1_000)
        for i in (1_100, 1_500, 1_999):
            assert store.query(*SCOPE, data[i], 1)[0].item.index == i
        assert 5 not in [h.item.index for h in store.query(*SCOPE, data[5], 10)]
    finally:
        store.close()
