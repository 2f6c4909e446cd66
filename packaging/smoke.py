"""The packaged build's smoke test (run by `scripts/package --smoke`): the bundle in
`dist/dle-desktop/` is started as a user would start it, never through the source tree.

Checks, each a separate process of the bundle with a private data folder:
`--version`; `index` and `health` on the sample vault the bundle carries; `serve` answering
`/api/dle/v1/status`; `embed` with a tiny generated GGUF; the Graph view of a 1,600-note vault
drawn by its own process (the bundle started again as a multiprocessing child); the window
opening offscreen with its first index and quitting cleanly; no file of the bundle naming the build machine's checkout or
virtual environment. Prints the bundle's size and the window's cold start, and with `--figures`
writes them to a file (benchmarks/results/package.txt).

Exit code 0 when every check passed; each failure is printed with the command's output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "dist" / "dle-desktop"
EXE = BUNDLE / ("dle-desktop.exe" if sys.platform == "win32" else "dle-desktop")
TARGET_START_S = 2.0


class Failed(Exception):
    pass


def _env(data: Path) -> dict[str, str]:
    # Only what a desktop session has: no PYTHONPATH, no virtual environment, a fresh HOME.
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(data / "home"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "XDG_RUNTIME_DIR": str(data / "run"),
    }
    (data / "home").mkdir(parents=True, exist_ok=True)
    (data / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    return env


def run(args: list[str], data: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [str(EXE), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(data), cwd=str(data))
    if proc.returncode != 0:
        raise Failed(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_version(tmp: Path) -> str:
    out = run(["--version"], tmp).stdout.strip()
    if not out.startswith("dle-desktop "):
        raise Failed(f"--version printed {out!r}")
    return out


def check_index_and_health(tmp: Path) -> int:
    data = ["--data-dir", str(tmp / "data")]
    index = json.loads(run([*data, "index", "--json", "--no-content"], tmp).stdout)
    entries = index["entries"] if isinstance(index, dict) else index
    if len(entries) < 20:
        raise Failed(f"index found {len(entries)} entries in the bundled sample vault")
    health = json.loads(run([*data, "health", "--json"], tmp).stdout)
    if not isinstance(health, (dict, list)):
        raise Failed("health --json printed no report")
    return len(entries)


def check_serve(tmp: Path) -> dict:
    port = free_port()
    proc = subprocess.Popen(
        [str(EXE), "--data-dir", str(tmp / "data"), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(tmp),
        cwd=str(tmp),
    )
    try:
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Failed(f"serve exited {proc.returncode}: {proc.stdout.read()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/dle/v1/status", timeout=2) as r:
                    body = json.loads(r.read())
                    if r.status == 200:
                        return body
            except OSError as exc:
                last = exc
            time.sleep(0.2)
        raise Failed(f"serve did not answer /api/dle/v1/status within 60 s ({last})")
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise Failed("serve did not stop within 20 s of SIGTERM") from None
        if rc not in (0, -15):
            raise Failed(f"serve ended with {rc} after SIGTERM")


def check_embed(tmp: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_gguf import make_tiny_qwen3_gguf  # the generator runs here, not in the bundle

    model = make_tiny_qwen3_gguf(tmp / "tiny-qwen3.gguf")
    out = json.loads(
        run(["embed", "--embedding-model", str(model), "--text", "the lantern quay at dusk", "--json"], tmp).stdout
    )
    vec = out.get("vector") or out.get("embedding") or []
    if len(vec) != 64:
        raise Failed(f"embed returned a vector of {len(vec)} numbers, expected 64")
    return len(vec)


def window_start(tmp: Path, run_no: int) -> float:
    """Seconds from starting the bundle to its window on the screen with the first index shown."""
    env = _env(tmp) | {"DLE_DESKTOP_EXIT_WHEN_SHOWN": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(EXE), "--data-dir", str(tmp / f"gui-{run_no}")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=str(tmp),
    )
    seen = None
    lines = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            lines.append(line)
            if "DLE-DESKTOP-WINDOW-VISIBLE" in line and seen is None:
                seen = time.perf_counter() - t0
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise Failed("the window did not quit within 60 s") from None
    if seen is None:
        raise Failed(f"the window never showed (exit {rc}):\n{''.join(lines)[-3000:]}")
    if rc != 0:
        raise Failed(f"the window quit with exit code {rc}:\n{''.join(lines)[-3000:]}")
    return seen


def check_graph_process(tmp: Path) -> str:
    """The first index and the Graph view of a vault large enough for their worker processes
    (1,000 and 1,500 entries and up): in the bundle those processes are this same executable
    started again, which only works if the entry point hands them to multiprocessing
    (`freeze_support`)."""
    vault = tmp / "graph-vault"
    vault.mkdir()
    for i in range(1600):
        (vault / f"Note {i:04}.md").write_text(
            f"---\ntags: [lorebook]\nkeys: [key{i}]\n---\n# Note {i:04}\n"
            f"Near [[Note {(i + 1) % 1600:04}]] and [[Note {(i * 7) % 1600:04}]].\n",
            encoding="utf-8",
        )
    # The first index of 1,000 notes and more reads them in worker processes: started the same way.
    indexed = run(
        ["--data-dir", str(tmp / "index-data"), "--vault", str(vault), "index", "--json", "--no-content"], tmp
    )
    found = json.loads(indexed.stdout)
    count = len(found["entries"] if isinstance(found, dict) else found)
    if count != 1600 or "worker processes failed" in indexed.stderr:
        raise Failed(f"the first index of 1,600 notes found {count} entries\n{indexed.stderr[-3000:]}")
    env = _env(tmp) | {"DLE_DESKTOP_EXIT_WHEN_SHOWN": "graph"}
    proc = subprocess.run(
        [str(EXE), "--data-dir", str(tmp / "graph-data"), "--vault", str(vault)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=str(tmp),
    )
    out = proc.stdout + proc.stderr
    shown = next((line for line in out.splitlines() if line.startswith("DLE-DESKTOP-GRAPH-")), None)
    if shown is None or not shown.startswith("DLE-DESKTOP-GRAPH-SHOWN") or proc.returncode != 0:
        raise Failed(f"the Graph view did not show (exit {proc.returncode}): {shown}\n{out[-3000:]}")
    if not shown.endswith("in a process"):
        raise Failed(f"the Graph view's work did not run in its own process: {shown}")
    return shown.removeprefix("DLE-DESKTOP-GRAPH-SHOWN ")


def check_no_build_paths() -> list[str]:
    needles = {str(ROOT).encode(), str(Path(sys.prefix)).encode()}
    found = []
    for path in BUNDLE.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                found.append(str(path.relative_to(BUNDLE)))
    return found


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="smoke-test the packaged build in dist/dle-desktop")
    ap.add_argument("--figures", type=Path, help="also write the size and start-up figures to this file")
    ap.add_argument("--tarball", type=Path, help="the tarball scripts/package made (its size is reported)")
    args = ap.parse_args(argv)
    if not EXE.is_file():
        print(f"no bundle at {EXE}: run scripts/package first", file=sys.stderr)
        return 2
    failures: list[str] = []
    facts: dict[str, object] = {}
    tmp = Path(tempfile.mkdtemp(prefix="dle-bundle-smoke-"))
    steps = [
        ("version", check_version),
        ("index + health", check_index_and_health),
        ("serve", check_serve),
        ("embed", check_embed),
        ("graph process", check_graph_process),
    ]
    try:
        for name, step in steps:
            try:
                facts[name] = step(tmp)
                print(f"ok    {name}: {facts[name] if not isinstance(facts[name], dict) else 'answered'}")
            except (Failed, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as exc:
                failures.append(f"{name}: {exc}")
                print(f"FAIL  {name}: {exc}")
        starts = []
        try:
            for i in range(3):
                starts.append(window_start(tmp, i))
            print(f"ok    window: visible after {', '.join(f'{s:.2f}' for s in starts)} s, quit cleanly")
        except (Failed, OSError) as exc:
            failures.append(f"window: {exc}")
            print(f"FAIL  window: {exc}")
        leaks = check_no_build_paths()
        if leaks:
            failures.append(f"build paths inside the bundle: {', '.join(leaks[:10])}")
            print(f"FAIL  build paths: {len(leaks)} files name {ROOT} or {sys.prefix}: {', '.join(leaks[:10])}")
        else:
            print("ok    no file names the build checkout or its virtual environment")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bundle_mb = size_mb(BUNDLE)
    lines = [
        f"Packaged build (scripts/package --smoke), {time.strftime('%Y-%m-%d %H:%M')}",
        f"machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}",
        f"bundle: dist/dle-desktop, {bundle_mb:.0f} MB in {sum(1 for _ in BUNDLE.rglob('*'))} files",
    ]
    if args.tarball and args.tarball.is_file():
        lines.append(f"tarball: {args.tarball.name}, {args.tarball.stat().st_size / 1e6:.0f} MB")
    if starts:
        first, med = starts[0], statistics.median(starts)
        verdict = "PASS" if med < TARGET_START_S else "MISS"
        lines.append(
            f"window visible with the sample vault's index, from starting the bundle: first {first:.2f} s "
            f"(the first start after the build), median of {len(starts)} {med:.2f} s -> {verdict} (target < {TARGET_START_S:g} s)"
        )
    lines.append("checks: " + ("all passed" if not failures else f"{len(failures)} FAILED"))
    text = "\n".join(lines)
    print(text)
    if args.figures:
        args.figures.write_text(text + "\n", encoding="utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
