"""Shared fixtures for the integration and end-to-end tests (vault, engine, server, e2e).

Everything here works with real parts: real files under `tmp_path`, real threads, real loopback
sockets. Helpers are exposed as fixtures so that every test package can use them without
importing this module by name.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(REPO_ROOT))

SAMPLE_VAULT = REPO_ROOT / "resources" / "sample_vault"


def lore_text(
    title: str, keys: tuple[str, ...] | list[str] = (), extra: str = "", body: str = "", tags: str = "[lorebook]"
) -> str:
    """A well-formed lore note: frontmatter with the lorebook tag, keys and `extra` lines, an H1."""
    lines = ["---", f"tags: {tags}"]
    if keys:
        lines.append("keys: [" + ", ".join(f'"{k}"' for k in keys) + "]")
    if extra:
        lines.extend(extra.strip("\n").splitlines())
    lines.append("---")
    lines.append(f"# {title}")
    lines.append(body or f"{title} is a place of note in the test world.")
    return "\n".join(lines) + "\n"


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `{vault-relative path: text or bytes}` under `root`, creating folders."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        target = root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", newline="")
    return root


def generate_vault_files(n: int, prefix: str = "Note") -> dict[str, str]:
    """`n` small, valid lore notes spread over 10 folders, with cross links."""
    files = {}
    for i in range(n):
        title = f"{prefix} {i:05d}"
        body = (
            f"{title} borders [[{prefix} {(i + 1) % n:05d}]]. "
            f"The river trade of district {i % 37} runs through it; lanterns burn all night."
        )
        files[f"Folder {i % 10}/{title}.md"] = lore_text(
            title, (f"key{i}", f"shared{i % 50}"), extra=f"priority: {10 + i % 90}", body=body
        )
    return files


def bump_mtime(path: Path, seconds: float = 10.0) -> None:
    """Move a file's mtime forward so its change stamp differs even on coarse-clock filesystems."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


def wait_until(predicate: Callable[[], object], timeout: float = 5.0, interval: float = 0.02) -> object:
    """Poll `predicate` until it returns something truthy; fail the test after `timeout` seconds.

    Only a bound on waiting for an event: nothing asserts on how long it took."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s: {getattr(predicate, '__doc__', None) or predicate}")
        time.sleep(interval)


@pytest.fixture
def make_vault(tmp_path: Path) -> Callable[..., Path]:
    """`make_vault({relpath: text})` → a vault folder under tmp_path (`name=` for several)."""

    def make(files: dict[str, str | bytes] | None = None, name: str = "vault") -> Path:
        return write_files(tmp_path / name, files or {})

    return make


@pytest.fixture
def make_generated_vault(tmp_path: Path) -> Callable[..., Path]:
    """`make_generated_vault(n)` → a vault folder of `n` generated notes."""

    def make(n: int, name: str = "generated") -> Path:
        return write_files(tmp_path / name, generate_vault_files(n))

    return make


@pytest.fixture
def lore() -> Callable[..., str]:
    """The `lore_text` note builder, as a fixture."""
    return lore_text


@pytest.fixture
def wait_for() -> Callable[..., object]:
    """The `wait_until` poller, as a fixture."""
    return wait_until


@pytest.fixture
def sample_vault() -> Path:
    assert SAMPLE_VAULT.is_dir(), SAMPLE_VAULT
    return SAMPLE_VAULT


@pytest.fixture
def helpers():
    """All the plain helpers above in one namespace: `helpers.lore_text(...)`, `helpers.bump_mtime(p)`…"""
    from types import SimpleNamespace

    return SimpleNamespace(
        lore_text=lore_text,
        write_files=write_files,
        generate_vault_files=generate_vault_files,
        bump_mtime=bump_mtime,
        wait_until=wait_until,
        sample_vault=SAMPLE_VAULT,
        repo_root=REPO_ROOT,
    )
