#!/usr/bin/env python3
"""SillyTavern bridge latency (issue: "the bridge adds < 25 ms p50 to a generation at 10,000
entries with keywords only"): what the bridge's generate interceptor costs a generation, measured
with performance.now() inside a real SillyTavern page in headless Chromium, against a real
`dle-desktop serve` indexing a generated 10k-note vault.

The vault is bench_pipeline.generate_entries(n) (the entries the pipeline benchmark times), written
to disk as Markdown notes, and the chat is bench_pipeline.generate_chat over them: entries whose
keys are names and phrases, a chat that names a 40-entry cast, so a generation gives about a
hundred verdicts (126 at 10k), not the whole vault, and injects some. bench_index.generate_vault is not used: it is built to stress the
indexer (621 of its notes have one- or two-letter keys, 26 the key `a`), so under DLE's substring
matching every chat matched nearly every entry and the run timed a 1.6 MB answer no real vault
gives. Writing the pipeline's entries out was chosen over filtering generate_vault's short keys:
it reuses a vault already built for realistic matching (2.45 ms pipeline at 10k), with the same
fields, and makes the server's timings comparable with bench_pipeline's.

    python benchmarks/bench_st_bridge.py [--entries 10000] [--runs 200] [--st-version 1.19.0]
                                         [--workdir DIR] [--json]

Everything is started the way the end-to-end suite starts it (the classes of tests/e2e/sillytavern, imported), so
run `scripts/st-e2e` once first: it installs SillyTavern, Chromium and Playwright. See
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import yaml  # noqa: E402 - kept with the imports after the sys.path setup
from bench_index import cpu_counters, load_average, machine_info  # noqa: E402 - needs the sys.path setup above
from bench_pipeline import generate_chat, generate_entries  # noqa: E402 - needs the sys.path setup above

TARGET_P50_MS = 25.0
WARMUP = 10  # untimed generations first: the keyword automaton, Chromium's preflight cache, JIT
PREFIX_MESSAGES = 20  # generated messages after the character's greeting before the timed ones
DEFAULT_WORKDIR = REPO / "benchmarks" / "_work" / "st-bridge"

# In the page: per generation, one bare status round trip, then the interceptor as SillyTavern
# calls it. Interleaved, so machine load falls on both alike. The chat grows by one message per
# generation: the same chat length twice in a row is a swipe to DLE (it would roll back).
MEASURE_JS = """async ({prefix, extra, warmup, url, token}) => {
    const base = [...SillyTavern.getContext().chat, ...prefix];
    const out = {bridge: [], status: [], server: [], injected: [], verdicts: [], failures: [],
                 request_bytes: [], response_bytes: 0};
    for (let i = 0; i < extra.length; i++) {
        const chat = base.concat(extra.slice(0, i + 1));
        let t0 = performance.now();
        // The same fetch options as the bridge's own calls (api.js), so only the route differs.
        const r = await fetch(url + '/api/dle/v1/status', {headers: {'X-DLE-Token': token}, cache: 'no-store',
                                                           credentials: 'omit', mode: 'cors'});
        await r.json();
        const status = performance.now() - t0;
        const before = globalThis.dleDesktopBridge.state.last;
        t0 = performance.now();
        await globalThis.dleDesktopBridgeInterceptor(chat, 8192, () => {}, 'normal');
        const bridge = performance.now() - t0;
        const last = globalThis.dleDesktopBridge.state.last;
        if (!r.ok || !last || last === before) {  // state.last only changes on a successful retrieve
            out.failures.push(`${i}: status HTTP ${r.status}; ${globalThis.dleDesktopBridge.state.lastError}`);
            continue;
        }
        if (i < warmup) continue;
        out.bridge.push(bridge);
        out.status.push(status);
        const total = last.result?.timings_ms?.total;
        if (typeof total === 'number') out.server.push(total);
        out.injected.push(last.result.injected.length);
        out.verdicts.push(last.result.verdicts.length);
        out.request_bytes.push(JSON.stringify(chat).length);
        out.response_bytes = JSON.stringify(last.result).length;
    }
    return out;
}"""


def write_vault(root: Path, entries) -> int:
    """Each Entry as the note the parser reads back into it: YAML frontmatter (tags, keys and the
    other fields the entry sets), the title as `# H1`, the content as the body. Returns the count."""
    flags = (
        ("constant", "lorebook-always"),
        ("seed", "lorebook-seed"),
        ("bootstrap", "lorebook-bootstrap"),
        ("guide", "lorebook-guide"),
    )
    for e in entries:
        fm = {
            "tags": ["lorebook", *(tag for attr, tag in flags if getattr(e, attr)), *e.tags],
            "keys": list(e.keys),
            "priority": e.priority,
        }
        for name, value in (
            ("refine_keys", list(e.refine_keys)),
            ("requires", list(e.original_requires)),
            ("excludes", list(e.original_excludes)),
            ("cascade_links", list(e.original_cascade_links)),
            ("scanDepth", e.scan_depth),
            ("excludeRecursion", e.exclude_recursion or None),
            ("warmup", e.warmup),
            ("cooldown", e.cooldown),
            ("probability", e.probability),
            ("position", e.position),
            ("depth", e.depth),
            ("role", e.role),
            ("summary", e.summary),
        ):
            if value not in (None, [], ""):
                fm[name] = value
        path = root / e.path
        path.parent.mkdir(parents=True, exist_ok=True)
        front = yaml.safe_dump(fm, sort_keys=False, allow_unicode=True, default_flow_style=None, width=10_000)
        path.write_text(f"---\n{front}---\n# {e.title}\n\n{e.content}\n", encoding="utf-8")
    return len(entries)


def make_chat(entries, n: int) -> tuple[list[dict], list[str]]:
    """n chat messages in ST's own shape: bench_pipeline.generate_chat (30-80 words each, naming
    1-3 entries of a 40-entry cast; ~5% narrator lines), between the user and Seraphina, the
    character the page has open."""
    chat = generate_chat(entries, n)
    out = [
        {
            "name": "User" if m.is_user else "Seraphina" if not m.extra else m.name,
            "is_user": m.is_user,
            "is_system": False,
            "mes": m.mes,
            "send_date": "",
            "extra": dict(m.extra),
        }
        for m in chat.messages
    ]
    return out, chat.cast


def tree_cpu() -> float:
    """CPU seconds used so far by this process and every process below it (servers, node,
    Chromium): they are part of the measurement, not interference."""
    hz = os.sysconf("SC_CLK_TCK")
    stats = {}
    for d in Path("/proc").iterdir():
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            stats[int(d.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / hz)  # ppid, utime + stime
        except (ValueError, OSError, IndexError):
            continue
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in mine} - mine
        grew, mine = bool(more), mine | more
    return sum(stats[pid][1] for pid in mine if pid in stats)


def pct(xs: list[float]) -> dict:
    s = sorted(xs)

    def at(q: float) -> float:
        return s[min(len(s) - 1, round(q * (len(s) - 1)))]

    return {"p50": statistics.median(s), "p95": at(0.95), "p99": at(0.99), "min": s[0], "max": s[-1], "n": len(s)}


def run(args, log) -> dict:
    os.environ["DLE_ST_VERSION"] = args.st_version
    from playwright.sync_api import sync_playwright

    from dle_desktop.st_bridge import install as installer
    from tests.e2e.sillytavern.conftest import CHARACTER, CHROMIUM
    from tests.e2e.sillytavern.dle_server import DleServer
    from tests.e2e.sillytavern.sillytavern import USER, SillyTavern, chat_completion_settings, install_dir
    from tests.e2e.sillytavern.st_page import StPage
    from tests.fakes.ai_provider import FakeAiProvider

    work = args.workdir.resolve()
    shutil.rmtree(work, ignore_errors=True)  # wiped first, like benchmarks/_work
    work.mkdir(parents=True)
    log(f"generating {args.entries} notes ...")
    entries = generate_entries(args.entries).entries
    files = write_vault(work / "vault", entries)
    prefix, cast = make_chat(entries, PREFIX_MESSAGES + WARMUP + args.runs)
    prefix, extra = prefix[:PREFIX_MESSAGES], prefix[PREFIX_MESSAGES:]

    fake = st = server = pw = browser = None
    try:
        fake = FakeAiProvider().__enter__()  # SillyTavern's page wants a connected chat-completion API
        fake.default(lambda _req: "Fake LLM reply.")
        st = SillyTavern(install_dir(args.st_version), work / "sillytavern")
        st.seed_settings(chat_completion_settings(st.default_settings(), fake.url + "/v1"))
        server = DleServer(work / "dle", work / "vault")  # default settings: keywords only
        server.update_settings(server_allowed_origins=[st.url, f"http://localhost:{st.port}"])
        # As conftest's `dle` fixture: the real installer, into the suite's own data root.
        found = dataclasses.replace(installer.inspect(st.st_dir), data_root=st.data_root, users=(USER,), port=st.port)
        token = server.token()
        installer.install(found, server_url=server.url, token=token, user=USER)
        log("starting dle-desktop serve and SillyTavern ...")
        server.start()
        deadline = time.monotonic() + 180
        while (status := server.get("/api/dle/v1/status").json())["entries"] < files // 2 or status["syncing"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the index did not fill within 180 s: {status}")
            time.sleep(0.5)
        st.start()
        pw = sync_playwright().start()
        # --no-sandbox: as in the suite (root in CI, where Chromium's sandbox refuses to start).
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        page = StPage(browser.new_context(viewport={"width": 1280, "height": 900}).new_page(), st, work / "shots")
        (work / "shots").mkdir()
        page.open()
        page.wait_js("the DLE Desktop bridge to start", "() => globalThis.dleDesktopBridge?.ready === true")
        page.open_character(CHARACTER)  # a fresh data root: this chat is the benchmark's alone
        log(f"{WARMUP} warm-up + {args.runs} timed generations in the page ...")
        load0, cpu0, tree0, t0 = load_average(), cpu_counters(), tree_cpu(), time.perf_counter()
        got = page.evaluate(
            MEASURE_JS, {"prefix": prefix, "extra": extra, "warmup": WARMUP, "url": server.url, "token": token}
        )
        wall, cpu1, tree1 = time.perf_counter() - t0, cpu_counters(), tree_cpu()
        others = None if not (cpu0 and cpu1) else max(0.0, ((cpu1[0] - cpu0[0]) - (tree1 - tree0)) / wall)
        if got["failures"] or not got["bridge"]:
            raise RuntimeError(f"{len(got['failures'])} generations failed: {got['failures'][:5]}")
        return {
            "version": st.version,
            "entries": status["entries"],
            "skipped": status["skipped"],
            "cast": cast,
            "load": [load0, load_average()],
            "others": others,
            "wall": wall,
            **got,
        }
    except Exception:
        for name, proc in (("SillyTavern", st), ("dle-desktop serve", server)):
            if proc is not None:
                print(f"--- {name} log tail ---\n{proc.log_tail()}", file=sys.stderr)
        raise
    finally:  # every process we started, in reverse order, whatever happened
        for stop in (
            browser and browser.close,
            pw and pw.stop,
            st and st.stop,
            server and server.stop,
            fake and (lambda: fake.__exit__(None, None, None)),
        ):
            if stop:
                try:
                    stop()
                except Exception as exc:  # noqa: BLE001 - whatever one stop raises, the others still get stopped
                    print(f"while stopping: {exc!r}", file=sys.stderr)


def report(res: dict, args, machine: dict) -> dict:
    rows = {
        "bridge: interceptor, browser -> DLE -> placed": pct(res["bridge"]),
        "reference: bare GET /status round trip": pct(res["status"]),
    }
    if res["server"]:
        rows["server: pipeline timings_ms.total"] = pct(res["server"])
        rows["bridge minus server pipeline"] = pct([b - s for b, s in zip(res["bridge"], res["server"])])
    p50 = rows["bridge: interceptor, browser -> DLE -> placed"]["p50"]
    return {
        "machine": machine,
        "rows": rows,
        "p50_ms": p50,
        "target_ms": TARGET_P50_MS,
        "verdict": "PASS" if p50 < TARGET_P50_MS else "MISS",
        "injected_median": statistics.median(res["injected"]),
        "verdicts_median": statistics.median(res["verdicts"]),
        "request_bytes": [min(res["request_bytes"]), max(res["request_bytes"])],
        **{k: res[k] for k in ("version", "entries", "skipped", "cast", "load", "others", "wall", "response_bytes")},
    }


def print_report(r: dict, args) -> None:
    m = r["machine"]
    print(f"DLE Desktop SillyTavern bridge benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"command: python benchmarks/bench_st_bridge.py {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"machine: {m['cpu_count']} CPUs ({m['cpus_usable']} usable), {m['cpu_model']}; Python {m['python']}; {m['platform']}"
    )
    others = (
        "" if r["others"] is None else f"; other processes kept {r['others']:.2f} of the {m['cpu_count']} CPUs busy"
    )
    print(f"load:    1/5/15-min load average {r['load'][0]} at start of the timed loop, {r['load'][1]} at end{others}")
    if (r["others"] or 0) > 0.3:  # the machine is shared: say so where the figures are read
        print("note:    other processes were busy during the timed loop: the timings are inflated")
    print(
        f"setup:   SillyTavern {r['version']} in headless Chromium, dle-desktop serve with default settings "
        f"(keywords only); {r['entries']} entries indexed ({r['skipped']} skipped)"
    )
    print(
        "vault:   bench_pipeline.generate_entries written as Markdown notes (YAML frontmatter, # H1 title), "
        "chat from bench_pipeline.generate_chat; not bench_index.generate_vault, whose one- and two-letter "
        "keys match every chat (see the docstring)"
    )
    print(
        f"chat:    Seraphina's greeting + {PREFIX_MESSAGES} generated messages, one more per generation "
        f"({WARMUP} warm-up, {args.runs} timed); request {r['request_bytes'][0] // 1000}-{r['request_bytes'][1] // 1000} KB, "
        f"response {r['response_bytes'] // 1000} KB; median {r['injected_median']:g} entries injected, "
        f"{r['verdicts_median']:g} verdicts"
    )
    print()
    w = max(map(len, r["rows"]))
    print(f"{'ms':<{w}}  {'p50':>7} {'p95':>7} {'p99':>7} {'min':>7} {'max':>7}")
    for label, s in r["rows"].items():
        print(f"{label:<{w}}  " + " ".join(f"{s[k]:7.2f}" for k in ("p50", "p95", "p99", "min", "max")))
    print()
    print(
        f"{r['verdict']}: the bridge adds {r['p50_ms']:.2f} ms p50 per generation "
        f"(target < {TARGET_P50_MS:g} ms at 10,000 entries, keywords only)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entries", type=int, default=10_000, help="notes to generate (default 10000)")
    p.add_argument("--runs", type=int, default=200, help="timed generations (default 200)")
    p.add_argument("--st-version", default="1.19.0", help="SillyTavern version installed by scripts/st-e2e")
    p.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help="vault, server data and logs; wiped first, removed after a clean run (default benchmarks/_work/st-bridge/)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON (with every sample)")
    args = p.parse_args(argv)
    if args.entries < 20 or args.runs < 5:
        p.error("--entries must be at least 20 and --runs at least 5")
    res = run(args, lambda msg: print(msg, file=sys.stderr, flush=True))
    out = report(res, args, machine_info())
    if args.json:
        print(json.dumps({**out, "samples": {k: res[k] for k in ("bridge", "status", "server", "injected")}}, indent=1))
    else:
        print_report(out, args)
    shutil.rmtree(args.workdir.resolve(), ignore_errors=True)  # kept after a failure: the logs are there
    return 0


if __name__ == "__main__":
    sys.exit(main())
