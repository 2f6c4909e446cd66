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


class NotFound(DleError):
    """Something a request names that is not (or no longer) kept."""

    http_status = 404


class NotAvailableHere(DleError):
    """A request this process cannot serve as it runs (e.g. a window asked of `serve`)."""

    http_status = 409


class VaultError(DleError):
    """A vault source could not be read as a whole (folder missing, server down)."""

    http_status = 502


class VaultAuthError(VaultError):
    """The Obsidian REST server refused our key (401/403)."""


class VaultUnreachable(VaultError):
    """Network error, timeout, or open circuit towards an Obsidian REST server."""


class NoteOutsideVault(VaultError):
    """A note whose real path leaves its vault folder (a symbolic link to a file, or through a
    folder, elsewhere): never read, so never indexed or served."""

    http_status = 403


class VaultPathError(VaultError):
    """A vault-relative path that tries to escape the vault (`..`, absolute paths)."""

    http_status = 400


class CacheError(DleError):
    """The on-disk index cache is unreadable; callers fall back to a cold build."""


class WriteError(DleError):
    """A note could not be written; nothing was changed."""

    http_status = 409


class WriteRefused(WriteError):
    """The app will not make this write (a read-only vault, a file that is not UTF-8 text, an
    operation the vault's kind cannot do)."""

    http_status = 403


class NoteExists(WriteError):
    """Creating a note where a file already is: the caller must edit that note instead."""

    def __init__(self, message: str, vault: str, path: str, current_text: str | None = None) -> None:
        super().__init__(message)
        self.vault = vault
        self.path = path
        self.current_text = current_text


class WriteConflict(WriteError):
    """The note on disk is not the version the write was based on, so nothing was written.

    Carries every version a person needs to choose: `expected_text` (the version the write was
    based on, None when the caller only named its hash), `current_text` (on disk now; None when
    the note is gone), `proposed_text` (what would have been written; None for a delete)."""

    def __init__(
        self,
        message: str,
        *,
        vault: str,
        path: str,
        expected_hash: str | None,
        expected_text: str | None,
        current_text: str | None,
        proposed_text: str | None,
    ) -> None:
        super().__init__(message)
        self.vault = vault
        self.path = path
        self.expected_hash = expected_hash
        self.expected_text = expected_text
        self.current_text = current_text
        self.proposed_text = proposed_text


class FrontmatterEditError(InputError):
    """A frontmatter change that cannot be made safely (the YAML is malformed, the field is
    written twice, the change would alter other fields); the message says where and why."""

    http_status = 422
