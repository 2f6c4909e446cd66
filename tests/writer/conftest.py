"""Shared pieces of the writer tests: the frontmatter shapes and the bundled sample vault's notes."""

from __future__ import annotations

from pathlib import Path

SHAPES_DIR = Path(__file__).resolve().parent / "shapes"
SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"


def shape_files() -> list[Path]:
    return sorted(p for p in SHAPES_DIR.glob("*.md"))


def sample_notes() -> list[Path]:
    return sorted(SAMPLE_VAULT.rglob("*.md"))


def read_exact(path: Path) -> str:
    """A file's text with nothing translated (CRLF, BOM and all)."""
    return path.read_bytes().decode("utf-8")
