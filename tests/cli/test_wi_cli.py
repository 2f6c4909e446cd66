"""`dle-desktop wi ...` end to end: real processes, a SillyTavern-shaped folder with real book
files, a real vault folder and data folder. Every refusal exits 2 with `error: ...` and writes
nothing."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.conftest import lore_text
from tests.st_bridge.conftest import make_st
from tests.test_command_imports import HEAVY, probe
from tests.worldinfo.conftest import files_under, wi_book, wi_entry

REPO = Path(__file__).resolve().parents[2]
BOOK = wi_book(
    wi_entry(0, "Harbour", ["harbour", "docks"], "The harbour never sleeps.", order=120),
    wi_entry(1, "Beacon", ["beacon"], "A fire on the cliff.", constant=True, sticky=3),
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    out = {k: v for k, v in os.environ.items() if not k.startswith("DLE_")}
    out.update(HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return out


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def dle(env: dict[str, str], tmp_path: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(tmp_path / "data"), *args],
        cwd=REPO,
        env=env,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=120,
    )
    done.stdout, done.stderr = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    return done


def assert_refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr + done.stdout, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def png_without_card() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


# -- books ---------------------------------------------------------------------------------------------


def test_books_lists_each_users_books_with_counts_and_the_unreadable_ones_with_why(env, tmp_path):
    st = make_st(tmp_path / "SillyTavern", users=("default-user",))
    worlds = st / "data" / "default-user" / "worlds"
    worlds.mkdir()
    (worlds / "Harbour Lore.json").write_bytes(BOOK)
    (worlds / "broken.json").write_text("{ not json", encoding="utf-8")
    (worlds / "notes.txt").write_text("not a book", encoding="utf-8")

    done = dle(env, tmp_path, "wi", "books", "--st", str(st))
    assert done.returncode == 0, done.stderr
    assert "user default-user: 2 World Info books" in done.stdout
    assert "Harbour Lore  2 entries" in done.stdout
    assert "broken" in done.stdout and "unreadable" in done.stdout and "not valid JSON" in done.stdout

    as_json = json.loads(dle(env, tmp_path, "wi", "books", "--st", str(st), "--json").stdout)
    [install] = as_json
    assert [(b["name"], b["entries"], b["error"] is None) for b in install["books"]] == [
        ("broken", None, False),
        ("Harbour Lore", 2, True),
    ]


def test_books_without_any_install_says_how_to_name_one(env, tmp_path):
    assert_refused(dle(env, tmp_path, "wi", "books"), "no SillyTavern install found", "--st")


# -- import --------------------------------------------------------------------------------------------


def test_import_of_an_st_book_previews_then_writes_and_undo_takes_it_back(env, tmp_path, vault):
    st = make_st(tmp_path / "SillyTavern", users=("default-user",))
    worlds = st / "data" / "default-user" / "worlds"
    worlds.mkdir()
    (worlds / "Harbour Lore.json").write_bytes(BOOK)
    source = ["st:harbour lore", "--st", str(st), "--vault", str(vault), "--folder", "Lore"]

    dry = dle(env, tmp_path, "wi", "import", *source, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "create     Lore/Harbour.md" in dry.stdout and "create     Lore/Beacon.md" in dry.stdout
    assert "kept for the round trip, not enforced here: sticky" in dry.stdout
    assert "dry run: nothing was written" in dry.stdout
    assert files_under(vault) == []

    done = dle(env, tmp_path, "wi", "import", *source, "--yes")
    assert done.returncode == 0, done.stderr
    assert files_under(vault) == ["Lore/Beacon.md", "Lore/Harbour.md"]
    batch = next(line.split()[1].rstrip(":") for line in done.stdout.splitlines() if line.startswith("batch "))

    again = dle(env, tmp_path, "wi", "import", *source, "--yes")  # the names are taken now: DLE's renames
    assert "rename     Lore/Harbour_imported.md" in again.stdout

    undo = dle(env, tmp_path, "wi", "undo", batch, "--vault", str(vault))
    assert undo.returncode == 0, undo.stderr
    assert "Undid 2 writes" in undo.stdout
    assert files_under(vault) == ["Lore/Beacon_imported.md", "Lore/Harbour_imported.md"]


def test_import_from_standard_input_needs_yes(env, tmp_path, vault):
    refused = dle(env, tmp_path, "wi", "import", "-", "--vault", str(vault), stdin=BOOK)
    assert_refused(refused, "--yes")
    assert files_under(vault) == []
    done = dle(env, tmp_path, "wi", "import", "-", "--vault", str(vault), "--yes", stdin=BOOK)
    assert done.returncode == 0, done.stderr
    assert files_under(vault) == ["Beacon.md", "Harbour.md"]


def test_overwrite_prints_the_diff_when_asked(env, tmp_path, vault):
    (vault / "Harbour.md").write_text(lore_text("Harbour", ("harbour",), body="Mine."), encoding="utf-8")
    book = tmp_path / "book.json"
    book.write_bytes(BOOK)
    done = dle(
        env, tmp_path, "wi", "import", str(book), "--vault", str(vault), "--on-collision", "overwrite", "--diff",
        "--dry-run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "overwrite  Harbour.md  (+" in done.stdout
    assert "-Mine." in done.stdout and "+The harbour never sleeps." in done.stdout
    assert (vault / "Harbour.md").read_text(encoding="utf-8") == lore_text("Harbour", ("harbour",), body="Mine.")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{ not json", ("not valid JSON",)),
        (png_without_card(), ("PNG holds no character card",)),
        (b"", ("empty",)),
        (b"\x00\x01\x02binary", ("binary",)),
    ],
    ids=["malformed-json", "png-without-card", "empty", "binary"],
)
def test_a_file_that_is_no_book_is_refused_and_nothing_is_written(env, tmp_path, vault, content, words):
    book = tmp_path / "book.json"
    book.write_bytes(content)
    assert_refused(dle(env, tmp_path, "wi", "import", str(book), "--vault", str(vault), "--yes"), *words)
    assert files_under(vault) == []


def test_a_100_mb_file_is_refused_before_it_is_read(env, tmp_path, vault):
    big = tmp_path / "huge.json"
    with big.open("wb") as fh:
        fh.truncate(100 * 1024 * 1024)  # sparse: the test's disk holds none of it
    done = dle(env, tmp_path, "wi", "import", str(big), "--vault", str(vault), "--yes")
    assert_refused(done, "100 MB", "at most 50 MB", "not read")
    assert files_under(vault) == []


def test_a_missing_file_an_unknown_st_book_and_a_bad_folder_are_refused(env, tmp_path, vault):
    assert_refused(
        dle(env, tmp_path, "wi", "import", str(tmp_path / "nope.json"), "--vault", str(vault)), "no such file"
    )
    st = make_st(tmp_path / "SillyTavern", users=("default-user",))
    assert_refused(
        dle(env, tmp_path, "wi", "import", "st:Nothing", "--st", str(st), "--vault", str(vault)),
        "no World Info book named 'Nothing'",
    )
    book = tmp_path / "book.json"
    book.write_bytes(BOOK)
    assert_refused(
        dle(env, tmp_path, "wi", "import", str(book), "--vault", str(vault), "--folder", "../out", "--yes"),
        "import folder",
    )
    assert files_under(vault) == [] and not (tmp_path / "out").exists()


def test_undo_of_an_unknown_batch_is_refused(env, tmp_path, vault):
    assert_refused(dle(env, tmp_path, "wi", "undo", "wi-nothing", "--vault", str(vault)), "no import")


# -- export --------------------------------------------------------------------------------------------


def test_export_writes_the_book_and_reports_what_world_info_cannot_express(env, tmp_path, vault):
    (vault / "Lore").mkdir()
    (vault / "Lore" / "Harbour.md").write_text(
        lore_text("Harbour", ("harbour",), extra="requires: [Beacon]"), encoding="utf-8"
    )
    (vault / "Lore" / "Beacon.md").write_text(lore_text("Beacon", ("beacon",)), encoding="utf-8")
    (vault / "Other.md").write_text(lore_text("Other", ("other",)), encoding="utf-8")
    out = tmp_path / "book.json"
    done = dle(env, tmp_path, "wi", "export", "--vault", str(vault), "--folder", "Lore", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"Exported 2 entries to {out}" in done.stdout
    assert "What World Info cannot express" in done.stdout and "Harbour (Lore/Harbour.md)" in done.stdout
    book = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(e["comment"] for e in book["entries"].values()) == ["Beacon", "Harbour"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".book.json")] == []  # no temp file left

    assert_refused(
        dle(env, tmp_path, "wi", "export", "--vault", str(vault), "--tag", "nothing", "--out", str(out)),
        "nothing to export",
    )
    assert json.loads(out.read_text(encoding="utf-8")) == book  # the refused export left the old book as it was


def test_wi_export_loads_neither_the_server_nor_qt(tmp_path):
    """The same check as `index` and `health` (tests/test_command_imports.py): a one-off command."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Harbour.md").write_text(lore_text("Harbour", ("harbour",)), encoding="utf-8")
    done, seen = probe(tmp_path, ["wi", "export", "--vault", str(vault), "--out", str(tmp_path / "book.json")])
    assert seen["code"] in (0, None), done.stderr[-2000:]
    loaded = sorted({m for m in seen["modules"] if m.startswith(HEAVY)})
    assert loaded == [], f"wi export loaded {loaded[:10]}"
    assert (tmp_path / "book.json").is_file()


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal for standard input")
@pytest.mark.parametrize(("answer", "writes"), [(b"n\n", False), (b"y\n", True)])
def test_on_a_terminal_import_asks_before_it_writes(env, tmp_path, vault, answer, writes):
    book = tmp_path / "book.json"
    book.write_bytes(BOOK)
    main_fd, terminal_fd = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dle_desktop", "--data-dir", str(tmp_path / "data"), "wi", "import", str(book),
             "--vault", str(vault)],
            cwd=REPO, env=env, stdin=terminal_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        os.write(main_fd, answer)  # typed ahead: read once the prompt is shown
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(main_fd)
        os.close(terminal_fd)
    assert proc.returncode == 0, err.decode()
    assert "Write 2 notes? [y/N]" in out.decode()
    assert (files_under(vault) == ["Beacon.md", "Harbour.md"]) is writes
    assert ("nothing was written" in out.decode()) is not writes
