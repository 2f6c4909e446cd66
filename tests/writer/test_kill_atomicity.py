"""Atomicity under a kill: a process rewriting a large note through the writer is SIGKILLed at
random moments, many times. After each kill the note is the whole old text or the whole new
one, never a mix or a cut, and nothing left behind shows up as a note."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dle_desktop.vault.sources import FolderSource
from dle_desktop.vault.write_history import WriteHistory

REPO = Path(__file__).resolve().parents[2]
KILLS = 25

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX only")


def _texts() -> tuple[str, str]:
    # Different lengths and content all through: a torn or mixed file matches neither.
    a = "---\ntags: [lorebook]\nkeys: [Big A]\n---\n# Big A\n" + "".join(f"line {i} of A ü\n" for i in range(200_000))
    b = "---\ntags: [lorebook]\nkeys: [Big B]\n---\n# Big B\n" + "".join(f"B row {i} 東\n" for i in range(260_000))
    return a, b


def test_a_killed_writer_leaves_the_old_or_the_new_note(tmp_path):
    a, b = _texts()
    vault, data = tmp_path / "vault", tmp_path / "data"
    vault.mkdir()
    data.mkdir()
    note = vault / "Big.md"
    note.write_bytes(a.encode())
    (tmp_path / "a.txt").write_bytes(a.encode())
    (tmp_path / "b.txt").write_bytes(b.encode())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(1234)
    seen = {"a": 0, "b": 0}
    for _ in range(KILLS):
        child = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("kill_child.py")),
                str(vault),
                str(data),
                "Big.md",
                str(tmp_path / "a.txt"),
                str(tmp_path / "b.txt"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO,
        )
        try:
            line = child.stdout.readline()
            assert line == b"ready\n", child.stderr.read().decode()
            time.sleep(rng.uniform(0.0, 0.25))  # somewhere inside the next writes
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL
        content = note.read_bytes().decode("utf-8")
        assert content in (a, b), f"torn note: {len(content)} characters"
        seen["a" if content == a else "b"] += 1
        # Leftovers of a write cut short are hidden temporary files: never notes to the index.
        assert set(FolderSource("v", vault).list_sync().stamps) == {"Big.md"}
        assert all(p.name == "Big.md" or p.name.startswith(".Big.md.") for p in vault.iterdir())
    assert sum(seen.values()) == KILLS
    # The history survived the kills too: readable, and each record whole.
    history = WriteHistory(data / "h.sqlite", keep_per_note=2)
    for record in history.for_note("v", "Big.md"):
        assert {record.before_text, record.after_text} <= {a, b}
    history.close()
