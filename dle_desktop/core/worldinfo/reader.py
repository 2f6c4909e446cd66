"""Reading World Info books: WI exports, bare arrays, character cards (JSON and PNG)."""

from __future__ import annotations

from typing import Any

from dle_desktop.core.worldinfo.model import WiBook


def read_book_bytes(data: bytes, *, name: str) -> WiBook:
    """A book from a file's bytes: PNG character cards are sniffed, anything else is read as JSON."""
    raise NotImplementedError


def read_book_value(value: Any, *, name: str) -> WiBook:
    """A book from already-parsed JSON."""
    raise NotImplementedError
