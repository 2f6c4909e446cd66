"""The Vault table's own filter and sort (ui/vault/entries_proxy.py): the order each column sorts
in, the filter's words, a narrower filter looking only at the rows shown, the selection kept through
sorts and filters, and, at 10,000 entries, not one value asked of the model while it resets,
sorts and filters (Qt's sort proxy made 265,000; how long it takes is measured in benchmarks/)."""

from __future__ import annotations

import time

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QTableView

from dle_desktop.core.entry import Entry
from dle_desktop.ui.vault.entries_model import INJECTED, LAST_INJECTED, EntriesModel
from dle_desktop.ui.vault.entries_proxy import EntriesFilter


def entries(n: int) -> list[Entry]:
    return [
        Entry(
            "v",
            f"F{i % 7}/E{i}.md",
            f"{'abcdefg'[i % 7]}{'ABCDEFG'[i % 5]} Entry {i:05d}",
            "x",
            f"h{i}",
            (i * 37) % 101,
            keys=(f"key{i % 13}",),
            priority=float((i * 11) % 17),
            tags=("lorebook", f"tag{i % 3}"),
        )
        for i in range(n)
    ]


class CountingModel(EntriesModel):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def value(self, row, col, role=Qt.ItemDataRole.DisplayRole):
        self.calls += 1
        return super().value(row, col, role)


def shown_titles(proxy: EntriesFilter) -> list[str]:
    return [proxy.index(r, 0).data() for r in range(proxy.rowCount())]


def test_each_column_sorts_as_a_reader_expects(qapp):
    model, proxy = EntriesModel(), EntriesFilter()
    proxy.setSourceModel(model)
    rows = entries(200)
    model.set_entries(rows)
    proxy.sort(0)
    assert shown_titles(proxy) == [e.title for e in sorted(rows, key=lambda e: e.title.casefold())]
    proxy.sort(3, Qt.SortOrder.DescendingOrder)  # priority, as a number
    assert [float(proxy.index(r, 3).data()) for r in range(proxy.rowCount())] == sorted(
        (e.priority for e in rows), reverse=True
    )
    proxy.sort(4)  # tokens
    assert [proxy.index(r, 4).data() for r in range(proxy.rowCount())] == sorted(e.token_estimate for e in rows)
    proxy.sort(-1)  # no column: the vault's order
    assert shown_titles(proxy) == [e.title for e in rows]
    model.set_usage({e.uid: (1, i % 4, time.time() - i) for i, e in enumerate(rows) if i % 2})
    proxy.sort(INJECTED, Qt.SortOrder.DescendingOrder)
    assert [proxy.index(r, INJECTED).data() for r in range(proxy.rowCount())][:5] == [3] * 5
    proxy.sort(LAST_INJECTED, Qt.SortOrder.DescendingOrder)
    assert proxy.index(0, 0).data() == rows[1].title  # the newest injection first


def test_every_word_must_match_and_a_narrower_filter_only_looks_at_the_rows_shown(qapp):
    model, proxy = EntriesModel(), EntriesFilter()
    proxy.setSourceModel(model)
    rows = entries(300)
    model.set_entries(rows)
    proxy.sort(0)
    proxy.set_text("tag1 F3/")
    expected = [e for e in rows if "tag1" in e.tags and e.path.startswith("F3/")]
    assert sorted(shown_titles(proxy)) == sorted(e.title for e in expected) and expected
    narrowed = [e.title for e in expected if "key5" in e.keys]
    hay = model.search_texts()
    shown = {rows.index(e) for e in expected}
    # Rows the filter hid now claim to match everything: a filter that read them would show them.
    model._search = [h if i in shown else "tag1 f3/ key5" for i, h in enumerate(hay)]
    proxy.set_text("tag1 F3/ key5")  # narrower: it reads the rows shown only
    assert sorted(shown_titles(proxy)) == sorted(narrowed)
    model._search = hay
    proxy.set_text("")
    assert shown_titles(proxy) == [e.title for e in sorted(rows, key=lambda e: e.title.casefold())]
    proxy.set_text("no-such-word")
    assert proxy.rowCount() == 0 and not proxy.mapFromSource(model.index(0, 0)).isValid()


def test_the_selection_follows_its_row_through_sorts_and_filters(qapp):
    model, proxy = EntriesModel(), EntriesFilter()
    proxy.setSourceModel(model)
    rows = entries(100)
    model.set_entries(rows)
    view = QTableView()
    view.setModel(proxy)
    chosen = rows[42]
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    view.selectionModel().setCurrentIndex(proxy.mapFromSource(model.index(42, 0)), flags)
    for change in (
        lambda: proxy.sort(0, Qt.SortOrder.DescendingOrder),
        lambda: proxy.sort(4),
        lambda: proxy.set_text("F0/"),
    ):
        change()
        current = view.selectionModel().currentIndex()
        assert current.isValid() and current.data() == chosen.title
    proxy.set_text("F1/")  # hides it: the selection goes with its row
    assert not view.selectionModel().currentIndex().isValid()


def test_ten_thousand_entries_reset_sort_and_filter_without_asking_the_model_for_values(qapp):
    # A view asks only for the cells it paints; the proxy itself reads no cell.
    model, proxy = CountingModel(), EntriesFilter()
    proxy.setSourceModel(model)
    rows = entries(10_000)
    model.set_entries(rows)
    for column in range(model.columnCount()):
        proxy.sort(column, Qt.SortOrder.DescendingOrder)
    for text in ("e", "entry 0", "entry 00", "", "tag2", ""):
        proxy.set_text(text)
    assert proxy.rowCount() == 10_000
    assert model.calls == 0
