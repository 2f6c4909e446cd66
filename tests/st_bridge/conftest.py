"""Fake but real SillyTavern folders for the installer tests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def make_st(
    root: Path,
    *,
    version: str = "1.19.0",
    port: int | None = 8123,
    data_root: str | None = None,
    users: tuple[str, ...] = ("default-user",),
    run: bool = True,
    third_party: bool = True,
) -> Path:
    """A SillyTavern folder as its release archive has it (`run=False`: never started, so no
    config.yaml, only default/config.yaml) with `users` in its data root."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "server.js").write_text("// SillyTavern\n", encoding="utf-8")
    (root / "package.json").write_text(json.dumps({"name": "sillytavern", "version": version}), encoding="utf-8")
    (root / "src").mkdir(exist_ok=True)
    (root / "src" / "command-line.js").write_text("// cli\n", encoding="utf-8")
    (root / "default").mkdir(exist_ok=True)
    (root / "default" / "config.yaml").write_text("dataRoot: ./data\nport: 8000\n", encoding="utf-8")
    ext = root / "public" / "scripts" / "extensions"
    ext.mkdir(parents=True, exist_ok=True)
    if third_party:
        (ext / "third-party").mkdir(exist_ok=True)
    if run:
        lines = []
        if data_root is not None:
            lines.append(f"dataRoot: {data_root}")
        if port is not None:
            lines.append(f"port: {port}")
        (root / "config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        data = Path(data_root) if data_root and os.path.isabs(data_root) else root / (data_root or "data")
        for user in users:
            (data / user / "extensions").mkdir(parents=True, exist_ok=True)
            (data / user / "settings.json").write_text("{}", encoding="utf-8")
        for internal in ("_storage", "_webpack", "_cache", "_uploads"):
            (data / internal).mkdir(parents=True, exist_ok=True)
    return root


def tree(root: Path) -> dict[str, tuple[str, int | None]]:
    """Every path under `root` (links not followed) with its kind and, for files, size."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", None)
            elif p.is_dir():
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", p.stat().st_size)
    return out


@contextlib.contextmanager
def read_only_folder(folder: Path):
    """Make `folder` unwritable for this process: chmod for a normal user; root ignores modes,
    so there the folder is made immutable (chattr +i) or the test is skipped."""
    if os.name != "posix":
        pytest.skip("POSIX permissions")
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if not chattr or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr +i: no way to make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], capture_output=True)


@pytest.fixture
def st_root(tmp_path: Path) -> Path:
    return make_st(tmp_path / "SillyTavern", users=("default-user", "alice"))
