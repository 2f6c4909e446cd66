"""Issue 21.6: `dle-desktop st install --origin URL` (repeatable) allows the pages of a SillyTavern
that config.yaml cannot tell about (started with --port, behind a launcher or a reverse proxy).
Real processes, real SillyTavern-shaped folders, real settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from dle_desktop.st_bridge.install import EXTENSION_NAME
from dle_desktop.state.settings import Settings

from .conftest import make_st, tree
from .test_st_cli import assert_clean_error, data_dir, dle, env, saved_origins

__all__ = ["data_dir", "env"]  # fixtures, used by name


def test_extra_origins_are_added_canonical_and_once(tmp_path: Path, env, data_dir: Path):
    st = make_st(tmp_path / "st", port=8124)
    r = dle(
        env,
        data_dir,
        "st",
        "install",
        "--st-dir",
        str(st),
        "--origin",
        "HTTPS://Tavern.Example:443",
        "--origin",
        "http://127.0.0.1:9001/",  # as copied from the address bar
        "--origin",
        "http://localhost:8124",  # config.yaml's own: named once
    )
    assert r.returncode == 0, r.stderr
    added = ["http://127.0.0.1:8124", "http://localhost:8124", "https://tavern.example", "http://127.0.0.1:9001"]
    assert saved_origins(data_dir) == [*Settings().server_allowed_origins, *added]
    assert ", ".join(added) in r.stdout
    assert "a running DLE Desktop accepts them at once" in r.stdout
    assert "when it restarts" not in r.stdout

    again = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--origin", "https://tavern.example/")
    assert again.returncode == 0, again.stderr
    assert saved_origins(data_dir) == [*Settings().server_allowed_origins, *added]
    assert "already accepts" in again.stdout


@pytest.mark.parametrize(
    "bad, says",
    [
        ("http://127.0.0.1:8000/sillytavern", "path"),
        ("https://tavern.example/?x=1", "query"),
        ("https://tavern.example#top", "fragment"),
        ("ftp://tavern.example", "http or https"),
        ("127.0.0.1:8000", "http or https"),
        ("http://user@tavern.example", "user name"),
        ("http://tavern.example:99999", "outside 1-65535"),
        ("http://", "host"),
        ("http://bad host", "host"),
    ],
)
def test_a_bad_origin_is_refused_and_nothing_is_written(tmp_path: Path, env, data_dir: Path, bad: str, says: str):
    st = make_st(tmp_path / "st")
    before = tree(st)
    r = dle(env, data_dir, "st", "install", "--st-dir", str(st), "--origin", "http://127.0.0.1:9001", "--origin", bad)
    assert_clean_error(r, "--origin", repr(bad), says)
    assert "http://127.0.0.1:8000" in r.stderr  # what a good one looks like
    assert tree(st) == before
    assert not (st / "data" / "default-user" / "extensions" / EXTENSION_NAME).exists()
    assert not (data_dir / "settings.json").exists()
