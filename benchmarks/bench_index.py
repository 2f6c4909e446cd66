#!/usr/bin/env python3
"""Indexing benchmark (issue 2, "Speed"): cold index, warm start from the on-disk cache, and
re-sync after touching one file, on a generated Obsidian-style lore vault.

    python benchmarks/bench_index.py [--entries 10000] [--runs 5] [--workdir DIR] [--json]

The vault is generated deterministically (seeded) under the work directory, which is wiped
first. Every figure is wall-clock time measured around the engine's public calls; see
benchmarks/README.md for what each row measures and what it leaves out.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import queue
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dle_desktop.vault.cache import IndexCache  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.indexer import ParseOptions, VaultIndexer  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.sources import FolderSource  # noqa: E402 - needs the sys.path setup above
from dle_desktop.vault.watcher import DEBOUNCE_S  # noqa: E402 - needs the sys.path setup above

VAULT_NAME = "bench"
SEED = 20240602
DEFAULT_WORKDIR = REPO / "benchmarks" / "_work"

# Targets from issue 2 ("Speed"), in seconds. A verdict compares the median with the target.
TARGET_COLD_S = 10.0
TARGET_WARM_S = 0.5
TARGET_RESYNC_S = 0.050

# Issue 24 ("the engine, further ahead of DLE"). DLE's code is not on this machine: the yardstick
# is the figure the issue recorded for DLE's own cold index of a 10,000-entry vault.
DLE_COLD_INDEX_S = 171.0
DLE_COLD_ENTRIES = 10_000
TARGET_VS_DLE = 50.0  # times faster than DLE: cold index + BM25 within 171 s / 50 = 3.42 s
TARGET_CLI_WARM_S = 1.0  # `dle-desktop index`, whole process, from the cached index


# ----------------------------------------------------------------------------------------------
# Vault generator
# ----------------------------------------------------------------------------------------------

# Common English words, roughly by frequency: the body text draws from these with Zipf weights
# (so BM25 postings look like real prose: a few huge lists, a long tail of small ones).
COMMON = """
the of and to in a is that for it as was with be by on not he this are or his from at which but
have an they you were her she there been one all we their has would when if so no will more
can out up who them some into only other time could than then its over also after these two
first may way any down most where even made many old through well back much before still must
long under great own while never here between city night those because house both each without
against again another place world without river days water under light life hand year years
people street road tide fog harbour lantern bridge boat ferry canal guild market quay tower
gate wall bell chapel temple archive ledger debt coin salt silt reed marsh eel heron gull storm
wind rain grey black white red green silver iron stone wood rope oar sail mast deck hold cargo
trade merchant smuggler captain sailor priest scholar thief guard watchman widow child elder
king queen lord lady prince heir council compact oath law rule custom feast festival war peace
flood fire plague famine winter summer autumn spring dawn dusk morning evening candle lamp oil
ink paper letter map key door lock chest knife sword bow spear shield armour cloak hood mask
song story rumour secret lie truth name blood bone ghost spirit saint god gods prayer ritual
magic curse blessing dream memory silence voice whisper shout laugh tears fear hope anger love
hatred loyalty betrayal debt price payment passage crossing journey voyage shore island delta
mouth channel current depth shallows mud sand pier warehouse tavern inn kitchen cellar attic
roof window stair hall court garden orchard field farm mill forge workshop school library
hospital prison barracks fortress ruin tomb grave crypt well fountain square alley lane district
ward quarter parish village town capital province kingdom empire republic frontier border
north south east west upstream downstream inland coastal ancient forgotten hidden drowned
sunken burning broken lost stolen sacred cursed famous infamous wealthy poor proud bitter
quiet loud slow quick narrow wide deep shallow high low early late young elder cold warm
said told asked knew thought seemed became remained returned arrived left found lost kept
gave took brought carried paid owed sold bought built burned drowned sank rose fell ruled
served fought won failed hid watched waited listened remembered forgot believed doubted
""".split()

SYLLABLES = (
    "an ar as ba be bel bra ca cor da del dra du el en er fa fen ga gor ha hel il "
    "ir ka kel la lan li lor ma mar mi mor na nel no or os pa per quil ra ren ri ro "
    "sa sel sha sil ta tam tor tre ul un va van vel vor wen wy ya zor"
).split()

# Category folder, tag, and how many sub-folders (regions) it is split into.
CATEGORIES = (
    ("Characters", "character", 12),
    ("Places", "place", 10),
    ("Factions", "faction", 4),
    ("Artifacts", "artifact", 4),
    ("History", "history", 6),
    ("Creatures", "creature", 3),
    ("Rules", "rule", 2),
)
ERAS = ("Founding", "Eel Year", "Lantern War", "Long Silence", "Present Day")
LOCATIONS = (
    "Saffre",
    "Lantern Quay",
    "Old Harbour",
    "Drowned Archive",
    "Heron's Rest",
    "Eelworks",
    "Tollbridge",
    "Seventh Mouth",
    "Reedmarsh",
    "Silt Flats",
    "Gullwatch",
    "Brine Steps",
)
FIELD_DEFINITIONS = """\
# Generated by benchmarks/bench_index.py
fields:
  - name: era
    label: Era
    type: string
    multi: true
    contextKey: era
    gating:
      enabled: true
      operator: match_any
      tolerance: moderate
    values: [{eras}]
  - name: location
    label: Location
    type: string
    multi: true
    contextKey: location
    gating:
      enabled: true
      operator: match_any
      tolerance: moderate
    values: [{locations}]
  - name: threat_level
    label: Threat Level
    type: number
    multi: false
    contextKey: threat_level
    gating:
      enabled: true
      operator: lt
      tolerance: moderate
    values: []
"""

# Ways a note can be broken (~1% of the files). Each is a (label, frontmatter text) pair.
MALFORMED = (
    ("unclosed flow list", "tags: [lorebook, broken\nkeys: [one, two\n"),
    ("mapping in a scalar", "tags: [lorebook]\nkeys: a: b: c\n"),
    ("bad indentation", "tags: [lorebook]\nkeys:\n  - one\n - two\n"),
    ("frontmatter is a list", "- lorebook\n- keys\n"),
    ("tab indentation", "tags: [lorebook]\nkeys:\n\t- one\n"),
    ("unterminated quote", 'tags: [lorebook]\nsummary: "never closed\n'),
)


@dataclass
class GeneratedNote:
    path: str  # vault-relative
    title: str
    keys: list[str]
    valid: bool


@dataclass
class Vault:
    root: Path
    notes: list[GeneratedNote]
    files: int
    bytes: int
    words: int
    malformed: int
    seconds: float


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def _titles(rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    """n unique (category folder, tag, title)."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    weights = (30, 22, 8, 10, 12, 10, 8)
    while len(out) < n:
        folder, tag, _ = rng.choices(CATEGORIES, weights=weights)[0]
        if tag == "character":
            title = f"{_name(rng, rng.randint(1, 2))} {_name(rng, rng.randint(2, 3))}"
        elif tag == "place":
            title = f"{_name(rng, 2)} {rng.choice(('Quay', 'Hollow', 'Steps', 'Market', 'Bridge', 'Ward', 'Reach', 'Canal'))}"
        elif tag == "faction":
            title = f"{rng.choice(('House', 'The Order of', 'The Guild of', 'The'))} {_name(rng, 3)}"
        elif tag == "artifact":
            title = f"The {rng.choice(('Drowned', 'Silver', 'Broken', 'Salt', 'Grey', 'First'))} {_name(rng, 2)}"
        elif tag == "history":
            title = f"The {_name(rng, 2)} {rng.choice(('War', 'Flood', 'Treaty', 'Plague', 'Schism', 'Fire'))}"
        elif tag == "creature":
            title = f"{_name(rng, 2)} {rng.choice(('Eel', 'Heron', 'Wraith', 'Hound', 'Moth'))}"
        else:
            title = f"{_name(rng, 2)} {rng.choice(('Custom', 'Law', 'Rite', 'Toll', 'Season'))}"
        if title.lower() in seen:
            continue
        seen.add(title.lower())
        out.append((folder, tag, title))
    return out


def _yaml_list(items: list[str], rng: random.Random) -> str:
    if rng.random() < 0.3:  # block style
        return "\n" + "".join(f"  - {i}\n" for i in items)
    return "[" + ", ".join(items) + "]\n"


def _sentence(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


def _quote(s: str) -> str:
    return '"' + s.replace('"', "'") + '"'


def generate_vault(root: Path, entries: int, seed: int = SEED) -> Vault:
    """Write a deterministic vault of `entries` notes (about 1% of them malformed) under root."""
    started = time.perf_counter()
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    vocab = COMMON + [_name(rng, rng.randint(2, 3)) for _ in range(800)]  # + proper nouns
    cum = []
    total = 0.0
    for rank in range(1, len(vocab) + 1):
        total += 1.0 / rank
        cum.append(total)

    titles = _titles(rng, entries)
    all_titles = [t for _, _, t in titles]
    n_bad = max(1, round(entries * 0.01)) if entries >= 20 else 0
    bad_at = set(rng.sample(range(entries), n_bad))
    notes: list[GeneratedNote] = []
    nbytes = nwords = 0
    made_dirs: set[Path] = set()

    for i, (folder, tag, title) in enumerate(titles):
        region = rng.randrange({c[0]: c[2] for c in CATEGORIES}[folder])
        sub = f"{folder}/Region {region:02d}"
        if rng.random() < 0.25:
            sub += f"/{rng.choice(('Minor', 'Archive', 'Drafts', 'Notes'))}"
        rel = f"{sub}/{title}.md"

        words_first = title.split()
        keys = list(dict.fromkeys([title, words_first[-1] if len(words_first) > 1 else title.lower()]))
        while len(keys) < rng.randint(3, 8):
            k = " ".join(rng.choices(vocab[:400], k=rng.randint(1, 2)))
            if k not in keys:
                keys.append(k)
        keys = keys[:8]

        fm: list[str] = []
        extra_tags = [tag, f"region-{region:02d}"]
        roll = rng.random()
        if roll < 0.01:
            extra_tags.append("lorebook-always")
        elif roll < 0.02:
            extra_tags.append("lorebook-seed")
        fm.append("tags: " + _yaml_list(["lorebook", *extra_tags], rng))
        fm.append("keys: " + _yaml_list(keys, rng))
        fm.append(
            f"priority: {rng.choice((10, 20, 35, 50, 50, 75, 100))}"
            + ("  # lower is more important\n" if rng.random() < 0.05 else "\n")
        )
        summary = _sentence(rng.choices(vocab, cum_weights=cum, k=rng.randint(8, 20)))
        fm.append(f"summary: {_quote(summary)}\n")
        if rng.random() < 0.15:
            fm.append("requires: " + _yaml_list(rng.sample(all_titles, rng.randint(1, 2)), rng))
        if rng.random() < 0.08:
            fm.append("excludes: " + _yaml_list(rng.sample(all_titles, 1), rng))
        if rng.random() < 0.12:
            fm.append("cascade_links: " + _yaml_list(rng.sample(all_titles, rng.randint(1, 3)), rng))
        fm.append("era: " + _yaml_list(rng.sample(ERAS, rng.randint(1, 3)), rng))
        fm.append(f"location: {rng.choice(LOCATIONS)}\n")
        if tag == "creature" and rng.random() < 0.7:
            fm.append(f"threat_level: {rng.randint(1, 9)}\n")
        if rng.random() < 0.1:
            fm.append(
                f"position: in_chat\ndepth: {rng.randint(0, 6)}\nrole: {rng.choice(('system', 'user', 'assistant'))}\n"
            )
        if rng.random() < 0.05:
            fm.append(f"probability: {rng.choice((0.25, 0.5, 0.75))}\n")
        if rng.random() < 0.05:
            fm.append(f"cooldown: {rng.randint(1, 5)}\nwarmup: {rng.randint(1, 3)}\n")

        # Body: 100-400 words in paragraphs, wikilinks to other titles (some aliased, a few
        # dangling), a few %% comments.
        target = rng.randint(100, 400)
        paras: list[str] = []
        written = 0
        while written < target:
            n = min(target - written, rng.randint(30, 90))
            words = rng.choices(vocab, cum_weights=cum, k=n)
            for _ in range(rng.randint(0, 3)):
                link = rng.choice(all_titles)
                r = rng.random()
                if r < 0.2:
                    token = f"[[{link}|{link.split()[-1]}]]"
                elif r < 0.25:
                    token = f"[[{_name(rng, 3)} {_name(rng, 2)}]]"  # dangling
                else:
                    token = f"[[{link}]]"
                words[rng.randrange(len(words))] = token
            if rng.random() < 0.08:
                words.insert(rng.randrange(len(words)), "%%todo: check this against the timeline%%")
            written += n
            paras.append(_sentence(words))
        if rng.random() < 0.03:
            paras.append("%%\nGM notes: " + " ".join(rng.choices(vocab, k=20)) + "\n%%")
        if rng.random() < 0.02:
            paras.append(
                "%%deeplore-exclude%%\nSpoiler: " + " ".join(rng.choices(vocab, k=15)) + "\n%%/deeplore-exclude%%"
            )
        h1 = f"# {title}\n\n" if rng.random() < 0.9 else ""
        body = h1 + "\n\n".join(paras) + "\n"
        nwords += written

        valid = i not in bad_at
        if valid:
            text = "---\n" + "".join(fm) + "---\n" + body
        else:
            _, bad = MALFORMED[len([b for b in bad_at if b < i]) % len(MALFORMED)]
            text = "---\n" + bad + "---\n" + body

        path = root / rel
        if path.parent not in made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(path.parent)
        data = text.encode("utf-8")
        path.write_bytes(data)
        nbytes += len(data)
        notes.append(GeneratedNote(rel, title, keys, valid))

    # Non-lorebook notes a real vault has: a README and a few scratch files without the tag.
    (root / "README.md").write_text("# Bench vault\n\nGenerated by benchmarks/bench_index.py.\n", encoding="utf-8")
    (root / "Scratch.md").write_text("---\ntags: [scratch]\n---\n# Scratch\n\nNot lore.\n", encoding="utf-8")
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    (root / "DeepLore").mkdir(exist_ok=True)
    (root / "DeepLore" / "field-definitions.yaml").write_text(
        FIELD_DEFINITIONS.format(eras=", ".join(ERAS), locations=", ".join(_quote(x) for x in LOCATIONS)),
        encoding="utf-8",
    )
    return Vault(root, notes, entries + 2, nbytes, nwords, n_bad, time.perf_counter() - started)


# ----------------------------------------------------------------------------------------------
# Measurement helpers
# ----------------------------------------------------------------------------------------------


@dataclass
class Row:
    key: str
    label: str
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # process CPU time (all threads) per sample
    target: float | None = None
    note: str = ""

    def stats(self) -> dict:
        s = self.samples
        if not s:
            return {}
        out = {"min": min(s), "median": statistics.median(s), "max": max(s), "n": len(s)}
        if self.cpu:
            out["cpu_median"] = statistics.median(self.cpu)
        return out

    def verdict(self) -> str:
        if self.target is None or not self.samples:
            return ""
        return "PASS" if statistics.median(self.samples) < self.target else "MISS"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f} ms" if x < 1.0 else f"{x:.2f} s"


def make_indexer(vault: Path, cache_dir: Path | None) -> VaultIndexer:
    return VaultIndexer(
        [FolderSource(VAULT_NAME, vault)], ParseOptions(), IndexCache(cache_dir) if cache_dir is not None else None
    )


def quiet_gc() -> None:
    """Start each timed step from the same heap state (garbage from the last one collected)."""
    gc.collect()


def rewrite_note(path: Path, variant: str, n: int) -> None:
    """Change one note on disk: its body (a sentence appended) or its keys (one key added)."""
    text = path.read_text(encoding="utf-8")
    if variant == "body":
        text = text.rstrip("\n") + f"\n\nEdit {n}: the ferryman returned to the quay at dusk.\n"
    else:
        text = (
            text.replace("keys: [", f"keys: [bench-key-{n}, ", 1)
            if "keys: [" in text
            else text.replace("keys: \n", f"keys: \n  - bench-key-{n}\n", 1)
        )
    with open(path, "w", encoding="utf-8", newline="") as fh:  # in place, as an editor saves
        fh.write(text)


# ----------------------------------------------------------------------------------------------
# The benchmark
# ----------------------------------------------------------------------------------------------


def warm_start_child(vault: str, cache_dir: str) -> None:
    """Run in a fresh interpreter: time load_cache() the way the app does at start-up."""
    indexer = make_indexer(Path(vault), Path(cache_dir))
    t0, c0 = time.perf_counter(), time.thread_time()
    snap = indexer.load_cache()
    t1, c1 = time.perf_counter(), time.thread_time()
    print(json.dumps({"seconds": t1 - t0, "cpu": c1 - c0, "entries": len(snap) if snap else 0}))


def run_cli_index(vault: Path, data_dir: Path, entries: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m dle_desktop index` process, from before it
    starts until it has exited, its output read through a pipe as a shell would."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dle_desktop", "index", "--vault", str(vault), "--data-dir", str(data_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    first = done.stdout.split("\n", 1)[0]
    assert first.startswith(f"{entries} entries"), f"dle-desktop index printed {first!r}"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def run_benchmark(entries: int, runs: int, workdir: Path, log) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    vault_dir = workdir / "vault"
    data_dir = workdir / "data"
    cache_dir = data_dir / "index-cache"  # = AppPaths(data_dir).index_cache_dir, shared with the Engine run
    if data_dir.exists():
        shutil.rmtree(data_dir)

    log(f"generating {entries} notes under {vault_dir} ...")
    vault = generate_vault(vault_dir, entries)
    log(
        f"  {vault.files} files, {vault.bytes / 1e6:.1f} MB, {vault.words} body words, "
        f"{vault.malformed} malformed, in {vault.seconds:.1f} s"
    )
    good = [n for n in vault.notes if n.valid]
    pick = random.Random(SEED + 1)

    rows: dict[str, Row] = {}

    def row(key: str, label: str, target: float | None = None, note: str = "") -> Row:
        rows[key] = Row(key, label, target=target, note=note)
        return rows[key]

    cold = row(
        "cold_snapshot",
        "cold index: sync_all() -> snapshot",
        TARGET_COLD_S,
        "empty cache dir; time until the snapshot is published",
    )
    cold_total = row(
        "cold_sync_all", "cold index: sync_all() incl. cache write", note="adds pickling + fsync of the cache"
    )
    bm25 = row("cold_bm25", "cold: snapshot.bm25 (lazy BM25 build)")
    vs_dle = entries == DLE_COLD_ENTRIES
    cold_bm25 = row(
        "cold_plus_bm25",
        "cold index + BM25",
        DLE_COLD_INDEX_S / TARGET_VS_DLE if vs_dle else TARGET_COLD_S,
        "sync_all() total + BM25 build"
        + (f"; target = DLE's {DLE_COLD_INDEX_S:.0f} s / {TARGET_VS_DLE:.0f}" if vs_dle else ""),
    )
    warm = row(
        "warm_load_cache", "warm start: load_cache() -> snapshot", TARGET_WARM_S, "same process, after gc.collect()"
    )
    warm_fresh = row(
        "warm_load_cache_fresh",
        "warm start: load_cache(), fresh process",
        TARGET_WARM_S,
        "new interpreter, as at app start (imports excluded)",
    )
    cli_warm = row(
        "cli_index_warm",
        "dle-desktop index, whole process, warm",
        TARGET_CLI_WARM_S,
        "python -m dle_desktop index --vault V --data-dir D, cache written by an untimed first run",
    )
    reconcile = row(
        "warm_reconcile",
        "warm: reconcile sync_all(), nothing changed",
        note="list + stat every file, rebuild the snapshot",
    )
    rs = {
        ("body", False): row(
            "resync_body", "re-sync 1 file, body edited", TARGET_RESYNC_S, "sync_paths(); BM25 not built"
        ),
        ("keys", False): row(
            "resync_keys", "re-sync 1 file, keys edited", TARGET_RESYNC_S, "sync_paths(); BM25 not built"
        ),
        ("body", True): row(
            "resync_body_bm25", "re-sync 1 file, body, BM25 built", TARGET_RESYNC_S, "incremental BM25 path"
        ),
        ("keys", True): row(
            "resync_keys_bm25", "re-sync 1 file, keys, BM25 built", TARGET_RESYNC_S, "incremental BM25 path"
        ),
    }
    watch_e2e = row(
        "watch_end_to_end",
        "watcher: file write -> 'index' event",
        note="Engine on EngineThread; INCLUDES the watcher's debounce",
    )
    watch_net = row(
        "watch_minus_debounce",
        "watcher: same, minus the debounce",
        TARGET_RESYNC_S,
        "end-to-end minus DEBOUNCE_S: notify + hop + sync_paths + emit",
    )
    watch_sync = row(
        "watch_engine_sync", "watcher: engine's own sync time", note="SyncResult.seconds carried by the 'index' event"
    )

    info: dict = {"generated": entries}

    # 1. Cold index ------------------------------------------------------------------------
    for r in range(runs):
        if cache_dir.exists():
            shutil.rmtree(cache_dir)
        indexer = make_indexer(vault_dir, cache_dir)
        quiet_gc()

        async def cold_run(indexer):
            t0, c0 = time.perf_counter(), time.process_time()
            result = await indexer.sync_all()
            return result, time.perf_counter() - t0, time.process_time() - c0

        result, total, cpu = asyncio.run(cold_run(indexer))
        t0, c0 = time.perf_counter(), time.thread_time()  # synchronous: this thread's CPU
        _ = result.snapshot.bm25
        t_bm25, cpu_bm25 = time.perf_counter() - t0, time.thread_time() - c0
        cold.samples.append(result.seconds)
        cold_total.samples.append(total)
        cold_total.cpu.append(cpu)
        bm25.samples.append(t_bm25)
        bm25.cpu.append(cpu_bm25)
        cold_bm25.samples.append(total + t_bm25)
        cold_bm25.cpu.append(cpu + cpu_bm25)
        snap = result.snapshot
        info.update(
            entries=len(snap),
            skipped=len(snap.skipped),
            read=result.read,
            parsed=result.parsed,
            links=sum(len(e.links) for e in snap.entries),
            cache_bytes=sum(f.stat().st_size for f in cache_dir.glob("*.idx")),
        )
        log(
            f"  cold run {r + 1}/{runs}: snapshot {fmt_s(result.seconds)}, sync_all {fmt_s(total)}, "
            f"bm25 {fmt_s(t_bm25)} ({len(snap)} entries, {len(snap.skipped)} skipped)"
        )
        del indexer, result, snap

    # 2. Warm start --------------------------------------------------------------------------
    indexer = None
    for r in range(runs):
        indexer = None
        quiet_gc()
        indexer = make_indexer(vault_dir, cache_dir)
        t0, c0 = time.perf_counter(), time.thread_time()
        snap = indexer.load_cache()
        warm.samples.append(time.perf_counter() - t0)
        warm.cpu.append(time.thread_time() - c0)
        assert snap is not None and len(snap) == info["entries"], "cache did not load"

        async def reconcile_run(indexer):
            t0, c0 = time.perf_counter(), time.process_time()
            result = await indexer.sync_all()
            return result, time.perf_counter() - t0, time.process_time() - c0

        result, total, cpu = asyncio.run(reconcile_run(indexer))
        assert result.read == 0 and not result.changes.has_changes, "reconcile re-read files"
        reconcile.samples.append(total)
        reconcile.cpu.append(cpu)
        log(f"  warm run {r + 1}/{runs}: load_cache {fmt_s(warm.samples[-1])}, reconcile {fmt_s(total)}")
        del snap, result

    for r in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "--_warm-child", str(vault_dir), str(cache_dir)],
            capture_output=True,
            text=True,
            check=True,
        )
        child = json.loads(out.stdout.strip().splitlines()[-1])
        assert child["entries"] == info["entries"]
        warm_fresh.samples.append(child["seconds"])
        warm_fresh.cpu.append(child["cpu"])
        log(f"  warm run (fresh process) {r + 1}/{runs}: load_cache {fmt_s(child['seconds'])}")

    # 2b. The command line, warm: the whole process, interpreter start and exit included -------
    cli_data = workdir / "cli-data"
    if cli_data.exists():
        shutil.rmtree(cli_data)
    info["cli_first_run_s"] = run_cli_index(vault_dir, cli_data, info["entries"])[0]  # cold: writes the cache
    for r in range(runs):
        seconds, cpu = run_cli_index(vault_dir, cli_data, info["entries"])
        cli_warm.samples.append(seconds)
        cli_warm.cpu.append(cpu)
        log(f"  dle-desktop index, warm, whole process {r + 1}/{runs}: {fmt_s(seconds)} (cpu {fmt_s(cpu)})")

    # 3. One-file re-sync ----------------------------------------------------------------------
    # One event loop for the whole phase, as in the app (its default thread pool stays warm).
    loop = asyncio.new_event_loop()
    try:
        edit = 0
        for with_bm25 in (False, True):
            if with_bm25:
                t0 = time.perf_counter()
                _ = indexer.snapshot.bm25
                log(f"  built BM25 for the incremental runs in {fmt_s(time.perf_counter() - t0)}")
            for variant in ("body", "keys"):
                target_row = rs[(variant, with_bm25)]
                for r in range(runs + 1):  # the first is a warm-up, not recorded
                    note = pick.choice(good)
                    edit += 1
                    rewrite_note(vault_dir / note.path, variant, edit)
                    quiet_gc()

                    async def resync(indexer, path):
                        t0, c0 = time.perf_counter(), time.process_time()
                        result = await indexer.sync_paths(VAULT_NAME, [path])
                        return result, time.perf_counter() - t0, time.process_time() - c0

                    result, total, cpu = loop.run_until_complete(resync(indexer, note.path))
                    ch = result.changes
                    assert ch.modified, f"{note.path}: no change seen"
                    assert (variant == "keys") == bool(ch.keys_changed), "keys_changed wrong"
                    assert result.snapshot.bm25_ready == with_bm25
                    if r:
                        target_row.samples.append(total)
                        target_row.cpu.append(cpu)
                log(
                    f"  re-sync {variant}{' +bm25' if with_bm25 else ''}: "
                    + ", ".join(fmt_s(x) for x in target_row.samples)
                )
        # Sanity: the incremental BM25 finds the edited text.
        hits = indexer.snapshot.bm25.search("ferryman returned quay dusk edit", top_k=3)
        info["bm25_after_edits_hits"] = len(hits)
    finally:
        loop.close()
    del indexer

    # 4. Watcher end to end --------------------------------------------------------------------
    watch_e2e.samples, watch_e2e.cpu, watch_sync.samples = watch_latency(vault_dir, data_dir, good, pick, runs, log)
    watch_net.samples = [x - DEBOUNCE_S for x in watch_e2e.samples]
    info["watch_debounce_s"] = DEBOUNCE_S

    return {"rows": rows, "info": info, "vault": vault}


def watch_latency(
    vault_dir: Path, data_dir: Path, good: list[GeneratedNote], pick: random.Random, runs: int, log
) -> tuple[list[float], list[float], list[float]]:
    """(end-to-end seconds, process CPU seconds, engine-reported sync seconds) per edit."""
    from dle_desktop.engine.engine import Engine
    from dle_desktop.engine.thread import EngineThread
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings

    events: queue.Queue = queue.Queue()

    def subscriber(ev) -> None:  # runs on the engine thread
        if ev.kind == "index":
            events.put((time.perf_counter(), ev))

    paths = AppPaths(config_dir=data_dir, data_dir=data_dir)
    engine = Engine(
        paths, Settings(), SecretStore(use_keyring=False), vault_override=[FolderSource(VAULT_NAME, vault_dir)]
    )
    engine.subscribe(subscriber)
    thread = EngineThread().start()
    e2e: list[float] = []
    cpu: list[float] = []
    reported: list[float] = []
    try:
        thread.call(engine.start(initial_sync=True, watch=True), timeout=60)
        thread.call(engine.wait_ready(timeout=120), timeout=130)
        time.sleep(0.5)  # let inotify settle and any start-up events drain
        while not events.empty():
            events.get_nowait()
        for r in range(runs + 1):  # the first is a warm-up, not recorded
            note = pick.choice(good)
            t0, c0 = time.perf_counter(), time.process_time()
            rewrite_note(vault_dir / note.path, "body", 10_000 + r)
            label = f"{VAULT_NAME}:{note.path}"
            deadline = t0 + 10
            while True:
                try:
                    t1, ev = events.get(timeout=max(0.01, deadline - time.perf_counter()))
                except queue.Empty:
                    raise RuntimeError(f"no index event for {note.path} within 10 s") from None
                ch = ev.data.get("changes")
                if ch is not None and label in ch.modified:
                    break
            c1 = time.process_time()
            if r:
                e2e.append(t1 - t0)
                cpu.append(c1 - c0)
                reported.append(ev.data.get("seconds") or 0.0)
            time.sleep(0.3)  # well apart, so each edit is its own debounce batch
        log(
            "  watcher end-to-end: "
            + ", ".join(fmt_s(x) for x in e2e)
            + f" (debounce {DEBOUNCE_S * 1000:.0f} ms included)"
        )
    finally:
        try:
            thread.call(engine.stop(), timeout=30)
        finally:
            thread.stop()
    return e2e, cpu, reported


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------


def cpu_counters() -> tuple[float, float] | None:
    """(seconds of CPU the whole machine spent busy, seconds this process and its children used).
    The difference over the run is what other processes took: a measure of interference."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        jiffies = [int(x) for x in fields]
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    busy = sum(jiffies) - jiffies[3] - (jiffies[4] if len(jiffies) > 4 else 0)  # minus idle, iowait
    t = os.times()
    return busy / hz, t.user + t.system + t.children_user + t.children_system


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine_info() -> dict:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": cpu_model or platform.processor(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def _r(x):
    return round(x, 6) if isinstance(x, float) else x


def to_json(res: dict, args, machine: dict) -> dict:
    v: Vault = res["vault"]
    return {
        "command": res["command"],
        "started": res["started"],
        "machine": machine,
        "load_average": {"start": res["load_start"], "end": res["load_end"]},
        "other_processes_cpus": res["others"],
        "params": {"entries": args.entries, "runs": args.runs, "seed": SEED},
        "vault": {
            "files": v.files,
            "bytes": v.bytes,
            "body_words": v.words,
            "malformed": v.malformed,
            "generate_seconds": round(v.seconds, 3),
        },
        "index": res["info"],
        "vs_dle": vs_dle(res),
        "results": {
            r.key: {
                "label": r.label,
                **{k: _r(x) for k, x in r.stats().items()},
                "target": r.target,
                "verdict": r.verdict() or None,
                "note": r.note,
                "samples": [_r(x) for x in r.samples],
                "cpu_samples": [_r(x) for x in r.cpu],
            }
            for r in res["rows"].values()
        },
        "total_seconds": round(res["total_seconds"], 1),
    }


def vs_dle(res: dict) -> dict | None:
    """The cold index against DLE's figure from issue 24; None when the vault is not 10k notes."""
    row = res["rows"]["cold_plus_bm25"]
    if res["info"].get("generated") != DLE_COLD_ENTRIES or not row.samples:
        return None
    st = row.stats()
    return {
        "dle_cold_index_s": DLE_COLD_INDEX_S,
        "source": "issue 24 (DLE's own cold index of a 10,000-entry vault); DLE's code is not on this machine",
        "ours_median_s": st["median"],
        "times_faster_median": DLE_COLD_INDEX_S / st["median"],
        "times_faster_worst": DLE_COLD_INDEX_S / st["max"],
        "target_times": TARGET_VS_DLE,
        "verdict": "PASS" if DLE_COLD_INDEX_S / st["median"] >= TARGET_VS_DLE else "MISS",
    }


def vs_dle_lines(res: dict) -> list[str]:
    v = vs_dle(res)
    if v is None:
        return [f"× DLE: not computed (issue 24's DLE figure is for a {DLE_COLD_ENTRIES}-note vault)."]
    return [
        "",
        "Against DLE (cold index + BM25). DLE's code is not on this machine: the yardstick is the figure",
        f"recorded in issue 24, DLE's own cold index of a 10,000-entry vault in {DLE_COLD_INDEX_S:.0f} s.",
        f"  median {fmt_s(v['ours_median_s'])} = {v['times_faster_median']:.1f}× DLE "
        f"(slowest run {v['times_faster_worst']:.1f}×); target ≥ {v['target_times']:.0f}× "
        f"(≤ {fmt_s(DLE_COLD_INDEX_S / TARGET_VS_DLE)})  {v['verdict']}",
    ]


def print_table(res: dict, args, machine: dict) -> None:
    v: Vault = res["vault"]
    info = res["info"]
    print(f"DLE Desktop indexing benchmark, {res['started']}")
    print(f"command: {res['command']}")
    print(
        f"machine: {machine['cpu_count']} CPUs ({machine['cpus_usable']} usable), {machine['cpu_model']}; "
        f"Python {machine['python']} ({machine['implementation']}); {machine['platform']}"
    )
    others = (
        ""
        if res["others"] is None
        else (f"; other processes kept {res['others']:.2f} of the {machine['cpu_count']} CPUs busy on average")
    )
    print(f"load:    1/5/15-min load average {res['load_start']} at start, {res['load_end']} at end{others}")
    print(
        f"vault:   {v.files} .md files ({args.entries} generated notes, {v.malformed} malformed), "
        f"{v.bytes / 1e6:.1f} MB, {v.words} body words, seed {SEED}"
    )
    print(
        f"index:   {info['entries']} entries, {info['skipped']} skipped, {info['links']} wikilinks, "
        f"cache file {info['cache_bytes'] / 1e6:.1f} MB; {args.runs} timed runs per figure"
    )
    print()
    w = max(len(r.label) for r in res["rows"].values())
    head = f"{'measurement':<{w}}  {'min':>9} {'median':>9} {'max':>9}  {'cpu med':>9}  {'target':>9}  verdict"
    print(head)
    print("-" * len(head))
    for r in res["rows"].values():
        st = r.stats()
        target = f"< {fmt_s(r.target)}" if r.target else ""
        print(
            f"{r.label:<{w}}  {fmt_s(st.get('min')):>9} {fmt_s(st.get('median')):>9} {fmt_s(st.get('max')):>9}  "
            f"{fmt_s(st.get('cpu_median')) if 'cpu_median' in st else '':>9}  {target:>9}  {r.verdict()}"
        )
    print()
    print("Verdicts compare the median with the target. 'cpu med' is the CPU time spent over the same")
    print("interval (the calling thread's for synchronous steps, the whole process's for async ones); well")
    print("below the wall time means waiting (for the CPU, the disk, or a timer).")
    print(
        f"Watcher rows include the watcher's {DEBOUNCE_S * 1000:.0f} ms debounce; "
        "the 'minus the debounce' row subtracts it."
    )
    print("Cold runs read a vault that is in the OS page cache (it was just written): no disk reads are timed.")
    print(
        "'dle-desktop index' runs the real command in a new interpreter (start, imports, cached index, "
        "reconcile, output, exit);"
    )
    print("its cpu is that process's user + system time.")
    for line in vs_dle_lines(res):
        print(line)
    print(f"Whole run: {res['total_seconds']:.0f} s.")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entries", type=int, default=10_000, help="notes to generate (default 10000)")
    p.add_argument("--runs", type=int, default=5, help="repetitions per measurement (default 5)")
    p.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help="where the vault and cache go; wiped first (default benchmarks/_work/)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--_warm-child", nargs=2, metavar=("VAULT", "CACHE"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._warm_child:
        warm_start_child(*args._warm_child)
        return 0
    if args.entries < 20 or args.runs < 1:
        p.error("--entries must be at least 20 and --runs at least 1")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    machine = machine_info()
    load_start = load_average()
    started_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    started = time.perf_counter()
    cpu0 = cpu_counters()
    res = run_benchmark(args.entries, args.runs, args.workdir.resolve(), log)
    cpu1 = cpu_counters()
    wall = time.perf_counter() - started
    others = None
    if cpu0 and cpu1 and wall > 0:
        others = max(0.0, ((cpu1[0] - cpu0[0]) - (cpu1[1] - cpu0[1])) / wall)
    res.update(
        others=None if others is None else round(others, 2),
        command="python benchmarks/bench_index.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        started=started_at,
        load_start=load_start,
        load_end=load_average(),
        total_seconds=time.perf_counter() - started,
    )
    log(f"benchmark finished in {res['total_seconds']:.0f} s")
    if args.json:
        print(json.dumps(to_json(res, args, machine), indent=2))
    else:
        print_table(res, args, machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
