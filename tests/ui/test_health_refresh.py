"""Health checks asked for while one runs (syncs in a row) run once more after it, not side by
side: at 10,000 entries each is a quarter of a second of Python taken from the window."""

from __future__ import annotations

import asyncio

from tests.ui.conftest import wait_for


def test_checks_asked_during_a_check_run_once_after_it(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    win = desk.window
    real = win.bridge.health
    calls: list[int] = []
    release = asyncio.Event()

    async def held_health():
        calls.append(1)
        if len(calls) == 1:
            await release.wait()  # the first check is still running when the next syncs ask
        return await real()

    shown: list[object] = []
    set_health = win.vault_view.set_health
    win.vault_view.set_health = lambda report: (shown.append(report), set_health(report))

    async def scenario() -> None:
        await wait_for(lambda: win.vault_view.model.rowCount() == 61, what="61 entries")
        await wait_for(lambda: bool(shown) and not win._health_running, what="the start's own check")
        win.bridge.health = held_health
        first = asyncio.ensure_future(win.refresh_health())
        await wait_for(lambda: len(calls) == 1, what="the first check")
        for _ in range(3):
            await win.refresh_health()  # returns at once: noted for after the running one
        assert len(calls) == 1
        release.set()
        await asyncio.wait_for(first, 30)
        assert len(calls) == 2  # the three asks made one more check, after the first
        assert len(shown) == 2  # and only its report was shown
        assert not win._health_running
        await win.refresh_health()
        assert len(calls) == 3

    qloop.run_until_complete(scenario())
