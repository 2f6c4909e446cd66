"""The one place AI chat requests go out: picks the wire format for a profile, sends with real
timeouts and real cancellation, and turns every failure into an AiError.

Cancelling the task that awaits `complete` aborts the HTTP exchange at once (the connection is
closed, the server sees it go): nothing keeps running in the background, unlike SillyTavern's
Connection Manager (DLE BUG-249). There are no automatic retries; the breaker and the throttle
above this layer decide what happens next.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import time
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx

from dle_desktop.ai import anthropic, gemini, ollama_native, openai_compat
from dle_desktop.ai.errors import AiError, bad_response, classify_exception, classify_http, clean
from dle_desktop.ai.types import ChatRequest, ChatResponse, ConnectionProfile
from dle_desktop.logging_setup import register_secret

log = logging.getLogger(__name__)

ADAPTERS: dict[str, ModuleType] = {
    "openai": openai_compat,
    "anthropic": anthropic,
    "gemini": gemini,
    "ollama": ollama_native,
}
CONNECT_TIMEOUT_S = 10.0
#: The asyncio backstop fires this long after the request deadline, in case a transport ignores
#: the first cancellation (DLE keeps the same +500 ms race for the same reason).
BACKSTOP_S = 0.5
#: No chat answer we ask for is anywhere near this; a bigger body is a misrouted request.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
PING = ChatRequest(system="Reply OK.", user_parts=("ping",), max_tokens=8)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~0.1 s; every client, for every origin, shares one context.
    return httpx.create_ssl_context()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class AiClient:
    """Async AI chat client. One `httpx.AsyncClient` (with its connection pool) per server origin
    and event loop; use it from one loop at a time."""

    def __init__(
        self, *, transport: httpx.AsyncBaseTransport | None = None, connect_timeout_s: float = CONNECT_TIMEOUT_S
    ) -> None:
        self._transport = transport
        self._connect_timeout_s = connect_timeout_s
        self._clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    async def complete(
        self, profile: ConnectionProfile, api_key: str | None, req: ChatRequest, *, timeout_s: float | None = None
    ) -> ChatResponse:
        """Send one chat request and return the answer. Raises AiError for every failure;
        a cancelled caller gets CancelledError as usual (the request is aborted first)."""
        adapter = ADAPTERS.get(profile.provider)
        if adapter is None:  # pragma: no cover - ConnectionProfile validates the provider
            raise AiError(f"unknown provider {profile.provider!r}", "config", provider=profile.provider)
        key = (api_key or "").strip() or None
        if key:
            register_secret(key)
        timeout = float(timeout_s) if timeout_s else profile.timeout_s
        method, url, headers, body = adapter.build_request(profile, key, req)
        expect_json = adapter.structured_output_mode(profile, req) != "none"
        started = time.monotonic()
        status: int | None = None
        try:
            try:
                async with asyncio.timeout(timeout + BACKSTOP_S):
                    status, raw = await self._exchange(profile, method, url, headers, body, timeout)
            except AiError:
                raise
            except asyncio.CancelledError:
                log.debug(
                    "AI %s/%s model=%s cancelled by the caller after %d ms",
                    profile.provider,
                    profile.flavor,
                    profile.model,
                    _ms(started),
                )
                raise
            except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:  # TimeoutError is an OSError
                raise classify_exception(exc, profile.provider, url, timeout_s=timeout, label=profile.label) from None
            if not 200 <= status < 300:
                raise classify_http(
                    status,
                    raw.decode("utf-8", "replace"),
                    profile.provider,
                    profile.model,
                    url=url,
                    label=profile.label,
                    key_sent=key is not None,
                )
            answer = _parse(adapter, profile, status, raw, expect_json)
        except AiError as err:
            log.info(
                "AI %s/%s model=%s failed after %d ms: kind=%s status=%s: %s",
                profile.provider,
                profile.flavor,
                profile.model,
                _ms(started),
                err.kind,
                err.status or status,
                err,
            )
            raise
        u = answer.usage
        log.debug(
            "AI %s/%s model=%s status=%d %d ms tokens in=%d out=%d cache_read=%d cache_write=%d finish=%s",
            profile.provider,
            profile.flavor,
            answer.model,
            status,
            _ms(started),
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            answer.finish_reason,
        )
        return answer

    async def test_connection(self, profile: ConnectionProfile, api_key: str | None) -> tuple[bool, str, int]:
        """A tiny real request ("Reply OK." / "ping", 8 tokens): (ok, message for the user, latency ms)."""
        started = time.monotonic()
        try:
            answer = await self.complete(profile, api_key, PING)
        except AiError as err:
            return False, str(err), _ms(started)
        ms = _ms(started)
        model = clean(answer.model or profile.model or "the loaded model", 80)
        return True, f"{profile.label}: connected — {model} answered in {ms} ms", ms

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always awaited from a loop
            loop = None
        for owner, client in clients.values():
            if owner is loop:
                await client.aclose()
            # clients of other (closed) loops lost their sockets with their loop

    # -- plumbing ------------------------------------------------------------------------------

    def _client_for(self, url: str) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        for k, (owner, _client) in list(self._clients.items()):
            if owner.is_closed():
                del self._clients[k]
        key = (id(loop), _origin(url))
        entry = self._clients.get(key)
        if entry is not None and entry[0] is loop and not entry[1].is_closed:
            return entry[1]
        client = httpx.AsyncClient(
            transport=self._transport,
            follow_redirects=False,
            verify=_tls_context(),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=4),
        )
        self._clients[key] = (loop, client)
        return client

    async def _exchange(
        self,
        profile: ConnectionProfile,
        method: str,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        timeout: float,
    ) -> tuple[int, bytes]:
        client = self._client_for(url)
        # httpx times each phase (connect, each read) separately; the asyncio deadline bounds the
        # request as a whole, so a server trickling bytes cannot stretch it.
        phases = httpx.Timeout(timeout, connect=min(self._connect_timeout_s, timeout))
        request = client.build_request(
            method, url, headers=headers, timeout=phases, content=json.dumps(body, ensure_ascii=False).encode("utf-8")
        )
        async with asyncio.timeout(timeout):
            response = await client.send(request, stream=True)
            try:
                raw = await _read_capped(response, profile)
            finally:
                await response.aclose()
        return response.status_code, raw


async def _read_capped(response: httpx.Response, profile: ConnectionProfile) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise AiError(
                f"{profile.label}: the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB — "
                f"is the URL right?",
                "bad_response",
                status=response.status_code,
                provider=profile.provider,
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(adapter: ModuleType, profile: ConnectionProfile, status: int, raw: bytes, expect_json: bool) -> ChatResponse:
    if not raw.strip():
        raise bad_response(profile.provider, profile.label, "the answer was empty")
    try:
        data = json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace")
        raise bad_response(profile.provider, profile.label, f"not JSON: {clean(text, 120)}") from None
    try:
        return adapter.parse_response(profile, status, data, expect_json=expect_json)
    except AiError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise bad_response(profile.provider, profile.label, f"{type(exc).__name__} while reading it") from None


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


__all__ = ["ADAPTERS", "BACKSTOP_S", "CONNECT_TIMEOUT_S", "MAX_ANSWER_BYTES", "AiClient"]
