#!/usr/bin/env python3
"""AI search overhead (issue 5, "Speed"): our own work around one AI call for 500 candidates,
the network excluded. Target: under 10 ms; a cache hit answers without any network call.

    python benchmarks/bench_ai.py [--candidates 500] [--rounds 200] [--json]

- The vault: `--candidates` lore entries with keys, summaries of ~40 words and bodies of ~250
  words, built with the real note parser and snapshot builder from a fixed seed; a chat of 12
  messages naming many of them, so two-stage mode offers every entry to the AI.
- "miss": `AiSearch.select` for a pending generation whose answer is not cached: manifest (500
  blocks), system prompt, user message, manifest key, cache lookup, request building in the
  provider adapter, the HTTP exchange with an in-process httpx transport that answers at once
  (so no socket time is counted), response envelope parsing, the tolerant extractor on a
  20-pick answer, title matching against 500 candidates, the threshold, storing in the cache.
- "hit": the same generation again: answered from the cache; the transport counts calls to
  prove none was made.
- The parts are also timed alone, to show where the time goes.

Figures are printed and written to benchmarks/results/ai.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402 - kept with the imports after the sys.path setup

from dle_desktop.ai.cache import manifest_key  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ai.client import AiClient  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ai.extract import extract_selection, match_titles, order_and_threshold  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ai.manifest import build_chat_context, build_manifest, build_user_message, system_prompt  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ai.search import AiSearch  # noqa: E402 - needs the sys.path setup above
from dle_desktop.ai.service import AiService  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.index import VaultSlice, build_snapshot  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.note_parser import parse_note  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.chat import ChatMessage  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.config import MatchConfig  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.run import Pending, begin_generation  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.state import ChatState  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.secrets import SecretStore  # noqa: E402 - needs the sys.path setup above
from dle_desktop.state.settings import settings_from_mapping  # noqa: E402 - needs the sys.path setup above

SEED = 20261129
TARGET_MS = 10.0
WORDS = (
    "river lantern quay tide salt ledger harbor guild market storm bell fog reed delta ferry moon oath "
    "smuggler archive copper gull beacon rope tavern island canal bridge song ash ember winter"
).split()


def make_snapshot(n: int, rng: random.Random):
    entries = []
    for i in range(n):
        title = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i}"
        summary = " ".join(rng.choice(WORDS) for _ in range(40))
        body = " ".join(rng.choice(WORDS) for _ in range(250))
        text = f'---\ntags: [lorebook]\nkeys: ["k{i}"]\nsummary: "{summary}"\n---\n# {title}\n{body}\n'
        e = parse_note("bench", f"{title}.md", text)
        entries.append(e)
    return build_snapshot([VaultSlice("bench", tuple(entries))])


def make_chat(n: int, rng: random.Random) -> list[ChatMessage]:
    """12 messages that together name every entry's key, so all are keyword candidates."""
    keys = [f"k{i}" for i in range(n)]
    per = -(-n // 12)
    out = []
    for m in range(12):
        words = keys[m * per : (m + 1) * per] + [rng.choice(WORDS) for _ in range(20)]
        out.append(ChatMessage(name="User" if m % 2 == 0 else "Bot", mes=" ".join(words), is_user=m % 2 == 0))
    return out


def answer_json(snapshot, rng: random.Random, picks: int = 20) -> str:
    chosen = rng.sample(list(snapshot.entries), picks)
    items = [
        {
            "title": e.title if i % 5 else e.title.lower() + "s",
            "confidence": rng.choice(("high", "medium", "low")),
            "reason": "named in the recent chat",
        }
        for i, e in enumerate(chosen)
    ]
    return json.dumps({"selected": items})


class InstantProvider(httpx.AsyncBaseTransport):
    """An OpenAI-compatible server inside the process: answers at once, counts requests."""

    def __init__(self, content: str) -> None:
        self.calls = 0
        self.body = json.dumps(
            {
                "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 30000, "completion_tokens": 400},
            }
        ).encode()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.calls += 1
        return httpx.Response(200, headers={"content-type": "application/json"}, content=self.body)


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"p50": statistics.median(ms), "p90": ms[int(len(ms) * 0.9)], "max": ms[-1]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    rng = random.Random(SEED)
    snap = make_snapshot(args.candidates, rng)
    messages = make_chat(args.candidates, rng)
    content = answer_json(snap, rng)
    settings = settings_from_mapping(
        {
            "aiSearchEnabled": True,
            "aiSearchMode": "two-stage",
            "aiSearchProfileId": "p",
            "maxEntries": 20,
            "aiSearchScanDepth": 12,
            "scanDepth": 12,
            "connection_profiles": [
                {
                    "id": "p",
                    "name": "P",
                    "provider": "openai",
                    "flavor": "custom",
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "m",
                }
            ],
        }
    )
    cfg = MatchConfig.from_object(settings)
    pending = begin_generation(snap, messages, ChatState(), cfg)
    assert isinstance(pending, Pending)
    n_candidates = len(pending.selectable)

    transport = InstantProvider(content)
    service = AiService(settings, SecretStore(use_keyring=False), client=AiClient(transport=transport))
    service.throttle.min_interval = 0.0
    search = AiSearch(service)
    loop = asyncio.new_event_loop()
    try:

        def miss() -> None:
            service.clear_cache()
            out = loop.run_until_complete(search.select(pending, "bench"))
            assert out.status == "picked", out

        def hit() -> None:
            out = loop.run_until_complete(search.select(pending, "bench"))
            assert out.cache_tier is not None, out

        for _ in range(10):
            miss()  # warm up: imports, TLS-free client, regex caches
        miss_ms = timed(miss, args.rounds)
        calls_before = transport.calls
        hit_ms = timed(hit, args.rounds)
        hit_calls = transport.calls - calls_before
        picks = loop.run_until_complete(search.select(pending, "bench")).picks
    finally:
        loop.run_until_complete(service.aclose())
        loop.close()

    # the parts alone
    selectable = pending.selectable
    forced = [a.entry for a in pending.candidates if a.forced]
    manifest_holder = {}

    def part_manifest() -> None:
        manifest_holder["m"] = build_manifest(selectable, forced=forced, max_tokens_budget=3072)

    def part_prompt() -> None:
        m = manifest_holder["m"]
        ctx = build_chat_context(messages, 12)
        sysp = system_prompt(None, max_entries=20, vault_size=len(snap.entries))
        build_user_message(m.header, m.text, ctx)
        manifest_key(
            manifest_text=m.text,
            mode="two-stage",
            scan_depth=12,
            max_entries=20,
            unlimited_entries=False,
            system_prompt=sysp,
        )

    def part_parse() -> None:
        got = extract_selection(content)
        matched, _ = match_titles(got, selectable)
        order_and_threshold(matched, "low")

    parts = {
        "manifest (500 blocks)": summary(timed(part_manifest, args.rounds)),
        "prompt, user message, cache key": summary(timed(part_prompt, args.rounds)),
        "extract + title matching + threshold": summary(timed(part_parse, args.rounds)),
    }
    res = {
        "candidates": n_candidates,
        "picks": len(picks),
        "miss": summary(miss_ms),
        "hit": summary(hit_ms),
        "hit_network_calls": hit_calls,
        "parts": parts,
        "manifest_chars": len(manifest_holder["m"].text),
    }
    lines = [
        "AI search overhead (benchmarks/bench_ai.py)",
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}",
        f"candidates offered to the AI: {n_candidates} (manifest {res['manifest_chars']:,} characters); "
        f"answer: 20 picks, 4 of them misspelt (fuzzy matched); {len(picks)} kept",
        "",
        f"{'path':44} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}",
        f"{'select(), cache miss (network excluded)':44} {res['miss']['p50']:8.2f} {res['miss']['p90']:8.2f} {res['miss']['max']:8.2f}",
        f"{'select(), cache hit':44} {res['hit']['p50']:8.2f} {res['hit']['p90']:8.2f} {res['hit']['max']:8.2f}",
    ]
    for name, s in parts.items():
        lines.append(f"{'  part: ' + name:44} {s['p50']:8.2f} {s['p90']:8.2f} {s['max']:8.2f}")
    lines += [
        "",
        f"network calls made by {args.rounds} cache hits: {hit_calls}",
        f"Verdict: overhead p50 {res['miss']['p50']:.2f} ms for {n_candidates} candidates (target < {TARGET_MS:g} ms): "
        f"{'PASS' if res['miss']['p50'] < TARGET_MS else 'MISS'}; cache hit without network: "
        f"{'PASS' if hit_calls == 0 else 'MISS'}",
    ]
    text = "\n".join(lines)
    print(json.dumps(res, indent=2) if args.json else text)
    if not args.no_save:
        (REPO / "benchmarks" / "results" / "ai.txt").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
