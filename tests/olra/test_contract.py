"""The OLRA contract DeepLore Enhanced relies on (st-wire-contracts.md §4), against the real
server on 127.0.0.1 with real files: listings, raw reads, PUT round trips, errors, CORS, Host."""

from __future__ import annotations

import os

import httpx
import pytest

from dle_desktop.olra.app import SERVICE
from dle_desktop.vault.obsidian_rest import encode_vault_path
from tests.olra.conftest import raw_request

NAMES = {
    "Top.md": "top",
    "Folder With Spaces/Note One.md": "one",
    "Folder With Spaces/Deeper/Two.md": "two",
    "Ünïcödé/日本語のノート.md": "nihon",
    "Hash #1/Percent 100%.md": "pct",
    "Hash #1/Q&A + more?.md": "qa",
    "DeepLore/field-definitions.yaml": "fields: []\n",
    "Images/pic.png": b"\x89PNG\r\n\x1a\n",
    ".obsidian/app.json": "{}",
    ".git/config": "[core]",
    ".trash/old.md": "old",
    ".hidden.md": "h",
}


def vault_url(path: str, folder: bool = False) -> str:
    return "/vault/" + encode_vault_path(path, folder=folder)


def test_root_listing_shape(olra):
    s = olra(NAMES)
    r = s.get("/vault/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == {"files": ["DeepLore/", "Folder With Spaces/", "Hash #1/", "Images/", "Top.md", "Ünïcödé/"]}


def test_nested_listings_names_relative_to_the_folder(olra):
    s = olra(NAMES)
    assert s.get(vault_url("Folder With Spaces", folder=True)).json() == {"files": ["Deeper/", "Note One.md"]}
    assert s.get(vault_url("Folder With Spaces/Deeper", folder=True)).json() == {"files": ["Two.md"]}
    assert s.get(vault_url("Hash #1", folder=True)).json() == {"files": ["Percent 100%.md", "Q&A + more?.md"]}
    assert s.get(vault_url("Ünïcödé", folder=True)).json() == {"files": ["日本語のノート.md"]}
    # Without the trailing slash a folder is a file path: 404, as in OLRA.
    assert s.get(vault_url("Folder With Spaces")).status_code == 404


def test_listings_sort_like_javascript_and_hide_dot_folders(olra):
    s = olra({"b.md": "", "B.md": "", "a/x.md": "", "_u.md": "", "\U0001f409.md": "", "\uff21.md": ""})
    files = s.get("/vault/").json()["files"]
    # UTF-16 code-unit order: the astral dragon (a surrogate pair, 0xD83D...) before U+FF21.
    assert files == ["B.md", "_u.md", "a/", "b.md", "\U0001f409.md", "\uff21.md"]
    assert s.get("/vault/.obsidian/").status_code == 404


def test_empty_vault_and_missing_folder(olra):
    s = olra({})
    assert s.get("/vault/").json() == {"files": []}
    assert s.get("/vault").json() == {"files": []}
    r = s.get("/vault/Nope/")
    assert r.status_code == 404
    assert r.json() == {"message": "Not Found", "errorCode": 40400}


def test_raw_reads_with_content_type_and_disposition(olra):
    s = olra(NAMES)
    for path, content in NAMES.items():
        if path.startswith("."):
            continue
        r = s.get(vault_url(path), headers=s.auth("text/markdown"))
        assert r.status_code == 200, path
        assert r.content == (content if isinstance(content, bytes) else content.encode())
        assert r.headers["access-control-allow-origin"] == "*"
        assert r.headers["content-disposition"].startswith('attachment; filename="')
    assert s.get(vault_url("Top.md")).headers["content-type"] == "text/markdown; charset=utf-8"
    assert (
        s.get(vault_url("DeepLore/field-definitions.yaml"), headers=s.auth("text/plain")).headers["content-type"]
        == "text/yaml; charset=utf-8"
    )
    assert s.get(vault_url("Images/pic.png")).headers["content-type"] == "image/png"
    disposition = s.get(vault_url("Hash #1/Q&A + more?.md")).headers["content-disposition"]
    assert disposition == 'attachment; filename="Q&A%20+%20more?.md"'


def test_head_answers_headers_only(olra):
    s = olra({"a.md": "hello"})
    r = s.client.head("/vault/a.md", headers=s.auth())
    assert r.status_code == 200 and r.content == b"" and r.headers["content-length"] == "5"


def test_missing_and_hidden_files_are_404_with_olra_body(olra):
    s = olra(NAMES)
    for path in (
        "Nope.md",
        "Folder With Spaces/Nope.md",
        ".obsidian/app.json",
        ".git/config",
        ".hidden.md",
        "Top.md/child.md",
    ):
        r = s.get(vault_url(path))
        assert r.status_code == 404, path
        assert r.json() == {"message": "Not Found", "errorCode": 40400}
        assert r.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    "content",
    [
        b"---\r\ntags: [lorebook]\r\n---\r\n# CRLF\r\nline\r\n",
        "\ufeff---\ntags: [lorebook]\n---\n# BOM\n".encode(),
        "---\ntitle: Ünïcödé 日本 \U0001f409\n---\nbody — “quotes”\n".encode(),
        b"",
        b"no final newline",
    ],
)
def test_put_then_get_round_trips_bytes_exactly(olra, content):
    s = olra({})
    r = s.put(vault_url("Sessions/Chat 1/Scribe #3 100%.md"), content)
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == "*"
    assert (s.root / "Sessions" / "Chat 1" / "Scribe #3 100%.md").read_bytes() == content
    got = s.get(vault_url("Sessions/Chat 1/Scribe #3 100%.md"), headers=s.auth("text/markdown"))
    assert got.status_code == 200 and got.content == content
    assert s.get(vault_url("Sessions/Chat 1", folder=True)).json() == {"files": ["Scribe #3 100%.md"]}


def test_put_large_file_and_replace(olra):
    s = olra({"big.md": "old"})
    big = ("x" * 1023 + "\n").encode() * 2048  # 2 MiB
    assert s.put("/vault/big.md", big).status_code == 204
    assert s.get("/vault/big.md").content == big
    assert (s.root / "big.md").read_bytes() == big
    assert [p.name for p in s.root.iterdir()] == ["big.md"]  # no temporary file left behind


def test_put_keeps_an_edited_notes_permissions(olra):
    s = olra({"a.md": "x"})
    os.chmod(s.root / "a.md", 0o640)
    assert s.put("/vault/a.md", "y").status_code == 204
    assert (s.root / "a.md").stat().st_mode & 0o777 == 0o640


def test_put_yaml_as_text_plain(olra):
    s = olra({})
    r = s.put(vault_url("DeepLore/field-definitions.yaml"), "fields: []\n", content_type="text/plain")
    assert r.status_code == 204
    assert (s.root / "DeepLore" / "field-definitions.yaml").read_text() == "fields: []\n"


def test_put_over_the_limit_is_413_and_writes_nothing(olra):
    s = olra({})
    too_big = b"x" * (16 * 1024 * 1024 + 1)
    r = s.put("/vault/huge.md", too_big)
    assert r.status_code == 413
    assert r.json()["errorCode"] == 41300
    assert list(s.root.iterdir()) == []


def test_put_on_a_folder_path_is_405(olra):
    s = olra({"Folder/a.md": "a"})
    for url in ("/vault/Folder/", "/vault/Folder", "/vault/"):
        r = s.put(url, "x")
        assert r.status_code == 405, url
        assert r.json()["errorCode"] == 40510
    assert (s.root / "Folder" / "a.md").read_text() == "a"


def test_put_under_a_file_is_refused(olra):
    s = olra({"a.md": "a"})
    r = s.put("/vault/a.md/b.md", "x")
    assert r.status_code == 400
    assert (s.root / "a.md").read_text() == "a"


def test_put_hidden_paths_refused(olra):
    s = olra({})
    for url in ("/vault/.obsidian/plugins/x.js", "/vault/.git/hooks/post-commit", "/vault/a/.b.md"):
        assert s.put(url, "x").status_code == 403, url
    assert list(s.root.iterdir()) == []


def test_401_body_and_exact_bearer(olra):
    s = olra({"a.md": "a"})
    bad = [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"bearer {s.key}"},
        {"Authorization": f"Bearer {s.key}x"},
        {"Authorization": f"Bearer {s.key[:-1]}"},
        {"Authorization": s.key},
        {"Authorization": f"Bearer  {s.key}"},
    ]
    for headers in bad:
        for method, url in (("GET", "/vault/"), ("GET", "/vault/a.md"), ("PUT", "/vault/b.md"), ("GET", "/search/")):
            r = s.client.request(method, url, headers=headers, content=b"x" if method == "PUT" else None)
            assert r.status_code == 401, (headers, url)
            body = r.json()
            assert body["errorCode"] == 40101 and body["message"].startswith("Authorization required.")
            assert r.headers["access-control-allow-origin"] == "*"
    assert not (s.root / "b.md").exists()


def test_root_is_exempt_and_says_what_it_is(olra):
    s = olra({"a.md": "a"})
    anon = s.client.get("/").json()
    assert anon["status"] == "OK" and anon["service"] == SERVICE and anon["authenticated"] is False
    assert set(anon["versions"]) == {"obsidian", "self"} and "DLE Desktop" in anon["versions"]["obsidian"]
    assert anon["manifest"]["id"] == "dle-desktop-olra" and "DLE Desktop" in anon["manifest"]["name"]
    assert anon["vault"] == "v"
    assert s.client.get("/", headers=s.auth()).json()["authenticated"] is True
    assert s.client.get("/", headers={"Authorization": "Bearer nope"}).json()["authenticated"] is False


def test_certificate_route_is_404_without_https(olra):
    s = olra({})
    r = s.client.get("/obsidian-local-rest-api.crt")
    assert r.status_code == 404 and r.json()["errorCode"] == 40400


def test_methods_and_routes_dle_never_uses(olra):
    s = olra({"a.md": "a"})
    for method in ("POST", "PATCH", "DELETE"):
        r = s.client.request(method, "/vault/a.md", headers=s.auth(), content=b"x")
        assert r.status_code == 405, method
        assert r.json()["errorCode"] == 40500 and method in r.json()["message"]
        assert "PUT" in r.headers["allow"]
    assert (s.root / "a.md").read_text() == "a"
    for url in (
        "/search/",
        "/search/simple/?query=a",
        "/active/",
        "/commands/",
        "/periodic/daily/",
        "/open/a.md",
        "/openapi.yaml",
        "/vaultx/",
    ):
        r = s.client.get(url, headers=s.auth())
        assert r.status_code == 404, url
        assert r.json()["errorCode"] == 40400
    assert s.client.post("/", headers=s.auth()).status_code == 405


def test_cors_preflights_need_no_key(olra):
    s = olra({})
    r = s.client.options(
        "/vault/Sessions/a.md",
        headers={
            "Origin": "http://127.0.0.1:8000",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["access-control-allow-methods"] == "GET,HEAD,PUT,PATCH,POST,DELETE"
    assert r.headers["access-control-allow-headers"] == "authorization,content-type"
    assert "access-control-allow-private-network" not in r.headers
    pna = s.client.options(
        "/vault/",
        headers={
            "Origin": "http://192.168.1.5:8000",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true",
        },
    )
    assert pna.status_code == 204 and pna.headers["access-control-allow-private-network"] == "true"
    assert "access-control-allow-headers" not in pna.headers


def test_cors_on_answers_from_any_origin(olra):
    s = olra({"a.md": "a"})
    for url in ("/", "/vault/", "/vault/a.md", "/vault/missing.md"):
        r = s.client.get(url, headers=s.auth(Origin="http://localhost:8000"))
        assert r.headers["access-control-allow-origin"] == "*", url
    assert "access-control-allow-credentials" not in r.headers


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:27123",
        "127.0.0.1.nip.io",
        "192.168.1.5",
        "0.0.0.0",
        "[::1]evil",
        "127.0.0.1:1@evil.example",
    ],
)
def test_dns_rebinding_never_reaches_files_even_with_the_key(olra, host):
    s = olra({"secret.md": "secret"})
    for method, url in (
        ("GET", "/vault/secret.md"),
        ("GET", "/vault/"),
        ("PUT", "/vault/new.md"),
        ("GET", "/"),
        ("OPTIONS", "/vault/"),
    ):
        r = s.client.request(method, url, headers={**s.auth(), "Host": host}, content=b"x" if method == "PUT" else None)
        assert r.status_code in (400, 403), (host, url)
        assert b"secret" not in r.content
        assert "access-control-allow-origin" not in r.headers
    assert not (s.root / "new.md").exists()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST:27123", "[::1]", "localhost.localdomain"])
def test_loopback_names_are_served(olra, host):
    s = olra({"a.md": "a"})
    assert s.client.get("/vault/a.md", headers={**s.auth(), "Host": host}).status_code == 200


ESCAPES = [
    b"/vault/../outside.md",
    b"/vault/a/../../outside.md",
    b"/vault/%2E%2E/outside.md",
    b"/vault/%2e%2e%2Foutside.md",
    b"/vault/./a.md",
    b"/vault/%2Fetc%2Fpasswd",
    b"/vault//etc/passwd",
    b"/vault/C:/x.md",
    b"/vault/C%3A%5Cx.md",
    b"/vault/a%5C..%5Coutside.md",
    b"/vault/a%00.md",
    b"/vault/a%0A.md",
    b"/vault/a%1F.md",
    b"/vault/%zz.md",
    b"/vault/%C3.md",
]


@pytest.mark.parametrize("target", ESCAPES)
def test_path_escapes_refused_and_nothing_written(olra, tmp_path, target):
    s = olra({"a.md": "inside"})
    (tmp_path / "vaults" / "outside.md").write_text("outside")
    port = s.runner.port
    key = s.key.encode()
    status, body = raw_request(
        port,
        b"GET "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + key
        + b"\r\nConnection: close\r\n\r\n",
    )
    assert status in (400, 403), (target, status, body)
    assert b"outside" not in body.replace(b"outside the vault", b"")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    status, _ = raw_request(
        port,
        b"PUT "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + key
        + b"\r\nContent-Type: text/markdown\r\nContent-Length: 5\r\nConnection: close\r\n\r\nPWNED",
    )
    assert status in (400, 403), (target, status)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "vaults" / "outside.md").read_text() == "outside"


def test_symlinks_out_of_the_vault_are_refused_and_hidden(olra, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    s = olra({"a.md": "a", "Real/b.md": "b"})
    os.symlink(outside, s.root / "Link")
    os.symlink(outside / "secret.md", s.root / "leak.md")
    os.symlink(s.root / "Real", s.root / "Alias")
    assert s.get("/vault/").json() == {"files": ["Alias/", "Real/", "a.md"]}
    for url in ("/vault/Link/secret.md", "/vault/leak.md", "/vault/Link/"):
        r = s.get(url)
        assert r.status_code == 403, url
        assert b"secret" not in r.content.replace(b"symbolic", b"")
    for url in ("/vault/Link/new.md", "/vault/Link/deep/new.md", "/vault/leak.md"):
        assert s.put(url, "PWNED").status_code == 403, url
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (outside / "secret.md").read_text() == "secret"
    # A symlink that stays inside the vault is followed.
    assert s.get("/vault/Alias/b.md").content == b"b"
    assert s.put("/vault/Alias/c.md", "c").status_code == 204
    assert (s.root / "Real" / "c.md").read_text() == "c"


def test_merged_view_of_several_vaults(olra):
    s = olra(
        vaults={
            "first": {"shared.md": "from first", "only1.md": "1", "Dir/x.md": "x"},
            "second": {"shared.md": "from second", "only2.md": "2", "Dir/y.md": "y"},
        }
    )
    assert s.get("/vault/").json() == {"files": ["Dir/", "only1.md", "only2.md", "shared.md"]}
    assert s.get("/vault/Dir/").json() == {"files": ["x.md", "y.md"]}
    assert s.get("/vault/shared.md").content == b"from first"
    assert s.get("/vault/only2.md").content == b"2"
    # A write goes to the vault that has the file, else to the primary (first) one.
    assert s.put("/vault/only2.md", "2b").status_code == 204
    assert (s.roots["second"] / "only2.md").read_text() == "2b"
    assert not (s.roots["first"] / "only2.md").exists()
    assert s.put("/vault/New/n.md", "n").status_code == 204
    assert (s.roots["first"] / "New" / "n.md").read_text() == "n"
    assert s.client.get("/").json()["vault"] == "DLE Desktop (2 vaults)"


def test_one_vault_chosen_by_name(olra):
    s = olra(vaults={"first": {"a.md": "1"}, "second": {"b.md": "2"}}, vault="second")
    assert s.get("/vault/").json() == {"files": ["b.md"]}
    assert s.get("/vault/a.md").status_code == 404


def test_unknown_vault_name_is_a_503_that_says_why(olra):
    s = olra({"a.md": "a"}, vault="Nope")
    r = s.get("/vault/")
    assert r.status_code == 503 and "Nope" in r.json()["message"]
    assert s.put("/vault/x.md", "x").status_code == 503
    assert "Nope" in s.runner.error


def test_sample_vault_is_read_only(olra, tmp_path):
    from dle_desktop.vault.sources import FolderSource
    from tests.olra.conftest import VaultsOnly

    root = tmp_path / "sample"
    root.mkdir()
    (root / "a.md").write_text("a")
    s = olra(engine=VaultsOnly([FolderSource("Sample vault", root)], using_sample_vault=True))
    assert s.get("/vault/a.md").content == b"a"
    r = s.put("/vault/b.md", "b")
    assert r.status_code == 403 and "sample" in r.json()["message"]
    assert not (root / "b.md").exists()


def test_key_rotation_takes_effect_at_once(olra, secrets):
    from dle_desktop.olra import olra_key, rotate_olra_key

    s = olra({"a.md": "a"})
    old = s.key
    assert olra_key(secrets) == old
    new = rotate_olra_key(secrets)
    assert new != old and olra_key(secrets) == new
    assert s.client.get("/vault/a.md", headers={"Authorization": f"Bearer {old}"}).status_code == 401
    assert s.client.get("/vault/a.md", headers={"Authorization": f"Bearer {new}"}).status_code == 200


def test_key_is_registered_for_log_scrubbing(olra):
    from dle_desktop.logging_setup import scrub

    s = olra({})
    assert s.key not in scrub(f"Authorization: Bearer {s.key}")


def test_busy_port_is_an_error_in_words(olra, secrets, tmp_path):
    from dle_desktop.olra import OlraRunner
    from dle_desktop.state.paths import AppPaths

    s = olra({})
    data = tmp_path / "data2"
    other = OlraRunner(s.runner.engine, secrets, AppPaths(data, data), port=s.runner.port)
    assert other.start() is False
    assert not other.running
    assert f"127.0.0.1:{s.runner.port}" in other.error and "another port" in other.error
    other.stop()
    same = OlraRunner(s.runner.engine, secrets, AppPaths(data, data), port=40000, https=True, https_port=40000)
    assert same.start() is False and "different ports" in same.error


def test_keep_alive_serves_many_requests_on_one_connection(olra):
    s = olra({f"n{i}.md": str(i) for i in range(20)})
    with httpx.Client(base_url=s.runner.url, limits=httpx.Limits(max_connections=1)) as client:
        for _ in range(3):
            for i in range(20):
                assert client.get(f"/vault/n{i}.md", headers=s.auth()).text == str(i)


def test_the_readme_names_exactly_the_host_names_the_emulation_accepts():
    import re
    from pathlib import Path

    from dle_desktop.olra.app import LOOPBACK_HOSTS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    sentence = readme.split("DNS rebinding is refused:", 1)[1].split("are accepted in `Host`", 1)[0]
    named = set(re.findall(r"`([^`]+)`", sentence)) - {"/etc/hosts"}
    assert named == set(LOOPBACK_HOSTS)
