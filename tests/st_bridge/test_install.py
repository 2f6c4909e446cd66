"""The SillyTavern extension installer, on real folders: finding installs, installing for one user
and for all users, updating, removing, and every refusal writing nothing."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from dle_desktop.st_bridge import install as ib
from dle_desktop.st_bridge.install import (
    CONFIG_FILE,
    EXTENSION_NAME,
    InstalledBridge,
    StInstall,
    StInstallError,
    bundled_extension_dir,
    bundled_version,
    find_installs,
    inspect,
    install,
    installed,
    remove,
    rewrite_token,
    write_config,
)

from .conftest import make_st, read_only_folder, tree

TOKEN = "tok-SECRET-7f3a9c2e1d"
URL = "http://127.0.0.1:8765"


def bundled_files() -> set[str]:
    src = bundled_extension_dir()
    return {
        str(p.relative_to(src))
        for p in src.rglob("*")
        if p.is_file() and p.name != CONFIG_FILE and "__pycache__" not in p.parts and ".git" not in p.parts
    }


def copied_files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def read_config(folder: Path) -> dict:
    return json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir())


# -- bundled -------------------------------------------------------------------------------------


def test_bundled_extension_has_a_versioned_manifest():
    manifest = json.loads((bundled_extension_dir() / "manifest.json").read_text(encoding="utf-8"))
    assert bundled_extension_dir().name == EXTENSION_NAME
    assert bundled_version() == manifest["version"]
    assert manifest["display_name"] == "DLE Desktop bridge"


# -- inspect -------------------------------------------------------------------------------------


def test_inspect_reads_version_port_data_root_and_users(st_root: Path):
    data = st_root / "data"
    (data / ".hidden").mkdir()
    (data / "not-a-user").mkdir()  # no settings.json, extensions/...: not a user
    (data / "bob" / "chats").mkdir(parents=True)
    st = inspect(st_root)
    assert st.root == st_root.resolve()
    assert st.version == "1.19.0"
    assert st.port == 8123
    assert st.data_root == data.resolve()
    assert st.users == ("default-user", "alice", "bob")
    assert st.origins() == ("http://127.0.0.1:8123", "http://localhost:8123")


def test_inspect_before_first_run_uses_default_config(tmp_path: Path):
    st = inspect(make_st(tmp_path / "st", run=False, version="1.12.14"))
    assert (st.version, st.port, st.users) == ("1.12.14", 8000, ())
    assert st.data_root == (tmp_path / "st" / "data").resolve()


def test_inspect_relative_and_absolute_data_roots(tmp_path: Path):
    st = inspect(make_st(tmp_path / "a", data_root="./elsewhere/data", port=None))
    assert st.data_root == (tmp_path / "a" / "elsewhere" / "data").resolve()
    assert st.port == 8000
    assert st.users == ("default-user",)
    outside = tmp_path / "big-disk" / "st-data"
    st = inspect(make_st(tmp_path / "b", data_root=str(outside)))
    assert st.data_root == outside
    assert st.users == ("default-user",)


def test_inspect_https_and_odd_config_values(tmp_path: Path):
    root = make_st(tmp_path / "st")
    (root / "config.yaml").write_text("port: '9001'\nssl:\n  enabled: true\n", encoding="utf-8")
    assert inspect(root).origins() == ("https://127.0.0.1:9001", "https://localhost:9001")
    (root / "config.yaml").write_text("port: [oops\n", encoding="utf-8")  # broken YAML: defaults
    assert inspect(root).port == 8000
    (root / "config.yaml").write_text("port: 99999\n", encoding="utf-8")
    assert inspect(root).port == 8000


@pytest.mark.parametrize("breakage", ["missing", "no-server-js", "other-package", "bad-package-json", "a-file"])
def test_inspect_refuses_what_is_not_sillytavern(tmp_path: Path, breakage: str):
    root = make_st(tmp_path / "st")
    if breakage == "missing":
        root = tmp_path / "nowhere"
    elif breakage == "no-server-js":
        (root / "server.js").unlink()
    elif breakage == "other-package":
        (root / "package.json").write_text(json.dumps({"name": "not-st", "version": "1.0.0"}), encoding="utf-8")
    elif breakage == "bad-package-json":
        (root / "package.json").write_text("{", encoding="utf-8")
    else:
        root = root / "server.js"
    with pytest.raises(StInstallError, match="is not a SillyTavern folder"):
        inspect(root)


# -- find_installs -------------------------------------------------------------------------------


def test_find_installs_in_home_and_extra_dirs_once_each(tmp_path: Path):
    home = tmp_path / "home"
    in_home = make_st(home / "SillyTavern")
    launcher = make_st(home / "SillyTavern-Launcher" / "SillyTavern", port=8001)
    cached = make_st(home / ".cache" / "dle-desktop" / "st-1.12.14", version="1.12.14")
    extra = make_st(tmp_path / "work" / "my-st", port=8002)
    link = tmp_path / "st-link"
    link.symlink_to(in_home)
    not_st = tmp_path / "plain"
    not_st.mkdir()
    found = find_installs(
        [extra, str(extra), link, not_st, tmp_path / "missing", "", home / "SillyTavern-Launcher"], home=home
    )
    roots = [st.root for st in found]
    assert roots == [extra.resolve(), in_home.resolve(), launcher.resolve(), cached.resolve()]
    assert [st.port for st in found] == [8002, 8123, 8001, 8123]
    assert find_installs(home=tmp_path / "empty-home") == []


# -- install -------------------------------------------------------------------------------------


def test_install_for_one_user(st_root: Path):
    st = inspect(st_root)
    bridge = install(st, server_url=URL, token=TOKEN)
    target = st_root / "data" / "default-user" / "extensions" / EXTENSION_NAME
    assert bridge.path == target.resolve() or bridge.path == target
    assert (bridge.scope, bridge.user, bridge.version, bridge.server_url) == (
        "user",
        "default-user",
        bundled_version(),
        URL,
    )
    assert bridge.has_token and bridge.up_to_date
    assert copied_files(target) == bundled_files() | {CONFIG_FILE}
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == bundled_version()
    config = read_config(target)
    assert (config["server_url"], config["token"]) == (URL, TOKEN)
    assert config["written_by"].startswith("DLE Desktop ")
    assert "T" in config["written_at"]
    if os.name == "posix":
        assert stat.S_IMODE((target / CONFIG_FILE).stat().st_mode) == 0o600
    assert siblings(target) == [EXTENSION_NAME]  # no temporary folders left
    assert not (st_root / "data" / "alice" / "extensions" / EXTENSION_NAME).exists()
    assert installed(st) == [bridge]


def test_install_for_all_users_and_a_user_side_by_side(tmp_path: Path):
    root = make_st(tmp_path / "st", third_party=False)  # ST creates third-party/ itself on first use
    st = inspect(root)
    everyone = install(st, server_url="https://localhost:9443/", token=TOKEN, user=None, all_users=True)
    target = root / "public" / "scripts" / "extensions" / "third-party" / EXTENSION_NAME
    assert everyone.path == target and everyone.scope == "all-users" and everyone.user is None
    assert everyone.server_url == "https://localhost:9443"
    assert copied_files(target) == bundled_files() | {CONFIG_FILE}
    mine = install(st, server_url=URL, token=TOKEN)
    assert [(b.scope, b.user) for b in installed(st)] == [("user", "default-user"), ("all-users", None)]
    assert mine.path.is_dir() and everyone.path.is_dir()


def test_install_for_a_new_user_only_when_the_data_root_exists(tmp_path: Path):
    root = make_st(tmp_path / "st")
    st = inspect(root)
    bridge = install(st, server_url=URL, token=TOKEN, user="carol")
    assert bridge.path == root / "data" / "carol" / "extensions" / EXTENSION_NAME
    assert [b.user for b in installed(st)] == ["carol"]  # found although inspect() did not know carol

    fresh = make_st(tmp_path / "fresh", run=False)
    before = tree(fresh)
    with pytest.raises(StInstallError, match="start SillyTavern once"):
        install(inspect(fresh), server_url=URL, token=TOKEN)
    assert tree(fresh) == before


def test_update_replaces_the_old_copy(st_root: Path):
    st = inspect(st_root)
    first = install(st, server_url=URL, token=TOKEN)
    (first.path / "stale.js").write_text("old", encoding="utf-8")
    (first.path / "old-folder").mkdir()
    (first.path / "manifest.json").write_text(
        json.dumps({"display_name": "DLE Desktop bridge", "version": "0.0.1"}), encoding="utf-8"
    )
    assert not installed(st)[0].up_to_date
    second = install(st, server_url="http://127.0.0.1:9999", token="new-token")
    assert second.path == first.path
    assert copied_files(second.path) == bundled_files() | {CONFIG_FILE}
    assert second.version == bundled_version() and second.up_to_date
    assert read_config(second.path)["token"] == "new-token"
    assert read_config(second.path)["server_url"] == "http://127.0.0.1:9999"
    assert siblings(second.path) == [EXTENSION_NAME]


def test_install_cleans_leftovers_of_an_interrupted_install(st_root: Path):
    parent = st_root / "data" / "default-user" / "extensions"
    left = parent / f".{EXTENSION_NAME}.new-0123abcd"
    left.mkdir()
    (left / "manifest.json").write_text("{}", encoding="utf-8")
    other = parent / "someone-else"
    other.mkdir()
    install(inspect(st_root), server_url=URL, token=TOKEN)
    assert sorted(p.name for p in parent.iterdir()) == [EXTENSION_NAME, "someone-else"]


# -- remove --------------------------------------------------------------------------------------


def test_remove_our_copies(st_root: Path):
    st = inspect(st_root)
    mine = install(st, server_url=URL, token=TOKEN)
    everyone = install(st, server_url=URL, token=TOKEN, all_users=True)
    assert remove(st) is True
    assert not mine.path.exists() and everyone.path.is_dir()
    assert remove(st) is False
    assert remove(st, all_users=True) is True
    assert not everyone.path.exists()
    assert os.listdir(mine.path.parent) == [] and os.listdir(everyone.path.parent) == []
    assert remove(st, user="alice") is False


def test_remove_refuses_a_folder_that_is_not_ours(st_root: Path):
    st = inspect(st_root)
    theirs = st_root / "data" / "default-user" / "extensions" / EXTENSION_NAME
    theirs.mkdir()
    (theirs / "manifest.json").write_text(
        json.dumps({"display_name": "Something else", "version": "9"}), encoding="utf-8"
    )
    (theirs / "index.js").write_text("//", encoding="utf-8")
    before = tree(st_root)
    with pytest.raises(StInstallError, match="not the DLE Desktop bridge"):
        remove(st)
    with pytest.raises(StInstallError, match="not the DLE Desktop bridge"):
        install(st, server_url=URL, token=TOKEN)
    (theirs / "manifest.json").unlink()  # no manifest at all: not ours either
    before = tree(st_root)
    with pytest.raises(StInstallError, match="not the DLE Desktop bridge"):
        remove(st)
    assert tree(st_root) == before
    assert installed(st) == []


def test_remove_does_not_follow_a_link(st_root: Path, tmp_path: Path):
    st = inspect(st_root)
    elsewhere = tmp_path / "dev-checkout"
    install(inspect(make_st(tmp_path / "other-st")), server_url=URL, token=TOKEN)
    src = tmp_path / "other-st" / "data" / "default-user" / "extensions" / EXTENSION_NAME
    src.rename(elsewhere)
    link = st_root / "data" / "default-user" / "extensions" / EXTENSION_NAME
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(StInstallError, match="symbolic link"):
        remove(st)
    with pytest.raises(StInstallError, match="symbolic link"):
        install(st, server_url=URL, token=TOKEN)
    assert link.is_symlink() and (elsewhere / "manifest.json").is_file()
    assert installed(st) == []


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "user", ["../escape", "a/b", "a\\b", "..", "_storage", ".hidden", "nul\0byte", "", None, " padded", "line\nbreak"]
)
def test_bad_user_names_are_refused_and_nothing_is_written(st_root: Path, user):
    st = inspect(st_root)
    before = tree(st_root.parent)
    with pytest.raises(StInstallError) as info:
        install(st, server_url=URL, token=TOKEN, user=user)
    assert TOKEN not in str(info.value)
    with pytest.raises(StInstallError):
        remove(st, user=user)
    assert tree(st_root.parent) == before


def test_an_extensions_link_leaving_the_install_is_refused(st_root: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ext = st_root / "data" / "alice" / "extensions"
    ext.rmdir()
    ext.symlink_to(outside, target_is_directory=True)
    st = inspect(st_root)
    before = tree(tmp_path)
    with pytest.raises(StInstallError, match="outside"):
        install(st, server_url=URL, token=TOKEN, user="alice")
    assert tree(tmp_path) == before and os.listdir(outside) == []

    # the same for all users: public/scripts/extensions/third-party pointing out of the install
    third = st_root / "public" / "scripts" / "extensions" / "third-party"
    third.rmdir()
    third.symlink_to(outside, target_is_directory=True)
    with pytest.raises(StInstallError, match="outside"):
        install(st, server_url=URL, token=TOKEN, all_users=True)
    assert os.listdir(outside) == []


def test_a_link_inside_the_data_root_is_fine(st_root: Path):
    shared = st_root / "data" / "shared-extensions"
    shared.mkdir()
    ext = st_root / "data" / "alice" / "extensions"
    ext.rmdir()
    ext.symlink_to(shared, target_is_directory=True)
    bridge = install(inspect(st_root), server_url=URL, token=TOKEN, user="alice")
    assert (shared / EXTENSION_NAME / "manifest.json").is_file()
    assert bridge.path == ext / EXTENSION_NAME


def test_a_folder_we_may_not_write_is_refused(st_root: Path):
    st = inspect(st_root)
    ext = st_root / "data" / "default-user" / "extensions"
    with read_only_folder(ext):
        before = tree(st_root)
        with pytest.raises(StInstallError, match="cannot write") as info:
            install(st, server_url=URL, token=TOKEN)
        assert TOKEN not in str(info.value)
        assert tree(st_root) == before


def test_an_existing_copy_in_a_folder_we_may_not_write_is_kept(st_root: Path):
    st = inspect(st_root)
    bridge = install(st, server_url=URL, token=TOKEN)
    with read_only_folder(bridge.path.parent):
        before = tree(st_root)
        with pytest.raises(StInstallError):
            install(st, server_url=URL, token="other-token")
        with pytest.raises(StInstallError):
            remove(st)
        assert tree(st_root) == before
    assert read_config(bridge.path)["token"] == TOKEN


@pytest.mark.parametrize(
    "url",
    [
        "",
        "127.0.0.1:8765",
        "ftp://127.0.0.1/",
        "http://",
        "javascript:alert(1)",
        "http://user:pw@127.0.0.1:8765",
        "ftp://user:pw@x/",
        "http://127.0.0.1:99999",
        "http://a b:1",
        "http://127.0.0.1:8765/?x=1",
    ],
)
def test_bad_server_urls_are_refused(st_root: Path, url: str):
    before = tree(st_root)
    with pytest.raises(StInstallError) as info:
        install(inspect(st_root), server_url=url, token=TOKEN)
    assert TOKEN not in str(info.value) and "pw" not in str(info.value)
    assert tree(st_root) == before


@pytest.mark.parametrize("token", ["", "   ", "two words", "line\nbreak", None])
def test_bad_tokens_are_refused(st_root: Path, token):
    before = tree(st_root)
    with pytest.raises(StInstallError) as info:
        install(inspect(st_root), server_url=URL, token=token)
    if token and token.strip():
        assert token not in str(info.value)
    assert tree(st_root) == before


def test_a_folder_that_stopped_being_sillytavern_is_refused(st_root: Path):
    st = inspect(st_root)
    (st_root / "server.js").unlink()
    with pytest.raises(StInstallError, match="is not a SillyTavern folder"):
        install(st, server_url=URL, token=TOKEN)
    assert os.listdir(st_root / "data" / "default-user" / "extensions") == []


# -- the token is a secret -----------------------------------------------------------------------


def test_the_token_appears_in_no_repr_or_message(st_root: Path):
    st = inspect(st_root)
    bridge = install(st, server_url=URL, token=TOKEN)
    assert TOKEN not in repr(bridge) and TOKEN not in repr(installed(st))
    assert "token" not in set(InstalledBridge.__dataclass_fields__)
    messages = []
    for call in (
        lambda: install(st, server_url="nope", token=TOKEN),
        lambda: install(st, server_url=URL, token=TOKEN, user="../x"),
        lambda: write_config(st_root / "missing", server_url=URL, token=TOKEN),
        lambda: rewrite_token([st], TOKEN + " with space"),
    ):
        with pytest.raises(StInstallError) as info:
            call()
        messages.append(str(info.value) + repr(info.value))
    assert all(TOKEN not in m for m in messages)


# -- write_config, rewrite_token -----------------------------------------------------------------


def test_write_config_is_atomic_and_private(tmp_path: Path):
    folder = tmp_path / "ext"
    folder.mkdir()
    (folder / CONFIG_FILE).write_text("old", encoding="utf-8")
    (folder / CONFIG_FILE).chmod(0o644)
    write_config(folder, server_url=URL + "/", token=TOKEN)
    assert read_config(folder)["server_url"] == URL and read_config(folder)["token"] == TOKEN
    if os.name == "posix":
        assert stat.S_IMODE((folder / CONFIG_FILE).stat().st_mode) == 0o600
    assert os.listdir(folder) == [CONFIG_FILE]
    with pytest.raises(StInstallError):
        write_config(folder, server_url="nope", token=TOKEN)


def test_rewrite_token_updates_every_copy_and_keeps_addresses(tmp_path: Path):
    one = inspect(make_st(tmp_path / "one", users=("default-user", "alice")))
    two = inspect(make_st(tmp_path / "two"))
    install(one, server_url=URL, token=TOKEN)
    install(one, server_url="http://127.0.0.1:7000", token=TOKEN, user="alice")
    install(one, server_url=URL, token=TOKEN, all_users=True)
    install(two, server_url="http://localhost:8765", token=TOKEN)
    untouched = inspect(make_st(tmp_path / "three"))
    assert rewrite_token([one, two, one, untouched], "fresh-token") == 4
    copies = installed(one) + installed(two)
    assert {read_config(b.path)["token"] for b in copies} == {"fresh-token"}
    assert [read_config(b.path)["server_url"] for b in copies] == [
        URL,
        "http://127.0.0.1:7000",
        URL,
        "http://localhost:8765",
    ]
    if os.name == "posix":
        assert {stat.S_IMODE((b.path / CONFIG_FILE).stat().st_mode) for b in copies} == {0o600}
    # a copy whose config lost its address is skipped (installing again writes one)
    (installed(two)[0].path / CONFIG_FILE).write_text("{}", encoding="utf-8")
    assert rewrite_token([two], "fresher") == 0
    with pytest.raises(StInstallError):
        rewrite_token([one], "")


def test_st_install_is_plain_data():
    st = StInstall(root=Path("/st"), version="1.12.14", data_root=Path("/st/data"), users=("default-user",), port=8000)
    assert st.origins() == ("http://127.0.0.1:8000", "http://localhost:8000")
    assert ib.DEFAULT_USER == "default-user"
