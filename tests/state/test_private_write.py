"""`fileio.write_private_atomic`: the one atomic private write the data folder's small
files share (graph layouts, the Librarian's sessions and gaps)."""

from __future__ import annotations

import os
import stat

import pytest

from dle_desktop.fileio import write_private_atomic


def test_writes_text_and_bytes_private_and_replaces(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o644)
    write_private_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    write_private_atomic(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temp file left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(TypeError):
        write_private_atomic(path, 42)  # not text: the write fails half-way
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
