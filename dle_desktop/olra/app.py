"""The Obsidian Local REST API (OLRA) subset DeepLore Enhanced uses, as a plain ASGI app over
folder vaults (see st-wire-contracts.md §4).

Every request, in this order:
1. `Host` must parse strictly and name this machine's loopback (`127.0.0.1`, `localhost`,
   `localhost.localdomain`, `[::1]`) or the bound address: a page whose DNS name was re-pointed at
   127.0.0.1 (DNS rebinding) gets 403 and never reaches a file, even with the key.
2. CORS as OLRA does it (its `cors()` runs before its auth): every `OPTIONS` is a preflight answered
   204 without a key (`Access-Control-Allow-Origin: *`, the methods, the requested headers echoed,
   Private Network Access when asked), and every other answer carries
   `Access-Control-Allow-Origin: *`.
3. `GET /` and `GET /obsidian-local-rest-api.crt` need no key; everything else needs
   `Authorization: Bearer <key>` exactly (compared in constant time), else OLRA's 401.
4. `/vault/...`: listings, raw reads, whole-file PUTs. Methods DLE never uses answer 405, routes it
   never uses (`/search`, `/active`, `/commands`, `/periodic`, `/open`, ...) 404.

Errors have OLRA's shape: `{"message": ..., "errorCode": status * 100 (or OLRA's own code)}`."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import mimetypes
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from dle_desktop import __version__
from dle_desktop.core.hosts import parse_host
from dle_desktop.olra import vaults as vault_ops
from dle_desktop.olra.paths import PathRefused, parse_vault_path

log = logging.getLogger(__name__)

SERVICE = "Obsidian Local REST API"
#: Host names that always mean this machine (besides the bound address).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "localhost.localdomain", "[::1]"})
MAX_BODY_BYTES = 16 * 1024 * 1024
CERT_ROUTE = "/obsidian-local-rest-api.crt"
CORS_METHODS = b"GET,HEAD,PUT,PATCH,POST,DELETE"
#: How long a PUT waits for the engine to index the note it wrote before answering anyway.
INDEX_WAIT_S = 15.0
AUTH_MESSAGE = (
    "Authorization required. Find your API Key in DLE Desktop: the Obsidian REST emulation's "
    "settings (it stands in for the 'Local REST API' section of Obsidian's settings)."
)
MANIFEST = {
    "id": "dle-desktop-olra",
    "name": "DLE Desktop (Obsidian Local REST API emulation)",
    "version": __version__,
    "description": (
        "DLE Desktop serving its folder vaults with the subset of the Obsidian Local REST API that "
        "DeepLore Enhanced uses; Obsidian is not running."
    ),
    "author": "DLE Desktop",
    "isDesktopOnly": True,
}

_ACAO = (b"access-control-allow-origin", b"*")
_TEXT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "text/yaml",
    ".yml": "text/yaml",
    ".txt": "text/plain",
    ".json": "application/json",
    ".canvas": "application/json",
    ".css": "text/css",
    ".csv": "text/csv",
    ".html": "text/html",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".base": "text/yaml",
}
_ENCODE_URI_SAFE = ";/?:@&=+$-_.!~*'()#"

ServedFn = Callable[[], vault_ops.ServedVaults]
WrittenFn = Callable[[str, set[str]], Awaitable[None]]


def content_type(name: str) -> str:
    """OLRA's Content-Type for a file: text types in UTF-8, markdown as `text/markdown`."""
    dot = name.rfind(".")
    ext = name[dot:].lower() if dot > 0 else ""
    kind = _TEXT_TYPES.get(ext) or mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind in ("application/json", "image/svg+xml"):
        return f"{kind}; charset=utf-8"
    return kind


def content_disposition(name: str) -> str:
    # OLRA: `attachment; filename="${encodeURI(name)}"` with commas encoded; quotes and controls
    # are encoded by encodeURI, so nothing can break out of the header.
    return f'attachment; filename="{quote(name, safe=_ENCODE_URI_SAFE).replace(",", "%2C")}"'


def _headers(scope) -> tuple[dict[bytes, bytes], set[bytes]]:
    out: dict[bytes, bytes] = {}
    repeated: set[bytes] = set()
    for name, value in scope.get("headers", ()):
        if name in out:
            repeated.add(name)
        out[name] = value
    return out, repeated


class OlraApp:
    """`served()` says what is served now (asked per request, so a replaced engine is followed);
    `key()` the API key (read per request: rotation takes effect at once); `hosts` the Host names
    accepted besides the loopback ones; `certificate()` the PEM served at `/obsidian-local-rest-api.crt`
    (None: 404, HTTPS off); `on_written(vault, paths)` re-indexes what a PUT wrote."""

    def __init__(
        self,
        served: ServedFn,
        key: Callable[[], str],
        hosts: frozenset[str] = frozenset(),
        certificate: Callable[[], bytes | None] = lambda: None,
        on_written: WrittenFn | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.served = served
        self.key = key
        self.hosts = LOOPBACK_HOSTS | hosts
        self.certificate = certificate
        self.on_written = on_written
        self.max_body_bytes = max_body_bytes
        #: Counters for the app page and the tests: requests answered, by status class.
        self.stats = {"requests": 0, "reads": 0, "listings": 0, "writes": 0, "refused": 0}

    # -- plumbing ---------------------------------------------------------------------------
    @staticmethod
    async def _send(
        send,
        status: int,
        body: bytes = b"",
        headers: list[tuple[bytes, bytes]] | None = None,
        head: bool = False,
        cors: bool = True,
    ) -> None:
        out = [_ACAO] if cors else []
        out += headers or []
        if status not in (204, 304):
            out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b"" if head or status in (204, 304) else body})

    async def _json(self, send, status: int, payload: dict, headers=None, head: bool = False, cors: bool = True):
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        await self._send(
            send,
            status,
            body,
            [(b"content-type", b"application/json; charset=utf-8"), *(headers or [])],
            head=head,
            cors=cors,
        )

    async def _error(
        self,
        send,
        status: int,
        message: str,
        error_code: int | None = None,
        headers=None,
        head: bool = False,
        cors: bool = True,
    ) -> None:
        self.stats["refused"] += 1
        await self._json(
            send, status, {"message": message, "errorCode": error_code or status * 100}, headers, head=head, cors=cors
        )

    def _host_ok(self, headers: dict[bytes, bytes], repeated: set[bytes]) -> tuple[int, str] | None:
        host = headers.get(b"host")
        if host is None or b"host" in repeated:
            return 400, "exactly one Host header is required"
        try:
            name, _ = parse_host(host.decode("latin-1"))
        except ValueError as exc:
            return 400, f"the Host header is not valid: {exc}"
        if name not in self.hosts:
            return 403, (
                f"Host {name[:100]!r} is not served: connect through 127.0.0.1 or localhost "
                "(a web page reaching this port under another name is refused)"
            )
        return None

    def _authenticated(self, headers: dict[bytes, bytes], repeated: set[bytes]) -> bool:
        given = headers.get(b"authorization")
        if given is None or b"authorization" in repeated:
            return False
        key = self.key()
        return bool(key) and hmac.compare_digest(given, f"Bearer {key}".encode())

    # -- the app ----------------------------------------------------------------------------
    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        self.stats["requests"] += 1
        headers, repeated = _headers(scope)
        method = scope["method"]
        bad_host = self._host_ok(headers, repeated)
        if bad_host is not None:
            return await self._error(send, *bad_host, headers=[(b"connection", b"close")], cors=False)
        if method == "OPTIONS":
            return await self._preflight(send, headers)
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        raw = raw.split(b"?", 1)[0]
        head = method == "HEAD"
        if raw == b"/":
            if method not in ("GET", "HEAD"):
                return await self._not_allowed(send, method, "/", b"GET, HEAD", head)
            return await self._root(send, headers, repeated, head)
        if raw == CERT_ROUTE.encode():
            if method not in ("GET", "HEAD"):
                return await self._not_allowed(send, method, CERT_ROUTE, b"GET, HEAD", head)
            pem = self.certificate()
            if pem is None:
                return await self._error(
                    send, 404, "Not Found: HTTPS is off in DLE Desktop, so there is no certificate", head=head
                )
            return await self._send(
                send,
                200,
                pem,
                [
                    (b"content-type", b"application/x-x509-ca-cert"),
                    (b"content-disposition", b'attachment; filename="obsidian-local-rest-api.crt"'),
                ],
                head,
            )
        if not self._authenticated(headers, repeated):
            return await self._error(
                send, 401, AUTH_MESSAGE, 40101, [(b"www-authenticate", b'Bearer realm="DLE Desktop"')], head=head
            )
        if raw == b"/vault" or raw.startswith(b"/vault/"):
            return await self._vault(scope, receive, send, method, raw[len(b"/vault/") :], headers)
        return await self._error(
            send,
            404,
            "Not Found: DLE Desktop serves only the parts of the Obsidian Local REST API "
            "that DeepLore Enhanced uses (GET /, GET and PUT /vault/...)",
            head=head,
        )

    async def _not_allowed(self, send, method: str, where: str, allow: bytes, head: bool = False) -> None:
        await self._error(
            send,
            405,
            f"Method Not Allowed: DLE Desktop does not support {method} on {where} (DeepLore Enhanced never uses it)",
            headers=[(b"allow", allow)],
            head=head,
        )

    async def _preflight(self, send, headers: dict[bytes, bytes]) -> None:
        out = [(b"access-control-allow-methods", CORS_METHODS)]
        asked = headers.get(b"access-control-request-headers")
        if asked:
            out += [(b"access-control-allow-headers", asked), (b"vary", b"Access-Control-Request-Headers")]
        if headers.get(b"access-control-request-private-network", b"").strip().lower() == b"true":
            out.append((b"access-control-allow-private-network", b"true"))
        if headers.get(b"content-length", b"0").strip() not in (b"", b"0") or b"transfer-encoding" in headers:
            out.append((b"connection", b"close"))  # a preflight's body is never read
        await self._send(send, 204, b"", [*out, (b"content-length", b"0")])

    async def _root(self, send, headers, repeated, head: bool) -> None:
        served = self.served()
        label = served.label
        await self._json(
            send,
            200,
            {
                "status": "OK",
                "service": SERVICE,
                "authenticated": self._authenticated(headers, repeated),
                "versions": {"obsidian": f"none (DLE Desktop {__version__})", "self": __version__},
                "manifest": MANIFEST,
                "name": f"DLE Desktop: {label}",
                "vault": label,
                "dleDesktop": {
                    "version": __version__,
                    "vaults": [v.name for v in served.vaults],
                    "problem": served.problem,
                },
            },
            head=head,
        )

    async def _vault(self, scope, receive, send, method: str, rest: bytes, headers) -> None:
        head = method == "HEAD"
        if method not in ("GET", "HEAD", "PUT"):
            return await self._not_allowed(send, method, "/vault/", b"GET, HEAD, PUT", head)
        try:
            path = parse_vault_path(rest)
        except PathRefused as exc:
            if method == "PUT":
                await _drain(receive, self.max_body_bytes)
            return await self._error(send, exc.status, exc.message, head=head)
        served = self.served()
        if method == "PUT":
            return await self._put(receive, send, served, path, headers)
        try:
            if path.is_dir:
                names = await asyncio.to_thread(vault_ops.list_folder, served, path)
                if names is None:
                    return await self._error(send, 404, "Not Found", head=head)
                self.stats["listings"] += 1
                return await self._json(send, 200, {"files": names}, head=head)
            data = await asyncio.to_thread(vault_ops.find_and_read, served, path)
        except vault_ops.VaultUnavailable as exc:
            return await self._error(send, 503, f"Service Unavailable: {exc}", head=head)
        except PathRefused as exc:
            return await self._error(send, exc.status, exc.message, head=head)
        if data is None:
            return await self._error(send, 404, "Not Found", head=head)
        self.stats["reads"] += 1
        name = path.parts[-1]
        await self._send(
            send,
            200,
            data,
            [
                (b"content-type", content_type(name).encode()),
                (b"content-disposition", content_disposition(name).encode("ascii")),
            ],
            head,
        )

    async def _put(self, receive, send, served, path, headers) -> None:
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return await self._error(
                    send, 400, "Content-Length is not a number", headers=[(b"connection", b"close")]
                )
            if size > self.max_body_bytes:
                return await self._error(
                    send,
                    413,
                    f"Payload Too Large: a note may be at most {self.max_body_bytes // (1024 * 1024)} MiB",
                    headers=[(b"connection", b"close")],
                )
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                log.info("PUT /vault/%s: the client hung up before its body arrived; nothing written", path.rel)
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                return await self._error(
                    send,
                    413,
                    f"Payload Too Large: a note may be at most {self.max_body_bytes // (1024 * 1024)} MiB",
                    headers=[(b"connection", b"close")],
                )
            if not message.get("more_body", False):
                break
        try:
            vault, changed = await asyncio.to_thread(vault_ops.write_file, served, path, bytes(body))
        except vault_ops.VaultUnavailable as exc:
            return await self._error(send, 503, f"Service Unavailable: {exc}")
        except vault_ops.PutRefused as exc:
            return await self._error(send, exc.status, exc.message, exc.error_code)
        self.stats["writes"] += 1
        if self.on_written is not None:
            try:
                await asyncio.wait_for(self.on_written(vault.name, changed), INDEX_WAIT_S)
            except TimeoutError:
                log.warning(
                    "indexing %s took longer than %g s; the file watcher will pick it up", path.rel, INDEX_WAIT_S
                )
            except Exception:
                log.exception("indexing %s after writing it failed", path.rel)
        await self._send(send, 204)


async def _drain(receive, limit: int) -> None:
    """Read and drop a refused PUT's body (up to `limit`), so that the answer is not cut off by a
    client still sending."""
    seen = 0
    while seen <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
