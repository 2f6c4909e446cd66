#!/usr/bin/env python3
"""Graph view engine benchmark (issue 13, "Speed"): the ForceAtlas2 layout and the analysis
(communities + backbone + gaps) of `dle_desktop.core.graph`, on vaults written by
`bench_index.generate_vault`.

    python benchmarks/bench_graph.py [--entries 10000] [--small 254] [--runs 3] [--workdir DIR] [--json]

The generated vault's wiki links are denser than the issue's "about 30,000 edges" (about 70,000
distinct connected pairs at 10,000 notes), so the 10,000-entry figures are given twice: for the
vault as written, and for the same vault with its link edges thinned (seeded sample) until
30,000 pairs remain; requires, excludes and cascade edges are all kept. The small vault stands
in for DLE's 254-entry test vault (not in this repository): the same generator at 254 notes.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_index import cpu_counters, fmt_s, generate_vault, load_average, machine_info  # noqa: E402 - needs the sys.path setup above

from dle_desktop.core.entry import Entry  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.graph import (  # noqa: E402 - needs the sys.path setup above
    LoreGraph,
    analyse,
    backbone,
    build_graph,
    communities,
    gap_analysis,
    layout,
    requires_cycles,
)
from dle_desktop.core.index import IndexSnapshot, VaultSlice, build_snapshot  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.note_parser import parse_note  # noqa: E402 - needs the sys.path setup above

SEED = 20240602
TARGET_PAIRS = 30_000
TARGET_LAYOUT_LARGE_S = 10.0
TARGET_LAYOUT_SMALL_S = 0.5
TARGET_ANALYSIS_S = 3.0
DEFAULT_WORKDIR = REPO / "benchmarks" / "_work" / "graph"


def snapshot_of(root: Path) -> IndexSnapshot:
    entries = []
    for path in sorted(root.rglob("*.md")):
        got = parse_note("bench", path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
        if isinstance(got, Entry):
            entries.append(got)
    return build_snapshot([VaultSlice("bench", tuple(entries))])


def thinned(g: LoreGraph, pairs_wanted: int, seed: int = SEED) -> LoreGraph:
    """`g` with link edges dropped (seeded) until `pairs_wanted` connected pairs remain."""
    other = {(e.a, e.b) for e in g.edges if e.kind != "link"}
    link_only = sorted({(e.a, e.b) for e in g.edges if e.kind == "link"} - other)
    keep_links = max(0, pairs_wanted - len(other))
    kept = set(random.Random(seed).sample(link_only, min(keep_links, len(link_only)))) | other
    edges = tuple(e for e in g.edges if (e.a, e.b) in kept)
    return LoreGraph(entries=g.entries, edges=edges, requires=g.requires, index=g.index)


def timed(fn, runs: int) -> tuple[list[float], object]:
    samples, result = [], None
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - t)
    return samples, result


def edge_ratio(g: LoreGraph, positions) -> float:
    """Mean edge length / mean distance of random pairs: < 1 means linked entries sit together."""
    import numpy as np

    pairs, _ = g.simple_edges()
    if not len(pairs):
        return float("nan")
    el = np.linalg.norm(positions[pairs[:, 0]] - positions[pairs[:, 1]], axis=1).mean()
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, g.n, 20000), rng.integers(0, g.n, 20000)
    return float(el / np.linalg.norm(positions[i] - positions[j], axis=1).mean())


def run(args, log) -> dict:
    work = Path(args.workdir)
    if work.exists():
        shutil.rmtree(work)
    rows: list[dict] = []
    info: dict = {}

    def row(key, label, samples, target=None, note=""):
        med = statistics.median(samples)
        rows.append(
            {
                "key": key,
                "label": label,
                "samples": samples,
                "min": min(samples),
                "median": med,
                "max": max(samples),
                "target": target,
                "note": note,
                "verdict": "" if target is None else ("PASS" if med < target else "MISS"),
            }
        )
        log(f"  {label}: median {fmt_s(med)}")

    for name, n in (("large", args.entries), ("small", args.small)):
        log(f"generating and parsing {n} notes ...")
        generate_vault(work / name, n)
        snap = snapshot_of(work / name)
        samples, g = timed(lambda snap=snap: build_graph(snap), 1 if name == "large" else args.runs)
        row(
            f"build_{name}",
            f"build graph from snapshot ({g.n} entries)",
            samples,
            note="mention weights: DLE's title/key counts per edge, both directions",
        )
        graphs = {"vault": g}
        if name == "large":  # a sync after one edited note: unchanged pairs keep their weights
            raw = list(snap.slices[0].entries)
            k = len(raw) // 2
            path = work / name / raw[k].path
            raw[k] = parse_note("bench", raw[k].path, path.read_text(encoding="utf-8") + "\nEdited.\n")
            snap2 = build_snapshot([VaultSlice("bench", tuple(raw))], previous=snap)
            rs, _ = timed(lambda snap2=snap2, g=g: build_graph(snap2, previous=g), args.runs)
            row(
                "rebuild_large",
                f"rebuild graph after one edited note ({g.n} entries)",
                rs,
                note="build_graph(new snapshot, previous=graph): only the edited entry's pairs recounted",
            )
        if name == "large":
            graphs["30k"] = thinned(g, TARGET_PAIRS)
        for variant, gr in graphs.items():
            pairs, _ = gr.simple_edges()
            tag = f"{gr.n} entries, {len(pairs)} edges" + (" (links thinned)" if variant == "30k" else "")
            info[f"{name}_{variant}"] = {
                "entries": gr.n,
                "pairs": len(pairs),
                "edges_by_kind": dict(Counter(e.kind for e in gr.edges)),
            }
            target = TARGET_LAYOUT_LARGE_S if name == "large" else TARGET_LAYOUT_SMALL_S
            ls, lay = timed(lambda gr=gr: layout(gr, "balanced", seed=1), args.runs)
            row(
                f"layout_{name}_{variant}",
                f"layout, Balanced, {tag}",
                ls,
                target,
                note=f"{lay.iterations} iterations; edge/random distance {edge_ratio(gr, lay.positions):.2f}",
            )
            if name == "large":
                prev = lay.as_dict()
                drop = set(random.Random(SEED).sample(list(prev), 20))
                prev = {u: p for u, p in prev.items() if u not in drop}
                inc, _ = timed(lambda gr=gr, prev=prev: layout(gr, "balanced", seed=1, previous=prev), args.runs)
                row(
                    f"layout_incremental_{name}_{variant}",
                    f"incremental layout, 20 new, {tag}",
                    inc,
                    note="previous positions for all but 20 entries",
                )
            atarget = TARGET_ANALYSIS_S if name == "large" else None
            a_s, an = timed(lambda gr=gr: analyse(gr, seed=1), args.runs)
            row(f"analysis_{name}_{variant}", f"analysis (communities + backbone + cycles + gaps), {tag}", a_s, atarget)
            cs, comm = timed(lambda gr=gr: communities(gr, seed=1), args.runs)
            row(f"communities_{name}_{variant}", "  of which: Leiden communities", cs)
            bs, bb = timed(lambda gr=gr: backbone(gr), args.runs)
            row(f"backbone_{name}_{variant}", "  of which: disparity backbone (alpha 0.05)", bs)
            ys, _ = timed(lambda gr=gr: requires_cycles(gr), args.runs)
            row(f"cycles_{name}_{variant}", "  of which: circular requires", ys)
            gs, _ = timed(lambda gr=gr, comm=comm: gap_analysis(gr, comm), args.runs)
            row(f"gaps_{name}_{variant}", "  of which: gap analysis", gs)
            info[f"{name}_{variant}"].update(
                {
                    "communities": len(comm.groups),
                    "modularity": round(comm.modularity, 3),
                    "backbone_kept": len(bb.pairs),
                    "findings": dict(Counter(f.kind for f in an.findings)),
                }
            )
    return {"rows": rows, "info": info}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=10000)
    ap.add_argument("--small", type=int, default=254)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=str(DEFAULT_WORKDIR))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    machine = machine_info()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_start, cpu_start, t0 = load_average(), cpu_counters(), time.perf_counter()
    res = run(args, log)
    wall = time.perf_counter() - t0
    cpu_end, load_end = cpu_counters(), load_average()
    others = None
    if cpu_start and cpu_end:
        others = max(0.0, ((cpu_end[0] - cpu_start[0]) - (cpu_end[1] - cpu_start[1])) / wall)
    if args.json:
        print(
            json.dumps(
                {
                    "started": started,
                    "machine": machine,
                    "load": [load_start, load_end],
                    "other_processes_cpus": others,
                    "params": vars(args),
                    **res,
                },
                indent=1,
            )
        )
        return 0
    print(f"DLE Desktop graph engine benchmark, {started}")
    print(f"command: python benchmarks/bench_graph.py --entries {args.entries} --small {args.small} --runs {args.runs}")
    print(
        f"machine: {machine['cpu_count']} CPUs ({machine['cpus_usable']} usable), {machine['cpu_model']}; "
        f"Python {machine['python']}; {machine['platform']}"
    )
    print(
        f"load:    {load_start} at start, {load_end} at end"
        + ("" if others is None else f"; other processes kept {others:.2f} CPUs busy on average")
    )
    for k, v in res["info"].items():
        print(f"graph {k}: {json.dumps(v)}")
    print()
    w = max(len(r["label"]) for r in res["rows"])
    head = f"{'measurement':<{w}}  {'min':>9} {'median':>9} {'max':>9}  {'target':>9}  verdict"
    print(head)
    print("-" * len(head))
    for r in res["rows"]:
        target = f"< {fmt_s(r['target'])}" if r["target"] else ""
        print(
            f"{r['label']:<{w}}  {fmt_s(r['min']):>9} {fmt_s(r['median']):>9} {fmt_s(r['max']):>9}  "
            f"{target:>9}  {r['verdict']}"
        )
    print()
    for r in res["rows"]:
        if r["note"]:
            print(f"{r['label'].strip()}: {r['note']}")
    print(f"Verdicts compare the median of {args.runs} runs with the target. Whole run: {wall:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
