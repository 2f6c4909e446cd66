"""DeepLore Enhanced's circuit breaker per Obsidian REST `host:port`, shared by every source
pointing at that address."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# Circuit breaker numbers, straight from DLE.
BREAKER_THRESHOLD = 3
BREAKER_BASE_MS = 2000
BREAKER_MAX_MS = 15000


def breaker_backoff_ms(failures: int) -> int:
    """How long the circuit stays open after `failures` consecutive failures (>= 3)."""
    backoff: int = min(
        BREAKER_BASE_MS * 2 ** min(failures - BREAKER_THRESHOLD, 3), BREAKER_MAX_MS
    )  # int ** int is Any to mypy
    return backoff


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
                log.warning(
                    "Obsidian REST %s: %d failures in a row, pausing requests for %.1f s",
                    self.address,
                    self.failures,
                    pause_ms / 1000.0,
                )

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
