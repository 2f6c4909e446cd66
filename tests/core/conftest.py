"""Tests for the pure `dle_desktop.core` package: every note is built inline, nothing is read from disk."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(_ROOT))
