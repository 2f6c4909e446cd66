"""The installer's reading of a real SillyTavern (the one `scripts/st-e2e` unpacked): it runs here,
where that SillyTavern is installed, rather than in the ordinary suite, which ran before it was."""

from __future__ import annotations

import os

from dle_desktop.st_bridge.install import inspect, installed
from tests.e2e.sillytavern.sillytavern import install_dir, st_version
from tests.st_bridge.conftest import tree


def test_inspect_reads_a_real_sillytavern_without_writing():
    root = install_dir(st_version())
    assert (root / "server.js").is_file(), f"scripts/st-e2e installs SillyTavern into {root}"
    before = tree(root / "public" / "scripts" / "extensions"), sorted(os.listdir(root))
    st = inspect(root)
    assert st.version == st_version()
    assert st.port == 8000
    assert st.data_root == root.resolve() / "data"
    assert installed(st) == [] or all(b.path.is_dir() for b in installed(st))
    assert (tree(root / "public" / "scripts" / "extensions"), sorted(os.listdir(root))) == before
