"""Vault entries → a SillyTavern World Info book."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.core.worldinfo.model import ExportDefaults, ExportReport


def export_book(
    entries: Sequence[Entry],
    defaults: ExportDefaults = ExportDefaults(),
    tags: TagConfig = TagConfig(),
    raw_fields: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], ExportReport]:
    raise NotImplementedError
