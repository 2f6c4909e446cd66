"""`dle-desktop --vault PATH` while the app already runs: the running app asks what to do with the
vault (it used to raise its window and drop the vault without a word), or the second launch says
plainly that nothing was applied. The second launch is a real process talking over the real socket."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtNetwork import QLocalServer

from dle_desktop.state.settings import SettingsStore
from dle_desktop.ui.single_instance import InstanceServer, instance_name
from tests.ui.conftest import wait_for

REPO = Path(__file__).resolve().parents[2]


def launch(data_dir: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO), PYTHONIOENCODING="utf-8")
    env.pop("DLE_DESKTOP_DATA_DIR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data_dir), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def other_vault(tmp_path) -> Path:
    root = tmp_path / "other-vault"
    root.mkdir()
    (root / "Ada.md").write_text("---\ntags: [lorebook]\nkeys: [Ada]\n---\n# Ada\nAn engineer.\n", encoding="utf-8")
    return root


@pytest.fixture
def running(make_desktop, vault_copy, tmp_path):
    """The first instance: the real app on `vault_copy`, listening on its instance socket."""
    desk = make_desktop(vault_copy)
    server = InstanceServer(instance_name(str(desk.runtime.ctx.paths.data_dir)))
    server.messageReceived.connect(desk.on_instance_message)
    yield desk
    server.close()


def test_second_launch_hands_the_vault_over_and_the_running_app_asks(running, other_vault, qloop):
    desk = running
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        proc = launch(desk.runtime.ctx.paths.data_dir, "--vault", str(other_vault))
        await wait_for(lambda: proc.poll() is not None, timeout=60, what="the second launch to exit")
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert "asks in its window" in out and str(other_vault.resolve()) in out
        await wait_for(lambda: desk.vault_question is not None, what="the question in the running app")
        box = desk.vault_question
        assert str(other_vault.resolve()) in box.text()
        labels = [b.text() for b in box.buttons()]
        assert labels == ["Open for this session", "Add to saved vaults", "Ignore"]
        next(b for b in box.buttons() if b.text() == "Open for this session").click()
        await wait_for(lambda: view.model.rowCount() == 1, what="the handed vault opened")
        assert [s.describe() for s in desk.runtime.engine.sources] == [str(other_vault.resolve())]
        assert SettingsStore(desk.runtime.ctx.paths.settings_file).load().vaults == ()  # not saved
        assert desk.vault_question is None

    qloop.run_until_complete(scenario())


def test_a_handed_vault_can_be_saved_or_ignored(running, other_vault, qloop):
    desk = running
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        desk.open_handed_vault(str(other_vault), "ignore")
        assert "Not opened" in desk.window.statusBar().currentMessage()
        desk.open_handed_vault(str(other_vault), "saved")
        await wait_for(lambda: view.model.rowCount() == 1)
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert [v.path for v in saved.vaults] == [str(other_vault.resolve())]

    qloop.run_until_complete(scenario())


def test_second_launch_says_plainly_when_the_running_app_does_not_take_the_vault(tmp_path, other_vault, qloop):
    data = (tmp_path / "data").resolve()
    mute = QLocalServer()  # an instance that accepts and never answers (an older version)
    assert mute.listen(instance_name(str(data)))
    kept = []
    mute.newConnection.connect(lambda: kept.append(mute.nextPendingConnection()))

    async def scenario():
        proc = launch(data, "--vault", str(other_vault))
        await wait_for(lambda: proc.poll() is not None, timeout=60, what="the second launch to exit")
        _out, err = proc.communicate()
        assert proc.returncode == 1
        assert "NOT applied" in err and str(other_vault.resolve()) in err

    qloop.run_until_complete(scenario())
    mute.close()


def test_second_launch_with_a_missing_folder_is_an_error_there(running, tmp_path, qloop):
    desk = running

    async def scenario():
        proc = launch(desk.runtime.ctx.paths.data_dir, "--vault", str(tmp_path / "no-such-folder"))
        await wait_for(lambda: proc.poll() is not None, timeout=60, what="the second launch to exit")
        _out, err = proc.communicate()
        assert proc.returncode == 2 and "vault folder not found" in err
        assert desk.vault_question is None

    qloop.run_until_complete(scenario())
