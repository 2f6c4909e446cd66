"""Vault paths from OLRA URLs: decodeURIComponent's rules, and every form that could leave the
vault or be read two ways refused before any file is touched."""

from __future__ import annotations

import os

import pytest

from dle_desktop.olra.paths import PathRefused, VaultPath, confine, decode_uri_component, parse_vault_path, real_root


@pytest.mark.parametrize(
    "raw, text",
    [
        ("Caf%C3%A9%20%23%201%25.md", "Café # 1%.md"),
        ("a+b.md", "a+b.md"),  # '+' is not a space in decodeURIComponent
        ("%E6%97%A5%E6%9C%AC", "日本"),
        ("%F0%9F%90%89", "\U0001f409"),
        ("x%2Fy", "x/y"),
    ],
)
def test_decodes_like_decodeURIComponent(raw, text):
    assert decode_uri_component(raw) == text


@pytest.mark.parametrize("raw", ["%", "a%2", "%zz.md", "%C3", "%ED%A0%80", "%C0%AF"])
def test_malformed_encoding_is_refused(raw):
    with pytest.raises(PathRefused) as info:
        decode_uri_component(raw)
    assert info.value.status == 400


def test_folders_files_and_root():
    assert parse_vault_path("") == VaultPath((), True)
    assert parse_vault_path("A%20B/") == VaultPath(("A B",), True)
    assert parse_vault_path("A/b.md") == VaultPath(("A", "b.md"), False)
    assert parse_vault_path("A/b.md").rel == "A/b.md"
    assert parse_vault_path(".obsidian/app.json").hidden


@pytest.mark.parametrize(
    "raw",
    [
        "../x.md",
        "a/../../x.md",
        "%2E%2E/x.md",
        "a/%2e%2e/x.md",
        "./x.md",
        "a/./b.md",
        "a/.",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "%2F",
        "C:/x.md",
        "C%3A%5Cx.md",
        "c:x.md",
        "a%5Cb.md",
        "a\\b.md",
        "a%00.md",
        "a%0A.md",
        "a%0D%0A.md",
        "a%1B.md",
        "a%7F.md",
        "a//b.md",
    ],
)
def test_escapes_and_odd_forms_are_refused(raw):
    with pytest.raises(PathRefused) as info:
        parse_vault_path(raw)
    assert info.value.status == 400


def test_confine_follows_symlinks(tmp_path):
    vault = tmp_path / "vault"
    (vault / "inside").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    os.symlink(outside, vault / "link")
    os.symlink(vault / "inside", vault / "alias")
    root = real_root(vault)
    assert confine(root, ("inside", "new.md")) == os.path.join(root, "inside", "new.md")
    assert confine(root, ("alias", "x.md")) == os.path.join(root, "inside", "x.md")
    for parts in (("link", "secret.md"), ("link",), ("link", "new", "deeper.md")):
        with pytest.raises(PathRefused) as info:
            confine(root, parts)
        assert info.value.status == 403


def test_a_vault_reached_through_a_symlink_is_still_served(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "via")
    root = real_root(tmp_path / "via")
    assert confine(root, ("a.md",)) == os.path.join(str(real.resolve()), "a.md")
