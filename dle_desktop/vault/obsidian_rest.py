"""A vault served by the Obsidian "Local REST API" plugin (OLRA), spoken to exactly the way
DeepLore Enhanced does: the same few routes, the same headers, the same host allowlist and the
same per-address circuit breaker (see st-wire-contracts.md §4 and dle-behaviour.md §2.4).

The API key is a bearer secret for the whole vault. It is only ever put in the Authorization
header: never in URLs, describe(), repr(), log lines or exception messages.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

import httpx

from dle_desktop.errors import ConfigError, VaultAuthError, VaultError, VaultPathError, VaultUnreachable
from dle_desktop.vault.sources import MAX_FOLDER_DEPTH, Listing, VaultSource, check_relative_path

log = logging.getLogger(__name__)

DEFAULT_HTTP_PORT = 27123
DEFAULT_HTTPS_PORT = 27124
#: DLE's per-request timeout, and the shorter one its connection test uses.
DEFAULT_TIMEOUT_S = 30.0
CONNECTION_TEST_TIMEOUT_S = 10.0
#: DLE lists this many sub-folders at once (Promise.allSettled batches of 10).
LISTING_CONCURRENCY = 10
#: DLE fetches note bodies 50 at a time.
READ_CONCURRENCY = 50
#: How much of an error body goes into a message (DLE: first 200 chars).
ERROR_BODY_CHARS = 200

# Circuit breaker numbers, straight from DLE.
BREAKER_THRESHOLD = 3
BREAKER_BASE_MS = 2000
BREAKER_MAX_MS = 15000

_REDACTED = "***"
#: What OLRA names itself in `GET /` (`service`); how the connection test knows it is the plugin.
OLRA_SERVICE = "Obsidian Local REST API"
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


# --------------------------------------------------------------------------- host allowlist

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
_V4_ALLOWED = tuple(
    ipaddress.IPv4Network(n)
    for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")
)
_V6_ALLOWED = tuple(ipaddress.IPv6Network(n) for n in ("::1/128", "fd00::/8", "fe80::/10"))
# Cloud metadata services sit inside link-local / ULA space; a Bearer key has no business there.
_METADATA_HOSTS = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
# Strict dotted quad, no leading zeros: "0177.0.0.1" (octal) and "127.1" (shorthand) are refused
# because resolvers disagree on what they mean.
_DOTTED_QUAD = re.compile(r"(?:0|[1-9]\d{0,2})(?:\.(?:0|[1-9]\d{0,2})){3}")
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+))*\.?")


def _refuse_host(host: str, why: str) -> ConfigError:
    return ConfigError(
        f"Obsidian REST host {host!r} is not allowed ({why}). Only loopback, private-LAN "
        "(10/8, 172.16/12, 192.168/16), link-local and ULA addresses or 'localhost' are accepted, "
        "so the vault's API key never leaves the local network."
    )


def _host_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The literal IP `host` spells, None for a name; refuses ambiguous numeric forms."""
    if ":" in host:
        if "%" in host:
            # Browsers (and so DLE) cannot put a zone id in a URL either.
            raise _refuse_host(host, "IPv6 zone ids such as %eth0 are not supported")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise _refuse_host(host, "not a valid IPv6 address") from None
    if _DOTTED_QUAD.fullmatch(host):
        try:
            return ipaddress.IPv4Address(host)
        except ValueError:
            raise _refuse_host(host, "not a valid IPv4 address") from None
    if _NUMERIC_HOST.fullmatch(host):
        raise _refuse_host(host, "numeric, octal or hex shorthand addresses are ambiguous")
    return None


def _ip_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if ip in _METADATA_HOSTS:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return any(ip in net for net in _V4_ALLOWED)
    mapped = ip.ipv4_mapped
    if mapped is not None:
        # DLE only accepts the IPv4-mapped loopback (::ffff:127.*).
        return mapped in _V4_ALLOWED[0]
    return any(ip in net for net in _V6_ALLOWED)


def check_host_allowed(host: str) -> str:
    """Return `host` normalised (lowercase, no brackets) if DLE would talk to it, else ConfigError."""
    if not isinstance(host, str) or not host.strip():
        raise ConfigError("Obsidian REST host is empty")
    h = host.strip().lower()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if h in _LOCAL_NAMES:
        return h
    ip = _host_ip(h)
    if ip is None:
        raise _refuse_host(host, "DNS names other than localhost may resolve to public addresses")
    if not _ip_allowed(ip):
        raise _refuse_host(host, "not a loopback, private or link-local address")
    return h


# --------------------------------------------------------------------------- circuit breaker


def breaker_backoff_ms(failures: int) -> int:
    """How long the circuit stays open after `failures` consecutive failures (>= 3)."""
    return min(BREAKER_BASE_MS * 2 ** min(failures - BREAKER_THRESHOLD, 3), BREAKER_MAX_MS)


class RestHostBreaker:
    """DLE's per-`host:port` breaker: 3 failures open it, then one probe at a time is let through.

    Callers pair `acquire()` with exactly one of `success()`, `failure()` or `release()`.
    Thread-safe, because several event loops (UI, server) may share one address.
    """

    def __init__(self, address: str, clock: Callable[[], float]) -> None:
        self.address = address
        self._clock = clock
        self._lock = threading.Lock()
        self.failures = 0
        self.open_until = 0.0
        self.probing = False

    @property
    def is_open(self) -> bool:
        """True while requests would be refused without being sent."""
        with self._lock:
            return self.failures >= BREAKER_THRESHOLD and (self._clock() < self.open_until or self.probing)

    def acquire(self) -> str | None:
        """None to let one request through, else why it must be refused (circuit open)."""
        with self._lock:
            if self.failures < BREAKER_THRESHOLD:
                return None
            wait = self.open_until - self._clock()
            if wait > 0:
                return f"paused after {self.failures} failed requests in a row; retrying in {wait:.1f} s"
            if self.probing:
                return "paused after repeated failures; a probe request is checking whether the server is back"
            self.probing = True
            return None

    def success(self) -> None:
        with self._lock:
            self.failures = 0
            self.open_until = 0.0
            self.probing = False

    def failure(self) -> None:
        with self._lock:
            self.failures += 1
            self.probing = False
            if self.failures >= BREAKER_THRESHOLD:
                pause_ms = breaker_backoff_ms(self.failures)
                self.open_until = self._clock() + pause_ms / 1000.0
                log.warning("Obsidian REST %s: %d failures in a row, pausing requests for %.1f s",
                            self.address, self.failures, pause_ms / 1000.0)

    def release(self) -> None:
        """The request ended without telling us anything (cancelled): free the probe slot."""
        with self._lock:
            self.probing = False


_breakers: dict[str, RestHostBreaker] = {}
_breakers_lock = threading.Lock()
_clock: Callable[[], float] = time.monotonic


def breaker_for(host: str, port: int) -> RestHostBreaker:
    """The breaker shared by every source pointing at `host:port`."""
    address = f"{host}:{port}"
    with _breakers_lock:
        breaker = _breakers.get(address)
        if breaker is None:
            breaker = _breakers[address] = RestHostBreaker(address, _clock)
        return breaker


def reset_circuit_breakers(clock: Callable[[], float] | None = None) -> None:
    """Forget every breaker; new ones read time from `clock` (seconds, monotonic). For tests."""
    global _clock
    with _breakers_lock:
        _breakers.clear()
        _clock = clock or time.monotonic


# --------------------------------------------------------------------------- specs and paths


def _redact_spec(spec: str) -> str:
    """The spec with any key replaced, fit for an error message."""
    scheme, sep, rest = spec.partition("://")
    if not sep:
        return _REDACTED if "@" in spec else spec
    at = rest.rfind("@")
    return f"{scheme}://{_REDACTED}@{rest[at + 1:]}" if at >= 0 else spec


def _split_host_port(hostport: str, shown: str) -> tuple[str, str | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise ConfigError(f"bad Obsidian REST address {shown!r}: unclosed '[' in IPv6 host")
        host, tail = hostport[1:end], hostport[end + 1 :]
        if tail and not tail.startswith(":"):
            raise ConfigError(f"bad Obsidian REST address {shown!r}: junk after ']'")
        return host, (tail[1:] if tail else None)
    if hostport.count(":") > 1:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: put IPv6 hosts in brackets, e.g. [::1]")
    host, sep, port = hostport.partition(":")
    return host, (port if sep else None)


def _parse_port(text: str | None, default: int, shown: str) -> int:
    if text is None:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: port must be a number from 1 to 65535")
    return int(text)


def parse_vault_spec(spec: str, name: str | None = None) -> ObsidianRestSource:
    """Build a source from `http[s]://[KEY@]HOST[:PORT][/]`. The key may be percent-encoded."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("empty Obsidian REST address")
    raw = spec.strip()
    shown = _redact_spec(raw)
    scheme, sep, rest = raw.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ConfigError(f"bad Obsidian REST address {shown!r}: it must start with http:// or https://")
    if rest.endswith("/"):
        rest = rest[:-1]
    at = rest.rfind("@")
    userinfo, hostport = (rest[:at], rest[at + 1 :]) if at >= 0 else (None, rest)
    if any(c in hostport for c in "/?#"):
        raise ConfigError(f"bad Obsidian REST address {shown!r}: no path, query or fragment is allowed")
    host, port_text = _split_host_port(hostport, shown)
    if not host:
        raise ConfigError(f"bad Obsidian REST address {shown!r}: the host is missing")
    https = scheme == "https"
    port = _parse_port(port_text, DEFAULT_HTTPS_PORT if https else DEFAULT_HTTP_PORT, shown)
    host = check_host_allowed(host)
    api_key = unquote(userinfo) if userinfo else None
    return ObsidianRestSource(name or f"{_url_host(host)}:{port}", host, port, api_key, https=https)


def encode_vault_path(path: str, *, folder: bool = False) -> str:
    """Percent-encode each segment like JS encodeURIComponent; folders get a trailing '/'."""
    if not path:
        return ""
    try:
        encoded = "/".join(quote(seg, safe="!*'()~") for seg in path.split("/"))
    except UnicodeEncodeError as exc:
        raise VaultPathError("vault path is not valid Unicode text") from exc
    return encoded + "/" if folder else encoded


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _is_note(path: str) -> bool:
    return path.lower().endswith(".md")


def _accept_for(path: str) -> str:
    # DLE reads notes as markdown and everything else (the field-definitions YAML) as plain text.
    return "text/markdown" if _is_note(path) else "text/plain"


# --------------------------------------------------------------------------- the source


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
        return f"{'https' if self.https else 'http'}://{_url_host(self.host)}:{self.port}"

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
        return text.replace(key, _REDACTED) if key else text

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
        snippet = self._scrub(resp.content[:ERROR_BODY_CHARS * 4].decode("utf-8", "replace")[:ERROR_BODY_CHARS])
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

    async def list_notes(self) -> Listing:
        root = await self._list_folder("")
        if root is None:  # OLRA answers 404 for an empty vault
            return Listing(stamps={})
        walk = _ListingWalk(self)
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
        status = _olra_status(hello)
        if status is None and hello.status_code in (401, 403):
            # DLE's scanner takes a 401 on `/` for the plugin refusing the key: say that.
            return _test_result(False, False, str(self._status_error(hello, "")), _olra_version(hello))
        if status is None:
            found = self._scrub(describe_answer(hello))
            return _test_result(False, False, f"{self.describe()} answered, but it is not the Obsidian Local REST "
                                f"API ({found}). Check the port: the plugin listens on {DEFAULT_HTTP_PORT} (http) "
                                f"and {DEFAULT_HTTPS_PORT} (https).", None)
        version = _olra_version(hello)
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


def _olra_status(resp: httpx.Response) -> dict | None:
    """OLRA's `GET /` status object (`{"service": "Obsidian Local REST API", "authenticated": ...}`),
    or None when whatever answered is not the plugin."""
    if resp.status_code != 200:
        return None
    try:
        data = json.loads(resp.content)
    except ValueError:
        return None
    service = data.get("service") if isinstance(data, dict) else None
    return data if isinstance(service, str) and OLRA_SERVICE.lower() in service.lower() else None


def describe_answer(resp: httpx.Response) -> str:
    """A few words on what answered instead of OLRA: the status, then a page title, a JSON
    service name or the start of the body, then the Server header."""
    found = [f"HTTP {resp.status_code}"]
    kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    text = resp.content[:8192].decode("utf-8", "replace")
    title = _HTML_TITLE.search(text)
    if kind == "text/html" or title:
        name = " ".join(title.group(1).split())[:ERROR_BODY_CHARS] if title else ""
        found.append(f'an HTML page titled "{name}"' if name else "an HTML page")
    else:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        named = next((data[k] for k in ("service", "name") if isinstance(data, dict) and isinstance(data.get(k), str)),
                     None)
        snippet = " ".join(text.split())[:ERROR_BODY_CHARS]
        if named:
            found.append(f'service "{named[:ERROR_BODY_CHARS]}"')
        elif snippet:
            found.append(f"answer: {snippet}")
        else:
            found.append("an empty answer")
    server = resp.headers.get("server", "").strip()
    if server:
        found.append(f"server: {server[:80]}")
    return ", ".join(found)


def _olra_version(resp: httpx.Response) -> str | None:
    """The plugin version from OLRA's `GET /` status JSON, as DLE's scanner reads it."""
    try:
        versions = json.loads(resp.content).get("versions") or {}
        version = versions.get("self") or versions.get("api")
    except (ValueError, AttributeError):
        return None
    return str(version) if version else None


class _ListingWalk:
    """One recursive listing: collects notes and per-folder problems, 10 folder requests at a time."""

    def __init__(self, source: ObsidianRestSource) -> None:
        self.source = source
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
            elif _is_note(child):
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
                names = await self.source._list_folder(folder)
        except VaultError as exc:
            self.problems.append(f"{folder}: {exc}")
            return
        # A 404 here means the folder vanished (OLRA only knows folders that hold files).
        await self.take(folder, names or [], depth)

    def result(self) -> Listing:
        if self.problems:
            log.warning("%s: listing is partial (%d problems)", self.source.describe(), len(self.problems))
        # Folders finish in network order; sort so two listings of the same vault compare equal.
        stamps = dict(sorted(self.stamps.items()))
        return Listing(stamps=stamps, partial=bool(self.problems), problems=tuple(sorted(self.problems)))
