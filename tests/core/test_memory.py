"""Freed memory is handed back to the system after each index (`core/memory.py`)."""

from __future__ import annotations

import sys

import pytest

from dle_desktop.core import memory


@pytest.fixture
def fresh_lookup():
    memory._malloc_trim.cache_clear()
    yield
    memory._malloc_trim.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_on_linux_the_free_heap_is_handed_back(fresh_lookup):
    garbage = [str(i) * 20 for i in range(200_000)]  # a few MB made and dropped, as a sync does
    del garbage
    assert memory.release_free_memory() is True


def test_where_the_c_library_cannot_it_does_nothing(fresh_lookup, monkeypatch):
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    assert memory.release_free_memory() is False
    memory._malloc_trim.cache_clear()
    monkeypatch.setattr(memory.sys, "platform", "linux")
    monkeypatch.setattr(memory.ctypes.util, "find_library", lambda _name: None)
    assert memory.release_free_memory() is False
