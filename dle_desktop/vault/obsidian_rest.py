"""A vault served by the Obsidian "Local REST API" plugin (OLRA), spoken to exactly the way
DeepLore Enhanced does: the same few routes, the same headers, the same host allowlist and the
same per-address circuit breaker (see st-wire-contracts.md §4 and dle-behaviour.md §2.4).

The API key is a bearer secret for the whole vault. It is only ever put in the Authorization
header: never in URLs, describe(), repr(), log lines or exception messages.

The allowlist is `host_allowlist`, the breaker `rest_breaker`, the address format and path
encoding `rest_address`, the recursive listing `rest_listing`, and what the connection test
reads from `GET /` `olra_status`; this module is the source and its HTTP calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

import httpx

from dle_desktop.core.user_activity import GiveWay, no_wait
from dle_desktop.errors import ConfigError, VaultAuthError, VaultError, VaultUnreachable
from dle_desktop.vault.host_allowlist import check_host_allowed
from dle_desktop.vault.olra_status import ERROR_BODY_CHARS, describe_answer, olra_status, olra_version
from dle_desktop.vault.rest_address import (
    DEFAULT_HTTP_PORT,
    DEFAULT_HTTPS_PORT,
    REDACTED,
    encode_vault_path,
    parse_rest_address,
    url_host,
)
from dle_desktop.vault.rest_breaker import RestHostBreaker, breaker_backoff_ms, breaker_for, reset_circuit_breakers
from dle_desktop.vault.rest_listing import ListingWalk, is_note
from dle_desktop.vault.sources import Listing, VaultSource, check_relative_path

log = logging.getLogger(__name__)

#: DLE's per-request timeout, and the shorter one its connection test uses.
DEFAULT_TIMEOUT_S = 30.0
CONNECTION_TEST_TIMEOUT_S = 10.0
#: DLE fetches note bodies 50 at a time.
READ_CONCURRENCY = 50


def parse_vault_spec(spec: str, name: str | None = None) -> ObsidianRestSource:
    """Build a source from `http[s]://[KEY@]HOST[:PORT][/]`. The key may be percent-encoded."""
    address = parse_rest_address(spec)
    return ObsidianRestSource(
        name or f"{url_host(address.host)}:{address.port}",
        address.host,
        address.port,
        address.api_key,
        https=address.https,
    )


def _accept_for(path: str) -> str:
    # DLE reads notes as markdown and everything else (the field-definitions YAML) as plain text.
    return "text/markdown" if is_note(path) else "text/plain"


class _Secret:
    """Holds the API key so that no repr, vars() dump or traceback local shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def reveal(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<none>"

    __str__ = __repr__


@dataclass(frozen=True)
class _ClientState:
    client: httpx.AsyncClient
    gate: asyncio.Semaphore
    loop: asyncio.AbstractEventLoop


class ObsidianRestSource(VaultSource):
    """A vault reached through the Obsidian Local REST API plugin."""

    kind = "obsidian-rest"
    max_concurrency = READ_CONCURRENCY

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        api_key: str | None,
        https: bool = False,
        enabled: bool = True,
        timeout: float = DEFAULT_TIMEOUT_S,
        verify_tls: bool = True,
    ) -> None:
        super().__init__(name, enabled)
        self.host = check_host_allowed(host)
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError(f"Obsidian REST port must be a number from 1 to 65535, not {port!r}")
        self.port = port
        self.https = bool(https)
        self.timeout = float(timeout)
        self.verify_tls = bool(verify_tls)
        self._key = _Secret(api_key)
        self._state: _ClientState | None = None

    # ---- identity (never the key)

    @property
    def url(self) -> str:
        """Base URL, without the key."""
        return f"{'https' if self.https else 'http'}://{url_host(self.host)}:{self.port}"

    @property
    def has_api_key(self) -> bool:
        return self._key.reveal() is not None

    def reveal_api_key(self) -> str | None:
        """The key itself, for code that must store it (keyring). Do not log the result."""
        return self._key.reveal()

    @property
    def breaker(self) -> RestHostBreaker:
        return breaker_for(self.host, self.port)

    def describe(self) -> str:
        return f"{self.url} (Obsidian REST)"

    def __repr__(self) -> str:
        return f"ObsidianRestSource(name={self.name!r}, url={self.url!r}, enabled={self.enabled!r})"

    # ---- HTTP plumbing

    def _client_state(self) -> _ClientState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop or self._state.client.is_closed:
            # An AsyncClient cannot outlive its event loop; a new loop (tests, a restarted UI) gets a
            # new client. The old one's sockets died with its loop.
            client = httpx.AsyncClient(
                verify=self.verify_tls,
                timeout=httpx.Timeout(self.timeout),
                # Keep every connection of a 50-read batch alive for the next batch.
                limits=httpx.Limits(
                    max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
                ),
                follow_redirects=False,
            )
            self._state = _ClientState(client, asyncio.Semaphore(self.max_concurrency), loop)
        return self._state

    def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept}
        key = self._key.reveal()
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    def _scrub(self, text: str) -> str:
        """Belt and braces: a server could echo the key back in an error body."""
        key = self._key.reveal()
        return text.replace(key, REDACTED) if key else text

    async def _request(
        self,
        method: str,
        route: str,
        *,
        accept: str = "application/json",
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """Send one request through the breaker. Raises VaultUnreachable for transport trouble."""
        state = self._client_state()
        async with state.gate:
            breaker = self.breaker
            refusal = breaker.acquire()
            if refusal is not None:
                raise VaultUnreachable(f"{self.describe()}: {refusal}")
            try:
                resp = await state.client.request(
                    method,
                    f"{self.url}{route}",
                    headers=self._headers(accept, content_type),
                    content=body,
                    timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout,
                )
            except httpx.TimeoutException as exc:
                breaker.failure()
                limit = self.timeout if timeout is None else timeout
                raise VaultUnreachable(f"{self.describe()}: no answer within {limit:g} s") from exc
            except httpx.TransportError as exc:
                breaker.failure()
                detail = self._scrub(str(exc)) or type(exc).__name__
                if self.https and "CERTIFICATE" in detail.upper():
                    # OLRA's HTTPS port uses a self-signed certificate; DLE users hit this constantly.
                    detail += "; Obsidian's self-signed certificate is not trusted: use http:// on port 27123"
                raise VaultUnreachable(f"{self.describe()}: cannot reach the server ({detail})") from exc
            except BaseException:
                # Cancellation (or a bug) says nothing about the server's health.
                breaker.release()
                raise
            if resp.status_code >= 500 or resp.status_code == 429:
                breaker.failure()
            else:
                breaker.success()
            return resp

    def _status_error(self, resp: httpx.Response, what: str, *, refused: bool = False) -> VaultError:
        """The error for a non-success answer: auth trouble gets its own type and advice.
        `refused`: the server said so in a successful answer (OLRA's `"authenticated": false`)."""
        if refused or resp.status_code in (401, 403):
            said = "" if refused else f" (HTTP {resp.status_code})"
            if not self.has_api_key:
                return VaultAuthError(
                    f"{self.describe()}: the server wants an API key and none is set{said}. "
                    "Copy it from Obsidian → Settings → Local REST API."
                )
            return VaultAuthError(
                f"{self.describe()}: the API key was refused{said}. "
                "Copy the current key from Obsidian → Settings → Local REST API."
            )
        snippet = self._scrub(resp.content[: ERROR_BODY_CHARS * 4].decode("utf-8", "replace")[:ERROR_BODY_CHARS])
        return VaultError(f"{self.describe()}: {what}: HTTP {resp.status_code}: {snippet}")

    # ---- listing

    async def _list_folder(self, folder: str) -> list[str] | None:
        """Names directly in `folder` ('' = root); None when the server says 404."""
        route = f"/vault/{encode_vault_path(folder, folder=True)}"
        resp = await self._request("GET", route)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise self._status_error(resp, f"listing {folder or 'the vault'} failed")
        try:
            files = json.loads(resp.content)["files"]
        except (ValueError, KeyError, TypeError):
            files = None
        if not isinstance(files, list):
            where = folder or "the vault"
            raise VaultError(f'{self.describe()}: listing {where} did not answer {{"files": [...]}}')
        return [f for f in files if isinstance(f, str)]

    async def list_notes(self, give_way: GiveWay = no_wait) -> Listing:
        # Its folders are asked for over HTTP: the lock is free meanwhile, nothing to give way to.
        root = await self._list_folder("")
        if root is None:  # OLRA answers 404 for an empty vault
            return Listing(stamps={})
        walk = ListingWalk(self._list_folder, self.describe())
        await walk.take("", root, 0)
        return walk.result()

    # ---- reading and writing

    async def read_text(self, path: str) -> str:
        rel = check_relative_path(path)
        resp = await self._request("GET", f"/vault/{encode_vault_path(rel)}", accept=_accept_for(rel))
        if resp.status_code == 404:
            raise FileNotFoundError(f"{rel}: not in the vault at {self.describe()}")
        if resp.status_code != 200:
            raise self._status_error(resp, f"reading {rel} failed")
        # Notes are UTF-8; a stray bad byte must not lose the whole note.
        return resp.content.decode("utf-8", errors="replace")

    async def write_text(self, path: str, text: str) -> None:
        rel = check_relative_path(path)
        kind = _accept_for(rel)
        resp = await self._request(
            "PUT", f"/vault/{encode_vault_path(rel)}", accept=kind, body=text.encode("utf-8"), content_type=kind
        )
        if resp.status_code not in (200, 204):
            snippet = self._scrub(resp.content.decode("utf-8", "replace")[:ERROR_BODY_CHARS])
            error_type = VaultAuthError if resp.status_code in (401, 403) else VaultError
            raise error_type(f"HTTP {resp.status_code}: {snippet}")

    # ---- connection test

    async def test_connection(self) -> dict[str, object]:
        """Ask `GET /` (no auth needed) whether this is OLRA and whether it accepts the key, then
        list the vault root the way a sync does. Anything else on that port is named, not trusted:
        a 404 from another server looks just like OLRA's empty vault."""
        timeout = min(self.timeout, CONNECTION_TEST_TIMEOUT_S)
        try:
            hello = await self._request("GET", "/", timeout=timeout)
        except VaultError as exc:
            return _test_result(False, False, str(exc), None)
        status = olra_status(hello)
        if status is None and hello.status_code in (401, 403):
            # DLE's scanner takes a 401 on `/` for the plugin refusing the key: say that.
            return _test_result(False, False, str(self._status_error(hello, "")), olra_version(hello))
        if status is None:
            found = self._scrub(describe_answer(hello))
            return _test_result(
                False,
                False,
                f"{self.describe()} answered, but it is not the Obsidian Local REST "
                f"API ({found}). Check the port: the plugin listens on {DEFAULT_HTTP_PORT} (http) "
                f"and {DEFAULT_HTTPS_PORT} (https).",
                None,
            )
        version = olra_version(hello)
        if status.get("authenticated") is False:
            return _test_result(False, False, str(self._status_error(hello, "", refused=True)), version)
        try:
            resp = await self._request("GET", "/vault/", timeout=timeout)
        except VaultError as exc:
            return _test_result(False, False, str(exc), version)
        if resp.status_code == 200:
            return _test_result(True, True, f"connected to {self.describe()}", version)
        if resp.status_code == 404:
            return _test_result(True, True, f"connected to {self.describe()}; the vault is empty", version)
        refused = resp.status_code in (401, 403)
        return _test_result(False, not refused, str(self._status_error(resp, "listing failed")), version)

    async def close(self) -> None:
        state, self._state = self._state, None
        if state is not None and not state.client.is_closed:
            await state.client.aclose()


def _test_result(ok: bool, authenticated: bool, message: str, version: str | None) -> dict[str, object]:
    return {"ok": ok, "authenticated": authenticated, "message": message, "version": version}


__all__ = [
    "CONNECTION_TEST_TIMEOUT_S",
    "DEFAULT_HTTPS_PORT",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_TIMEOUT_S",
    "READ_CONCURRENCY",
    "ObsidianRestSource",
    "RestHostBreaker",
    "breaker_backoff_ms",
    "breaker_for",
    "check_host_allowed",
    "encode_vault_path",
    "parse_vault_spec",
    "reset_circuit_breakers",
]
