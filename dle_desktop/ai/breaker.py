"""Backing off from a failing AI provider (§4.8): a circuit breaker shared by every AI feature,
and a throttle between calls. Both take the clock as a callable so tests can drive time, and
both lock, since several engine tasks may call them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from dle_desktop.errors import DleError

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


class CircuitBreaker:
    """closed → (`threshold` tripping failures in a row) → open for `open_seconds` → half-open,
    where exactly one probe call may go out: its success closes the breaker, its tripping
    failure opens it again. A probe that never reports back is presumed lost after
    `probe_stale_seconds`, and the next caller may take a fresh one."""

    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        threshold: int = 2,
        open_seconds: float = 30,
        probe_stale_seconds: float = 60,
    ):
        self._now = now
        self.threshold = threshold
        self.open_seconds = open_seconds
        self.probe_stale_seconds = probe_stale_seconds
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probe_since: float | None = None

    def _state(self, now: float) -> str:
        if self._opened_at is None:
            return CLOSED
        return OPEN if now - self._opened_at < self.open_seconds else HALF_OPEN

    @property
    def state(self) -> str:
        with self._lock:
            return self._state(self._now())

    @property
    def opened_at(self) -> float | None:
        return self._opened_at

    @property
    def failures(self) -> int:
        return self._failures

    def allow(self) -> bool:
        """May a normal call go out? Only when closed; half-open calls go through a probe."""
        with self._lock:
            return self._state(self._now()) == CLOSED

    def try_acquire_probe(self) -> bool:
        """Take the half-open probe. False when not half-open or the probe is out and fresh."""
        with self._lock:
            now = self._now()
            if self._state(now) != HALF_OPEN:
                return False
            if self._probe_since is not None and now - self._probe_since < self.probe_stale_seconds:
                return False
            self._probe_since = now
            return True

    def release_probe(self) -> None:
        """Give the probe back without a verdict (the call was skipped, aborted or cached)."""
        with self._lock:
            self._probe_since = None

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probe_since = None

    def record_failure(self, trips: bool) -> None:
        """Count a failure that says the provider is broken (5xx, network, format drift); a
        failure that does not (abort, timeout, throttle, rate limit, auth) only frees the probe."""
        with self._lock:
            self._probe_since = None
            if not trips:
                return
            self._failures += 1
            if self._failures >= self.threshold:
                self._opened_at = self._now()

    def reset(self) -> None:
        self.record_success()

    def snapshot(self) -> dict:
        """For the UI: the state, the failure count, and how long until a probe may go out."""
        with self._lock:
            now = self._now()
            state = self._state(now)
            opened_at = self._opened_at
            retry_in = (
                max(0.0, self.open_seconds - (now - opened_at)) if state == OPEN and opened_at is not None else 0.0
            )
            return {
                "state": state,
                "failures": self._failures,
                "opened_at": self._opened_at,
                "retry_in_seconds": round(retry_in, 3),
                "probe_in_flight": self._probe_since is not None,
            }


class Throttled(DleError):
    """An AI call came too soon after the last successful one."""

    http_status = 429

    def __init__(self, retry_after: float):
        super().__init__(f"AI calls are throttled (at most one every 0.5 s); try again in {retry_after:.2f} s")
        self.retry_after = retry_after


class Throttle:
    """At least `min_interval` seconds after the last *successful* call. Only successes are
    stamped (as in DLE): a call that failed does not hold back the attempt after it."""

    def __init__(self, min_interval: float = 0.5, now: Callable[[], float] = time.monotonic):
        self.min_interval = min_interval
        self._now = now
        self._lock = threading.Lock()
        self._last_success: float | None = None

    def remaining(self) -> float:
        """Seconds until the next call may go out; 0 when it may go now."""
        with self._lock:
            if self._last_success is None:
                return 0.0
            return max(0.0, self.min_interval - (self._now() - self._last_success))

    def check(self) -> None:
        """Raise `Throttled` when a call now would come too soon."""
        wait = self.remaining()
        if wait > 0:
            raise Throttled(wait)

    def stamp(self) -> None:
        """Record a successful call."""
        with self._lock:
            self._last_success = self._now()

    def reset(self) -> None:
        """A new chat starts unthrottled."""
        with self._lock:
            self._last_success = None
