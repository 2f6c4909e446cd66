"""Every error the engine raises on purpose lives here, so callers (CLI, HTTP, UI)
can turn them into clear messages in one place."""

from __future__ import annotations


class DleError(Exception):
    """Base of all deliberate errors. `str(err)` is a message fit for a user."""

    #: HTTP status the server answers with when this error escapes a route.
    http_status = 500


class ConfigError(DleError):
    """Bad settings, bad command-line input, or a bad vault specification."""

    http_status = 400


class InputError(DleError):
    """A request body or file that does not have the expected shape."""

    http_status = 400


class VaultError(DleError):
    """A vault source could not be read as a whole (folder missing, server down)."""

    http_status = 502


class VaultAuthError(VaultError):
    """The Obsidian REST server refused our key (401/403)."""


class VaultUnreachable(VaultError):
    """Network error, timeout, or open circuit towards an Obsidian REST server."""


class VaultPathError(VaultError):
    """A vault-relative path that tries to escape the vault (`..`, absolute paths)."""

    http_status = 400


class CacheError(DleError):
    """The on-disk index cache is unreadable; callers fall back to a cold build."""
