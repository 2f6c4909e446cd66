"""`fileio.write_atomic` is the one way a file's contents are replaced: no module writes a temp
file and renames it by hand. Then the write itself: modes, unique temporary names, the temporary
file removed on any failure, the old contents kept until the new ones are complete."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

from dle_desktop import fileio
from dle_desktop.fileio import NameTaken, atomic_file, move_into_place, write_atomic, write_private_atomic

PKG = Path(fileio.__file__).resolve().parent
POSIX = os.name == "posix"

#: Renames that move whole folders, never a file's contents: (module, function) → why.
FOLDER_SWAPS = {
    ("st_bridge/install.py", "install"): "swaps the extension folder for its finished copy, and back on failure",
    ("st_bridge/install.py", "remove"): "moves the extension folder aside before deleting it",
    ("vectors/store.py", "_remove_dir"): "moves a scope folder to the trash before deleting it",
    ("vectors/store.py", "_quarantine"): "moves a damaged scope folder aside, kept for inspection",
}


def _renames(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of each os.replace/os.rename and each one-argument
    `.replace(x)`/`.rename(x)` (Path's; str.replace takes two)."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in ("replace", "rename")
            ):
                owner = child.func.value
                if (isinstance(owner, ast.Name) and owner.id == "os") or (len(child.args) == 1 and not child.keywords):
                    found.append((function, child.lineno))
            visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_no_module_renames_files_into_place_by_hand():
    offenders, swaps_seen = [], set()
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "fileio.py":
            continue
        for function, line in _renames(path):
            if (rel, function) in FOLDER_SWAPS:
                swaps_seen.add((rel, function))
            else:
                offenders.append(f"{rel}:{line} in {function}")
    assert offenders == [], "use dle_desktop.fileio (write_atomic, atomic_file, move_into_place)"
    assert swaps_seen == set(FOLDER_SWAPS), "an exception that no longer applies: remove it"


def test_the_scan_sees_the_spellings_it_is_meant_to(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def a(tmp, p):\n    os.replace(tmp, p)\n"
        "def b(tmp, p):\n    os.rename(tmp, p)\n"
        "def c(tmp, p):\n    tmp.replace(p)\n"
        "def d(tmp, p):\n    tmp.rename(p)\n"
        "def e(s):\n    return s.replace('a', 'b')\n",
        encoding="utf-8",
    )
    assert [f for f, _ in _renames(sample)] == ["a", "b", "c", "d"]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_text_and_bytes_replace_the_old_contents(tmp_path):
    path = tmp_path / "note.md"
    path.write_text("old", encoding="utf-8")
    write_atomic(path, "new ✓\n")
    assert path.read_bytes() == "new ✓\n".encode()  # UTF-8, no newline translation
    write_atomic(path, b"\x00\xff")
    assert path.read_bytes() == b"\x00\xff"
    assert _names(tmp_path) == ["note.md"]


@pytest.mark.skipif(not POSIX, reason="POSIX modes")
def test_private_files_are_0600_whatever_they_were(tmp_path):
    path = tmp_path / "keys.json"
    write_private_atomic(path, "{}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o644)
    write_atomic(path, "{}", private=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.skipif(not POSIX, reason="POSIX modes")
def test_an_ordinary_write_keeps_the_files_mode_and_a_new_file_gets_the_umask(tmp_path):
    edited = tmp_path / "edited.md"
    edited.write_text("old", encoding="utf-8")
    os.chmod(edited, 0o640)
    write_atomic(edited, "new")
    assert stat.S_IMODE(edited.stat().st_mode) == 0o640
    old_umask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.md", "new")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640


def test_a_write_that_fails_midway_keeps_the_old_file_and_removes_the_temp(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_file(path) as fh:
        fh.write(b"half")
        raise RuntimeError("the writer failed")
    with pytest.raises(KeyboardInterrupt), atomic_file(path, private=True) as fh:
        raise KeyboardInterrupt
    assert path.read_text(encoding="utf-8") == "old"
    assert _names(tmp_path) == ["state.json"]


def test_a_failing_fsync_keeps_the_old_file_and_removes_the_temp(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")

    def no_fsync(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fileio.os, "fsync", no_fsync)
    with pytest.raises(OSError, match="Input/output"):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert _names(tmp_path) == ["state.json"]


def test_a_failing_check_or_rename_removes_the_temp(tmp_path, monkeypatch):
    path = tmp_path / "note.md"
    path.write_text("old", encoding="utf-8")

    def changed() -> None:
        raise LookupError("changed meanwhile")

    with pytest.raises(LookupError):
        write_atomic(path, "new", check=changed)

    def no_replace(*_a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, "replace", no_replace)
    with pytest.raises(OSError):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert _names(tmp_path) == ["note.md"]


def test_temp_names_are_unique_hidden_and_opened_exclusively(tmp_path, monkeypatch):
    path = tmp_path / "note.md"
    names = {fileio.temp_path(path, ".dle-tmp") for _ in range(200)}
    assert len(names) == 200
    assert all(
        Path(n).parent == tmp_path and Path(n).name.startswith(".note.md.") and n.endswith(".dle-tmp") for n in names
    )
    taken = tmp_path / ".note.md.deadbeef.tmp"
    taken.write_text("someone else's", encoding="utf-8")
    monkeypatch.setattr(fileio, "temp_path", lambda *_a: str(taken))
    with pytest.raises(FileExistsError):  # O_EXCL: never writes into a file that already exists
        write_atomic(path, "new")
    assert taken.read_text(encoding="utf-8") == "someone else's"
    assert not path.exists()


def test_the_new_contents_appear_only_once_complete(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    with atomic_file(path) as fh:
        fh.write(b"new, ")
        assert path.read_text(encoding="utf-8") == "old"
        fh.write(b"complete")
        assert path.read_text(encoding="utf-8") == "old"
    assert path.read_text(encoding="utf-8") == "new, complete"


def test_an_exclusive_write_never_replaces_a_file_that_appeared(tmp_path):
    path = tmp_path / "new.md"
    write_atomic(path, "first", exclusive=True)
    with pytest.raises(NameTaken):
        write_atomic(path, "second", exclusive=True)
    assert path.read_text(encoding="utf-8") == "first"
    assert _names(tmp_path) == ["new.md"]


def test_move_into_place_renames_a_finished_file(tmp_path):
    part = tmp_path / "model.gguf.part"
    part.write_bytes(b"GGUF")
    move_into_place(part, tmp_path / "model.gguf")
    assert _names(tmp_path) == ["model.gguf"]
