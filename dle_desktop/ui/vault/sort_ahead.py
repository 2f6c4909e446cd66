"""The Vault table's sort orders, worked out on a background thread after each new index (see
`sort_orders.py`): a sort click at 100,000 entries then picks a ready order instead of sorting
on the GUI thread (0.3-0.4 s there)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal

from dle_desktop.ui.vault.entries_model import EntriesModel


class SortOrdersAhead(QObject):
    _made = Signal(object)  # from the worker thread; delivered on the GUI thread

    def __init__(self, model: EntriesModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._made.connect(model.install_sort_orders, Qt.ConnectionType.QueuedConnection)
        self.model = model

    def start(self, give_way: Callable[[], object]) -> threading.Thread:
        """Work out the orders of the rows shown now, a column at a time with `give_way` between
        columns; a model reset meanwhile makes the result stale, and it is dropped."""
        job = self.model.sort_order_job()

        def run() -> None:
            made = job(give_way)
            try:
                self._made.emit(made)
            except RuntimeError:  # the window closed while this worked: nobody to tell
                pass

        thread = threading.Thread(target=run, name="dle-sort-orders", daemon=True)
        thread.start()
        return thread
