"""The vector store on real files: SillyTavern's semantics (idempotent upsert on (hash, index, text),
delete by hash, purge, purge-all), validation that writes nothing, dimension conflicts, exact search
order and scores, reopening, compaction, recovery from leftovers, and threads."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from dle_desktop.vectors.contracts import Hit, StoredItem, VectorConflict
from dle_desktop.vectors.store import VectorStore, VectorStoreBusy

D = 8
SCOPE = ("Seraphina - 2025-06-01@14h03m22s517ms", "llamacpp", "model=m\nendpoint=http://127.0.0.1:8080")


def vecs(n: int, d: int = D, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def items(n: int, start: int = 0, prefix: str = "text") -> list[StoredItem]:
    return [StoredItem(hash=1000 + i, index=i, text=f"{prefix} {i}") for i in range(start, start + n)]


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root with a digest of its bytes (the lock file and SQLite's shared-memory
    index, which readers may touch, aside)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock" and not p.name.endswith("-shm")
    }


def scope_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("c-*/s-*") if p.is_dir())


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "data" / "vectors"


@pytest.fixture
def store(root):
    s = VectorStore(root, ann_background=False)
    yield s
    s.close()


# ----------------------------------------------------------------------------------------------
# inserting and listing


def test_insert_then_list_in_insertion_order(store):
    assert store.insert(*SCOPE, items(3), vecs(3)) == 3
    assert store.insert(*SCOPE, items(2, start=3), vecs(2, seed=1)) == 2
    assert store.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003, 1004]


def test_reinserting_the_same_items_adds_nothing(store):
    assert store.insert(*SCOPE, items(3), vecs(3)) == 3
    before = store.list_hashes(*SCOPE)
    assert store.insert(*SCOPE, items(3), vecs(3)) == 0
    assert store.insert(*SCOPE, items(3), vecs(3, seed=5)) == 0  # same items, other vectors: kept as stored
    assert store.list_hashes(*SCOPE) == before
    assert store.collections()[0]["count"] == 3


def test_reinsert_with_some_new_items_adds_only_those(store):
    store.insert(*SCOPE, items(3), vecs(3))
    assert store.insert(*SCOPE, items(5), vecs(5)) == 2
    assert store.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003, 1004]


def test_duplicates_inside_one_batch_are_stored_once(store):
    batch = [StoredItem(7, 0, "a"), StoredItem(7, 0, "a"), StoredItem(8, 1, "b"), StoredItem(7, 0, "a")]
    assert store.insert(*SCOPE, batch, vecs(4)) == 2
    assert store.list_hashes(*SCOPE) == [7, 8]
    assert store.insert(*SCOPE, batch, vecs(4)) == 0


def test_chunks_with_same_hash_and_index_but_other_text_are_kept_apart(store):
    chunks = [StoredItem(42, 3, "first part of the message"), StoredItem(42, 3, "second part of the message")]
    assert store.insert(*SCOPE, chunks, vecs(2)) == 2
    assert store.list_hashes(*SCOPE) == [42, 42]
    assert store.insert(*SCOPE, chunks[1:], vecs(1)) == 0  # the same chunk again: still idempotent
    hits = store.query(*SCOPE, vecs(2)[1], 5)
    assert hits[0].item == chunks[1]
    assert {h.item for h in hits} == set(chunks)


def test_same_hash_and_text_with_another_index_is_a_new_item(store):
    assert store.insert(*SCOPE, [StoredItem(5, 0, "x"), StoredItem(5, 1, "x")], vecs(2)) == 2
    assert store.list_hashes(*SCOPE) == [5, 5]


def test_list_includes_duplicates_in_insertion_order(store):
    store.insert(*SCOPE, [StoredItem(1111, 0, "a"), StoredItem(2222, 1, "b")], vecs(2))
    store.insert(*SCOPE, [StoredItem(3333, 2, "c"), StoredItem(1111, 0, "a, second chunk")], vecs(2, seed=1))
    assert store.list_hashes(*SCOPE) == [1111, 2222, 3333, 1111]


def test_empty_insert_returns_zero_and_creates_nothing(store, root):
    assert store.insert(*SCOPE, [], np.zeros((0, D), np.float32)) == 0
    assert store.insert(*SCOPE, [], np.zeros((0,), np.float32)) == 0
    assert scope_dirs(root) == []
    assert store.list_hashes(*SCOPE) == []


def test_text_round_trips_unchanged(store):
    texts = ["emoji 🐉 and CJK 龍", "nul \x00 inside", "", "x" * 100_000, "line\r\nbreaks\t"]
    batch = [StoredItem(i, i, t) for i, t in enumerate(texts)]
    v = vecs(len(texts))
    store.insert(*SCOPE, batch, v)
    for i, t in enumerate(texts):
        assert store.query(*SCOPE, v[i], 1)[0].item == StoredItem(i, i, t)


def test_hash_and_index_extremes_and_numpy_integers(store):
    hashes = [0, 2**53 - 1, -1, -(2**63), 2**63 - 1]
    batch = [StoredItem(h, -h if h > -(2**63) else 0, f"t{i}") for i, h in enumerate(hashes)]
    batch.append(StoredItem(np.int64(77), np.int32(3), "numpy ints"))
    assert store.insert(*SCOPE, batch, vecs(len(batch))) == len(batch)
    got = store.list_hashes(*SCOPE)
    assert got == hashes + [77] and all(type(h) is int for h in got)
    assert store.delete(*SCOPE, [np.int64(77), 2**63 - 1]) == 2


# ----------------------------------------------------------------------------------------------
# deleting


def test_delete_by_hash_removes_every_chunk(store):
    store.insert(
        *SCOPE,
        [
            StoredItem(1, 0, "a1"),
            StoredItem(1, 0, "a2"),
            StoredItem(2, 1, "b"),
            StoredItem(1, 0, "a3"),
            StoredItem(3, 2, "c"),
        ],
        vecs(5),
    )
    assert store.delete(*SCOPE, [1]) == 3
    assert store.list_hashes(*SCOPE) == [2, 3]
    assert all(h.item.hash != 1 for h in store.query(*SCOPE, vecs(5)[0], 10))


def test_delete_counts_ignores_unknown_and_repeated_hashes(store):
    store.insert(*SCOPE, items(4), vecs(4))
    assert store.delete(*SCOPE, [1001, 999_999, 1001, 1003]) == 2
    assert store.delete(*SCOPE, [1001]) == 0
    assert store.delete(*SCOPE, []) == 0
    assert store.list_hashes(*SCOPE) == [1000, 1002]


def test_deleted_item_can_be_inserted_again(store):
    store.insert(*SCOPE, items(2), vecs(2))
    store.delete(*SCOPE, [1000])
    assert store.insert(*SCOPE, items(2), vecs(2)) == 1
    assert store.list_hashes(*SCOPE) == [1001, 1000]


def test_delete_in_unknown_scope_is_zero_and_creates_nothing(store, root):
    assert store.delete(*SCOPE, [1, 2]) == 0
    assert scope_dirs(root) == []


def test_a_scope_emptied_by_deletes_answers_empty_and_keeps_its_dimension(store):
    store.insert(*SCOPE, items(3), vecs(3))
    assert store.delete(*SCOPE, [1000, 1001, 1002]) == 3
    assert store.list_hashes(*SCOPE) == []
    assert store.query(*SCOPE, vecs(1)[0], 3) == []
    assert store.collections() == [
        {"collection": SCOPE[0], "source": SCOPE[1], "profile_key": SCOPE[2], "count": 0, "dim": D}
    ]
    with pytest.raises(VectorConflict):
        store.insert(*SCOPE, items(1), vecs(1, d=D + 1))


# ----------------------------------------------------------------------------------------------
# querying


def test_query_orders_best_first_and_respects_top_k(store):
    v = vecs(50, seed=3)
    store.insert(*SCOPE, items(50), v)
    q = np.random.default_rng(9).standard_normal(D)
    expected = np.argsort(-(unit(v) @ unit(q)), kind="stable")
    for k in (1, 3, 10, 50, 80):
        hits = store.query(*SCOPE, q, k)
        assert len(hits) == min(k, 50)
        assert [h.item.index for h in hits] == expected[:k].tolist()
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(isinstance(h, Hit) and isinstance(h.score, float) for h in hits)


def test_scores_are_cosine_of_the_raw_vectors(store):
    v = vecs(20, seed=4) * np.linspace(0.01, 100, 20, dtype=np.float32)[:, None]  # varied lengths
    store.insert(*SCOPE, items(20), v)
    q = np.random.default_rng(2).standard_normal(D) * 37.0
    cos = unit(v) @ unit(q)
    for h in store.query(*SCOPE, q, 20):
        assert h.score == pytest.approx(cos[h.item.index], abs=1e-6)


def test_a_stored_vector_finds_itself_with_score_one(store):
    v = vecs(30, seed=6)
    store.insert(*SCOPE, items(30), v)
    for i in (0, 17, 29):
        top = store.query(*SCOPE, v[i] * 3.5, 1)[0]
        assert top.item.index == i and top.score == pytest.approx(1.0, abs=1e-6) and top.score <= 1.0


def test_ties_are_broken_by_insertion_order(store):
    same = np.tile(np.array([[1.0, 2.0, 3.0, 0, 0, 0, 0, 0]], np.float32), (6, 1))
    store.insert(*SCOPE, [StoredItem(10 - i, i, f"t{i}") for i in range(6)], same)
    for k in (1, 2, 4, 6):
        hits = store.query(*SCOPE, same[0], k)
        assert [h.item.index for h in hits] == list(range(k))
    other = np.array([[1.0, 2.0, 3.0, 0, 0, 0, 0, 0]], np.float32)
    store.insert(*SCOPE, [StoredItem(99, 99, "later")], other)
    assert [h.item.index for h in store.query(*SCOPE, same[0], 7)] == [0, 1, 2, 3, 4, 5, 99]


def test_normalisation_of_3_4(store, root):
    store.insert(*SCOPE, [StoredItem(1, 0, "v")], np.array([[3.0, 4.0]], np.float32))
    [scope] = scope_dirs(root)
    stored = np.fromfile(scope / "vectors.0.f32", dtype=np.float32)
    assert stored.tolist() == pytest.approx([0.6, 0.8], abs=1e-7)
    assert store.query(*SCOPE, np.array([1.0, 0.0]), 1)[0].score == pytest.approx(0.6, abs=1e-6)
    assert store.query(*SCOPE, np.array([0.0, 2.0]), 1)[0].score == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize(
    "rows",
    [
        [[1e38, 3e38, 0.0]],  # squares overflow float32
        [[1e-40, 2e-40, -1e-40]],  # subnormal float32
    ],
    ids=["huge", "tiny"],
)
def test_extreme_magnitudes_normalise(store, rows):
    v = np.array(rows, np.float32)
    store.insert(*SCOPE, items(1), v)
    assert store.query(*SCOPE, v[0].astype(np.float64), 1)[0].score == pytest.approx(1.0, abs=1e-6)


def test_other_numeric_dtypes_are_accepted(store):
    assert store.insert(*SCOPE, items(1), np.array([[1e300, -1e300, 0, 0, 0, 0, 0, 1]], np.float64)) == 1
    assert store.insert(*SCOPE, items(1, start=1), np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.int64)) == 1
    assert store.insert(*SCOPE, items(1, start=2), np.ones((1, D), np.float16)) == 1
    assert store.insert(*SCOPE, items(1, start=3), [[0.5] * D]) == 1  # a plain list of lists
    assert store.query(*SCOPE, np.arange(1, 9), 1)[0].item.index == 1


def test_query_of_unknown_scope_answers_empty_and_creates_nothing(store, root):
    assert store.query(*SCOPE, np.ones(D), 5) == []
    assert store.list_hashes(*SCOPE) == []
    assert scope_dirs(root) == []


def test_query_with_wrong_dimension_conflicts(store):
    store.insert(*SCOPE, items(2), vecs(2))
    with pytest.raises(VectorConflict):
        store.query(*SCOPE, np.ones(D + 1), 3)


@pytest.mark.parametrize(
    "vector, top_k",
    [
        (np.array([np.nan] * D), 3),
        (np.array([np.inf] + [1.0] * (D - 1)), 3),
        (np.zeros(D), 3),
        (np.ones((2, D)), 3),
        (np.array(["a"] * D), 3),
        (np.array([True] * D), 3),
        (np.ones((D, 1, 1)), 3),
        ([[1.0, 2.0], [3.0]], 3),
        (np.ones(D), 0),
        (np.ones(D), -1),
        (np.ones(D), True),
        (np.ones(D), 2.0),
        (np.ones(D), "3"),
        (np.ones(0), 3),
    ],
    ids=[
        "nan",
        "inf",
        "zero",
        "two-rows",
        "strings",
        "bools",
        "3-d",
        "ragged",
        "k0",
        "k-neg",
        "k-bool",
        "k-float",
        "k-str",
        "empty",
    ],
)
def test_invalid_queries_raise_value_error(store, vector, top_k):
    store.insert(*SCOPE, items(2), vecs(2))
    with pytest.raises(ValueError):
        store.query(*SCOPE, vector, top_k)


def test_query_accepts_one_row_2d(store):
    v = vecs(3)
    store.insert(*SCOPE, items(3), v)
    assert store.query(*SCOPE, v[1:2], 1)[0].item.index == 1


# ----------------------------------------------------------------------------------------------
# invalid input writes nothing

GOOD = items(3)


def _bad_inserts() -> list[tuple[str, object, object]]:
    v = vecs(3)
    nan, inf, zero = v.copy(), v.copy(), v.copy()
    nan[1, 2] = np.nan
    inf[2, 0] = -np.inf
    zero[1] = 0
    return [
        ("nan", GOOD, nan),
        ("inf", GOOD, inf),
        ("zero-row", GOOD, zero),
        ("more-vectors", GOOD[:2], v),
        ("fewer-vectors", GOOD, v[:2]),
        ("1-d", GOOD[:1], v[0]),
        ("3-d", GOOD, v[:, :, None]),
        ("strings", GOOD, np.array([["0.1"] * D] * 3)),
        ("bytes", GOOD, np.array([[b"x"] * D] * 3)),
        ("objects", GOOD, np.array([[object()] * D] * 3, dtype=object)),
        ("bools", GOOD, np.ones((3, D), bool)),
        ("complex", GOOD, np.ones((3, D), complex)),
        ("ragged", GOOD, [[1.0] * D, [1.0] * (D - 1), [1.0] * D]),
        ("zero-dim", GOOD, np.ones((3, 0), np.float32)),
        ("items-not-list", {"a": 1}, v),
        ("dict-item", [{"hash": 1, "index": 0, "text": "a"}] + GOOD[1:], v),
        ("tuple-item", [(1, 0, "a")] + GOOD[1:], v),
        ("str-hash", [StoredItem("1", 0, "a")] + GOOD[1:], v),
        ("float-hash", [StoredItem(1.0, 0, "a")] + GOOD[1:], v),
        ("bool-hash", [StoredItem(True, 0, "a")] + GOOD[1:], v),
        ("huge-hash", [StoredItem(2**64, 0, "a")] + GOOD[1:], v),
        ("none-index", [StoredItem(1, None, "a")] + GOOD[1:], v),
        ("float-index", GOOD[:2] + [StoredItem(1, 0.5, "a")], v),
        ("bytes-text", GOOD[:2] + [StoredItem(1, 0, b"a")], v),
        ("none-text", GOOD[:2] + [StoredItem(1, 0, None)], v),
        ("lone-surrogate-text", GOOD[:2] + [StoredItem(1, 0, "bad \ud800")], v),
    ]


BAD = _bad_inserts()


@pytest.mark.parametrize("items_, vectors", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_insert_into_new_scope_raises_and_creates_nothing(store, root, items_, vectors):
    with pytest.raises(ValueError):
        store.insert(*SCOPE, items_, vectors)
    assert scope_dirs(root) == [] and list(root.glob("c-*")) == []
    assert store.list_hashes(*SCOPE) == []


@pytest.mark.parametrize("items_, vectors", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_insert_into_existing_scope_raises_and_writes_nothing(store, root, items_, vectors):
    store.insert(*SCOPE, items(3, start=50), vecs(3, seed=7))
    hashes = store.list_hashes(*SCOPE)
    before = snapshot(root)
    with pytest.raises(ValueError):
        store.insert(*SCOPE, items_, vectors)
    assert snapshot(root) == before
    assert store.list_hashes(*SCOPE) == hashes


@pytest.mark.parametrize(
    "names",
    [(None, "s", "p"), ("c", 5, "p"), ("c", "s", b"p"), ("c\ud800", "s", "p")],
    ids=["collection-none", "source-int", "profile-bytes", "surrogate"],
)
def test_invalid_scope_names_raise_value_error(store, root, names):
    for call in (
        lambda: store.insert(*names, items(1), vecs(1)),
        lambda: store.list_hashes(*names),
        lambda: store.query(*names, np.ones(D), 1),
        lambda: store.delete(*names, [1]),
    ):
        with pytest.raises(ValueError):
            call()
    if not isinstance(names[0], str) or "\ud800" in names[0]:
        with pytest.raises(ValueError):
            store.purge(names[0])
    assert list(root.glob("c-*")) == []


@pytest.mark.parametrize("hashes", ["1,2", [1, "2"], [1.5], [True], [None], 5], ids=str)
def test_invalid_delete_raises_and_writes_nothing(store, root, hashes):
    store.insert(*SCOPE, items(3), vecs(3))
    store.list_hashes(*SCOPE)
    before = snapshot(root)
    with pytest.raises(ValueError):
        store.delete(*SCOPE, hashes)
    assert snapshot(root) == before and len(store.list_hashes(*SCOPE)) == 3


def test_dimension_conflict_raises_and_writes_nothing(store, root):
    store.insert(*SCOPE, items(3), vecs(3))
    store.list_hashes(*SCOPE)
    before = snapshot(root)
    with pytest.raises(VectorConflict):
        store.insert(*SCOPE, items(2, start=10), vecs(2, d=D * 2))
    with pytest.raises(VectorConflict):
        store.insert(*SCOPE, items(3), vecs(3, d=D - 1))  # even items already stored
    assert snapshot(root) == before
    assert store.list_hashes(*SCOPE) == [1000, 1001, 1002]
    # other scopes, even of the same collection, have their own dimension
    assert store.insert(SCOPE[0], "ollama", "model=other", items(2), vecs(2, d=D * 2)) == 2


# ----------------------------------------------------------------------------------------------
# scopes, purge, purge-all, collections


def test_scopes_are_separate(store):
    store.insert("chat", "llamacpp", "model=a", items(2), vecs(2))
    store.insert("chat", "llamacpp", "model=b", items(3, start=10), vecs(3))
    store.insert("chat", "ollama", "model=a", items(1, start=20), vecs(1))
    store.insert("world_1", "llamacpp", "model=a", items(4, start=30), vecs(4))
    assert store.list_hashes("chat", "llamacpp", "model=a") == [1000, 1001]
    assert store.list_hashes("chat", "llamacpp", "model=b") == [1010, 1011, 1012]
    assert store.list_hashes("chat", "ollama", "model=a") == [1020]
    assert store.list_hashes("world_1", "llamacpp", "model=a") == [1030, 1031, 1032, 1033]
    assert store.delete("chat", "llamacpp", "model=a", [1010, 1020, 1030]) == 0


def test_purge_removes_every_scope_of_the_collection_and_leaves_others(store, root):
    store.insert("chat", "llamacpp", "model=a", items(2), vecs(2))
    store.insert("chat", "ollama", "model=b", items(2), vecs(2, d=4))
    store.insert("chat", "transformers", "model=c", items(2), vecs(2))
    store.insert("chat2", "llamacpp", "model=a", items(3), vecs(3))
    store.insert("world_5", "llamacpp", "model=a", items(1), vecs(1))
    assert store.purge("chat") == 3
    assert store.list_hashes("chat", "llamacpp", "model=a") == []
    assert store.query("chat", "ollama", "model=b", np.ones(4), 3) == []
    assert store.list_hashes("chat2", "llamacpp", "model=a") == [1000, 1001, 1002]
    assert store.list_hashes("world_5", "llamacpp", "model=a") == [1000]
    assert [c["collection"] for c in store.collections()] == ["chat2", "world_5"]
    assert store.purge("chat") == 0
    assert store.purge("never-seen") == 0
    assert not [p for p in root.iterdir() if p.name.startswith(".trash")]
    # the purged collection starts afresh, with any dimension
    assert store.insert("chat", "llamacpp", "model=a", items(1), vecs(1, d=3)) == 1


def test_purge_all_removes_every_scope_and_nothing_else(tmp_path):
    data = tmp_path / "data"
    models = data / "models"
    models.mkdir(parents=True)
    (models / "qwen.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    (data / "state.sqlite").write_bytes(b"state")
    store = VectorStore(data / "vectors", ann_background=False)
    try:
        (data / "vectors" / "README.txt").write_text("not ours")
        for i in range(3):
            store.insert(f"chat{i}", "llamacpp", "m", items(2), vecs(2))
        outside = snapshot(data / "models") | {"state": hashlib.sha256(b"state").hexdigest()}
        assert store.purge_all() is None
        assert store.collections() == []
        assert all(store.list_hashes(f"chat{i}", "llamacpp", "m") == [] for i in range(3))
        assert (
            snapshot(data / "models") | {"state": hashlib.sha256((data / "state.sqlite").read_bytes()).hexdigest()}
            == outside
        )
        assert (data / "vectors" / "README.txt").read_text() == "not ours"
        assert sorted(p.name for p in (data / "vectors").iterdir()) == [".lock", "README.txt"]
        assert store.insert("chat0", "llamacpp", "m", items(1), vecs(1)) == 1
        store.purge_all()
        store.purge_all()
    finally:
        store.close()


def test_collections_describes_every_scope(store):
    store.insert("b-chat", "ollama", "model=x", items(2), vecs(2, d=4))
    store.insert("a-chat", "llamacpp", "model=y", items(3), vecs(3))
    store.insert("a-chat", "llamacpp", "model=y", items(3), vecs(3))
    store.delete("a-chat", "llamacpp", "model=y", [1000])
    assert store.collections() == [
        {"collection": "a-chat", "source": "llamacpp", "profile_key": "model=y", "count": 2, "dim": D},
        {"collection": "b-chat", "source": "ollama", "profile_key": "model=x", "count": 2, "dim": 4},
    ]


def test_collection_and_profile_names_are_stored_readably(store, root):
    store.insert("Seraphina / ? <chat>*", "llamacpp", "model=m\nendpoint=http://x", items(1), vecs(1))
    [scope] = scope_dirs(root)
    db = sqlite3.connect(scope / "meta.sqlite")
    try:
        assert db.execute("SELECT collection, source, profile_key, dim FROM info").fetchone() == (
            "Seraphina / ? <chat>*",
            "llamacpp",
            "model=m\nendpoint=http://x",
            D,
        )
    finally:
        db.close()


# ----------------------------------------------------------------------------------------------
# reopening, compaction, recovery


def test_a_scope_written_before_the_calibration_column_still_opens(root):
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(5), vecs(5))
    store.close()
    [scope] = scope_dirs(root)
    db = sqlite3.connect(scope / "meta.sqlite")
    try:
        db.execute("ALTER TABLE info DROP COLUMN ann_calibration")
        db.commit()
    finally:
        db.close()
    store = VectorStore(root, ann_background=False)
    try:
        assert store.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003, 1004]
        store.insert(*SCOPE, items(2, start=5), vecs(2, seed=3))
        assert len(store.list_hashes(*SCOPE)) == 7
    finally:
        store.close()


def test_reopening_the_store_sees_the_same_data(root):
    v = vecs(40, seed=11)
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(40), v)
    store.insert("world_9", "ollama", "model=z", items(5), vecs(5, d=3))
    store.delete(*SCOPE, [1003, 1004])
    q = np.random.default_rng(1).standard_normal(D)
    before = (store.list_hashes(*SCOPE), store.query(*SCOPE, q, 10), store.collections())
    store.close()
    again = VectorStore(root, ann_background=False)
    try:
        assert (again.list_hashes(*SCOPE), again.query(*SCOPE, q, 10), again.collections()) == before
        assert again.check() == []
        assert again.insert(*SCOPE, items(40), v) == 2  # the deleted two come back, nothing else
    finally:
        again.close()


def test_compaction_keeps_results_identical(store, root):
    v = vecs(300, seed=12)
    store.insert(*SCOPE, items(300), v)
    store.delete(*SCOPE, [1000 + i for i in range(0, 300, 7)])  # 43 dead: under the automatic threshold
    [scope] = scope_dirs(root)
    assert (scope / "vectors.0.f32").stat().st_size == 300 * D * 4
    queries = np.random.default_rng(3).standard_normal((20, D))
    before = [store.query(*SCOPE, q, 15) for q in queries]
    hashes = store.list_hashes(*SCOPE)
    assert store.compact(*SCOPE) == 43
    assert not (scope / "vectors.0.f32").exists()
    assert (scope / "vectors.1.f32").stat().st_size == 257 * D * 4
    after = [store.query(*SCOPE, q, 15) for q in queries]
    assert [[h.item for h in r] for r in after] == [[h.item for h in r] for r in before]
    assert [[h.score for h in r] for r in after] == [[h.score for h in r] for r in before]
    assert store.list_hashes(*SCOPE) == hashes
    assert store.compact(*SCOPE) == 0
    assert store.check() == []


def test_large_deletes_compact_automatically_and_survive_reopening(root):
    v = vecs(400, seed=13)
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(400), v)
    q = v[399]
    store.delete(*SCOPE, [1000 + i for i in range(200)])
    [scope] = scope_dirs(root)
    assert sorted(p.name for p in scope.glob("vectors.*")) == ["vectors.1.f32"]
    assert (scope / "vectors.1.f32").stat().st_size == 200 * D * 4
    before = store.query(*SCOPE, q, 10)
    assert before[0].item.index == 399
    assert store.insert(*SCOPE, items(3, start=500), vecs(3, seed=14)) == 3
    store.close()
    again = VectorStore(root, ann_background=False)
    try:
        assert again.list_hashes(*SCOPE) == [1000 + i for i in range(200, 400)] + [1500, 1501, 1502]
        assert again.query(*SCOPE, q, 10)[0] == before[0]
        assert again.check() == []
    finally:
        again.close()


def test_uncommitted_rows_after_a_crash_are_truncated_on_open(root):
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(5), vecs(5))
    store.close()
    [scope] = scope_dirs(root)
    vec = scope / "vectors.0.f32"
    good = vec.read_bytes()
    with open(vec, "ab") as f:  # what a crash between the row write and the commit leaves
        f.write(np.ones((3, D), np.float32).tobytes() + b"\x01\x02")
    again = VectorStore(root, ann_background=False)
    try:
        assert again.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003, 1004]
        assert vec.read_bytes() == good
        assert again.check() == []
        assert again.insert(*SCOPE, items(1, start=9), vecs(1, seed=2)) == 1
        assert again.query(*SCOPE, vecs(1, seed=2)[0], 1)[0].item.index == 9
    finally:
        again.close()


def test_leftovers_of_interrupted_writes_are_removed_on_open(root):
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(5), vecs(5))
    store.close()
    [scope] = scope_dirs(root)
    (scope / "vectors.1.f32").write_bytes(b"half a compaction")
    (scope / "hnsw.3.bin").write_bytes(b"half an index save")
    tmp_scope = scope.parent / ".tmp-s-abc-123"
    tmp_scope.mkdir()
    (tmp_scope / "vectors.0.f32").write_bytes(b"half a creation")
    trash = root / ".trash-0123"
    (trash / "s-x").mkdir(parents=True)
    (trash / "s-x" / "meta.sqlite").write_bytes(b"half a purge")
    (root / "c-0000").mkdir()  # an empty collection folder
    again = VectorStore(root, ann_background=False)
    try:
        assert again.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003, 1004]
        assert not tmp_scope.exists() and not trash.exists() and not (root / "c-0000").exists()
        assert not (scope / "vectors.1.f32").exists() and not (scope / "hnsw.3.bin").exists()
        assert again.check() == []
    finally:
        again.close()


def test_a_vector_file_missing_committed_rows_keeps_what_is_readable(root):
    store = VectorStore(root, ann_background=False)
    v = vecs(6)
    store.insert(*SCOPE, items(6), v)
    store.close()
    [scope] = scope_dirs(root)
    vec = scope / "vectors.0.f32"
    vec.write_bytes(vec.read_bytes()[: 4 * D * 4 + 5])  # lost the last two rows and a bit
    again = VectorStore(root, ann_background=False)
    try:
        assert again.list_hashes(*SCOPE) == [1000, 1001, 1002, 1003]
        assert again.check() == []
        assert again.query(*SCOPE, v[3], 1)[0].item.index == 3
    finally:
        again.close()


def test_an_unreadable_scope_is_moved_aside_and_the_scope_starts_afresh(root):
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(2), vecs(2))
    [scope] = scope_dirs(root)
    store.insert("other", "llamacpp", "m", items(2), vecs(2))
    store.close()
    (scope / "meta.sqlite").write_bytes(b"this is not a database" * 100)
    again = VectorStore(root, ann_background=False)
    try:
        assert again.list_hashes(*SCOPE) == []
        assert [p.name.startswith(".broken-") for p in scope.parent.iterdir()] == [True]
        assert again.list_hashes("other", "llamacpp", "m") == [1000, 1001]
        assert again.insert(*SCOPE, items(1), vecs(1, d=3)) == 1
        assert again.check() == []
        assert again.purge(SCOPE[0]) == 1
        assert not scope.parent.exists()
    finally:
        again.close()


def test_one_store_per_folder(root):
    store = VectorStore(root, ann_background=False)
    try:
        with pytest.raises(VectorStoreBusy):
            VectorStore(root, ann_background=False)
    finally:
        store.close()
    VectorStore(root, ann_background=False).close()


def test_a_closed_store_refuses_calls(root):
    store = VectorStore(root, ann_background=False)
    store.insert(*SCOPE, items(1), vecs(1))
    store.close()
    store.close()  # twice is fine
    for call in (
        lambda: store.list_hashes(*SCOPE),
        lambda: store.insert(*SCOPE, items(1, start=3), vecs(1)),
        lambda: store.query(*SCOPE, np.ones(D), 1),
        lambda: store.purge("x"),
        store.purge_all,
        store.collections,
    ):
        with pytest.raises(RuntimeError):
            call()


def test_many_scopes_beyond_the_open_limit(root):
    store = VectorStore(root, ann_background=False, max_open_scopes=3)
    try:
        for i in range(12):
            store.insert(f"chat{i}", "llamacpp", "m", items(2, start=i), vecs(2, seed=i))
        assert len(store._open) <= 3
        for i in reversed(range(12)):
            assert store.list_hashes(f"chat{i}", "llamacpp", "m") == [1000 + i, 1001 + i]
            assert store.query(f"chat{i}", "llamacpp", "m", vecs(2, seed=i)[1], 1)[0].item.index == i + 1
        assert len(store.collections()) == 12 and store.check() == []
    finally:
        store.close()


# ----------------------------------------------------------------------------------------------
# threads


def test_concurrent_inserts_into_one_scope_all_commit(store):
    threads, batches, per = 8, 25, 4
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(t: int) -> None:
        try:
            for b in range(batches):
                base = (t * batches + b) * per
                batch = [StoredItem(base + i, i, f"t{t} b{b} i{i}") for i in range(per)]
                assert store.insert(*SCOPE, batch, vecs(per, seed=base + 1)) == per
        except BaseException as exc:  # pragma: no cover  # noqa: BLE001 - carried to the assert below
            errors.append(exc)

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = store.query(*SCOPE, np.ones(D), 5)
                assert len(hits) <= 5
                store.list_hashes(*SCOPE)
        except BaseException as exc:  # pragma: no cover  # noqa: BLE001 - carried to the assert below
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for w in workers + readers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    for r in readers:
        r.join()
    assert errors == []
    hashes = store.list_hashes(*SCOPE)
    assert sorted(hashes) == list(range(threads * batches * per))
    assert store.check() == []
    for base in (0, 404, 796):
        top = store.query(*SCOPE, vecs(per, seed=base + 1)[0], 1)[0]
        assert top.item.hash == base and top.score == pytest.approx(1.0, abs=1e-6)


def test_concurrent_first_inserts_create_the_scope_once(store, root):
    barrier = threading.Barrier(6)
    results: list[int] = []

    def first(t: int) -> None:
        barrier.wait()
        results.append(store.insert(*SCOPE, items(3) + [StoredItem(t, t, f"own {t}")], vecs(4, seed=0)))

    workers = [threading.Thread(target=first, args=(t,)) for t in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results) == [1] * 5 + [4]
    assert len(scope_dirs(root)) == 1
    assert sorted(store.list_hashes(*SCOPE)) == [0, 1, 2, 3, 4, 5, 1000, 1001, 1002]


def test_concurrent_deletes_purges_and_queries_stay_consistent(store):
    errors: list[BaseException] = []

    def churn(t: int) -> None:
        try:
            for r in range(30):
                coll = f"c{t % 2}"
                store.insert(coll, "s", "p", items(5, start=r * 5), vecs(5, seed=r))
                store.query(coll, "s", "p", np.ones(D), 3)
                store.delete(coll, "s", "p", [1000 + r * 5])
                if r % 10 == 9:
                    store.purge(coll)
                store.collections()
        except BaseException as exc:  # pragma: no cover  # noqa: BLE001 - carried to the assert below
            errors.append(exc)

    workers = [threading.Thread(target=churn, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert store.check() == []
