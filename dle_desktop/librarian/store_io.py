"""Atomic JSON files in the private data folder (a crash mid-write leaves the previous file)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from dle_desktop.fileio import make_private_dir, write_private_atomic

log = logging.getLogger(__name__)


def read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        # A damaged file costs its records, never the start of the app.
        log.warning("%s could not be read (%s); starting from empty", path, exc)
        return default


def write_json(path: Path, data: Any) -> None:
    make_private_dir(path.parent)
    write_private_atomic(path, json.dumps(data, ensure_ascii=False, indent=1))
