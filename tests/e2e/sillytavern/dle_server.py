"""DLE Desktop's headless server (`dle-desktop serve`) as the end-to-end suite runs it: a real
subprocess on a free port of 127.0.0.1, with a data folder and a lore vault of its own, that can
be stopped and started again on the same port (to prove a generation survives DLE Desktop being
down, or to start it with other settings)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.sillytavern.sillytavern import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]

#: The e2e vault: each entry's text carries a marker the tests look for in the prompt the LLM got.
VAULT_NOTES: dict[str, str] = {
    "Moonwell Tavern.md": """---
tags: [lorebook]
keys: [moonwell]
priority: 20
position: in_chat
depth: 2
role: system
---
# Moonwell Tavern
LORE-MOONWELL: the tavern by the old well, where the ferrymen drink.
""",
    "World Rules.md": """---
tags: [lorebook, lorebook-always]
priority: 5
---
# World Rules
LORE-CONSTANT: magic costs memories in this world.
""",
    "Ember Blade.md": """---
tags: [lorebook]
keys: [ember blade]
cooldown: 3
priority: 30
---
# Ember Blade
LORE-EMBER: a sword that hums when a liar is near.
""",
    "Harbour Map.md": """---
tags: [lorebook]
keys: [old map]
outlet: maps
---
# Harbour Map
LORE-OUTLET: the old map marks a sunken stair under the quay.
""",
    "Harbour Lamps.md": """---
tags: [lorebook]
keys: [harbour lamps]
priority: 40
---
# Harbour Lamps
LORE-LAMPS: the lamplighters' guild keeps the harbour lit all night.
""",
    # For test_steering: a note gated by location, notes in folders (one with a space in its
    # path) to filter by, and one long enough to pass 20 % of the context.
    "Places/Salt Market.md": """---
tags: [lorebook]
keys: [salt market]
location: Saltmarsh
---
# Salt Market
LORE-SALT: the salt market opens at low tide, on the mudflats below the sea wall.
""",
    "Places/Old Town/Clock Tower.md": """---
tags: [lorebook]
keys: [clock tower]
---
# Clock Tower
LORE-CLOCK: the clock tower runs eleven minutes slow, on purpose.
""",
    "People/Ferryman Oske.md": """---
tags: [lorebook]
keys: [oske]
---
# Ferryman Oske
LORE-OSKE: Oske rows the night ferry and takes payment only in stories.
""",
    "Harbour Chronicle.md": """---
tags: [lorebook]
keys: [chronicle]
---
# Harbour Chronicle
LORE-CHRONICLE: the harbour's chronicle, year by year.
"""
    + "".join(
        f"In year {year} of the harbour the tides rose, the ferries ran late and the lamplighters argued "
        "with the salt sellers about the price of oil and rope.\n"
        for year in range(1, 31)
    ),
}


def write_vault(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in VAULT_NOTES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


class DleServer:
    def __init__(
        self, data_dir: Path, vault: Path, *, embedding_model: Path | None = None, port: int | None = None
    ) -> None:
        self.data_dir = data_dir
        self.vault = vault
        self.embedding_model = embedding_model
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / f"{data_dir.name}-serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def settings_path(self) -> Path:
        return self.data_dir / "settings.json"

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", "QT_QPA_PLATFORM": "offscreen"}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dle_desktop", "--data-dir", str(self.data_dir), *args],
            cwd=REPO_ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=check,
        )

    def update_settings(self, **values: Any) -> None:
        """Write settings.json (only while stopped: the server reads it when it starts)."""
        current = json.loads(self.settings_path.read_text(encoding="utf-8")) if self.settings_path.exists() else {}
        current.update({k: list(v) if isinstance(v, tuple) else v for k, v in values.items()})
        self.settings_path.write_text(json.dumps(current, indent=2), encoding="utf-8")
        os.chmod(self.settings_path, 0o600)

    def token(self) -> str:
        return self.cli("server-token").stdout.strip()

    def olra_key(self) -> str:
        return self.cli("olra-key").stdout.strip()

    @property
    def olra_url(self) -> str:
        settings = json.loads(self.settings_path.read_text(encoding="utf-8"))
        return f"http://127.0.0.1:{settings['olra_port']}"

    def start(self, timeout: float = 90.0) -> DleServer:
        cmd = [
            sys.executable,
            "-m",
            "dle_desktop",
            "--data-dir",
            str(self.data_dir),
            "serve",
            "--port",
            str(self.port),
            "--vault",
            str(self.vault),
        ]
        if self.embedding_model is not None:
            cmd += ["--embedding-model", str(self.embedding_model)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                cwd=REPO_ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dle-desktop serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status = httpx.get(self.url + "/api/dle/v1/status", timeout=2.0)
                if status.status_code == 200 and status.json().get("entries", 0) >= len(VAULT_NOTES):
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"dle-desktop serve did not answer on {self.url} within {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def get(self, path: str, **kw) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10.0, **kw)

    def post(self, path: str, body: Any, **kw) -> httpx.Response:
        return httpx.post(self.url + path, json=body, timeout=30.0, **kw)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
