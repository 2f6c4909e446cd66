"""One recursive listing of a vault over the Obsidian REST API: the notes, and the folders that
could not be read, 10 folder requests at a time as DLE does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from dle_desktop.errors import VaultError, VaultPathError
from dle_desktop.vault.sources import MAX_FOLDER_DEPTH, Listing, check_relative_path

log = logging.getLogger(__name__)

#: DLE lists this many sub-folders at once (Promise.allSettled batches of 10).
LISTING_CONCURRENCY = 10


def is_note(path: str) -> bool:
    return path.lower().endswith(".md")


class ListingWalk:
    """One recursive listing: collects notes and per-folder problems, 10 folder requests at a time."""

    def __init__(self, list_folder: Callable[[str], Awaitable[list[str] | None]], describe: str) -> None:
        """`list_folder`: the names directly in a folder ('' = root), None when it is gone."""
        self.list_folder = list_folder
        self.describe = describe
        self.gate = asyncio.Semaphore(LISTING_CONCURRENCY)
        self.stamps: dict[str, str | None] = {}
        self.problems: list[str] = []

    async def take(self, folder: str, names: list[str], depth: int) -> None:
        """Record the notes in `names` and walk its sub-folders concurrently."""
        subfolders = []
        for name in names:
            child = self._child_path(folder, name)
            if child is None:
                continue
            if name.endswith("/"):
                if depth + 1 >= MAX_FOLDER_DEPTH:
                    self.problems.append(f"{child}: deeper than {MAX_FOLDER_DEPTH} folders, not read")
                else:
                    subfolders.append(child)
            elif is_note(child):
                self.stamps[child] = None
        await asyncio.gather(*(self._visit(sub, depth + 1) for sub in subfolders))

    def _child_path(self, folder: str, name: str) -> str | None:
        """Vault-relative path of a listed name, or None to skip it (hidden, odd, or escaping)."""
        bare = name.rstrip("/")
        if not bare or any(seg.startswith(".") for seg in bare.split("/")):
            return None  # Obsidian hides dot-files and dot-folders; '..' escapes are dropped too
        try:
            return check_relative_path(f"{folder}/{bare}" if folder else bare)
        except VaultPathError:
            self.problems.append(f"{folder or '.'}: skipped an invalid name from the server")
            return None

    async def _visit(self, folder: str, depth: int) -> None:
        try:
            async with self.gate:
                names = await self.list_folder(folder)
        except VaultError as exc:
            self.problems.append(f"{folder}: {exc}")
            return
        # A 404 here means the folder vanished (OLRA only knows folders that hold files).
        await self.take(folder, names or [], depth)

    def result(self) -> Listing:
        if self.problems:
            log.warning("%s: listing is partial (%d problems)", self.describe, len(self.problems))
        # Folders finish in network order; sort so two listings of the same vault compare equal.
        stamps = dict(sorted(self.stamps.items()))
        return Listing(stamps=stamps, partial=bool(self.problems), problems=tuple(sorted(self.problems)))
