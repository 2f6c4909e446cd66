"""Every way an AI call can fail, as one error type with a `kind`, and the two classifiers that turn
HTTP statuses and transport exceptions into plain-words messages.

Whether a failure trips the AI circuit breaker follows DLE (§4.8): outages and format drift do;
the user's own doing (cancel), slowness, rate limits and account/config problems do not, because
waiting 30 s fixes none of those and the breaker would hide the real message behind "breaker open".
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from typing import Any
from urllib.parse import urlsplit

import httpx

from dle_desktop.errors import DleError
from dle_desktop.logging_setup import scrub

KINDS = frozenset(
    {
        "timeout",
        "cancelled",
        "auth",
        "quota",
        "rate_limit",
        "not_found",
        "model_not_found",
        "overloaded",
        "server",
        "network",
        "bad_response",
        "refused",
        "config",
    }
)
_TRIPS = frozenset({"server", "overloaded", "network", "bad_response"})
#: How our own HTTP server answers when an AI error escapes a route: never 401 (that would read as
#: "DLE refused SillyTavern's key"), 429 and 504 kept because they tell the caller what to do.
_HTTP_STATUS = {"config": 400, "rate_limit": 429, "timeout": 504, "cancelled": 499}

EXCERPT_CHARS = 200
# Provider key shapes, caught even when nobody registered the key with the log scrubber
# (a server echoing a key back in its error text).
_KEY_SHAPES = re.compile(r"\b(?:sk-(?:proj-|ant-(?:api\d\d-)?|or-v1-)?|AIza|gsk_|xai-|fw_)[A-Za-z0-9_\-]{12,}")


class AiError(DleError):
    """A failed AI call. `str(err)` is the user message; `kind` says what went wrong."""

    http_status = 502

    def __init__(self, message: str, kind: str, *, status: int | None = None, provider: str = "") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown AiError kind {kind!r}")
        super().__init__(clean(message))
        self.kind = kind
        self.status = status
        self.provider = provider
        self.http_status = _HTTP_STATUS.get(kind, 502)

    @property
    def trips_breaker(self) -> bool:
        return self.kind in _TRIPS

    def __repr__(self) -> str:
        return f"AiError({str(self)!r}, kind={self.kind!r}, status={self.status!r}, provider={self.provider!r})"


def clean(text: str, limit: int | None = None) -> str:
    """Secrets out, whitespace folded, cut to `limit` characters: the only way server text reaches
    a message."""
    text = _KEY_SHAPES.sub("***", scrub(" ".join(str(text).split())))
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + "…"
    return text


def excerpt(body_text: str) -> str:
    """The most telling part of an error body (its `message`, when it is JSON), scrubbed and short."""
    return clean(_error_message(body_text) or body_text, EXCERPT_CHARS)


def _error_message(body_text: str) -> str:
    try:
        data = json.loads(body_text)
    except (ValueError, TypeError):
        return ""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # Gemini wraps some errors in a one-element list
    if not isinstance(data, dict):
        return ""
    err = data.get("error", data)
    if isinstance(err, str):
        return err  # Ollama, llama.cpp: {"error": "..."}
    if isinstance(err, dict):
        for key in ("message", "msg", "detail"):
            if isinstance(err.get(key), str):
                return err[key]
    for key in ("message", "detail"):
        if isinstance(data.get(key), str):
            return data[key]
    return ""


def _error_type(body_text: str) -> str:
    """The machine-readable error code/type/status of an error body, lower-cased ("" if none)."""
    try:
        data = json.loads(body_text)
    except (ValueError, TypeError):
        return ""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return ""
    return " ".join(str(err.get(k, "")) for k in ("type", "code", "status")).lower()


_MODEL_MISSING = re.compile(
    r"model\b.*\b(not found|does not exist|not exist|unknown|no such|not available|"
    r"is not supported|invalid model)|(unknown|invalid|no such) model|model_not_found|"
    r"try pulling it",
    re.I,
)
_QUOTA = re.compile(
    r"insufficient_quota|quota|credit balance|billing|insufficient (funds|credits?|balance)|"
    r"payment required",
    re.I,
)
# Per-minute limits also say "quota" (Gemini), so a 429 is only "out of credits" when it says so plainly.
_QUOTA_429 = re.compile(r"insufficient_quota|credit|billing_error|insufficient (funds|balance)", re.I)
_OVERLOADED = re.compile(r"overloaded", re.I)


def classify_http(
    status: int, body_text: str, provider: str, model: str, *, url: str = "", label: str = "", key_sent: bool = True
) -> AiError:
    """An AiError for a non-2xx answer. `label` names the server in the message (default: the
    provider); `key_sent` False turns a 401 into "this server wants a key"."""
    who = label or provider
    detail = excerpt(body_text)
    kinds = _error_type(body_text)
    said = f". The server said: {detail}" if detail else ""
    haystack = f"{kinds} {detail}"

    def err(kind: str, message: str) -> AiError:
        return AiError(f"{who}: {message}", kind, status=status, provider=provider)

    if 300 <= status < 400:
        return err(
            "config",
            f"the server redirected the request ({status}) — use the final URL in the connection profile{said}",
        )
    if status in (401, 403) or "authentication_error" in kinds or "permission_error" in kinds:
        if not key_sent:
            return err("auth", f"the server wants an API key ({status}) — set one in the connection profile{said}")
        return err("auth", f"the API key was refused ({status}) — check the key in the connection profile{said}")
    if status == 402 or (status == 400 and _QUOTA.search(haystack)) or (status == 429 and _QUOTA_429.search(haystack)):
        return err("quota", f"out of credits or over quota ({status}) — check the account's plan and billing{said}")
    if status == 429 or "rate_limit" in kinds:
        return err("rate_limit", f"rate limited ({status}): wait a moment before trying again{said}")
    if status == 529 or _OVERLOADED.search(haystack):
        return err("overloaded", f"the service is overloaded ({status}): try again in a little while{said}")
    if (
        status in (404, 400, 422)
        and model
        and (_MODEL_MISSING.search(haystack) or (status == 404 and model.lower() in detail.lower()))
    ):
        return err(
            "model_not_found",
            f"model {clean(model, 80)!r} not found on this server ({status}) — check the model name{said}",
        )
    if status == 404:
        where = f" at {clean(_strip_query(url), 120)}" if url else ""
        return err("not_found", f"nothing found{where} (404) — check the server URL in the connection profile{said}")
    if status == 408:
        return err("timeout", f"the server gave up waiting (408){said}")
    if status >= 500:
        return err("server", f"the server failed ({status}){said}")
    return err("config", f"the server rejected the request ({status}){said}")


def _strip_query(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}{parts.path}"


def _origin(base_url: str) -> str:
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return "the server"
    host = parts.hostname or "the server"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{':' + str(port) if port else ''}"


def _seconds(value: float) -> str:
    return f"{value:g} s" if value < 10 else f"{round(value)} s"


def classify_exception(
    exc: BaseException, provider: str, base_url: str, *, timeout_s: float | None = None, label: str = ""
) -> AiError:
    """An AiError for a transport failure (no HTTP answer, or an answer cut short)."""
    who = label or provider
    origin = _origin(base_url)

    def err(kind: str, message: str) -> AiError:
        return AiError(f"{who}: {message}", kind, provider=provider)

    if isinstance(exc, AiError):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        return err("cancelled", "the request was cancelled")
    if isinstance(exc, httpx.ConnectTimeout):
        # A host that never answers the handshake is unreachable, not a slow model.
        return err(
            "network", f"could not connect to {origin} (no answer to the connection) — check the URL and the network"
        )
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        within = f" within {_seconds(timeout_s)}" if timeout_s else " in time"
        return err("timeout", f"no answer{within} — the model may be busy; raise the timeout for slow local models")
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return err("config", f"the server URL cannot be used ({clean(str(exc), 120)})")
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if _is_tls(exc):
            return err(
                "network",
                f"could not make a secure connection to {origin} — a TLS/certificate problem ({clean(text, 120)})",
            )
        if re.search(
            r"name or service not known|nodename nor servname|getaddrinfo|name resolution|no address", text, re.I
        ):
            return err("network", f"could not find the host of {origin} — check the URL and the internet connection")
        return err("network", f"could not connect to {origin} — is the server running?")
    if isinstance(exc, httpx.RemoteProtocolError):
        return err("network", f"the connection to {origin} closed before the answer was complete")
    if isinstance(exc, (httpx.NetworkError, OSError)):
        return err("network", f"the connection to {origin} failed ({type(exc).__name__})")
    if isinstance(exc, httpx.HTTPError):
        return err("network", f"the request to {origin} failed ({type(exc).__name__}: {clean(str(exc), 120)})")
    return err("bad_response", f"the answer could not be handled ({type(exc).__name__}: {clean(str(exc), 120)})")


def _is_tls(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, ssl.SSLError) or "CERTIFICATE" in str(cur).upper() or "SSL" in str(cur).upper():
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def bad_response(provider: str, label: str, what: str) -> AiError:
    """The answer arrived but is not in the shape this wire format promises."""
    return AiError(
        f"{label or provider}: the answer was not in the expected format ({what})", "bad_response", provider=provider
    )


def refused(provider: str, label: str, why: str) -> AiError:
    return AiError(
        f"{label or provider}: the model refused to answer ({clean(why, 120)})", "refused", provider=provider
    )


def error_in_body(provider: str, label: str, model: str, data: Any, status: int) -> AiError | None:
    """Some servers (OpenRouter, proxies) answer 200 with an error envelope; read it as the HTTP error
    it stands for. None when `data` is not an error envelope."""
    if not isinstance(data, dict) or "error" not in data or data.get("error") in (None, "", {}):
        return None
    err = data["error"]
    code = status if status >= 400 else 502
    if isinstance(err, str) and code == 502 and model and _MODEL_MISSING.search(err):
        code = 404  # Ollama names the missing model in a bare string
    if isinstance(err, dict):
        raw = err.get("code") or err.get("status")
        if isinstance(raw, int) and 300 <= raw <= 599:
            code = raw
        elif isinstance(err.get("type"), str):
            code = _ANTHROPIC_TYPES.get(err["type"], code)
    return classify_http(code, json.dumps(data), provider, model, label=label)


_ANTHROPIC_TYPES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
    "timeout_error": 504,
}


__all__ = [
    "EXCERPT_CHARS",
    "KINDS",
    "AiError",
    "bad_response",
    "classify_exception",
    "classify_http",
    "clean",
    "error_in_body",
    "excerpt",
    "refused",
]
