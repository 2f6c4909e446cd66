#!/usr/bin/env python3
"""Lore recall benchmark (issue 12): does the entry a chat is *about* reach the prompt when the
chat paraphrases it instead of naming its keys?

    python benchmarks/bench_recall.py [--set benchmarks/recall_set.json] [--model PATH.gguf]
                                      [--size 10000] [--no-qwen-timing] [--json]

On `benchmarks/recall_set.json` (paraphrase chats over `resources/sample_vault`, each naming one
entry's content without its keys or title, plus chats that do name keys) it runs the real
retrieval path (`RetrievalService.dry_run`, the engine's `SemanticSearch` with the real llama.cpp
embedder) in four modes, all with default settings otherwise:

- keywords: `MatchConfig()` (DLE's pipeline);
- BM25: `fuzzy_search_enabled` on;
- semantic: `semantic_enabled` on;
- hybrid: both on.

and reports per mode:

- recall: the share of paraphrase chats whose target entry is injected;
- noise: other non-constant entries injected per paraphrase chat (mean);
- the keyword check: on the chats that name keys, every entry the keywords mode injects is
  still injected in the other modes; and one fingerprint of the keywords mode's results over
  every chat (it must never change between commits: DLE parity).

Then speed:

- lookup + fusion at `--size` entries (generated vault, random unit vectors, the embedder
  replaced by a precomputed vector, so only the store query, passage aggregation and the
  pipeline's semantic stage are timed), p50 / p95;
- the query embedding with a Qwen3-Embedding-0.6B-shaped random GGUF (generated once under
  `benchmarks/_work/`, ~640 MB) for a sliding 4-message window, one new message per generation,
  as a chat goes (the engine's query cache is part of what is timed).

The model is `../shared/models/all-MiniLM-L6-v2-Q8_0.gguf` unless `--model` says otherwise;
a real Qwen3-Embedding GGUF in the default data folder's `models/` is measured too when present.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dle_desktop.core.index import VaultSlice, build_snapshot  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.chat import ChatMessage  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.chat_input import parse_chat_document  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.config import MatchConfig  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.run import run_generation  # noqa: E402 - needs the sys.path setup above
from dle_desktop.core.pipeline.state import ChatState  # noqa: E402 - needs the sys.path setup above
from dle_desktop.engine.retrieval import RetrievalService  # noqa: E402 - needs the sys.path setup above
from dle_desktop.engine.semantic import SemanticSearch  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.indexer import VaultIndexer  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.sources import FolderSource  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vectors.contracts import EmbeddingProfile  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vectors.store import VectorStore  # noqa: E402 - needs the sys.path setup above

SET = REPO / "benchmarks" / "recall_set.json"
MINILM = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"
WORK = REPO / "benchmarks" / "_work"
TARGET_RECALL = 0.85
TARGET_NOISE = 3.0
TARGET_LOOKUP_MS = 15.0
TARGET_QUERY_MS = 300.0
#: Other processes' CPU use (in CPUs) under which a generation counts as run on a free machine.
QUIET_OTHERS = 0.25

MODES = {
    "keywords": {},
    "BM25": {"fuzzy_search_enabled": True},
    "semantic": {"semantic_enabled": True},
    "hybrid": {"semantic_enabled": True, "fuzzy_search_enabled": True},
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_set(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["chats"]


def sample_snapshot(vault: Path):
    return asyncio.run(VaultIndexer([FolderSource("v", vault)]).sync_all()).snapshot


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[i]


# -- recall ------------------------------------------------------------------------------------


def run_mode(service: RetrievalService, snap, chats: list[dict], cfg: MatchConfig, loop) -> dict[str, dict]:
    out = {}
    for c in chats:
        doc = parse_chat_document({"messages": c["messages"]})
        records = loop.run_until_complete(service.dry_run(snap, doc, cfg, replay=False, seed=1))
        rec = records[-1]
        out[c["id"]] = rec
    return out


def injected_paths(snap, rec: dict) -> list[str]:
    by_title = {}
    for e in snap.entries:
        by_title.setdefault((e.vault, e.title), []).append(e)
    paths = []
    for i in rec["injected"]:
        for e in by_title.get((i["vault"], i["title"]), []):
            paths.append(e.path)
    return paths


def score(snap, chats: list[dict], results: dict[str, dict]) -> dict:
    constants = {e.path for e in snap.entries if e.constant}
    para = [c for c in chats if c["kind"] == "paraphrase"]
    hits, noise, misses = 0, [], []
    for c in para:
        got = set(injected_paths(snap, results[c["id"]]))
        if c["target"] in got:
            hits += 1
        else:
            misses.append(c["id"])
        noise.append(len(got - {c["target"]} - constants))
    gated = [c for c in chats if c["kind"] == "gated"]
    leaked = sum(c["target"] in set(injected_paths(snap, results[c["id"]])) for c in gated)
    return {
        "recall": hits / len(para),
        "hits": hits,
        "chats": len(para),
        "noise": statistics.mean(noise),
        "noise_max": max(noise),
        "misses": misses,
        "gated_in": f"{leaked}/{len(gated)}",
    }


def fingerprint(results: dict[str, dict]) -> str:
    h = hashlib.sha256()
    for cid in sorted(results):
        h.update(cid.encode())
        for i in results[cid]["injected"]:
            h.update(f"\x00{i['title']}|{i['matched_by']}|{i['tokens']}".encode())
    return h.hexdigest()[:16]


def recall_for_model(model: Path, snap, chats: list[dict], label: str) -> dict:
    from dle_desktop.vectors.embedder import LocalEmbedder

    tmp = tempfile.TemporaryDirectory(prefix="dle-recall-")
    store = VectorStore(Path(tmp.name) / "vectors")
    embedder = LocalEmbedder(model)
    search = SemanticSearch(lambda: store, lambda: embedder)
    loop = asyncio.new_event_loop()
    t0 = time.perf_counter()

    async def embed_all():
        search.schedule(snap)
        return await search.wait_idle()

    status = loop.run_until_complete(embed_all())
    embed_s = time.perf_counter() - t0
    if status.state != "ready":
        raise SystemExit(f"embedding the sample vault failed: {status.error}")
    service = RetrievalService(
        store_factory=lambda: None, snapshot_getter=lambda: snap, config=MatchConfig(), semantic_lookup=search.lookup
    )
    modes = {}
    raw = {}
    for name, changes in MODES.items():
        cfg = MatchConfig(**changes)
        t0 = time.perf_counter()
        res = run_mode(service, snap, chats, cfg, loop)
        secs = time.perf_counter() - t0
        raw[name] = res
        modes[name] = score(snap, chats, res) | {"seconds": round(secs, 2)}
    # keyword check: on chats that name keys, what keywords injects is still injected
    key_chats = [c for c in chats if c["kind"] == "keys"]
    kept = {}
    for name in MODES:
        ok = 0
        for c in key_chats:
            want = {i["title"] for i in raw["keywords"][c["id"]]["injected"]}
            got = {i["title"] for i in raw[name][c["id"]]["injected"]}
            ok += want <= got
        kept[name] = f"{ok}/{len(key_chats)}"
    example = None
    for c in chats:
        if c["kind"] == "paraphrase" and c.get("distracting"):
            rec = raw["semantic"][c["id"]]
            example = {
                "chat": c["id"],
                "target": c["target"],
                "semantic_verdicts": [v for v in rec["verdicts"] if v["stage"] == "semantic"][:4],
                "notes": rec["notes"],
            }
            break
    loop.run_until_complete(search.aclose())
    loop.close()
    tmp.cleanup()
    return {
        "model": label,
        "embed_vault_s": round(embed_s, 2),
        "modes": modes,
        "keywords_kept": kept,
        "keywords_fingerprint": fingerprint(raw["keywords"]),
        "example": example,
    }


def keyword_leaks(snap, chats: list[dict]) -> list[str]:
    """Paraphrase chats whose target the keywords already find (a flaw in the set)."""
    out = []
    for c in chats:
        if c["kind"] != "paraphrase":
            continue
        msgs = parse_chat_document({"messages": c["messages"]}).messages
        r, _ = run_generation(snap, msgs, ChatState(), MatchConfig())
        if c["target"] in {i.entry.path for i in r.injected}:
            out.append(c["id"])
    return out


# -- speed ----------------------------------------------------------------------------------------


class FixedEmbedder:
    """Unit vectors from a seeded hash of the text: costs nothing, so only the lookup is timed."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.profile = EmbeddingProfile("bench-fixed", prompt_version="raw")

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


def lookup_speed(size: int, queries: int = 200) -> dict:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_pipeline import generate_chat, generate_entries

    gen = generate_entries(size)
    snap = build_snapshot([VaultSlice("bench", tuple(gen.entries))])
    chat = generate_chat(list(snap.entries), 40 + queries)
    tmp = tempfile.TemporaryDirectory(prefix="dle-recall-speed-")
    store = VectorStore(Path(tmp.name) / "vectors")
    embedder = FixedEmbedder()
    search = SemanticSearch(lambda: store, lambda: embedder)
    loop = asyncio.new_event_loop()

    async def embed_all():
        search.schedule(snap)
        return await search.wait_idle()

    t0 = time.perf_counter()
    loop.run_until_complete(embed_all())
    index_s = time.perf_counter() - t0
    service = RetrievalService(
        store_factory=lambda: None, snapshot_getter=lambda: snap, config=MatchConfig(), semantic_lookup=search.lookup
    )
    # random vectors score near 0: no floor, so every hit goes through the fusion (the worst case)
    cfg = MatchConfig(semantic_enabled=True, semantic_min_score=-1.0)
    messages = chat.messages
    for g in range(30):  # warm up: the store builds its ANN graph on the first queries, in the background
        loop.run_until_complete(service._semantic(messages[: 10 + g], cfg))
    # Timed once the ANN graph is built: a build still running competes for the 2 cores (on a
    # slower machine 3 s were not enough, and the lookups measured the build).
    if not store.wait_for_index(timeout=600):
        log("the vector store's ANN build did not finish within 600 s; lookups measured during it")
    lookup_ms, fusion_ms, total_ms = [], [], []
    state = ChatState()
    for g in range(queries):
        msgs = messages[: 40 + g]
        t0 = time.perf_counter()
        hits, note = loop.run_until_complete(service._semantic(msgs, cfg))
        t1 = time.perf_counter()
        r, state = run_generation(snap, msgs, state, cfg, semantic_hits=hits, semantic_note=note)
        lookup = (t1 - t0) * 1000
        fusion = r.timings_ms.get("semantic", 0.0)
        if g >= 5:
            lookup_ms.append(lookup)
            fusion_ms.append(fusion)
            total_ms.append(lookup + fusion)
    rows = len(store.list_hashes("dle-vault", "dle-local", embedder.profile.key()))
    loop.run_until_complete(search.aclose())
    loop.close()
    store.wait_for_index(timeout=600)
    store.close()
    tmp.cleanup()
    return {
        "entries": size,
        "rows": rows,
        "index_s": round(index_s, 1),
        "lookup_p50": pct(lookup_ms, 0.5),
        "fusion_p50": pct(fusion_ms, 0.5),
        "total_p50": pct(total_ms, 0.5),
        "total_p95": pct(total_ms, 0.95),
    }


QWEN_MESSAGES = [
    "Mira: The rain has not stopped since we tied up at the quay, and my boots are soaked through.",
    "Rook: Then sit by the stove. The ferry will not leave before the murk lifts, whatever the captain says.",
    "Mira: I keep thinking about that old woman on the steps who stared at my luggage as if she could read it.",
    "Rook: Half this harbour reads luggage for a living. The other half reads faces, and they are worse.",
    "Mira: Tell me about the bell people say they hear under the water before every flood.",
    "Rook: Nobody has found it in three hundred years, but every tavern regular swears to have heard it ring.",
    "Mira: Could we row out to where it sank, tonight, while the tide is still?",
    "Rook: At slack water? Only a fool or a tidewright goes out then, and you are not a tidewright.",
    "Mira: Then I will be a fool. Find me a boat and someone who knows the old harbour.",
    "Rook: I know a girl with a patched skiff. She will name a fair price and a favour later.",
    "Mira: A favour? What kind of favour does a ferrywoman ask for?",
    "Rook: Whatever she likes, whenever she likes. That is the custom, and it is older than the houses.",
]


def _machine_busy_s() -> float | None:
    """CPU seconds the whole machine has spent busy (all CPUs), from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return (sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError, IndexError):
        return None


def qwen_query_speed(
    generations: int = 9, reuse_head: bool = True, turns: bool = False, prefetch: bool = False, passes: int = 1
) -> dict:
    """`turns`: each generation adds the character's reply and the user's next message (a real
    chat's rhythm) instead of one message; `prefetch`: before each generation both were sent
    to the prefetch, as the bridge does when the reply arrives and while the user types.
    `passes`: the chat is replayed that many times, each time with a fresh query cache (a new
    store and semantic search over the same embedder, whose instruction head stays kept), so
    the figures rest on more generations than one short chat gives.

    Per generation it also records where the time went: inside llama_decode, in the embedder
    outside it (tokenizing, batch set-up, pooling), and outside the embedder (the query cache,
    the store, the event loop); the process's CPU time; and how busy other processes kept the
    machine's CPUs meanwhile (with 2 CPUs, one busy CPU halves llama.cpp's speed or worse)."""
    from dle_desktop.vectors.embedder import LocalEmbedder
    from tests.support.tiny_gguf import make_qwen3_0_6b_shaped_gguf

    WORK.mkdir(parents=True, exist_ok=True)
    # An English vocabulary (tiny_gguf._english_bpe) so a message costs about the tokens it
    # would with the real model's; the toy 240-merge one doubled them.
    model = WORK / "qwen3-0.6b-shaped-en-Q8_0.gguf"
    if not model.is_file():
        log(f"generating the Qwen3-0.6B-shaped model under {WORK} (once; ~640 MB) ...")
        make_qwen3_0_6b_shaped_gguf(model, english_vocab=32_000)
    embedder = LocalEmbedder(model)
    embedder.reuse_query_head = reuse_head
    in_decode = [0.0]
    in_job = [0.0]
    decode_batch, embed_job = embedder._decode_batch, embedder._embed_job

    def timed_decode(*args):  # the instance attribute shadows the method: only this embedder
        t0 = time.perf_counter()
        try:
            return decode_batch(*args)
        finally:
            in_decode[0] += time.perf_counter() - t0

    def timed_job(*args):
        t0 = time.perf_counter()
        try:
            return embed_job(*args)
        finally:
            in_job[0] += time.perf_counter() - t0

    embedder._decode_batch = timed_decode  # type: ignore[method-assign]  # timing this benchmark's embedder only
    embedder._embed_job = timed_job  # type: ignore[method-assign]  # timing this benchmark's embedder only
    loop = asyncio.new_event_loop()
    loop.run_until_complete(embedder.load())
    loop.run_until_complete(embedder.embed(["warm up"], query=True))
    snap = build_snapshot([VaultSlice("v", ())])
    cfg = MatchConfig(semantic_enabled=True)
    msgs = [ChatMessage(t.split(": ", 1)[0], t.split(": ", 1)[1], is_user=t.startswith("Mira")) for t in QWEN_MESSAGES]
    from dle_desktop.core.pipeline.run import semantic_query

    if turns:
        generations = min(generations, (len(msgs) - 4) // 2 + 1)
    firsts: list[float] = []
    times: list[float] = []  # steady generations (after each pass's first), all passes
    decode_ms: list[float] = []
    embedder_ms: list[float] = []
    cpu_ms: list[float] = []
    others: list[tuple[float, float, float]] = []
    tokens: list[int] = []  # tokens of the texts the query cache did not have (instruction included)
    decoded: list[int] = []  # tokens llama.cpp decoded for them (the kept instruction head not again)
    first_tokens = first_decoded = 0
    for pass_no in range(passes):
        tmp = tempfile.TemporaryDirectory(prefix="dle-recall-qwen-")
        store = VectorStore(Path(tmp.name) / "vectors")
        search = SemanticSearch(lambda store=store: store, lambda: embedder)
        service = RetrievalService(
            store_factory=lambda: None,
            snapshot_getter=lambda: snap,
            config=MatchConfig(),
            semantic_lookup=search.lookup,
        )
        seen: set[str] = set()

        async def warm(texts: list[str], search: SemanticSearch = search) -> None:
            task = search.prefetch(texts)
            if task is not None:
                await task

        for g in range(generations):
            window = msgs[: 4 + 2 * g] if turns else msgs[: 4 + g]
            if prefetch and g > 0:
                loop.run_until_complete(warm([m.mes for m in window[-2:]]))
            before = embedder.tokens_processed
            in_decode[0] = in_job[0] = 0.0
            busy0, cpu0 = _machine_busy_s(), time.process_time()
            t0 = time.perf_counter()
            loop.run_until_complete(service._semantic(window, cfg))
            wall = time.perf_counter() - t0
            cpu, busy1 = time.process_time() - cpu0, _machine_busy_s()
            query = semantic_query(window, cfg)
            parts = list(query.parts) if hasattr(query, "parts") else [query]
            new = [p for p in dict.fromkeys(parts) if p not in seen]
            seen.update(new)
            n_tokens = sum(len(t) for t in embedder.token_ids(new, query=True)) if new else 0
            if g == 0:  # the first generation of a chat embeds its whole window
                firsts.append(wall * 1000)
                if pass_no == 0:
                    first_tokens, first_decoded = n_tokens, embedder.tokens_processed - before
                continue
            times.append(wall * 1000)
            decode_ms.append(in_decode[0] * 1000)
            embedder_ms.append(in_job[0] * 1000)
            cpu_ms.append(cpu * 1000)
            if busy0 is not None and busy1 is not None:  # (machine busy, own CPU, wall) seconds
                others.append((busy1 - busy0, cpu, wall))
            tokens.append(n_tokens)
            decoded.append(embedder.tokens_processed - before)
        loop.run_until_complete(search.aclose())
        tmp.cleanup()
    loop.run_until_complete(embedder.aclose())
    loop.close()
    # The generations during which other processes used under a quarter of a CPU (per
    # generation, in /proc/stat's 10 ms ticks): what the query costs when the machine is free.
    quiet = [t for t, (b, c, w) in zip(times, others, strict=False) if w >= 0.05 and (b - c) / w < QUIET_OTHERS]
    return {
        "quiet_p50_ms": pct(quiet, 0.5) if quiet else None,
        "quiet_n": len(quiet),
        "first_ms": pct(firsts, 0.5),
        "p50_ms": pct(times, 0.5),
        "p25_ms": pct(times, 0.25),
        "p95_ms": pct(times, 0.95),
        "min_ms": min(times),
        "generations": len(times),
        "passes": passes,
        "first_tokens": first_tokens,
        "tokens_p50": pct(tokens, 0.5),
        "reuse_head": reuse_head,
        "first_decoded": first_decoded,
        "decoded_p50": pct(decoded, 0.5),
        "decode_ms_p50": pct(decode_ms, 0.5),
        "embedder_ms_p50": pct(embedder_ms, 0.5),
        "outside_ms_p50": pct([t - e for t, e in zip(times, embedder_ms, strict=True)], 0.5),
        "cpu_ms_p50": pct(cpu_ms, 0.5),
        # over the whole series: /proc/stat counts in 10 ms ticks, too coarse for one generation
        # (and only over a second or more of generations: prefetched ones take a millisecond)
        "others_cpus": max(0.0, sum(b - c for b, c, _ in others) / sum(w for _, _, w in others))
        if sum(w for _, _, w in others) >= 1.0
        else None,
        "load": os.getloadavg()[0],
        "turns": turns,
        "prefetch": prefetch,
    }


def real_qwen_model() -> Path | None:
    from dle_desktop.state.paths import resolve_paths
    from dle_desktop.vectors.model_manager import DEFAULT_MODEL

    try:
        p = resolve_paths().models_dir / DEFAULT_MODEL.filename
    except Exception:  # noqa: BLE001 - no usable data folder means no real model to compare; the run goes on without it
        return None
    return p if p.is_file() else None


# -- report -------------------------------------------------------------------------------------


def report(res: dict) -> str:
    lines = [
        f"Lore recall (benchmarks/bench_recall.py), {res['when']}",
        f"machine: {res['machine']}",
        f"set: {res['set']} ({res['paraphrase']} paraphrase chats, {res['distracting']} with distracting "
        f"speaker names and small talk; {res['keys']} chats that name keys; {res['gated']} gated chats whose "
        f"target the vault's requires/excludes keep out: 'gated in' must stay 0)",
    ]
    if res["leaks"]:
        lines.append(f"WARNING: keywords already find the target in: {', '.join(res['leaks'])}")
    for m in res["models"]:
        lines.append("")
        lines.append(f"model: {m['model']} (vault embedded in {m['embed_vault_s']} s)")
        lines.append(f"{'mode':<10} {'recall':>8} {'noise/chat':>11} {'max':>4}  keywords kept  gated in  misses")
        for name, s in m["modes"].items():
            miss = ", ".join(s["misses"][:8]) + (" ..." if len(s["misses"]) > 8 else "")
            lines.append(
                f"{name:<10} {s['recall'] * 100:7.1f}% {s['noise']:11.2f} {s['noise_max']:4d}  "
                f"{m['keywords_kept'][name]:<14} {s['gated_in']:<9} {miss}"
            )
        lines.append(f"keywords-mode fingerprint (DLE parity, must not change): {m['keywords_fingerprint']}")
        sem = m["modes"]["semantic"]
        ok = sem["recall"] >= TARGET_RECALL and sem["noise"] <= TARGET_NOISE
        lines.append(
            f"target (semantic on): recall >= {TARGET_RECALL:.0%} with noise <= {TARGET_NOISE:g}: "
            f"{'PASS' if ok else 'MISS'}"
        )
        if m.get("example"):
            lines.append(
                f"decision record, {m['example']['chat']} (semantic): "
                + json.dumps(m["example"]["semantic_verdicts"][:2], ensure_ascii=False)
            )
    if res.get("qwen_real") is None:
        lines.append("")
        lines.append("Qwen3-Embedding: no real model in the data folder's models/; not measured for recall.")
    sp = res.get("lookup")
    if sp:
        lines.append("")
        lines.append(
            f"lookup + fusion at {sp['entries']:,} entries ({sp['rows']:,} stored rows, random vectors): "
            f"p50 {sp['total_p50']:.2f} ms (lookup {sp['lookup_p50']:.2f}, fusion {sp['fusion_p50']:.2f}), "
            f"p95 {sp['total_p95']:.2f} ms -> {'PASS' if sp['total_p50'] < TARGET_LOOKUP_MS else 'MISS'} "
            f"(target < {TARGET_LOOKUP_MS:g} ms)"
        )
    for q in res.get("qwen") or []:
        how = "instruction's KV cache kept" if q["reuse_head"] else "every query decoded in full"
        if q.get("turns"):
            how = (
                "each generation adds a reply and a user message, "
                + how
                + (", both prefetched (as the bridge does)" if q.get("prefetch") else ", no prefetch")
            )
        passes = q.get("passes", 1)
        lines.append(
            f"query embedding, Qwen3-0.6B-shaped random GGUF, 4-message window, {how} "
            f"({q['generations']} generations after the first"
            + (f", the chat replayed {passes} times with a fresh query cache" if passes > 1 else "")
            + f"): first {q['first_ms']:.0f} ms, then p50 {q['p50_ms']:.0f} ms, "
            f"p95 {q['p95_ms']:.0f} ms -> {'PASS' if q['p50_ms'] < TARGET_QUERY_MS else 'MISS'} "
            f"(target < {TARGET_QUERY_MS:g} ms); new query tokens: first {q['first_tokens']}, then p50 "
            f"{q['tokens_p50']} per generation, of which llama.cpp decoded {q['first_decoded']} / "
            f"{q['decoded_p50']}; load average {q['load']:.2f} (other processes slow llama.cpp's 2 threads a lot)"
        )
        if "decode_ms_p50" in q:
            others = q.get("others_cpus")
            lines.append(
                f"    where the time went (p50 per generation): llama_decode {q['decode_ms_p50']:.0f} ms, the "
                f"embedder outside it {q['embedder_ms_p50'] - q['decode_ms_p50']:.1f} ms, outside the embedder "
                f"{q['outside_ms_p50']:.1f} ms; this process's CPU {q['cpu_ms_p50']:.0f} ms; fastest generation "
                f"{q['min_ms']:.0f} ms, p25 {q['p25_ms']:.0f} ms"
                + (f"; other processes kept {others:.2f} of the CPUs busy meanwhile" if others is not None else "")
            )
            if q.get("quiet_p50_ms") is not None:
                lines.append(
                    f"    the {q['quiet_n']} of {q['generations']} generations during which other processes used under "
                    f"{QUIET_OTHERS:g} CPU: p50 {q['quiet_p50_ms']:.0f} ms"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=SET)
    ap.add_argument("--model", type=Path, default=MINILM)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--no-qwen-timing", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument(
        "--qwen-only", action="store_true", help="only the Qwen3-0.6B-shaped query timing (no recall, no lookup speed)"
    )
    ap.add_argument("--qwen-passes", type=int, default=3, help="replays of the chat per Qwen timing series (default 3)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = json.loads(args.set.read_text(encoding="utf-8"))
    chats = data["chats"]
    snap = sample_snapshot(REPO / data["vault"])
    res = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "set": str(args.set.relative_to(REPO)) if args.set.is_relative_to(REPO) else str(args.set),
        "machine": f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs",
        "paraphrase": sum(c["kind"] == "paraphrase" for c in chats),
        "distracting": sum(bool(c.get("distracting")) for c in chats),
        "keys": sum(c["kind"] == "keys" for c in chats),
        "gated": sum(c["kind"] == "gated" for c in chats),
        "leaks": keyword_leaks(snap, chats),
        "models": [],
    }
    qwen = real_qwen_model()
    res["qwen_real"] = str(qwen) if qwen else None
    if not args.qwen_only:
        if not args.model.is_file():
            raise SystemExit(f"no model at {args.model}")
        log(f"recall with {args.model.name} ...")
        res["models"].append(recall_for_model(args.model, snap, chats, args.model.name))
        if qwen:
            log(f"recall with {qwen.name} ...")
            res["models"].append(recall_for_model(qwen, snap, chats, qwen.name))
    if not args.no_speed and not args.qwen_only:
        log(f"lookup speed at {args.size} entries ...")
        res["lookup"] = lookup_speed(args.size)
    if not args.no_qwen_timing:
        log("query embedding with the Qwen3-0.6B-shaped model ...")
        passes = max(1, args.qwen_passes)
        res["qwen"] = [
            qwen_query_speed(reuse_head=True, passes=passes),
            qwen_query_speed(reuse_head=False, passes=passes),
            qwen_query_speed(turns=True, passes=passes),
            qwen_query_speed(turns=True, prefetch=True, passes=passes),
        ]
    print(json.dumps(res, indent=1, default=str) if args.json else report(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
