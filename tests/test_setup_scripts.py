"""The set-up a newcomer meets: the README's two commands, and the first install saying what it
needs before it fails half-way."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "scripts" / "check-build-tools.sh"
BASH = shutil.which("bash") or "/bin/bash"


def _check(path_dirs: list[Path]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": ":".join(str(p) for p in path_dirs)}
    return subprocess.run([BASH, str(CHECK)], env=env, capture_output=True, text=True, timeout=30)


def _tools(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        tool = folder / name
        tool.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        tool.chmod(0o755)
    return folder


def test_without_compilers_the_first_install_says_what_to_install(tmp_path):
    done = _check([_tools(tmp_path / "bin")])
    assert done.returncode == 1
    assert "a C compiler" in done.stderr and "a C++ compiler" in done.stderr
    assert "build-essential" in done.stderr and "xcode-select --install" in done.stderr


def test_with_compilers_it_goes_on(tmp_path):
    assert _check([_tools(tmp_path / "bin", "cc", "c++")]).returncode == 0
    assert _check([_tools(tmp_path / "clang", "clang", "clang++")]).returncode == 0
    only_c = _check([_tools(tmp_path / "gcc", "gcc")])
    assert only_c.returncode == 1 and "a C++ compiler" in only_c.stderr and "a C compiler" not in only_c.stderr


def test_bootstrap_checks_before_it_builds_llama_cpp():
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    assert bootstrap.index("check-build-tools.sh") < bootstrap.index("pip install")


def test_the_readme_opens_with_the_two_commands_a_user_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    first_table = section.split("| what | command |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in first_table.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.rsplit("|", 2)[-2].strip() for row in rows] == ["`./scripts/run`", "`./scripts/test`"]
    assert "C/C++ compiler" in section.split("| what |", 1)[0]


def _fake_checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the scripts and pyproject with a venv whose python only records how it was called."""
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "scripts", root / "scripts")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    log = tmp_path / "calls.log"
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexit 0\n', encoding="utf-8")
    python.chmod(0o755)
    return root, log


def _installs(root: Path, log: Path, extras: str) -> list[str]:
    before = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    subprocess.run([BASH, str(root / "scripts" / "bootstrap.sh"), extras], check=True, capture_output=True, timeout=60)
    after = log.read_text(encoding="utf-8").splitlines()
    return [line for line in after[len(before) :] if line.startswith("-m pip install --quiet -e")]


def test_the_scripts_share_one_installation_and_add_only_missing_extras(tmp_path):
    root, log = _fake_checkout(tmp_path)
    assert _installs(root, log, "test") == [f"-m pip install --quiet -e {root}[test]"]
    assert _installs(root, log, "test") == []  # installed already
    assert _installs(root, log, "") == []  # `run` needs no extra: what `test` installed will do
    assert _installs(root, log, "test,e2e") == [f"-m pip install --quiet -e {root}[e2e,test]"]
    assert _installs(root, log, "test,package") == [f"-m pip install --quiet -e {root}[e2e,package,test]"]
    assert _installs(root, log, "e2e") == []
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "\n# changed\n")
    assert _installs(root, log, "") == [f"-m pip install --quiet -e {root}[e2e,package,test]"]  # kept on a change


def test_the_license_is_an_spdx_string():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
