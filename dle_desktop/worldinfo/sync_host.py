"""What the World Info sync needs of the vault, built over the World Info service and the note
writer: a folder's book with the note behind each entry, and SillyTavern's edits written back
into the notes (only the fields that changed there; new entries imported)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from dle_desktop.core.entry import TagConfig
from dle_desktop.core.worldinfo import NoteSpec, WiBook, export_book
from dle_desktop.errors import DleError, InputError
from dle_desktop.state.settings import Settings
from dle_desktop.state.settings.records import WiSyncConfig
from dle_desktop.vault.frontmatter_edit import REMOVE
from dle_desktop.worldinfo.service import WorldInfoService, export_defaults
from dle_desktop.worldinfo.sync import spec_changes

#: The feature name SillyTavern's edits carry in the write history (each can be undone there).
SYNC_FEATURE = "wi-sync"


class ServiceSyncHost:
    def __init__(
        self, service: WorldInfoService, settings: Callable[[], Settings], tags: Callable[[], TagConfig]
    ) -> None:
        self.service = service
        self._settings = settings
        self._tags = tags

    async def export_folder(self, vault: str, folder: str) -> tuple[dict[str, Any], dict[str, str]]:
        try:
            entries = self.service.entries_for_export(vault=vault, folder=folder or None)
        except InputError as exc:
            if "nothing to export" not in str(exc):
                raise
            entries = []  # the folder was emptied: so is the book
        book, _report = await asyncio.to_thread(export_book, entries, export_defaults(self._settings()), self._tags())
        # export_book numbers the entries it keeps 0… in order, leaving guide entries out.
        kept = [e for e in entries if not e.guide]
        return book, {str(i): e.path for i, e in enumerate(kept)}

    async def apply_st_changes(
        self, config: WiSyncConfig, changed: list[tuple[str, NoteSpec, NoteSpec]], added: WiBook | None
    ) -> list[str]:
        problems: list[str] = []
        writer = self.service.writer
        for path, before, after in changed:
            to_set, to_remove, body_changed = spec_changes(before, after)
            try:
                if to_set or to_remove:
                    version = await writer.read(config.vault, path)
                    changes: dict[str, Any] = {**to_set, **dict.fromkeys(to_remove, REMOVE)}
                    await writer.set_fields(config.vault, path, changes, base=version, feature=SYNC_FEATURE)
                if body_changed:
                    version = await writer.read(config.vault, path)
                    body = after.body
                    await writer.replace_body(config.vault, path, body, base=version, feature=SYNC_FEATURE)
            except DleError as exc:
                problems.append(f"{path}: SillyTavern's edit was not written ({exc})")
        if added is not None and added.entries:
            try:
                plan = await self.service.plan_import(
                    added, vault=config.vault, folder=config.folder, collision="rename"
                )
                await self.service.run_import(plan)
            except DleError as exc:
                problems.append(f"the {len(added.entries)} entries added in SillyTavern were not imported ({exc})")
        return problems
