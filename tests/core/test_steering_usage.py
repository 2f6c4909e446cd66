"""`field_usage` counts what each value lets through without walking every entry per value; the
count must be the one gating's own rule gives entry by entry, for every operator and tolerance."""

from __future__ import annotations

import itertools

import pytest

from dle_desktop.core.entry import Entry
from dle_desktop.core.fields import FieldDefinition, FieldDefinitions
from dle_desktop.core.steering import _passes, _values_of, field_usage


def _entries() -> list[Entry]:
    values = [None, "Harbor", ["harbor", "Mill"], ["Mill"], "", ["Well", "Harbor"], "mill", 3, ["2", "5"]]
    return [
        Entry("v", f"E{i}.md", f"Entry {i}", "x", f"h{i}", 10, custom_fields={} if v is None else {"place": v})
        for i, v in enumerate(values * 3)
    ]


OPERATORS = ("match_any", "match_all", "not_any", "exists", "not_exists", "eq", "gt", "lt")
TOLERANCES = ("strict", "moderate", "lenient")


@pytest.mark.parametrize(("operator", "tolerance"), list(itertools.product(OPERATORS, TOLERANCES)))
def test_lets_through_is_what_gating_passes_entry_by_entry(operator, tolerance):
    field = FieldDefinition(name="place", label="Place", multi=True, operator=operator, tolerance=tolerance)
    entries = _entries()
    (use,) = field_usage(entries, FieldDefinitions(fields=(field,)))
    assert {v.value.lower() for v in use.values} == {"harbor", "mill", "well", "3", "2", "5"}
    for value in use.values:
        walked = sum(
            _passes(field, tuple(v.lower() for v in _values_of(e.custom_fields.get("place"))), value.value)
            for e in entries
        )
        assert value.lets_through == walked, (value.value, operator, tolerance)
    assert use.entries_with_field == sum(1 for e in entries if _values_of(e.custom_fields.get("place")))
