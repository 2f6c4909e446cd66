"""Background work gives way to the window's user (`core.user_activity`): it waits while the user
acts, goes on after a quiet moment, and is never held for ever. A clock and a sleep the test
moves by hand: what is checked is the waiting rule, not a machine's speed."""

from __future__ import annotations

import asyncio

from dle_desktop.core.user_activity import UserActivity, no_wait


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def activity(clock: Clock, **kw) -> UserActivity:
    return UserActivity(clock=clock, sleep=clock.sleep, **kw)


def test_with_nobody_acting_background_work_never_waits():
    clock = Clock()
    act = activity(clock)
    assert act.give_way() == 0 and clock.slept == []
    assert no_wait() == 0


def test_work_waits_until_the_user_has_been_still_for_the_quiet_time():
    clock = Clock()
    act = activity(clock, quiet_s=0.5)
    act.user_acted()
    clock.now += 0.2
    waited = act.give_way()
    assert abs(waited - 0.3) < 1e-9, "it sleeps the rest of the quiet time"
    assert clock.now - 100.0 >= 0.5
    assert act.give_way() == 0, "still quiet: the next piece goes on at once"


def test_a_user_who_keeps_acting_holds_the_work_back_at_most_the_longest_wait_then_it_runs_a_while():
    clock = Clock()
    act = activity(clock, quiet_s=0.5, longest_wait_s=2.0, grace_s=0.3)

    def acting_sleep(seconds: float) -> None:  # the user acts again during every sleep
        clock.sleep(seconds)
        act.user_acted()

    act._sleep = acting_sleep
    act.user_acted()
    assert abs(act.give_way() - 2.0) < 1e-9
    act.user_acted()
    assert act.give_way() == 0, "after the longest wait, the work runs its grace time unhindered"
    clock.now += 0.31
    act.user_acted()
    assert act.give_way() > 0, "and gives way again after it"
    assert abs(act.waited_s - 4.0) < 1e-9


def test_the_coroutine_form_waits_on_the_loop_without_blocking_it():
    act = UserActivity(quiet_s=0.05)
    ticks: list[int] = []

    async def other_work() -> None:
        for i in range(3):
            ticks.append(i)
            await asyncio.sleep(0)

    async def scenario() -> float:
        act.user_acted()
        waiting = asyncio.ensure_future(act.give_way_async())
        await other_work()
        assert not waiting.done(), "still giving way while the loop ran other work"
        return await waiting

    waited = asyncio.run(scenario())
    assert waited > 0 and ticks == [0, 1, 2]


def test_a_released_activity_ends_every_wait_at_once():
    """The app stopping: work that was giving way must end, not sleep out the user's moment."""
    import threading

    act = UserActivity(quiet_s=600.0, longest_wait_s=600.0)
    act.user_acted()
    waited: list[float] = []
    waiting = threading.Thread(target=lambda: waited.append(act.give_way()))
    waiting.start()
    act.release()
    waiting.join(30)
    assert not waiting.is_alive() and waited and waited[0] < 600
    assert act.give_way() == 0
