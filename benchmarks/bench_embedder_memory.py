"""Peak memory of the in-process embedder (issue 9, item 16): what loading a model, a packed batch
of short texts and one text at the 2,048-token cap cost, each model in a fresh subprocess (its
own RSS; `VmHWM` is the peak). `--one-pass` measures the decode every token as an output (how
the embedder worked before its last-token decode), for comparison.

    .venv/bin/python benchmarks/bench_embedder_memory.py                 # print the table
    .venv/bin/python benchmarks/bench_embedder_memory.py --model X.gguf  # one more model

Models: the Qwen3-0.6B-shaped GGUF from bench_embedder.py (Qwen3-Embedding-0.6B's shapes and
vocabulary, random weights, Q8_0: llama.cpp's buffers depend on shapes only, not on weights), the
shared all-MiniLM-L6-v2 Q8_0 when ../shared/models has it, the tiny test model, and the tiny
model padded to Qwen3's 151,669-token vocabulary (the test's model). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

WORK = REPO / "benchmarks" / "_work" / "embedder"
MINILM = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"
LONG_TEXT = " ".join(f"word{i} dragon" for i in range(3000))

PROBE = r"""
import json, sys, time
from dle_desktop.vectors.embedder import LocalEmbedder

def mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: round(int(status[k].split()[0]) / 1024) for k in ("VmRSS", "VmHWM")}

path, one_pass, long_text = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
out = {"start": mb()["VmRSS"]}
e = LocalEmbedder(path, last_token_outputs=not one_pass)
t = time.perf_counter()
e.embed_sync(["a short text to load the model"])
out["loaded"], out["load_s"] = mb()["VmRSS"], round(time.perf_counter() - t, 2)
e.embed_sync([f"short text number {i} about the harbour" for i in range(64)])
out["packed"] = mb()["VmRSS"]
t = time.perf_counter()
e.embed_sync([long_text])
m = mb()
out["long_s"], out["after_long"], out["peak"] = round(time.perf_counter() - t, 2), m["VmRSS"], m["VmHWM"]
out["tokens"] = e.profile.max_tokens
out["last_token_only"] = e._loaded.last_token_only
print(json.dumps(out))
"""


NOTES = """
Columns (MB resident, each model in a fresh process): start = the interpreter before loading;
loaded = after loading the model and embedding one short text; +64 short = after a batch of 64
short texts (packed); long text = one text cut to the profile's cap (tokens); peak = the
process's highest RSS (VmHWM) up to then; after = RSS after it (what stays); long s = seconds for
that one text (on a shared 2-core machine: rough). decode: last-token = every token but each
text's last decoded with embeddings off, then the last tokens (LocalEmbedder's way for causal
models with last-token pooling); one-pass = every token an output (its way for encoder models,
and before this change for all)."""


def models(extra: list[Path]) -> list[tuple[str, Path]]:
    from benchmarks.bench_embedder import model_path
    from tests.support.tiny_gguf import QWEN3_0_6B, make_tiny_qwen3_gguf

    WORK.mkdir(parents=True, exist_ok=True)
    out = [("Qwen3-0.6B-shaped Q8_0 (random weights)", model_path())]
    if MINILM.is_file():
        out.append(("all-MiniLM-L6-v2 Q8_0", MINILM))
    out.append(("tiny Qwen3 (test model)", make_tiny_qwen3_gguf(WORK / "tiny-qwen3.gguf")))
    out.append(
        (
            "tiny Qwen3, 151,669-token vocabulary",
            make_tiny_qwen3_gguf(WORK / "tiny-qwen3-big-vocab.gguf", n_vocab=QWEN3_0_6B["n_vocab"]),
        )
    )
    out += [(p.name, p) for p in extra]
    return out


def measure(path: Path, one_pass: bool) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), "1" if one_pass else "0", LONG_TEXT],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    if run.returncode != 0:
        raise SystemExit(f"{path}: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, action="append", default=[], help="another GGUF to measure")
    ap.add_argument("--one-pass", action="store_true", help="also measure the every-token-an-output decode")
    args = ap.parse_args()
    import llama_cpp

    print("Embedder memory, MB of resident memory (benchmarks/bench_embedder_memory.py)")
    print(
        f"machine: {platform.platform()}, Python {platform.python_version()}, llama-cpp-python {llama_cpp.__version__}"
    )
    print(
        f"{'model':40} {'decode':10} {'start':>5} {'loaded':>6} {'+64 short':>9} {'long text':>9} "
        f"{'peak':>5} {'after':>5} {'long s':>6}"
    )
    for label, path in models(args.model):
        for one_pass in (False, True) if args.one_pass else (False,):
            r = measure(path, one_pass)
            decode = "last-token" if r["last_token_only"] else "one-pass"
            print(
                f"{label[:40]:40} {decode:10} {r['start']:5} {r['loaded']:6} {r['packed']:9} "
                f"{str(r['tokens']) + ' tok':>9} {r['peak']:5} {r['after_long']:5} {r['long_s']:6}",
                flush=True,
            )
            if decode == "one-pass" and not one_pass:
                break  # this model always decodes in one pass: the --one-pass row would repeat it
    print(NOTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
