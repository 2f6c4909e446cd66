"""A running instance (`serve` or the app) follows settings.json as other processes write it
(`dle-desktop st install`, a text editor), so that a newly allowed SillyTavern page works without a
restart.

One stat of the file (inode, size, modification time) tells whether it changed: about once a
second, and at once when the server is about to refuse a request for its Host or Origin (the page
the installer just allowed is usually the very next caller). A changed file is read and judged as
a start would judge it; what it holds is handed to `take`, which applies the allowed hosts and
origins and the writers' switches only (`settings_apply.followed_change`; the bridge panel's
switches are saved into the file and taken this way too). A file that cannot be used keeps the last good
rules: one warning per version of the file, and the file stays where it is (the next start sets
it aside, as it always has).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from dle_desktop.errors import ConfigError
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.state.settings.store import file_signature

log = logging.getLogger(__name__)

#: Seconds between two looks at the file while nothing asks.
FOLLOW_INTERVAL = 1.0

Signature = tuple[int, int, int] | None


class SettingsFileFollower:
    def __init__(self, store: SettingsStore, take: Callable[[Settings], Awaitable[None]]) -> None:
        self.store = store
        self._take = take
        #: The file as last read (or as it was at start, when this instance read it).
        self._seen: Signature = file_signature(store.path)

    def unchanged(self) -> bool:
        """Whether the file is still the one last read (nothing wrote it since)."""
        return file_signature(self.store.path) == self._seen

    async def check(self) -> bool:
        """Look at the file; when it changed, read it and hand it to `take`. True when it was
        handed over (the rules may have changed)."""
        signature = file_signature(self.store.path)
        if signature == self._seen:
            return False
        try:
            on_disk = self.store.read_current()
        except ConfigError as exc:
            if file_signature(self.store.path) == signature:  # not caught mid-write: this version is bad
                self._seen = signature
                log.warning(
                    "settings.json (%s) changed but cannot be used: %s; the server keeps the last good allowed "
                    "hosts and origins until the file is fixed",
                    self.store.path,
                    exc,
                )
            return False
        if file_signature(self.store.path) != signature:  # written again while read: the next look takes it
            return False
        self._seen = signature
        if on_disk is None:  # removed: that says nothing about who may call; the rules stay
            return False
        await self._take(on_disk)
        return True

    async def follow(self, interval: float = FOLLOW_INTERVAL) -> None:
        """Look at the file every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check()
            except Exception:  # the next change is looked at all the same
                log.exception("applying the allowed hosts and origins from settings.json failed")
