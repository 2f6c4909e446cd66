"""The diagnostics archive: what a bug report needs is in it, and no planted secret is, in any
byte of the zip or of its members, wherever the secret was planted (keyring, keys file, server
token, AI profile key, URL credentials, a header, a raw log line, a decision record)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from dle_desktop.app.context import index_once
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.desktop import diagnostics
from dle_desktop.engine.engine import Engine
from dle_desktop.state.chat_store import ChatStore
from dle_desktop.state.paths import resolve_paths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings
from dle_desktop.vault.sources import FolderSource

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_vault"

VAULT_KEY = "vaultkey-PLANTED-11111111"
AI_KEY = "sk-PLANTED-ai-22222222"
SERVER_TOKEN = "srvtoken-PLANTED-33333333"
OLRA_KEY = "olrakey-PLANTED-44444444"
URL_PASSWORD = "urlpass-PLANTED-55555555"
QUERY_KEY = "querykey-PLANTED-66666666"
HEADER_KEY = "header-PLANTED-77777777"
PROXY_TOKEN = "proxytok-PLANTED-88888888"
LOG_ONLY = "logonly-PLANTED-99999999"  # in a log line only, after api_key=
ENV_KEY = "envkey-PLANTED-aaaaaaaa"
KEYRING_KEY = "keyring-PLANTED-bbbbbbbb"
PLANTED = (
    VAULT_KEY,
    AI_KEY,
    SERVER_TOKEN,
    OLRA_KEY,
    URL_PASSWORD,
    QUERY_KEY,
    HEADER_KEY,
    PROXY_TOKEN,
    LOG_ONLY,
    ENV_KEY,
    KEYRING_KEY,
)


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.store.get((service, username))

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def delete_password(self, service, username):
        self.store.pop((service, username), None)


def planted_settings() -> Settings:
    return Settings().replace(
        vaults=[{"name": "Obs", "kind": "obsidian-rest", "host": "127.0.0.1", "port": 27123}],
        connection_profiles=[
            {
                "id": "p1",
                "name": "Main",
                "provider": "openai",
                "flavor": "openrouter",
                "base_url": f"https://me:{URL_PASSWORD}@api.example.com/v1?key={QUERY_KEY}&mode=fast",
                "model": "some/model",
                "extra_headers": {"X-Api-Key": HEADER_KEY, "HTTP-Referer": "https://example.org"},
            }
        ],
        ai_search_proxy_url=f"http://127.0.0.1:42069/v1?token={PROXY_TOKEN}",
    )


def plant(data: Path, secrets: SecretStore) -> None:
    """Keys in the store, a log with secrets in it (as an old version might have written), an
    index cache and a decision record."""
    secrets.set("vault:Obs", VAULT_KEY)
    secrets.set("server-token", SERVER_TOKEN)
    secrets.set("olra-api-key", OLRA_KEY)
    logs = data / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "dle-desktop.log.1").write_text(
        "2026-01-01 10:00:00,000 INFO dle_desktop.engine.engine: an older line from the rotated file\n",
        encoding="utf-8",
    )
    (logs / "dle-desktop.log").write_text(
        "2026-01-01 11:00:00,000 INFO dle_desktop.engine.engine: indexed 61 entries\n"
        f"2026-01-01 11:00:01,000 INFO dle_desktop.ai: calling with key {AI_KEY} (an old version logged it)\n"
        f"2026-01-01 11:00:02,000 ERROR dle_desktop.ai: request failed\n"
        "Traceback (most recent call last):\n"
        f'  File "x.py", line 1, in <module>\nhttpx.HTTPStatusError: 401 api_key={LOG_ONLY} for {SERVER_TOKEN}\n'
        f"2026-01-01 11:00:03,000 WARNING dle_desktop.vault: vault Obs unreachable (env key {ENV_KEY})\n"
        "2026-01-01 11:00:04,000 INFO dle_desktop.engine.engine: the last ordinary line\n",
        encoding="utf-8",
    )
    ChatStore(data / "state.sqlite").save(
        "chat-1",
        ChatState(generation_count=1),
        {"injected": ["Saffre"], "verdicts": [], "total_tokens": 42, "semantic_query": f"my key is {AI_KEY}"},
    )


@pytest.fixture
def planted(tmp_path, monkeypatch):
    monkeypatch.setenv("DLE_AI_KEY_OTHER", ENV_KEY)
    data = tmp_path / "data"
    paths = resolve_paths(data).ensure()
    secrets = SecretStore(use_keyring=False, file_path=paths.secrets_file)
    plant(data, secrets)
    secrets.set("ai-profile:p1", AI_KEY)
    settings = planted_settings()
    vault = shutil.copytree(SAMPLE, tmp_path / "vault")
    index_once(Engine(paths, settings, secrets, vault_override=[FolderSource("sample", vault)]))
    # A fresh store, as `dle-desktop diagnostics` makes: it knows the keys only from the file.
    return paths, settings, SecretStore(use_keyring=False, file_path=paths.secrets_file)


def assert_clean(blob: bytes, where: str) -> None:
    for secret in PLANTED:
        assert secret.encode() not in blob, f"{secret} is in {where}"
        assert secret.split("-PLANTED-")[1].encode() not in blob, f"part of {secret} is in {where}"


def assert_zip_clean(path: Path) -> dict[str, str]:
    assert_clean(path.read_bytes(), path.name)
    members = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            blob = zf.read(info)
            assert_clean(blob, info.filename)
            members[info.filename.split("/", 1)[1]] = blob.decode("utf-8")
    return members


def test_the_zip_holds_what_a_bug_report_needs_and_no_planted_secret(planted, tmp_path):
    paths, settings, secrets = planted
    report = diagnostics.collect(
        paths,
        settings,
        secrets,
        status={"entries": 61, "skipped": 0, "vaults": []},
        runtime={"server": "http://127.0.0.1:8765", "server_error": None},
    )
    out = diagnostics.write_zip(report, tmp_path / "out" / "diag.zip")
    if os.name == "posix":
        assert out.stat().st_mode & 0o777 == 0o600
    members = assert_zip_clean(out)
    assert set(members) == {"README.txt", "summary.txt", "diagnostics.json", "log-tail.txt"}
    data = json.loads(members["diagnostics.json"])
    assert data["app"]["version"] and data["platform"]["python"] and data["platform"]["os"]
    assert data["platform"]["packages"].get("llama-cpp-python") == data["platform"]["llama_cpp"]
    profile = data["settings"]["connection_profiles"][0]
    assert profile["base_url"].startswith("https://***@api.example.com/v1?") and "mode=fast" in profile["base_url"]
    assert profile["extra_headers"] == {"X-Api-Key": "***", "HTTP-Referer": "https://example.org"}
    assert data["settings"]["vaults"][0]["name"] == "Obs"
    cache = data["index"]["cache"]
    assert [c["vault"] for c in cache] == ["sample"] and cache[0]["entries"] == 61
    assert data["index"]["running"]["entries"] == 61
    assert data["decision_records"][0]["injected"] == ["Saffre"] and data["decision_records"][0]["total_tokens"] == 42
    errors = data["recent_errors"]
    assert [e.split(" ", 3)[2] for e in errors] == ["ERROR", "WARNING"]
    assert "Traceback" in errors[0] and "api_key=***" in errors[0]
    assert data["runtime"]["server"] == "http://127.0.0.1:8765"
    tail = members["log-tail.txt"]
    assert tail.index("older line from the rotated file") < tail.index("the last ordinary line")
    assert "calling with key *** (an old version" in tail
    assert "DLE Desktop" in members["summary.txt"] and "61 entries" in members["summary.txt"]


def test_keys_only_the_keyring_knows_are_found_by_name(tmp_path, monkeypatch):
    backend = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        paths = resolve_paths(tmp_path / "data").ensure()
        secrets = SecretStore(use_keyring=True)
        secrets.set("ai-profile:p1", KEYRING_KEY)
        settings = planted_settings()
        log = paths.logs_dir / "dle-desktop.log"
        log.write_text(f"2026-01-01 11:00:00,000 INFO x: leaked {KEYRING_KEY}\n", encoding="utf-8")
        # Forget what the logging filter learned when the key was set: only the lookup can find it now.
        from dle_desktop import logging_setup

        monkeypatch.setattr(logging_setup, "_secrets", set())
        report = diagnostics.collect(paths, settings, SecretStore(use_keyring=True))
        members = assert_zip_clean(diagnostics.write_zip(report, tmp_path / "d.zip"))
        assert "leaked ***" in members["log-tail.txt"]
        assert KEYRING_KEY not in diagnostics.render_text(report)
    finally:
        keyring.set_keyring(previous)


def test_text_output_is_clean_too(planted):
    paths, settings, secrets = planted
    text = diagnostics.render_text(diagnostics.collect(paths, settings, secrets))
    assert_clean(text.encode(), "the text report")
    assert "===== diagnostics.json =====" in text and "the last ordinary line" in text


def test_an_empty_data_folder_still_gives_a_report(tmp_path):
    paths = resolve_paths(tmp_path / "fresh").ensure()
    report = diagnostics.collect(paths, Settings(), SecretStore(use_keyring=False))
    members = report.members()
    data = json.loads(members["diagnostics.json"])
    assert data["decision_records"] == [] and data["index"]["cache"] == [] and data["vectors"]["scopes"] == []
    assert members["log-tail.txt"].strip() == ""


def cli(*args, data: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", "--data-dir", str(data), "diagnostics", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_line_writes_a_clean_zip_or_text(planted, tmp_path):
    paths, _settings, _ = planted
    paths.settings_file.write_text(json.dumps(planted_settings().to_json()), encoding="utf-8")
    done = cli(data=paths.data_dir, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = sorted(tmp_path.glob("dle-desktop-diagnostics-*.zip"))
    assert len(written) == 1 and str(written[0]) in done.stdout
    members = assert_zip_clean(written[0])
    assert "api.example.com" in members["diagnostics.json"]
    done = cli("--out", str(tmp_path / "named.zip"), data=paths.data_dir, cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "named.zip").is_file()
    done = cli("--text", data=paths.data_dir, cwd=tmp_path)
    assert done.returncode == 0 and "===== diagnostics.json =====" in done.stdout
    assert_clean(done.stdout.encode(), "the command's text output")
    done = cli("--out", "-", data=paths.data_dir, cwd=tmp_path)
    assert done.returncode == 2 and "--text" in done.stderr


def test_redaction_rules():
    from dle_desktop.desktop.redact import Redactor, is_secret_name, redact_url

    for name in (
        "api_key",
        "apiKey",
        "X-Api-Key",
        "Authorization",
        "server_token",
        "password",
        "DLE_AI_KEY_X",
        "OPENAI_API_KEY",
        "client_secret",
        "xapikey",
    ):
        assert is_secret_name(name), name
    for name in (
        "keyword_occurrence_weighting",
        "max_tokens",
        "profile_key",
        "fix_refine_keys_in_fuzzy",
        "ai_search_profile_id",
        "keys",
        "PYTHON_KEYRING_BACKEND",
        "total_tokens",
    ):
        assert not is_secret_name(name), name
    assert redact_url("http://u:p@h:1/x?a=1&api_key=zz") == "http://***@h:1/x?a=1&api_key=***"
    assert redact_url("https://h/x?mode=1") == "https://h/x?mode=1"
    r = Redactor({"s3cr3t-value"})
    r.home = "/home/alice"
    assert r.final("/home/alice/vault and /home/alice") == "~/vault and ~"
    assert r.value({"token": "abc", "n": 5, "list": ["s3cr3t-value!"], "flag": True, "empty_key": ""}) == {
        "token": "***",
        "n": 5,
        "list": ["***!"],
        "flag": True,
        "empty_key": "",
    }
