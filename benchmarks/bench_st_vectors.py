#!/usr/bin/env python3
"""SillyTavern Vector API benchmark (issue 4, "Speed"): ST's request sequence against our
/api/vector/* routes over HTTP, and the same sequence against ST's own storage layer (vectra
0.2.2's LocalIndex, driven the way ST's `src/endpoints/vectors.js` drives it) where Node and
vectra are available.

    python benchmarks/bench_st_vectors.py [--sizes 1000,10000] [--dim 1024] [--ops 20]
                                          [--vectra DIR] [--workdir DIR] [--json]

Embedding is left out on both sides: the vectors are precomputed (our side receives them as ST's
`koboldcpp` source sends them, an `embeddings` map in the request), so the figures compare the
vector backends. For each collection size the collection is first filled (vectra: one insert; ours: inserts of
1,000 items, since 1,000 precomputed 1024-d vectors are already ~22 MB of JSON), then
`--ops` times each of the calls ST makes during chat use: `list` (chat sync, before every
insert), `insert` of 5 new items (ST 1.18's batch for most sources) and `query` with topK 3
(the generation interceptor). Medians are reported, and the ratio vectra / ours.

The vectra side per call does what ST does per request: a new `LocalIndex` on the collection
folder (which reads and parses the whole `index.json`), then `listItems`, `beginUpdate` +
`upsertItem` + `endUpdate` (which rewrites the whole file), or `queryItems`. It runs in-process
in Node with no HTTP in front, so it is a lower bound for ST; our side includes HTTP, JSON and
the route's validation. `--vectra DIR` is a folder whose `node_modules` holds vectra (for
example after `npm install vectra@0.2.2` there); without it the vectra side is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402 - kept with the imports after the sys.path setup

from dle_desktop.engine.engine import Engine  # noqa: E402 - needs the sys.path setup above
from dle_desktop.engine.thread import EngineThread  # noqa: E402 - needs the sys.path setup above
from dle_desktop.server.app import ServerRunner  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.paths import AppPaths  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.secrets import SecretStore  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.settings import Settings  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.sources import FolderSource  # noqa: E402 - needs the sys.path setup above

SEED = 20240604
FILL_CHUNK = 1000

NODE_SCRIPT = r"""
'use strict';
const path = require('path');
const fs = require('fs');
const { LocalIndex } = require('vectra');
const [dir, size, dim, ops] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
let seed = 12345;
function rand() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 - 0.5; }
function vec() { const v = []; let n = 0; for (let i = 0; i < dim; i++) { const x = rand(); v.push(x); n += x * x; } n = Math.sqrt(n); return v.map((x) => x / n); }
async function getIndex() {  // ST: a new LocalIndex per request, created if missing
  const store = new LocalIndex(path.join(dir, 'transformers', 'bench-collection'));
  if (!await store.isIndexCreated()) await store.createIndex();
  return store;
}
async function insert(items) {
  const store = await getIndex();
  await store.beginUpdate();
  for (const it of items) store.upsertItem({ vector: it.vector, metadata: { hash: it.hash, text: it.text, index: it.index } });
  await store.endUpdate();
}
async function list() { const store = await getIndex(); return (await store.listItems()).map((x) => Number(x.metadata.hash)); }
async function query(v, topK, threshold) {
  const store = await getIndex();
  const result = await store.queryItems(v, topK);
  return { metadata: result.filter((x) => x.score >= threshold).map((x) => x.item.metadata), hashes: result.map((x) => Number(x.item.metadata.hash)) };
}
function ms(t0) { return Number(process.hrtime.bigint() - t0) / 1e6; }
(async () => {
  let next = 0;
  const item = () => { const i = next++; return { hash: 1000000 + i, text: `memory ${i}`, index: i, vector: vec() }; };
  const bulk = Array.from({ length: size }, item);
  let t0 = process.hrtime.bigint();
  await insert(bulk);
  const out = { fill_ms: ms(t0), list: [], insert: [], query: [] };
  for (let k = 0; k < ops; k++) {
    t0 = process.hrtime.bigint(); const hashes = await list(); out.list.push(ms(t0));
    if (hashes.length < size) throw new Error('list lost items');
    const batch = Array.from({ length: 5 }, item);
    t0 = process.hrtime.bigint(); await insert(batch); out.insert.push(ms(t0));
    t0 = process.hrtime.bigint(); await query(vec(), 3, 0.25); out.query.push(ms(t0));
  }
  out.file_bytes = fs.statSync(path.join(dir, 'transformers', 'bench-collection', 'index.json')).size;
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class Ours:
    def __init__(self, workdir: Path) -> None:
        self.thread = EngineThread("bench-st-vectors").start()
        vault = workdir / "vault"
        vault.mkdir(parents=True, exist_ok=True)
        paths = AppPaths(workdir / "data", workdir / "data").ensure()
        self.engine = Engine(
            paths, Settings(), SecretStore(use_keyring=False), vault_override=[FolderSource("v", vault)]
        )
        self.thread.call(self.engine.start(initial_sync=False, watch=False), timeout=30)
        self.runner = ServerRunner(self.engine, "127.0.0.1", 0)
        self.thread.call(self.runner.start(), timeout=30)
        self.client = httpx.Client(base_url=self.runner.url, timeout=600)

    def post(self, route: str, body: dict | bytes):
        """POST a body (serialise it before timing: the vectra side has no client to encode)."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        r = self.client.post(f"/api/vector/{route}", content=content, headers={"Content-Type": "application/json"})
        if r.status_code != 200:
            raise RuntimeError(f"{route}: {r.status_code} {r.text[:200]}")
        return r

    def close(self) -> None:
        self.client.close()
        self.thread.call(self.runner.stop(), timeout=30)
        self.thread.call(self.engine.stop(), timeout=60)
        self.thread.stop()


def run_ours(workdir: Path, size: int, dim: int, ops: int) -> dict:
    rng = np.random.default_rng(SEED + size)
    server = Ours(workdir)
    cid = f"bench-{size}"
    src = {"source": "koboldcpp", "model": f"bench-{dim}"}
    counter = iter(range(10**9))

    def items(n: int) -> tuple[list[dict], dict]:
        vecs = unit_rows(rng, n, dim)
        out, emb = [], {}
        for v in vecs:
            i = next(counter)
            text = f"memory {i}"
            out.append({"hash": 1_000_000 + i, "text": text, "index": i})
            emb[text] = v.tolist()
        return out, emb

    try:
        fill_ms = 0.0
        for start in range(0, size, FILL_CHUNK):  # 1,000 items a request: ~22 MB of JSON, under the 32 MiB limit
            bulk, emb = items(min(FILL_CHUNK, size - start))
            body = json.dumps({"collectionId": cid, **src, "embeddings": emb, "items": bulk}).encode()
            t0 = time.perf_counter()
            server.post("insert", body)
            fill_ms += (time.perf_counter() - t0) * 1000
        out = {"fill_ms": fill_ms, "list": [], "insert": [], "query": []}
        for _ in range(ops):
            body = json.dumps({"collectionId": cid, **src}).encode()
            t0 = time.perf_counter()
            hashes = server.post("list", body).json()
            out["list"].append((time.perf_counter() - t0) * 1000)
            assert len(hashes) >= size
            batch, emb = items(5)
            body = json.dumps({"collectionId": cid, **src, "embeddings": emb, "items": batch}).encode()
            t0 = time.perf_counter()
            server.post("insert", body)
            out["insert"].append((time.perf_counter() - t0) * 1000)
            q = unit_rows(rng, 1, dim)[0].tolist()
            body = json.dumps(
                {"collectionId": cid, **src, "embeddings": {"q": q}, "searchText": "q", "topK": 3, "threshold": 0.25}
            ).encode()
            t0 = time.perf_counter()
            server.post("query", body)
            out["query"].append((time.perf_counter() - t0) * 1000)
        data = workdir / "data" / "vectors"
        out["disk_bytes"] = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
        return out
    finally:
        server.close()


def run_vectra(vectra_dir: Path, workdir: Path, size: int, dim: int, ops: int) -> dict | None:
    node = shutil.which("node")
    if node is None or not (vectra_dir / "node_modules" / "vectra").is_dir():
        return None
    script = workdir / "vectra_bench.js"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    env = {**os.environ, "NODE_PATH": str(vectra_dir / "node_modules")}
    done = subprocess.run(
        [node, str(script), str(workdir / "vectra-data"), str(size), str(dim), str(ops)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout)


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--vectra", type=Path, default=Path(os.environ.get("VECTRA_DIR", "/tmp/vectra-bench")))
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    base = Path(args.workdir or tempfile.mkdtemp(prefix="dle-bench-st-"))
    results = []
    started = time.time()
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    for size in sizes:
        work = base / f"size-{size}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        print(f"size {size}: ours ...", file=sys.stderr, flush=True)
        ours = run_ours(work / "ours", size, args.dim, args.ops)
        print(f"size {size}: vectra ...", file=sys.stderr, flush=True)
        vectra = run_vectra(args.vectra, work, size, args.dim, args.ops)
        results.append({"size": size, "ours": ours, "vectra": vectra})
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps({"dim": args.dim, "ops": args.ops, "results": results}, indent=1))
        return 0
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print("DLE Desktop SillyTavern Vector API benchmark, " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    print(f"command: python benchmarks/bench_st_vectors.py {' '.join(sys.argv[1:])}")
    print(
        f"machine: {os.cpu_count()} CPUs; Python {platform.python_version()}; {platform.platform()}; "
        f"node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip() if shutil.which('node') else '-'}"
    )

    def fmt(la: tuple[float, ...] | None) -> str:
        return "[" + ", ".join(f"{x:.2f}" for x in la) + "]" if la else "-"

    print(
        f"load:    1/5/15-min load average {fmt(load_start)} at start, {fmt(load)} at end "
        f"(figures are inflated when this is above the CPU count); {time.time() - started:.0f} s in all"
    )
    print(
        f"vectors: {args.dim} dimensions, precomputed (no embedding on either side); {args.ops} calls per figure, medians"
    )
    print("ours:    POST /api/vector/* over loopback HTTP (koboldcpp source, embeddings in the request)")
    print("vectra:  vectra 0.2.2 LocalIndex in Node, in-process, a new index object per call as ST makes per request")
    print()
    header = f"{'size':>7} {'call':<22} {'ours ms':>10} {'vectra ms':>11} {'vectra/ours':>12}"
    print(header)
    print("-" * len(header))
    for r in results:
        o, v = r["ours"], r["vectra"]
        rows = [
            ("fill", o["fill_ms"], v and v["fill_ms"]),
            ("list", med(o["list"]), v and med(v["list"])),
            ("insert 5 items", med(o["insert"]), v and med(v["insert"])),
            ("query topK 3", med(o["query"]), v and med(v["query"])),
        ]
        for name, ours_ms, vectra_ms in rows:
            ratio = f"{vectra_ms / ours_ms:10.1f}x" if vectra_ms else "-"
            vtxt = f"{vectra_ms:11.2f}" if vectra_ms else f"{'-':>11}"
            print(f"{r['size']:>7} {name:<22} {ours_ms:10.2f} {vtxt} {ratio:>12}")
        disk = f"ours {o['disk_bytes'] / 1e6:.1f} MB on disk"
        if v:
            disk += f", vectra index.json {v['file_bytes'] / 1e6:.1f} MB"
        print(f"{'':>7} {disk}")
    if not any(r["vectra"] for r in results):
        print(
            "\nvectra side skipped: needs `node` and vectra under --vectra DIR/node_modules "
            "(npm install vectra@0.2.2 in that folder)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
