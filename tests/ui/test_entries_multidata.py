"""The Vault table paints each cell with one call into Python (`multiData`), not one per role:
each call waits for the interpreter lock while an engine thread runs, so fewer calls is a table
that repaints on time during a re-index. What a cell shows is what `data` answers."""

from __future__ import annotations

from PySide6.QtCore import QModelRoleData, QModelRoleDataSpan, Qt
from PySide6.QtWidgets import QTableView

from dle_desktop.core.entry import Entry
from dle_desktop.ui.vault.entries_model import UID_ROLE, EntriesModel
from dle_desktop.ui.vault.entries_proxy import EntriesFilter

ROLES = (
    Qt.ItemDataRole.DisplayRole,
    Qt.ItemDataRole.ToolTipRole,
    Qt.ItemDataRole.ForegroundRole,
    Qt.ItemDataRole.TextAlignmentRole,
    Qt.ItemDataRole.FontRole,
    Qt.ItemDataRole.DecorationRole,
    UID_ROLE,
)


def entries(n: int) -> list[Entry]:
    return [
        Entry("v", f"Places/Spot {i:03d}.md", f"Spot {i:03d}", "text", f"h{i}", 10 + i, keys=(f"spot{i}", "place"))
        for i in range(n)
    ]


class CountingFilter(EntriesFilter):
    def __init__(self) -> None:
        super().__init__()
        self.calls = {"data": 0, "multiData": 0}

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        self.calls["data"] += 1
        return super().data(index, role)

    def multiData(self, index, roleDataSpan, /) -> None:
        self.calls["multiData"] += 1
        super().multiData(index, roleDataSpan)


def test_a_painted_cell_is_one_call_into_python(qapp):
    model = EntriesModel()
    model.set_entries(entries(500))
    proxy = CountingFilter()
    proxy.setSourceModel(model)
    view = QTableView()
    view.setModel(proxy)
    view.resize(900, 500)
    view.show()
    qapp.processEvents()
    proxy.calls.update(data=0, multiData=0)
    view.viewport().grab()
    visible_cells = proxy.calls["multiData"]
    assert visible_cells >= 10 * 10  # every visible cell asked once...
    assert proxy.calls["data"] == 0  # ...and never role by role


def test_multidata_answers_what_data_answers(qapp):
    model = EntriesModel()
    model.set_entries(entries(30))
    model.set_usage({entries(30)[3].uid: (4, 2, 1_700_000_000.0)})
    proxy = EntriesFilter()
    proxy.setSourceModel(model)
    proxy.set_text("spot 00")
    for row in range(proxy.rowCount()):
        for column in range(proxy.columnCount()):
            index = proxy.index(row, column)
            for role in ROLES:
                slot = QModelRoleData(role)
                proxy.multiData(index, QModelRoleDataSpan(slot))
                assert slot.data() == proxy.data(index, role), (row, column, role)
