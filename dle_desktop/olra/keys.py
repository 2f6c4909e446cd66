"""The OLRA emulation's API key: random, created the first time the server starts, kept in the
secret store (the keyring) as `olra-api-key`, never logged. `rotate_olra_key` replaces it in
the store and in every running server that reads it from that store, at once."""

from __future__ import annotations

import secrets as secrets_module

from dle_desktop.logging_setup import register_secret
from dle_desktop.state.secret_holder import SecretHolder, rotate

OLRA_KEY_SECRET = "olra-api-key"


def _new_key() -> str:
    # 64 hex characters, like the key Obsidian's Local REST API plugin makes (a SHA-256 digest).
    return secrets_module.token_hex(32)


def olra_key(secrets) -> str:
    """The API key DLE must be given (its vault's "API Key"), created and stored if there is none."""
    key = secrets.get(OLRA_KEY_SECRET)
    if not key:
        key = _new_key()
        secrets.set(OLRA_KEY_SECRET, key)
    register_secret(key)
    return key


class KeyHolder(SecretHolder):
    """The key as a running server reads it on every request (looked up once, then kept)."""

    def __init__(self, secrets) -> None:
        super().__init__(secrets, OLRA_KEY_SECRET, olra_key)


def rotate_olra_key(secrets) -> str:
    """A new random key, stored in place of the old one and in use at once by every running OLRA
    server of this secret store (the old key gets 401 from the next request on); returns it."""
    return rotate(secrets, OLRA_KEY_SECRET, _new_key())
