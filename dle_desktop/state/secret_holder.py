"""A secret as a running server reads it on every request (the lore server's token, the Obsidian
REST emulation's API key): looked up in the secret store the first time a request needs it, then
kept in memory; `rotate` stores a new value and hands it to every holder of that store and name at
once, so the old one is refused from the next request on without a restart."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from dle_desktop.logging_setup import register_secret

_holders: weakref.WeakSet[SecretHolder] = weakref.WeakSet()
_holders_lock = threading.Lock()


class SecretHolder:
    def __init__(self, secrets, name: str, fetch: Callable[[object], str]) -> None:
        """`fetch(secrets)` returns the stored value, creating it when there is none."""
        self.secrets = secrets
        self.name = name
        self._fetch = fetch
        self._value: str | None = None
        self._lock = threading.Lock()
        with _holders_lock:
            _holders.add(self)

    def __call__(self) -> str:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._fetch(self.secrets)
                value = self._value
        return value

    def set(self, value: str) -> None:
        with self._lock:
            self._value = value


def rotate(secrets, name: str, value: str) -> str:
    """Store `value` as secret `name` and put it into every running holder of it; returns it."""
    register_secret(value)
    secrets.set(name, value)
    with _holders_lock:
        holders = [h for h in _holders if h.secrets is secrets and h.name == name]
    for holder in holders:
        holder.set(value)
    return value
