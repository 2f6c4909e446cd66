"""The Vault table's orders worked out ahead (`ui/vault/sort_orders.py`) are exactly Python's
`sorted`, ties and `reverse=True` included, and the table sorted with them shows the same rows."""

from __future__ import annotations

import random
import threading

import pytest

from dle_desktop.core.entry import Entry
from dle_desktop.ui.vault.entries_model import EntriesModel
from dle_desktop.ui.vault.entries_proxy import EntriesFilter
from dle_desktop.ui.vault.sort_orders import key_array, stable_orders


def orders(keys):
    made = stable_orders(keys)
    return None if made is None else (made[0].tolist(), made[1].tolist())


def python_orders(keys):
    n = range(len(keys))
    return sorted(n, key=keys.__getitem__), sorted(n, key=keys.__getitem__, reverse=True)


@pytest.mark.parametrize("seed", range(5))
def test_orders_are_pythons_sorted_ties_included(seed):
    rng = random.Random(seed)
    words = ["", "a", "ab", "b", "é", "zeta", "Ω", "a b", "ab "]
    texts = [rng.choice(words) + rng.choice(words) for _ in range(25_000)]  # many ties, two pieces
    numbers = [rng.choice([0, 1, 2.5, -3, 100, 1e300, float("inf")]) for _ in range(3000)]
    assert orders(texts) == python_orders(texts)
    assert orders(numbers) == python_orders(numbers)


def test_keys_numpy_would_sort_otherwise_are_left_to_python():
    assert key_array(["a", 1]) is None  # mixed kinds
    assert key_array([1.0, float("nan")]) is None
    assert key_array(["a\x00", "a"]) is None  # numpy drops the trailing NUL
    assert key_array([2**60, 1]) is None  # not exact as a float
    assert orders([]) == ([], [])


def test_a_table_sorted_with_orders_made_ahead_shows_the_rows_sorted_without(qapp):
    rng = random.Random(7)
    entries = [
        Entry(
            rng.choice(["v", "w"]),
            f"F{rng.randint(0, 5)}/N{i}.md",
            rng.choice(["Gate", "gate", "Harbour", "Ash", "ash"]) + str(rng.randint(0, 3)),
            "text",
            f"h{i}",
            rng.randint(1, 50),
            keys=(rng.choice(["x", "y", "z"]),),
            priority=rng.choice([10, 50, 100]),
        )
        for i in range(400)
    ]
    plain, ahead = EntriesModel(), EntriesModel()
    plain.set_entries(entries)
    ahead.set_entries(entries)
    ahead.make_sort_orders()
    assert ahead.has_sort_orders()
    views = []
    for model in (plain, ahead):
        proxy = EntriesFilter()
        proxy.setSourceModel(model)
        views.append(proxy)
    from PySide6.QtCore import Qt

    for column in range(7):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            for proxy in views:
                proxy.sort(column, order)
            assert views[0]._rows == views[1]._rows, (column, order)


def test_orders_made_in_the_background_for_an_older_index_are_dropped(qtbot):
    from dle_desktop.ui.vault.sort_ahead import SortOrdersAhead

    rows = [Entry("v", f"N{i}.md", f"Note {i % 7}", "t", f"h{i}", i) for i in range(50)]
    model = EntriesModel()
    model.set_entries(rows)
    ahead = SortOrdersAhead(model)
    ahead.start(lambda: None).join(30)
    qtbot.waitUntil(model.has_sort_orders, timeout=10_000)
    assert model.sort_order(0, False) == sorted(range(50), key=lambda r: rows[r].title.casefold())

    release = threading.Event()
    waiting = ahead.start(lambda: release.wait(30))  # still working when the next index arrives
    model.set_entries(rows[:10])
    with qtbot.waitSignal(ahead._made, timeout=10_000):
        release.set()
    waiting.join(30)
    qtbot.wait(20)  # the queued delivery to the model runs
    assert not model.has_sort_orders() and model.rowCount() == 10  # the stale orders were dropped
