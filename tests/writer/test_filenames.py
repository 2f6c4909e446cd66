"""Titles → file names (DLE's sanitizeFilename rules) and paths the writer refuses."""

from __future__ import annotations

import pytest

from dle_desktop.errors import VaultPathError
from dle_desktop.vault.filenames import check_note_path, note_path_for_title, sanitize_title


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Lantern Quay", "Lantern Quay"),
        ('What: a "test"?', "What_ a _test__"),
        ("a/b\\c|d*e<f>g", "a_b_c_d_e_f_g"),
        ("...dots...", "dots"),
        ("trailing   ", "trailing"),
        ("CON", "_CON"),
        ("lpt1", "_lpt1"),
        ("CONSOLE", "CONSOLE"),
        ("", "Untitled"),
        ("???", "___"),
        ("...", "Untitled"),
        ("two\r\nlines", "two lines"),
        ("tab\there", "tab_here"),
        ("東京 🌊", "東京 🌊"),
        ("ends with dot. ", "ends with dot"),
    ],
)
def test_sanitize_title_follows_dle(title, name):
    assert sanitize_title(title) == name


def test_long_titles_fit_in_one_file_name():
    name = sanitize_title("é" * 300)
    assert len((name + ".md").encode("utf-8")) <= 255
    assert set(name) == {"é"}


def test_note_path_for_title_in_a_folder():
    assert note_path_for_title("Mirela: Archivist", "Characters/") == "Characters/Mirela_ Archivist.md"
    assert note_path_for_title("x") == "x.md"


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "a/../../b.md",
        "/etc/passwd.md",
        "C:/x.md",
        "a\\..\\b.md",
        ".obsidian/x.md",
        "a/.hidden.md",
        "note.txt",
        "",
        "a\x00b.md",
    ],
)
def test_paths_the_writer_refuses(path):
    with pytest.raises(VaultPathError):
        check_note_path(path)


def test_paths_are_normalised():
    assert check_note_path("a//b\\c.MD") == "a/b/c.MD"
