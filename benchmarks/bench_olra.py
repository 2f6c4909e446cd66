#!/usr/bin/env python3
"""The Obsidian REST emulation under DeepLore Enhanced's own request pattern (issue 11, "Speed and
robustness"): a full index fetch of a generated 10,000-note vault, the way DLE does it.

    python benchmarks/bench_olra.py [--entries 10000] [--runs 5] [--workdir DIR] [--json]

DLE's pattern, replayed exactly (`replay_dle`): `GET /vault/`, then every sub-folder listed with
at most 10 listings in flight (Promise.allSettled batches of 10, depth up to 20), then every `.md`
file fetched in batches of 50 concurrent GETs, each with DLE's headers only (`Authorization:
Bearer <key>`, `Accept: text/markdown`), a batch starting when the previous one has finished.

The server runs in a child process (the app: an OlraRunner on its own thread and loop, serving
the folder); the client is this process (the browser), over 127.0.0.1 with keep-alive and up to
50 connections. Every answer is checked: status 200 and the exact bytes on disk; a failure is any
other status, a transport error (reset, broken pipe, timeout) or a body that differs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402 - kept with the imports after the sys.path setup

from dle_desktop.vault.obsidian_rest import encode_vault_path  # noqa: E402 - needs the sys.path setup above

DEFAULT_WORKDIR = REPO / "benchmarks" / "_work" / "olra"
#: DLE's numbers (src/vault/obsidian-api.js).
LISTING_CONCURRENCY = 10
READ_BATCH = 50
MAX_DEPTH = 20
#: Targets: every request answered, and a 10,000-note fetch in at most 10 s.
TARGET_FETCH_S = 10.0


@dataclass
class DleFetch:
    """What one replay of DLE's index fetch saw."""

    listings: int = 0
    reads: int = 0
    failures: list[str] = field(default_factory=list)
    texts: dict[str, bytes] = field(default_factory=dict)
    read_latencies: list[float] = field(default_factory=list)  # seconds, per GET of a note
    list_seconds: float = 0.0
    read_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        return self.list_seconds + self.read_seconds


def dle_headers(key: str, accept: str = "application/json") -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Accept": accept}


class LeanClient:
    """A minimal HTTP/1.1 keep-alive client (up to `connections` sockets, reused): it costs the
    client about a tenth of what httpx does per request, so the figures measure the server.
    `await get(url, headers) -> (status, body)`; transport errors raise OSError."""

    def __init__(self, base_url: str, connections: int = READ_BATCH) -> None:
        host_port = base_url.split("://", 1)[1]
        self.host, _, port = host_port.rpartition(":")
        self.port = int(port)
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._gate = asyncio.Semaphore(connections)

    async def get(self, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
        async with self._gate:
            conn = self._idle.pop() if self._idle else await asyncio.open_connection(self.host, self.port)
            reader, writer = conn
            lines = [
                f"GET {url} HTTP/1.1",
                f"Host: {self.host}:{self.port}",
                *(f"{k}: {v}" for k, v in headers.items()),
            ]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            try:
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length, close = 0, False
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                    elif name.lower() == b"connection" and value.strip().lower() == b"close":
                        close = True
                body = await reader.readexactly(length)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                writer.close()
                raise OSError(f"the connection ended mid-answer: {exc}") from exc
            except OSError:
                writer.close()
                raise
            if close:
                writer.close()
            else:
                self._idle.append(conn)
            return int(head.split(b" ", 2)[1]), body

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


async def _get(client, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    if isinstance(client, LeanClient):
        return await client.get(url, headers)
    r = await client.get(url, headers=headers)
    return r.status_code, r.content


async def replay_dle(client, key: str, check=None) -> DleFetch:
    """DLE's full index fetch against `client` (an httpx.AsyncClient whose base_url is the
    emulation, or a LeanClient). `check(path, bytes)` may return an error text for a body that is
    not what it should be."""
    out = DleFetch()
    started = time.perf_counter()
    notes: list[str] = []

    async def listing(folder: str) -> list[str]:
        url = "/vault/" + encode_vault_path(folder.rstrip("/"), folder=True) if folder else "/vault/"
        try:
            status, body = await _get(client, url, dle_headers(key))
        except (httpx.HTTPError, OSError) as exc:
            out.failures.append(f"GET {url}: {type(exc).__name__}: {exc}")
            return []
        out.listings += 1
        if status != 200:
            out.failures.append(f"GET {url}: HTTP {status}")
            return []
        return [f"{folder}{name}" for name in json.loads(body)["files"]]

    level = [("", 0)]
    while level:
        following: list[tuple[str, int]] = []
        for i in range(0, len(level), LISTING_CONCURRENCY):
            batch = level[i : i + LISTING_CONCURRENCY]
            results = await asyncio.gather(*(listing(f) for f, _ in batch))
            for (_, depth), names in zip(batch, results):
                for name in names:
                    if name.endswith("/"):
                        if depth + 1 < MAX_DEPTH:
                            following.append((name, depth + 1))
                    elif name.lower().endswith(".md"):
                        notes.append(name)
        level = following
    out.list_seconds = time.perf_counter() - started

    async def read(path: str) -> None:
        url = "/vault/" + encode_vault_path(path)
        t0 = time.perf_counter()
        try:
            status, body = await _get(client, url, dle_headers(key, "text/markdown"))
        except (httpx.HTTPError, OSError) as exc:
            out.failures.append(f"GET {url}: {type(exc).__name__}: {exc}")
            return
        out.read_latencies.append(time.perf_counter() - t0)
        out.reads += 1
        if status != 200:
            out.failures.append(f"GET {url}: HTTP {status}")
            return
        problem = check(path, body) if check else None
        if problem:
            out.failures.append(f"GET {url}: {problem}")
            return
        out.texts[path] = body

    started = time.perf_counter()
    for i in range(0, len(notes), READ_BATCH):
        await asyncio.gather(*(read(p) for p in notes[i : i + READ_BATCH]))
    out.read_seconds = time.perf_counter() - started
    return out


def dle_client(base_url: str, verify=True) -> httpx.AsyncClient:
    """A client like a browser tab running DLE: keep-alive, up to 50 connections at once."""
    return httpx.AsyncClient(
        base_url=base_url,
        verify=verify,
        timeout=httpx.Timeout(30.0),
        limits=httpx.Limits(max_connections=READ_BATCH, max_keepalive_connections=READ_BATCH),
    )


def disk_checker(root: Path):
    def check(path: str, body: bytes) -> str | None:
        expected = root.joinpath(*path.split("/")).read_bytes()
        return None if body == expected else f"body differs from the file ({len(body)} vs {len(expected)} bytes)"

    return check


# -- the server in a child process --------------------------------------------------------------

_SERVER = r"""
import sys, time, json
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from dle_desktop.olra import OlraRunner
from dle_desktop.state.paths import AppPaths
from dle_desktop.state.secrets import SecretStore
from dle_desktop.vault.sources import FolderSource

class _Indexer:
    def __init__(self, sources): self.sources = sources

class _Engine:  # what the runner reads of the engine: the open vaults
    def __init__(self, sources): self.indexer = _Indexer(sources)

data = Path(sys.argv[3])
runner = OlraRunner(_Engine([FolderSource("bench", Path(sys.argv[2]))]), SecretStore(use_keyring=False),
                    AppPaths(data, data), port=0)
if not runner.start():
    print(json.dumps({"error": runner.error}), flush=True); sys.exit(1)
print(json.dumps({"url": runner.url, "key": runner.key()}), flush=True)
sys.stdin.read()
runner.stop()
"""


def start_server(vault: Path, data: Path) -> tuple[subprocess.Popen, str, str]:
    data.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(REPO), str(vault), str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = json.loads(proc.stdout.readline())
    if "error" in line:
        raise SystemExit(f"the server did not start: {line['error']}")
    return proc, line["url"], line["key"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ap.add_argument(
        "--client",
        choices=("lean", "httpx"),
        default="lean",
        help="lean: a minimal keep-alive client (measures the server); httpx: httpx.AsyncClient",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from benchmarks.bench_index import generate_vault

    args.workdir.mkdir(parents=True, exist_ok=True)
    vault = generate_vault(args.workdir / "vault", args.entries)
    md_files = sum(1 for _ in vault.root.rglob("*.md"))
    print(f"vault: {md_files} .md files, {vault.bytes / 1e6:.1f} MB", file=sys.stderr)
    proc, url, key = start_server(vault.root, args.workdir / "data")
    runs: list[DleFetch] = []
    own_cpu = time.process_time()
    try:
        check = disk_checker(vault.root)

        async def go() -> None:
            for i in range(args.runs):
                opened = LeanClient(url) if args.client == "lean" else dle_client(url)
                async with opened as client:  # a fresh page load: new connections
                    fetch = await replay_dle(client, key, check)
                runs.append(fetch)
                print(
                    f"run {i + 1}: {fetch.seconds:.2f} s, {fetch.reads} reads, {len(fetch.failures)} failures",
                    file=sys.stderr,
                )

        asyncio.run(go())
    finally:
        own_cpu = time.process_time() - own_cpu
        proc.stdin.close()
        proc.wait(30)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = child.ru_utime + child.ru_stime

    totals = [r.seconds for r in runs]
    lat = [x for r in runs for x in r.read_latencies]
    failures = sum(len(r.failures) for r in runs)
    requests = sum(r.listings + r.reads for r in runs)
    figures = {
        "entries": args.entries,
        "md_files": md_files,
        "runs": args.runs,
        "client": args.client,
        "fetch_s": {"min": min(totals), "median": statistics.median(totals), "max": max(totals)},
        "listing_s_median": statistics.median(r.list_seconds for r in runs),
        "reads_per_s_median": statistics.median(r.reads / r.read_seconds for r in runs),
        "requests_per_s_median": statistics.median((r.listings + r.reads) / r.seconds for r in runs),
        "get_ms": {"p50": _pct(lat, 0.5) * 1e3, "p95": _pct(lat, 0.95) * 1e3, "max": max(lat) * 1e3},
        "requests": requests,
        "failures": failures,
        "server_cpu_ms_per_request": server_cpu / requests * 1e3,
        "client_cpu_ms_per_request": own_cpu / requests * 1e3,
        "load_average": os.getloadavg(),
        "first_failures": [f for r in runs for f in r.failures][:5],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    verdict = "PASS" if failures == 0 and figures["fetch_s"]["median"] <= TARGET_FETCH_S else "MISS"
    print("# bench_olra: DLE's index fetch from the Obsidian REST emulation")
    print(f"# {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}")
    print(
        f"# vault: {args.entries} generated notes ({md_files} .md files, {vault.bytes / 1e6:.1f} MB); "
        f"{args.runs} runs, each a fresh {args.client} client (new connections, up to 50)"
    )
    print(
        f"full index fetch (list + read)  min {figures['fetch_s']['min']:.2f} s  median "
        f"{figures['fetch_s']['median']:.2f} s  max {figures['fetch_s']['max']:.2f} s  (target <= {TARGET_FETCH_S:g} s)"
    )
    print(f"recursive listing               median {figures['listing_s_median'] * 1e3:.0f} ms")
    print(
        f"note GETs                       median {figures['reads_per_s_median']:.0f} /s "
        f"(all requests {figures['requests_per_s_median']:.0f} /s)"
    )
    print(
        f"per GET (batches of 50)         p50 {figures['get_ms']['p50']:.1f} ms  p95 {figures['get_ms']['p95']:.1f} ms  "
        f"max {figures['get_ms']['max']:.1f} ms"
    )
    print(
        f"CPU per request                 server {figures['server_cpu_ms_per_request']:.2f} ms (whole child process, "
        f"vault start-up included)  client {figures['client_cpu_ms_per_request']:.2f} ms"
    )
    print(f"load average at the end         {' '.join(f'{x:.2f}' for x in figures['load_average'])}")
    print(f"requests {requests}, failures {failures}")
    for f in figures["first_failures"]:
        print(f"  failure: {f}")
    print(f"verdict: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
