"""An Obsidian REST vault through the whole stack: the CLI's --vault URL, and the engine's polling."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dle_desktop.engine.engine import Engine
from dle_desktop.engine.thread import EngineThread
from dle_desktop.state.paths import resolve_paths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, VaultConfig
from tests.fakes.obsidian_server import FakeObsidian

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_vault"


def _cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_indexes_rest_vault_like_the_folder(tmp_path):
    folder = _cli("index", "--json", "--vault", str(SAMPLE), data_dir=tmp_path / "a")
    assert folder.returncode == 0, folder.stderr
    with FakeObsidian(SAMPLE, api_key="s3cret-key") as srv:
        rest = _cli("index", "--json", "--vault", f"http://s3cret-key@127.0.0.1:{srv.port}", data_dir=tmp_path / "b")
    assert rest.returncode == 0, rest.stderr
    a, b = json.loads(folder.stdout), json.loads(rest.stdout)

    def comparable(doc):
        return sorted(
            (e["path"], e["title"], e["content_hash"], tuple(e["keys"]), e["content"]) for e in doc["entries"]
        )

    assert comparable(a) == comparable(b)
    assert len(b["entries"]) == 61
    assert {s["path"] for s in a["skipped"]} == {s["path"] for s in b["skipped"]}
    assert "s3cret-key" not in rest.stdout + rest.stderr
    log = tmp_path / "b" / "logs" / "dle-desktop.log"
    assert not log.exists() or "s3cret-key" not in log.read_text(encoding="utf-8")


def test_cli_reports_wrong_key_clearly(tmp_path):
    with FakeObsidian(SAMPLE, api_key="right") as srv:
        r = _cli("index", "--vault", f"http://wrong@127.0.0.1:{srv.port}", data_dir=tmp_path)
    assert r.returncode == 2
    assert "wrong" not in r.stderr
    assert "key" in r.stderr.lower()


def test_cli_refuses_public_host(tmp_path):
    r = _cli("index", "--vault", "http://k@8.8.8.8:27123", data_dir=tmp_path)
    assert r.returncode == 2
    assert "error:" in r.stderr


def test_engine_polls_rest_vault_and_sees_changes(tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault)
    with FakeObsidian(vault, api_key="k") as srv:
        paths = resolve_paths(tmp_path / "data").ensure()
        secrets = SecretStore(use_keyring=False)
        cfg = VaultConfig(name="remote", kind="obsidian-rest", host="127.0.0.1", port=srv.port)
        secrets.set(cfg.secret_id, "k")
        settings = Settings(vaults=(cfg,), sync_polling_interval=1)
        engine = Engine(paths, settings, secrets)
        thread = EngineThread().start()
        try:
            thread.call(engine.start(), timeout=30)
            thread.call(engine.wait_ready(), timeout=30)
            assert len(engine.snapshot) == 61
            (vault / "Polled.md").write_text("---\ntags: [lorebook]\n---\n# Polled\nx\n", encoding="utf-8")
            deadline = time.monotonic() + 15
            while len(engine.snapshot) != 62 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(engine.snapshot) == 62
            assert engine.status()["vaults"][0]["kind"] == "obsidian-rest"
            assert not any(f.code == "vault_without_key" for f in engine.health().warnings)
        finally:
            thread.call(engine.stop(), timeout=30)
            thread.stop()
