"""Background work that gives way to the user.

The window, the engine and the HTTP server share one interpreter lock. While a background thread
runs Python (a reconcile listing 10,000 notes, the health check, the server's imports), every call
Qt makes into Python for the window (each painted cell, each key) first waits for that lock: at
10,000 entries a keystroke in the first seconds after a restart took 100-350 ms, against 10-40 ms
with this module (issue 24). So the window says when the user acts (`user_acted`), and long background
work calls `give_way` between its pieces: while the user acts it sleeps (the lock is free), and it
goes on once the user has been still for `quiet_s`.

It never waits for ever: a piece of work waits at most `longest_wait_s`, and after such a wait it
runs `grace_s` without giving way, so a user who types without pause slows the background work but
never stops it. With no window (the headless server, the CLI) nobody calls `user_acted` and
`give_way` returns at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: What long background work calls between its pieces (`UserActivity.give_way`, or `no_wait`).
GiveWay = Callable[[], float]

QUIET_S = 0.5
LONGEST_WAIT_S = 2.0
GRACE_S = 0.3
SLEEP_STEP_S = 0.1


class UserActivity:
    """When the user last acted in the window, and the waits that follow from it. Thread-safe:
    the GUI thread writes one float, background threads read it."""

    def __init__(
        self,
        quiet_s: float = QUIET_S,
        longest_wait_s: float = LONGEST_WAIT_S,
        grace_s: float = GRACE_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.quiet_s = quiet_s
        self.longest_wait_s = longest_wait_s
        self.grace_s = grace_s
        self._clock = clock
        self._sleep = sleep
        self._acted_at = float("-inf")
        self._unhindered_until = float("-inf")
        self._released = False
        #: seconds background work has spent giving way (shown by the benchmark, kept for tests)
        self.waited_s = 0.0

    def user_acted(self) -> None:
        """The user did something in the window (a key, a click, a scroll, a view opened)."""
        self._acted_at = self._clock()

    def release(self) -> None:
        """Nothing waits from now on (the app is stopping: its work must end, not wait)."""
        self._released = True

    def _next_wait(self, waited: float) -> float:
        """How long to sleep now, 0 when the work may go on."""
        now = self._clock()
        if self._released or now < self._unhindered_until:
            return 0.0
        still_for = now - self._acted_at
        if still_for >= self.quiet_s:
            return 0.0
        if waited >= self.longest_wait_s:
            self._unhindered_until = now + self.grace_s
            return 0.0
        return min(self.quiet_s - still_for, self.longest_wait_s - waited)

    def give_way(self) -> float:
        """For a background thread, between two pieces of its work: sleeps while the user acts.
        Returns the seconds it waited."""
        waited = 0.0
        while (pause := self._next_wait(waited)) > 0:
            self._sleep(min(pause, SLEEP_STEP_S))  # in steps: a release ends the wait soon
            waited += min(pause, SLEEP_STEP_S)
        self.waited_s += waited
        return waited

    async def give_way_async(self) -> float:
        """`give_way` for a coroutine on the engine loop: the loop goes on serving meanwhile."""
        waited = 0.0
        while (pause := self._next_wait(waited)) > 0:
            await asyncio.sleep(min(pause, SLEEP_STEP_S))
            waited += min(pause, SLEEP_STEP_S)
        self.waited_s += waited
        return waited


def no_wait() -> float:
    """`give_way` where nothing is waited for (a caller with no window behind it)."""
    return 0.0
