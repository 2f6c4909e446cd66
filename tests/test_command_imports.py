"""Issue 24: each command imports only what it uses. `--version`, `index` and `health` load
neither the HTTP server, the vector store, the HTTP client nor Qt (a real process, on the sample
vault): what a command does not import costs it no start-up time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "resources" / "sample_vault"
#: Module prefixes these commands must not load.
HEAVY = ("dle_desktop.server", "dle_desktop.vectors", "dle_desktop.olra", "PySide6", "uvicorn", "starlette", "httpx")

PROBE = """
import json, runpy, sys
sys.argv = ["dle-desktop", *json.loads(sys.argv[1])]
try:
    runpy.run_module("dle_desktop", run_name="__main__")
except SystemExit as exit:
    code = exit.code
else:
    code = 0
print("MODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def probe(tmp_path: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, dict]:
    """`dle-desktop args` in a fresh process: the finished process and what PROBE reported (the
    exit code, the modules loaded)."""
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["--data-dir", str(tmp_path / "data"), *args])],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stderr[-2000:]
    return done, json.loads(line[len("MODULES ") :])


@pytest.mark.parametrize(
    "args",
    [["--version"], ["index", "--vault", str(SAMPLE)], ["health", "--json", "--vault", str(SAMPLE)]],
    ids=["version", "index", "health"],
)
def test_a_command_loads_only_what_it_uses(tmp_path: Path, args: list[str]):
    done, seen = probe(tmp_path, args)
    assert seen["code"] in (0, None), done.stderr[-2000:]
    loaded = sorted({m for m in seen["modules"] if m.startswith(HEAVY)})
    assert loaded == [], f"{' '.join(args)} loaded {loaded[:10]}"
    if args[0] == "index":
        assert "entries" in done.stdout  # it did its work


def test_a_warm_index_loads_no_numpy(tmp_path: Path):
    """With the index cached and no note changed, nothing is hashed or searched: numpy (a tenth of
    a warm `index` to load) stays unloaded."""
    seen = []
    for _ in range(2):  # the first run writes the cache, the second starts from it
        seen.append(probe(tmp_path, ["index", "--vault", str(SAMPLE)])[1]["modules"])
    assert "numpy" in seen[0]  # the cold run read and hashed every note
    assert "numpy" not in seen[1]
