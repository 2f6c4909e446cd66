"""The installer stays at the level of state/: no Qt, no server, no UI, no engine (the settings
page and the command line both build on it). It writes its config through fileio, the leaf every
file write goes through."""

from __future__ import annotations

import ast
from pathlib import Path

import dle_desktop.st_bridge.install as install_module

ALLOWED_OURS = {"dle_desktop", "dle_desktop.errors", "dle_desktop.fileio", "dle_desktop.state.paths"}


def test_install_imports_only_errors_fileio_paths_and_the_version():
    tree = ast.parse(Path(install_module.__file__).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, "no relative imports"
            names.add(node.module)
    ours = {n for n in names if n.split(".")[0] == "dle_desktop"}
    assert ours <= ALLOWED_OURS, ours - ALLOWED_OURS
    assert not {n for n in names if n.split(".")[0] in ("PySide6", "qasync", "shiboken6", "starlette", "uvicorn")}
