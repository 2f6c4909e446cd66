"""The log file rotates: 1 MB × 5 as configured, checked on the process's real handler, and a
rotation really happens (with a small limit so the test writes kilobytes, not megabytes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import logging, sys
from pathlib import Path
from dle_desktop.logging_setup import LOG_BACKUPS, LOG_MAX_BYTES, PrivateRotatingFileHandler, configure_logging, log_files

logs = Path(sys.argv[1])
configure_logging(logs, to_stderr=False)
handler = next(h for h in logging.getLogger().handlers if isinstance(h, PrivateRotatingFileHandler))
assert (handler.maxBytes, handler.backupCount) == (1_000_000, 5) == (LOG_MAX_BYTES, LOG_BACKUPS), (handler.maxBytes, handler.backupCount)
assert Path(handler.baseFilename) == logs / "dle-desktop.log"
handler.maxBytes = 2_000
for i in range(400):
    # One logger per record: the repeat filter limits records from one place, not rotation.
    logging.getLogger(f"t{i}").info("line %04d %s", i, "x" * 60)
print("\n".join(p.name for p in log_files(logs)))
"""


def test_the_log_rotates_and_keeps_five_old_files(tmp_path):
    logs = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(logs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    assert names == ["dle-desktop.log", *(f"dle-desktop.log.{n}" for n in range(1, 6))]
    assert not (logs / "dle-desktop.log.6").exists()
    for f in logs.iterdir():
        assert f.stat().st_size <= 2_200
        assert f.stat().st_mode & 0o777 == 0o600
    newest, oldest = (logs / "dle-desktop.log").read_text(), (logs / "dle-desktop.log.5").read_text()
    assert "line 0399" in newest and "line 0399" not in oldest
    assert "line 0000" not in "".join(f.read_text() for f in logs.iterdir())  # rotated away
