"""Issue 21.6, in the app: `dle-desktop st install` run in a terminal while the app runs. The app's
server accepts SillyTavern's page at once, and the SillyTavern view lists the new origins, the way
it does when they are added in the view; nothing else of the app's settings changes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.st_bridge.conftest import make_st
from tests.ui.conftest import wait_for

REPO = Path(__file__).resolve().parents[2]
ST_PAGES = ("http://127.0.0.1:8124", "http://localhost:8124")


def st_install(data: Path, st: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLE_")}
    env.update(HOME=str(st.parent / "home"), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data), "st", "install", "--st-dir", str(st), *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def shown_origins(view) -> list[str]:
    panel = view.access_panel
    return [panel.origins.item(i).text() for i in range(panel.origins.count())]


def test_st_install_in_a_terminal_reaches_the_running_app(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    view = desk.window.sillytavern_view
    view.installs_panel.home = tmp_path / "home"
    desk.window.tabs.setCurrentWidget(view)
    qloop.run_until_complete(view.idle())
    runtime = desk.runtime
    assert runtime.server is not None
    before = runtime.ctx.settings
    token = runtime.server_token()
    st = make_st(tmp_path / "SillyTavern", port=8124)

    def ask(origin: str) -> int:
        with httpx.Client(base_url=runtime.server.url, timeout=30) as client:
            return client.get("/api/dle/v1/bridge", headers={"Origin": origin, "X-DLE-Token": token}).status_code

    async def scenario() -> None:
        assert await asyncio.to_thread(ask, ST_PAGES[0]) == 403
        assert not set(ST_PAGES) & set(shown_origins(view))

        done = await asyncio.to_thread(st_install, runtime.ctx.paths.data_dir, st, "--origin", "https://tavern.example")
        assert done.returncode == 0, done.stderr

        assert await asyncio.to_thread(ask, ST_PAGES[0]) == 200
        assert await asyncio.to_thread(ask, "https://tavern.example") == 200
        wanted = (*before.server_allowed_origins, *ST_PAGES, "https://tavern.example")
        await wait_for(lambda: shown_origins(view) == list(wanted), what="the view to list the new origins")
        assert runtime.ctx.settings == before.replace(server_allowed_origins=wanted)
        assert runtime.engine.settings.server_allowed_origins == wanted

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())
