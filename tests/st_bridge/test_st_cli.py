"""`dle-desktop st ...` end to end: real processes, real SillyTavern-shaped folders, real settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dle_desktop.st_bridge.install import CONFIG_FILE, EXTENSION_NAME, bundled_version
from dle_desktop.state.settings import Settings, SettingsStore

from .conftest import make_st, tree

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    out = {k: v for k, v in os.environ.items() if not k.startswith("DLE_")}
    out.update(HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", QT_QPA_PLATFORM="offscreen")
    return out


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "dle-data"


def dle(env, data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data_dir), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def token_of(env, data_dir: Path) -> str:
    r = dle(env, data_dir, "server-token")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def saved_origins(data_dir: Path) -> list[str]:
    return json.loads((data_dir / "settings.json").read_text(encoding="utf-8"))["server_allowed_origins"]


def assert_clean_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for w in words:
        assert w in r.stderr


def test_install_status_find_and_remove(tmp_path: Path, env, data_dir: Path):
    st = make_st(tmp_path / "SillyTavern", port=8123, users=("default-user", "alice"))
    SettingsStore(data_dir / "settings.json").save(
        Settings().replace(server_port=9911, server_allowed_origins=("http://localhost:8123",))
    )

    r = dle(env, data_dir, "st", "install", "--st-dir", str(st))
    assert r.returncode == 0, r.stderr
    target = st / "data" / "default-user" / "extensions" / EXTENSION_NAME
    token = token_of(env, data_dir)
    assert str(target) in r.stdout and bundled_version() in r.stdout
    assert "Reload SillyTavern's page (F5) to load it." in r.stdout
    assert "http://127.0.0.1:8123" in r.stdout  # the origin it added
    assert token not in r.stdout + r.stderr
    config = json.loads((target / CONFIG_FILE).read_text(encoding="utf-8"))
    assert config == {**config, "server_url": "http://127.0.0.1:9911", "token": token}
    assert saved_origins(data_dir) == ["http://localhost:8123", "http://127.0.0.1:8123"]

    # again, for all users, with an address: origins are already there, nothing added twice
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--all-users", "--server-url", "http://127.0.0.1:7777")
    assert r.returncode == 0, r.stderr
    assert "already accepts" in r.stdout and "all users" in r.stdout
    everyone = st / "public" / "scripts" / "extensions" / "third-party" / EXTENSION_NAME
    assert json.loads((everyone / CONFIG_FILE).read_text(encoding="utf-8"))["server_url"] == "http://127.0.0.1:7777"
    assert saved_origins(data_dir) == ["http://localhost:8123", "http://127.0.0.1:8123"]

    r = dle(env, data_dir, "st", "status", "--st-dir", str(st), "--json")
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    assert status["version"] == "1.19.0" and status["port"] == 8123 and status["users"] == ["default-user", "alice"]
    assert status["origins_allowed"] is True and status["bundled_version"] == bundled_version()
    assert [(b["scope"], b["user"], b["up_to_date"], b["has_token"]) for b in status["bridges"]] == [
        ("user", "default-user", True, True),
        ("all-users", None, True, True),
    ]
    assert token not in r.stdout

    r = dle(env, data_dir, "st", "status", "--st-dir", str(st))
    assert r.returncode == 0 and "up to date" in r.stdout and token not in r.stdout

    # find: the usual place under HOME, and an extra folder
    home_st = make_st(Path(env["HOME"]) / "SillyTavern", version="1.12.14", port=8000)
    r = dle(env, data_dir, "st", "find", "--st-dir", str(st), "--json")
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    assert [i["root"] for i in found["installs"]] == [str(st.resolve()), str(home_st.resolve())]
    assert [len(i["bridges"]) for i in found["installs"]] == [2, 0]
    r = dle(env, data_dir, "st", "find")
    assert r.returncode == 0 and "SillyTavern 1.12.14" in r.stdout and "not installed" in r.stdout

    r = dle(env, data_dir, "st", "remove", "--st-dir", str(st))
    assert r.returncode == 0 and "Removed" in r.stdout and not target.exists() and everyone.is_dir()
    r = dle(env, data_dir, "st", "remove", "--st-dir", str(st))
    assert r.returncode == 0 and "nothing to remove" in r.stdout
    r = dle(env, data_dir, "st", "remove", "--st-dir", str(st), "--all-users")
    assert r.returncode == 0 and not everyone.exists()


def test_install_adds_both_origins_to_fresh_settings(tmp_path: Path, env, data_dir: Path):
    st = make_st(tmp_path / "st", port=8124)
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--user", "alice")
    assert r.returncode == 0, r.stderr
    assert "http://127.0.0.1:8124, http://localhost:8124" in r.stdout
    assert saved_origins(data_dir) == [
        *Settings().server_allowed_origins,
        "http://127.0.0.1:8124",
        "http://localhost:8124",
    ]
    config = json.loads((st / "data" / "alice" / "extensions" / EXTENSION_NAME / CONFIG_FILE).read_text())
    assert config["server_url"] == "http://127.0.0.1:8765"  # the default server port


def test_errors_exit_1_with_a_message_and_write_nothing(tmp_path: Path, env, data_dir: Path):
    st = make_st(tmp_path / "st")
    before = tree(tmp_path / "st")

    r = dle(env, data_dir, "st", "install", "--st-dir", str(tmp_path))
    assert_clean_error(r, "is not a SillyTavern folder")
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--user", "../../etc")
    assert_clean_error(r, "not a SillyTavern user name")
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--server-url", "ftp://x")
    assert_clean_error(r, "not a server address")
    r = dle(env, data_dir, "st", "status", "--st-dir", str(tmp_path / "missing"))
    assert_clean_error(r, "is not a SillyTavern folder")
    r = dle(env, data_dir, "st", "find", "--st-dir", str(tmp_path / "missing"))
    assert_clean_error(r, "is not a SillyTavern folder")

    theirs = st / "data" / "default-user" / "extensions" / EXTENSION_NAME
    theirs.mkdir()
    (theirs / "manifest.json").write_text('{"display_name": "Other"}', encoding="utf-8")
    before = tree(tmp_path / "st")
    r = dle(env, data_dir, "st", "remove", "--st-dir", str(st))
    assert_clean_error(r, "not the DLE Desktop bridge")
    assert tree(tmp_path / "st") == before
    assert not (data_dir / "settings.json").exists()  # a failed install adds no origin

    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--user", "x", "--all-users")
    assert r.returncode == 2 and "not allowed with" in r.stderr  # argparse: one or the other


def test_a_zero_server_port_needs_an_address(tmp_path: Path, env, data_dir: Path):
    st = make_st(tmp_path / "st")
    SettingsStore(data_dir / "settings.json").save(Settings().replace(server_port=0))
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st))
    assert_clean_error(r, "--server-url")
    assert not (st / "data" / "default-user" / "extensions" / EXTENSION_NAME).exists()
