"""DLE's final order of the working set: priority, then titles as JavaScript's `localeCompare`
orders them."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from dle_desktop.core.pipeline.collation import flat_title_order_key, title_order_key

if TYPE_CHECKING:
    from dle_desktop.core.pipeline.stage_context import Active


def sort_by_priority(items: list[Active]) -> list[Active]:
    """DLE's final sort: priority ascending, then `title.localeCompare` (`Active.priority_key`,
    computed once per Active: a generation sorts its working set several times)."""
    return sorted(items, key=_PRIORITY_KEY)


_PRIORITY_KEY = operator.attrgetter("priority_key")


def sort_by_priority_descending(items: list[Active]) -> list[Active]:
    """DLE's requires/excludes walk: highest priority number first (a missing priority counts
    as 50), titles in `localeCompare` order."""
    return sorted(items, key=lambda a: (-(a.entry.priority or 50), *flat_title_order_key(a.entry.title)))


__all__ = ["sort_by_priority", "sort_by_priority_descending", "title_order_key"]
