"""What the SillyTavern bridge extension last told us: its hello (versions, chat, its last error)
and its generations (what was injected, how long it took). Written by the server on the engine
thread, read by the window on the GUI thread: every access holds the lock, and a snapshot is a
plain dict that shares nothing with the monitor. Qt-free."""

from __future__ import annotations

import threading
import time

#: A bridge heard from within this many seconds counts as connected.
CONNECTED_WITHIN_S = 90.0
#: Titles kept from the last generation (the window shows a few; the rest are counted).
MAX_TITLES = 200
#: Longest text kept from the extension (versions, chat id, character, error).
MAX_TEXT = 1000


def _text(value: str | None) -> str | None:
    return None if value is None else str(value)[:MAX_TEXT]


class BridgeMonitor:
    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_contact: float | None = None
        self._origin: str | None = None
        self._extension_version: str | None = None
        self._st_version: str | None = None
        self._chat_id: str | None = None
        self._character: str | None = None
        self._last_error: str | None = None
        self._generations = 0
        self._last_injected: list[str] = []
        self._last_total_tokens: int | None = None
        self._last_ms: float | None = None

    def hello(
        self,
        *,
        origin: str | None,
        extension_version: str | None,
        st_version: str | None,
        chat_id: str | None,
        character: str | None,
        last_error: str | None,
    ) -> None:
        """The extension says who it is and where it stands (on load, on a chat change, and as a
        heartbeat). Every field is taken as sent: None clears it (`last_error` None: no error)."""
        with self._lock:
            self._last_contact = self._clock()
            self._origin = _text(origin)
            self._extension_version = _text(extension_version)
            self._st_version = _text(st_version)
            self._chat_id = _text(chat_id)
            self._character = _text(character)
            self._last_error = _text(last_error)

    def generation(
        self,
        *,
        origin: str | None,
        chat_id: str | None,
        character: str | None,
        injected: list[str],
        total_tokens: int,
        ms: float,
    ) -> None:
        """A retrieve for the extension finished: one more generation, and what it injected."""
        with self._lock:
            self._last_contact = self._clock()
            if origin is not None:
                self._origin = _text(origin)
            self._chat_id = _text(chat_id)
            self._character = _text(character)
            self._generations += 1
            self._last_injected = [str(t)[:MAX_TEXT] for t in list(injected)[:MAX_TITLES]]
            self._last_total_tokens = int(total_tokens)
            self._last_ms = round(float(ms), 1)

    def touch(self, *, origin: str | None = None) -> None:
        """Any other call from the extension: it is still there."""
        with self._lock:
            self._last_contact = self._clock()
            if origin is not None:
                self._origin = _text(origin)

    def snapshot(self, now: float | None = None) -> dict:
        now = self._clock() if now is None else now
        with self._lock:
            last = self._last_contact
            age = None if last is None else max(0.0, now - last)
            return {
                "connected": age is not None and age <= CONNECTED_WITHIN_S,
                "last_contact": last,
                "last_contact_age_s": None if age is None else round(age, 3),
                "origin": self._origin,
                "extension_version": self._extension_version,
                "st_version": self._st_version,
                "chat_id": self._chat_id,
                "character": self._character,
                "generations": self._generations,
                "last_injected": list(self._last_injected),
                "last_total_tokens": self._last_total_tokens,
                "last_ms": self._last_ms,
                "last_error": self._last_error,
            }
