"""The engine's AI side: one client, one circuit breaker, one throttle, the AI-search cache and
usage counters, and the calls every channel makes through them (dle-behaviour §4.8, §4.9).

Every call goes: channel → connection (profile + key from the keyring) → breaker → throttle →
provider → answer parsed by the caller → success or failure recorded. A failure becomes an
`AiUnavailable`/`AiError` with a message a user understands; nothing here ever shows a key.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dle_desktop.ai.breaker import CircuitBreaker, Throttle, Throttled
from dle_desktop.ai.cache import AiSearchCache
from dle_desktop.ai.channels import LABELS, ResolvedChannel, resolve_channel
from dle_desktop.ai.client import AiClient
from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, ChatResponse, ConnectionProfile
from dle_desktop.errors import DleError
from dle_desktop.fileio import write_private_atomic
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import CHANNELS, ProfileConfig, Settings

log = logging.getLogger(__name__)

T = TypeVar("T")


class AiUnavailable(DleError):
    """No call was made: offline, breaker open, throttled, or the channel is not set up."""

    http_status = 503

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # offline | breaker | throttle | config


@dataclass
class ChannelUsage:
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: AI-search answers replayed from the cache (no call made)
    cache_hits: int = 0
    last_error: str | None = None
    last_latency_ms: int | None = None
    last_call_at: float | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, raw) -> ChannelUsage:
        """Tolerant: a damaged usage file costs the counts, never the start."""
        out = cls()
        if not isinstance(raw, dict):
            return out
        for f in dataclasses.fields(cls):
            value = raw.get(f.name)
            if f.name == "last_error":
                out.last_error = value if isinstance(value, str) else None
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                setattr(out, f.name, float(value) if f.name == "last_call_at" else int(value))
        return out


def connection_profile(config: ProfileConfig, model: str = "") -> ConnectionProfile:
    """The provider layer's profile for a settings profile, with a channel's model override."""
    profile = ConnectionProfile.from_json({**config.to_json(), "secret_id": config.secret_id})
    return dataclasses.replace(profile, model=model) if model and model != profile.model else profile


@dataclass
class AiService:
    settings: Settings
    secrets: SecretStore
    offline: bool = False
    client: AiClient = field(default_factory=AiClient)
    now: Callable[[], float] = time.monotonic
    #: where usage counts survive restarts (None: this session only)
    usage_path: Path | None = None
    #: told the breaker's snapshot whenever a call's result changes its state (for the window)
    on_breaker: Callable[[dict], None] | None = None

    def __post_init__(self) -> None:
        self.breaker = CircuitBreaker(now=self.now)
        self.throttle = Throttle(now=self.now)
        self.cache = AiSearchCache()
        self.usage: dict[str, ChannelUsage] = {c: ChannelUsage() for c in CHANNELS}
        self.usage_since = time.time()
        self._last_chat: str | None = None
        self._load_usage()

    # -- usage counts -----------------------------------------------------------------------
    def _load_usage(self) -> None:
        if self.usage_path is None or not self.usage_path.is_file():
            return
        try:
            raw = json.loads(self.usage_path.read_text(encoding="utf-8"))
            channels = raw.get("channels", {}) if isinstance(raw, dict) else {}
            for name in CHANNELS:
                self.usage[name] = ChannelUsage.from_json(channels.get(name))
            since = raw.get("since")
            if isinstance(since, (int, float)) and not isinstance(since, bool):
                self.usage_since = float(since)
        except (OSError, ValueError) as exc:
            log.warning("AI usage counts could not be read (%s); counting from zero", exc)

    def save_usage(self) -> None:
        """Atomically (a crash mid-write leaves the previous counts)."""
        if self.usage_path is None:
            return
        data = json.dumps({"since": self.usage_since, "channels": {c: u.to_json() for c, u in self.usage.items()}})
        try:
            write_private_atomic(self.usage_path, data)
        except OSError as exc:
            log.warning("AI usage counts could not be saved: %s", exc)

    def reset_usage(self) -> None:
        self.usage = {c: ChannelUsage() for c in CHANNELS}
        self.usage_since = time.time()
        self.save_usage()

    # -- connections ------------------------------------------------------------------------
    def channel(self, channel: str) -> ResolvedChannel:
        return resolve_channel(self.settings, channel)

    def connection(self, channel: str) -> tuple[ResolvedChannel, ConnectionProfile, str | None]:
        resolved = self.channel(channel)
        if resolved.profile is None:
            raise AiUnavailable(f"{resolved.label} is not set up: {resolved.problem}", "config")
        try:
            profile = connection_profile(resolved.profile, resolved.model)
        except DleError as exc:
            raise AiUnavailable(f"{resolved.label}: {exc}", "config") from None
        key = self.secrets.get(profile.secret_id) if profile.secret_id and not profile.id.startswith("proxy:") else None
        return resolved, profile, key

    def chat_changed(self, chat_id: str | None) -> None:
        """DLE resets the throttle when the chat changes."""
        if chat_id is not None and chat_id != self._last_chat:
            self._last_chat = chat_id
            self.throttle.reset()

    # -- calls ------------------------------------------------------------------------------
    async def call(
        self,
        channel: str,
        request: Callable[[ResolvedChannel, ConnectionProfile], ChatRequest],
        parse: Callable[[ChatResponse], T] | Callable[[ChatResponse], Awaitable[T]],
        *,
        skip_throttle: bool = False,
        count_probe: bool = True,
    ) -> T:
        """One call on `channel`: `request` builds the ChatRequest once the connection is known,
        `parse` reads the answer (its DleError counts as a breaker-tripping format failure).
        `count_probe=False` is the pre-filter's rule: it may use the half-open probe but its
        result neither closes nor re-opens the breaker."""
        if self.offline:
            raise AiUnavailable("AI calls are switched off for this run (--ai-offline)", "offline")
        resolved, profile, key = self.connection(channel)
        probe = False
        if not self.breaker.allow():
            if not self.breaker.try_acquire_probe():
                wait = self.breaker.snapshot().get("retry_in_seconds") or 0
                raise AiUnavailable(
                    f"AI calls are paused after repeated failures (circuit breaker open; next try in {wait:.0f} s)",
                    "breaker",
                )
            probe = True
        if not skip_throttle:
            try:
                self.throttle.check()
            except Throttled as exc:
                if probe:
                    self.breaker.release_probe()
                raise AiUnavailable(str(exc), "throttle") from None
        usage = self.usage[channel]
        usage.calls += 1
        usage.last_call_at = time.time()
        started = time.monotonic()
        try:
            response = await self.client.complete(
                profile, key, request(resolved, profile), timeout_s=resolved.timeout_s
            )
            usage.last_latency_ms = int((time.monotonic() - started) * 1000)
            u = response.usage
            usage.input_tokens += u.input_tokens
            usage.output_tokens += u.output_tokens
            usage.cache_read_tokens += u.cache_read_tokens
            usage.cache_write_tokens += u.cache_write_tokens
            result = parse(response)
            if isinstance(result, Awaitable):
                result = await result
        except AiError as exc:
            self._failed(usage, str(exc), exc.trips_breaker, probe, count_probe)
            raise
        except DleError as exc:  # the answer could not be read: format drift trips the breaker
            self._failed(usage, str(exc), True, probe, count_probe)
            raise
        except BaseException:  # cancelled by the user: neither success nor failure
            if probe:
                self.breaker.release_probe()
            raise
        before = self.breaker.state
        if count_probe or not probe:
            self.breaker.record_success()
        else:
            self.breaker.release_probe()
        self._breaker_moved(before)
        self.throttle.stamp()
        usage.last_error = None
        self.save_usage()
        return result

    def _failed(self, usage: ChannelUsage, message: str, trips: bool, probe: bool, count_probe: bool) -> None:
        usage.failures += 1
        usage.last_error = message
        self.save_usage()
        before = self.breaker.state
        if probe and not count_probe:
            self.breaker.release_probe()
        else:
            self.breaker.record_failure(trips)
        self._breaker_moved(before)
        log.info("AI call failed (%s): %s", "trips the breaker" if trips else "breaker unaffected", message)

    async def test_channel(self, channel: str) -> tuple[bool, str, int]:
        """DLE's connection test ("Reply OK." / "ping", 8 tokens) on a channel's connection; it
        bypasses breaker and throttle so the user can check a fix at once."""
        try:
            _resolved, profile, key = self.connection(channel)
        except AiUnavailable as exc:
            return False, str(exc), 0
        ok, message, ms = await self.client.test_connection(profile, key)
        return ok, f"{LABELS[channel]} via {profile.label} ({profile.model or 'server default'}): {message}", ms

    async def test_profile(self, config: ProfileConfig, api_key: str | None = None) -> tuple[bool, str, int]:
        """Test a profile being edited (its key given, or the stored one)."""
        try:
            profile = connection_profile(config)
        except DleError as exc:
            return False, str(exc), 0
        key = api_key if api_key is not None else self.secrets.get(config.secret_id)
        return await self.client.test_connection(profile, key)

    # -- state for the UI and the API -------------------------------------------------------
    def reset_breaker(self) -> None:
        before = self.breaker.state
        self.breaker.reset()
        self._breaker_moved(before)

    def _breaker_moved(self, before: str) -> None:
        if self.on_breaker is not None and self.breaker.state != before:
            try:
                self.on_breaker(self.breaker.snapshot())
            except Exception:
                log.exception("breaker listener failed")

    def clear_cache(self, chat_id: str | None = None) -> None:
        self.cache.clear(chat_id)

    def snapshot(self) -> dict[str, Any]:
        channels = {}
        for name in CHANNELS:
            r = self.channel(name)
            channels[name] = {
                "label": r.label,
                "mode": r.mode,
                "inherited": r.inherited,
                "profile": r.profile.name if r.profile else None,
                "model": r.model,
                "max_tokens": r.max_tokens,
                "timeout_s": r.timeout_s,
                "problem": r.problem,
                "note": r.note,
                "usage": self.usage[name].to_json(),
            }
        return {
            "offline": self.offline,
            "breaker": self.breaker.snapshot(),
            "channels": channels,
            "usage_since": self.usage_since,
        }

    async def aclose(self) -> None:
        self.save_usage()
        await self.client.aclose()
