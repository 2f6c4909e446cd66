"""`dle-desktop embed`: one vector from a local GGUF, as JSON; errors exit 2 with a message."""

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
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("cli") / "tiny-qwen3.gguf")


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dle_desktop", "embed", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("query", [False, True])
def test_embed_json_prints_the_same_vector_as_the_library(tiny: Path, query: bool) -> None:
    text = "The dragon sleeps in the northern mountains."
    r = cli("--embedding-model", str(tiny), "--text", text, "--json", "--threads", "1", *(["--query"] if query else []))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = json.loads(r.stdout)
    assert set(out) == {"model", "dim", "query", "vector"}
    assert out["model"] == "tiny-qwen3" and out["dim"] == 64 and out["query"] is query
    vec = np.array(out["vector"], dtype=np.float32)
    assert vec.shape == (64,) and abs(float(np.linalg.norm(vec)) - 1) < 1e-5
    with LocalEmbedder(tiny, n_threads=1) as e:
        expected = e.embed_sync([text], query=query)[0]
    np.testing.assert_allclose(vec, expected, atol=1e-6)


def test_embed_reads_stdin_and_prints_a_summary(tiny: Path) -> None:
    r = cli("--embedding-model", str(tiny), "--text", "-", "--threads", "1", stdin="text from stdin")
    assert r.returncode == 0, r.stderr
    assert "64 dimensions" in r.stdout and "tiny-qwen3" in r.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        (b"<html>nope</html>", "not a GGUF"),
        ("half", "could not be loaded"),
    ],
)
def test_embed_errors_exit_2_with_a_message(tiny: Path, tmp_path: Path, content, message: str) -> None:
    target = tmp_path / "model.gguf"
    if content == "half":
        data = tiny.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    elif content is not None:
        target.write_bytes(content)
    r = cli("--embedding-model", str(target), "--text", "x", "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("error: ") and message in r.stderr
    assert "Traceback" not in r.stderr
