"""API keys live in the OS keyring, never in settings files or logs.

When no keyring backend exists (a headless Linux box without a Secret Service), keys are held
in memory for this session only, and `persistent` says so, so the UI can tell the user plainly
instead of silently writing keys in clear text."""

from __future__ import annotations

import logging

import keyring
import keyring.errors

from dle_desktop.logging_setup import register_secret

log = logging.getLogger(__name__)

SERVICE = "dle-desktop"


def _backend_usable() -> bool:
    backend = keyring.get_keyring()
    name = type(backend).__module__ + "." + type(backend).__name__
    if "fail" in name or "null" in name.lower():
        return False
    try:
        return getattr(backend, "priority", 1) > 0
    except Exception:  # noqa: BLE001 - some backends raise from priority when unusable
        return False


class SecretStore:
    def __init__(self, use_keyring: bool | None = None) -> None:
        self.persistent = _backend_usable() if use_keyring is None else use_keyring
        self._memory: dict[str, str] = {}
        self.problem: str | None = None if self.persistent else (
            "No system keyring is available: API keys are kept in memory for this session only "
            "and must be entered again after a restart.")

    def get(self, name: str) -> str | None:
        if name in self._memory:
            return self._memory[name]
        if not self.persistent:
            return None
        try:
            value = keyring.get_password(SERVICE, name)
        except keyring.errors.KeyringError as exc:
            log.warning("keyring read failed for %s: %s", name, type(exc).__name__)
            return None
        if value:
            register_secret(value)
        return value

    def set(self, name: str, value: str) -> None:
        register_secret(value)
        if self.persistent:
            try:
                keyring.set_password(SERVICE, name, value)
                self._memory.pop(name, None)
                return
            except keyring.errors.KeyringError as exc:
                log.warning("keyring write failed for %s (%s); keeping the key in memory", name, type(exc).__name__)
        self._memory[name] = value

    def delete(self, name: str) -> None:
        self._memory.pop(name, None)
        if self.persistent:
            try:
                keyring.delete_password(SERVICE, name)
            except keyring.errors.KeyringError:
                pass
