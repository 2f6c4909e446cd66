"""Argument types shared by the command groups (kept apart from main.py so that a command module
never imports the dispatcher that imports it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dle_desktop.errors import ConfigError


def port_arg(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {port}")
    return port


def embedding_model_arg(value: str) -> str:
    """--embedding-model PATH: an existing file, as an absolute path."""
    model = Path(value).expanduser()
    if not model.is_file():
        raise ConfigError(f"embedding model not found: {value}")
    return str(model.resolve())
