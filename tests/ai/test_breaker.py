"""The AI circuit breaker and throttle (§4.8), driven by a fake clock."""

from __future__ import annotations

import threading

import pytest

from dle_desktop.ai.breaker import CircuitBreaker, Throttle, Throttled
from dle_desktop.errors import DleError


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def breaker(clock) -> CircuitBreaker:
    return CircuitBreaker(now=clock)


def open_it(breaker: CircuitBreaker) -> None:
    breaker.record_failure(True)
    breaker.record_failure(True)


def test_starts_closed(breaker):
    assert breaker.state == "closed" and breaker.allow() and breaker.failures == 0 and breaker.opened_at is None


def test_one_failure_stays_closed_two_open(breaker, clock):
    breaker.record_failure(True)
    assert breaker.state == "closed" and breaker.allow() and breaker.failures == 1
    breaker.record_failure(True)
    assert breaker.state == "open" and not breaker.allow() and breaker.opened_at == clock.t


def test_success_between_failures_resets_the_count(breaker):
    breaker.record_failure(True)
    breaker.record_success()
    breaker.record_failure(True)
    assert breaker.state == "closed" and breaker.failures == 1


def test_failures_that_do_not_trip_leave_the_state_alone(breaker):
    breaker.record_failure(False)
    breaker.record_failure(False)
    assert breaker.state == "closed" and breaker.failures == 0
    breaker.record_failure(True)
    breaker.record_failure(False)
    assert breaker.failures == 1 and breaker.state == "closed"


def test_open_turns_half_open_after_30_seconds(breaker, clock):
    open_it(breaker)
    clock.advance(29.9)
    assert breaker.state == "open" and not breaker.try_acquire_probe()
    clock.advance(0.1)
    assert breaker.state == "half-open" and not breaker.allow()


def test_exactly_one_probe_in_half_open(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    assert breaker.try_acquire_probe()
    assert not breaker.try_acquire_probe()
    assert breaker.snapshot()["probe_in_flight"]


def test_no_probe_when_closed(breaker):
    assert not breaker.try_acquire_probe()


def test_probe_success_closes(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    assert breaker.try_acquire_probe()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow() and breaker.failures == 0 and breaker.opened_at is None


def test_probe_failure_reopens_for_another_30_seconds(breaker, clock):
    open_it(breaker)
    clock.advance(45)
    assert breaker.try_acquire_probe()
    breaker.record_failure(True)
    assert breaker.state == "open" and breaker.opened_at == clock.t
    clock.advance(29)
    assert breaker.state == "open"
    clock.advance(1)
    assert breaker.state == "half-open" and breaker.try_acquire_probe()


def test_probe_failure_that_does_not_trip_frees_the_probe(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    assert breaker.try_acquire_probe()
    breaker.record_failure(False)
    assert breaker.state == "half-open" and breaker.try_acquire_probe()


def test_released_probe_can_be_taken_again(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    assert breaker.try_acquire_probe()
    breaker.release_probe()
    assert breaker.state == "half-open" and breaker.try_acquire_probe()


def test_a_stale_probe_is_taken_over_after_60_seconds(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    assert breaker.try_acquire_probe()
    clock.advance(59.9)
    assert not breaker.try_acquire_probe()
    clock.advance(0.1)
    assert breaker.try_acquire_probe()
    assert not breaker.try_acquire_probe()


def test_reset_closes_from_any_state(breaker, clock):
    open_it(breaker)
    breaker.reset()
    assert breaker.state == "closed" and breaker.failures == 0
    open_it(breaker)
    clock.advance(30)
    breaker.try_acquire_probe()
    breaker.reset()
    assert breaker.state == "closed" and not breaker.snapshot()["probe_in_flight"]


def test_custom_threshold_and_durations(clock):
    b = CircuitBreaker(now=clock, threshold=3, open_seconds=5, probe_stale_seconds=10)
    b.record_failure(True)
    b.record_failure(True)
    assert b.state == "closed"
    b.record_failure(True)
    assert b.state == "open"
    clock.advance(5)
    assert b.try_acquire_probe()
    clock.advance(10)
    assert b.try_acquire_probe()


def test_snapshot(breaker, clock):
    assert breaker.snapshot() == {
        "state": "closed",
        "failures": 0,
        "opened_at": None,
        "retry_in_seconds": 0.0,
        "probe_in_flight": False,
    }
    open_it(breaker)
    clock.advance(10)
    snap = breaker.snapshot()
    assert snap["state"] == "open" and snap["failures"] == 2 and snap["retry_in_seconds"] == 20.0
    clock.advance(20)
    assert breaker.snapshot()["retry_in_seconds"] == 0.0


def test_only_one_thread_gets_the_probe(breaker, clock):
    open_it(breaker)
    clock.advance(30)
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def take():
        barrier.wait()
        results.append(breaker.try_acquire_probe())

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1


# ---------------------------------------------------------------- throttle


def test_throttle_allows_the_first_call(clock):
    throttle = Throttle(now=clock)
    throttle.check()
    assert throttle.remaining() == 0.0


def test_throttle_after_a_success(clock):
    throttle = Throttle(now=clock)
    throttle.stamp()
    clock.advance(0.2)
    with pytest.raises(Throttled) as err:
        throttle.check()
    assert err.value.retry_after == pytest.approx(0.3)
    assert isinstance(err.value, DleError) and err.value.http_status == 429
    clock.advance(0.3)
    throttle.check()


def test_throttle_only_counts_successes(clock):
    throttle = Throttle(now=clock)
    throttle.check()  # a call that then fails: nothing stamped
    clock.advance(0.1)
    throttle.check()


def test_throttle_reset_on_chat_change(clock):
    throttle = Throttle(min_interval=2, now=clock)
    throttle.stamp()
    assert throttle.remaining() == 2
    throttle.reset()
    throttle.check()
