"""What embedding a long text costs in memory (issue 9, item 16). In embedding mode llama.cpp
makes every token of a decode an output with a row of the whole vocabulary, and never shrinks
that buffer: one 2,048-token text with Qwen3's 151,669-token vocabulary took 1.2 GB, for good.
Measured in a subprocess (its own peak RSS), with a tiny random model padded to that vocabulary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")

from dle_desktop.vectors.embedder import LocalEmbedder
from tests.support.tiny_gguf import QWEN3_0_6B, make_tiny_qwen3_gguf

ROOT = Path(__file__).resolve().parents[2]
LONG_TEXT = " ".join(f"word{i} dragon" for i in range(3000))  # cut to the 2,048-token cap

PROBE = """
import json, sys
from dle_desktop.vectors.embedder import LocalEmbedder

def rss_mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}

e = LocalEmbedder(sys.argv[1], n_threads=1)
e.embed_sync(["a short text to load the model"] + [f"short {i}" for i in range(64)])
base = rss_mb()
e.embed_sync([sys.argv[2]])
after = rss_mb()
print(json.dumps({"base": base["VmRSS"], "peak": after["VmHWM"], "after": after["VmRSS"],
                  "truncated": e.truncated_texts}))
"""


@pytest.fixture(scope="module")
def big_vocab_model(tmp_path_factory) -> Path:
    return make_tiny_qwen3_gguf(
        tmp_path_factory.mktemp("gguf") / "tiny-qwen3-big-vocab.gguf", n_vocab=QWEN3_0_6B["n_vocab"]
    )


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc")
def test_a_long_text_costs_little_memory_and_nothing_stays(big_vocab_model: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(big_vocab_model), LONG_TEXT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    mb = json.loads(run.stdout.strip().splitlines()[-1])
    assert mb["truncated"] == 1  # the text really filled the 2,048-token context
    # The output rows of 2,048 tokens alone would be 2,048 x 151,669 x 4 bytes = 1.2 GB.
    assert mb["peak"] - mb["base"] < 150, mb
    assert mb["after"] - mb["base"] < 100, mb


def test_last_token_pooling_in_two_steps_gives_the_one_pass_vectors(big_vocab_model: Path) -> None:
    texts = [LONG_TEXT[:6000], "", "a short one"] + [f"packed text {i}" for i in range(20)]
    with (
        LocalEmbedder(big_vocab_model, n_threads=1) as two_step,
        LocalEmbedder(big_vocab_model, n_threads=1, last_token_outputs=False) as one_pass,
    ):
        one_pass.embed_sync(["load"])  # llama.cpp pools: every token an output
        before = one_pass.tokens_processed
        a = two_step.embed_sync(texts)
        b = one_pass.embed_sync(texts)
        assert two_step.tokens_processed == one_pass.tokens_processed - before  # the same tokens decoded
    assert (np.sum(a * b, axis=1) > 0.9999).all()
