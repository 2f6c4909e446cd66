"""BridgeMonitor on its own: what a hello and a generation record, the 90 s window, snapshots that
share nothing, and many threads at once."""

from __future__ import annotations

import threading

from dle_desktop.st_bridge.monitor import CONNECTED_WITHIN_S, MAX_TEXT, BridgeMonitor


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def hello(monitor: BridgeMonitor, **changes) -> None:
    fields = dict(
        origin="http://127.0.0.1:8000",
        extension_version="1.0.0",
        st_version="1.13.5",
        chat_id="c1",
        character="Tamsin",
        last_error=None,
    )
    monitor.hello(**{**fields, **changes})


def test_a_new_monitor_has_heard_nothing():
    snap = BridgeMonitor().snapshot()
    assert snap == {
        "connected": False,
        "last_contact": None,
        "last_contact_age_s": None,
        "origin": None,
        "extension_version": None,
        "st_version": None,
        "chat_id": None,
        "character": None,
        "generations": 0,
        "last_injected": [],
        "last_total_tokens": None,
        "last_ms": None,
        "last_error": None,
    }


def test_a_hello_is_a_contact_and_says_who_it_is():
    clock = Clock()
    monitor = BridgeMonitor(clock)
    hello(monitor, last_error="fetch failed")
    clock.now += 5
    snap = monitor.snapshot()
    assert snap["connected"] and snap["last_contact"] == 1_000_000.0 and snap["last_contact_age_s"] == 5.0
    assert (
        snap["origin"],
        snap["extension_version"],
        snap["st_version"],
        snap["chat_id"],
        snap["character"],
        snap["last_error"],
    ) == ("http://127.0.0.1:8000", "1.0.0", "1.13.5", "c1", "Tamsin", "fetch failed")
    hello(monitor, chat_id=None, last_error=None)  # each hello replaces the last one's fields
    snap = monitor.snapshot()
    assert snap["chat_id"] is None and snap["last_error"] is None and snap["generations"] == 0


def test_connected_means_heard_from_within_90_seconds():
    clock = Clock()
    monitor = BridgeMonitor(clock)
    hello(monitor)
    assert monitor.snapshot(now=clock.now + CONNECTED_WITHIN_S)["connected"]
    late = monitor.snapshot(now=clock.now + CONNECTED_WITHIN_S + 0.5)
    assert not late["connected"] and late["last_contact_age_s"] == CONNECTED_WITHIN_S + 0.5
    clock.now += 1000
    monitor.touch()
    assert monitor.snapshot()["connected"] and monitor.snapshot()["origin"] == "http://127.0.0.1:8000"


def test_generations_are_counted_with_the_last_ones_details():
    clock = Clock()
    monitor = BridgeMonitor(clock)
    hello(monitor, last_error="old")
    clock.now += 100
    monitor.generation(
        origin=None, chat_id="c2", character="Reed", injected=["Lantern Quay", "Omen"], total_tokens=120, ms=42.123
    )
    monitor.generation(
        origin="http://localhost:8000", chat_id="c2", character=None, injected=["Omen"], total_tokens=30, ms=7
    )
    snap = monitor.snapshot()
    assert snap["generations"] == 2 and snap["last_injected"] == ["Omen"]
    assert (snap["last_total_tokens"], snap["last_ms"], snap["chat_id"], snap["character"]) == (30, 7.0, "c2", None)
    assert snap["origin"] == "http://localhost:8000" and snap["connected"] and snap["last_contact"] == clock.now
    assert snap["last_error"] == "old" and snap["extension_version"] == "1.0.0"  # only a hello changes these


def test_snapshots_share_nothing_and_long_text_is_cut():
    monitor = BridgeMonitor()
    titles = ["A"]
    monitor.generation(origin=None, chat_id="x" * 5000, character=None, injected=titles, total_tokens=1, ms=1)
    titles.append("B")
    snap = monitor.snapshot()
    snap["last_injected"].append("C")
    assert monitor.snapshot()["last_injected"] == ["A"]
    assert len(monitor.snapshot()["chat_id"]) == MAX_TEXT


def test_writers_and_readers_on_many_threads():
    monitor = BridgeMonitor()
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(300):
                monitor.generation(
                    origin=None, chat_id=f"c{n}", character=None, injected=[f"t{i}"] * 3, total_tokens=i, ms=1.0
                )
                hello(monitor, chat_id=f"c{n}")
        except BaseException as exc:  # noqa: BLE001 - carried to the assert on errors below
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(600):
                snap = monitor.snapshot()
                assert len(set(snap["last_injected"])) <= 1
        except BaseException as exc:  # noqa: BLE001 - carried to the assert on errors below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)] + [
        threading.Thread(target=read) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and monitor.snapshot()["generations"] == 1200
