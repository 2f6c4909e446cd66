"""The local llama.cpp embedder, run for real on a tiny Qwen3 GGUF the tests generate.

The model has random (seeded) weights, so these tests check mechanics (loading, pooling, prompts,
normalisation, truncation, errors, threading), not meaning; the test at the end uses a real
small model from ../shared/models when it is there.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")

from dle_desktop.vectors.contracts import EmbeddingError, EmbeddingProfile
from dle_desktop.vectors.embedder import (
    QWEN3_QUERY_INSTRUCTION,
    GgufFormatError,
    LocalEmbedder,
    normalise_vectors,
    plan_batches,
    read_gguf_info,
)
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

MINILM = Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("gguf") / "tiny-qwen3-F32.gguf")


@pytest.fixture(scope="module")
def emb(tiny_gguf: Path):
    e = LocalEmbedder(tiny_gguf, n_threads=1)
    yield e
    e.close()


def run(coro):
    return asyncio.run(coro)


# -- the generated model ------------------------------------------------------------------------


def test_tiny_gguf_is_deterministic_and_declares_qwen3_last_token(tiny_gguf: Path, tmp_path: Path) -> None:
    again = make_tiny_qwen3_gguf(tmp_path / "again.gguf")
    other = make_tiny_qwen3_gguf(tmp_path / "other.gguf", seed=1)

    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    assert digest(again) == digest(tiny_gguf)
    assert digest(other) != digest(tiny_gguf)
    assert tiny_gguf.stat().st_size < 2_000_000
    info = read_gguf_info(tiny_gguf)
    assert info.arch == "qwen3"
    assert info.declared_pooling == 3 and info.pooling() == 3  # last token
    assert info.quantisation == "F32"
    assert info.embedding_length == 64 and info.context_length == 2048
    assert info.causal
    assert info.metadata["tokenizer.ggml.model"] == "gpt2"
    assert info.metadata["tokenizer.ggml.tokens"][0] == "array"


# -- basic embedding ----------------------------------------------------------------------------


def test_embeds_unit_float32_rows_of_the_model_dimension(emb: LocalEmbedder) -> None:
    texts = ["The dragon sleeps in the northern mountains.", "Bread and cheese at the market.", "x"]
    v = run(emb.embed(texts))
    assert v.shape == (3, 64) and v.dtype == np.float32 and v.flags["C_CONTIGUOUS"]
    assert np.isfinite(v).all()
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert emb.dim == 64
    # different texts, different vectors
    assert abs(float(v[0] @ v[1])) < 0.999


def test_profile_describes_model_quant_prompt_and_length(emb: LocalEmbedder, tiny_gguf: Path) -> None:
    p = emb.profile
    assert p == EmbeddingProfile(
        model_id="tiny-qwen3-F32", quantisation="F32", prompt_version="v1", max_tokens=2048, endpoint=""
    )
    short = LocalEmbedder(tiny_gguf, n_ctx=128, n_threads=1)
    long = LocalEmbedder(tiny_gguf, n_ctx=100_000, n_threads=1)
    raw = LocalEmbedder(tiny_gguf, n_threads=1, query_instruction=None)
    custom = LocalEmbedder(tiny_gguf, n_threads=1, query_instruction="Represent this question: ")
    try:
        assert short.profile.max_tokens == 128
        assert long.profile.max_tokens == 2048  # capped by the model's trained context
        assert raw.profile.prompt_version == "raw"
        assert custom.profile.prompt_version.startswith("i-")
        assert len({emb.profile.key(), short.profile.key(), raw.profile.key(), custom.profile.key()}) == 4
    finally:
        for e in (short, long, raw, custom):
            e.close()


def test_deterministic_across_calls_batches_and_instances(emb: LocalEmbedder, tiny_gguf: Path) -> None:
    long_a = "the knight rode through the forest toward the castle where the queen waited " * 3  # > 32 tokens
    long_b = "bread and cheese are traded at the market of the river town every morning " * 3
    batch = ["alpha beta", long_a, "gamma", long_b]
    a = run(emb.embed(batch))
    np.testing.assert_array_equal(run(emb.embed(batch)), a)  # same call, same bits
    b = run(emb.embed([long_b, "delta", "gamma", long_a, "alpha beta"]))
    # texts over 32 tokens are decoded alone: the same bits whatever their neighbours
    np.testing.assert_array_equal(a[1], b[3])
    np.testing.assert_array_equal(a[3], b[0])
    # short texts share a decode with their neighbours: equal up to float rounding
    assert float(a[0] @ b[4]) > 0.9999 and float(a[2] @ b[2]) > 0.9999
    with LocalEmbedder(tiny_gguf, n_threads=1) as fresh:
        np.testing.assert_array_equal(fresh.embed_sync(batch), a)
    with LocalEmbedder(tiny_gguf, n_threads=1, batch_tokens=0) as alone:  # one text per decode: exact
        one = alone.embed_sync(batch)
        np.testing.assert_array_equal(alone.embed_sync(["gamma", "alpha beta"]), one[[2, 0]])


def test_query_gets_the_instruction_and_documents_do_not(emb: LocalEmbedder, tiny_gguf: Path) -> None:
    text = "Where does the red dragon sleep?"
    doc = run(emb.embed([text]))[0]
    query = run(emb.embed([text], query=True))[0]
    assert not np.allclose(doc, query)
    assert emb.query_instruction == QWEN3_QUERY_INSTRUCTION
    # the query is exactly the document embedding of instruction + text
    as_doc = run(emb.embed([QWEN3_QUERY_INSTRUCTION + text]))[0]
    np.testing.assert_array_equal(query, as_doc)
    with LocalEmbedder(tiny_gguf, n_threads=1, query_instruction="") as raw:
        np.testing.assert_array_equal(raw.embed_sync([text], query=True)[0], doc)


def test_long_text_is_truncated_not_crashing(tiny_gguf: Path) -> None:
    with LocalEmbedder(tiny_gguf, n_ctx=64, n_threads=1) as e:
        head = "the knight rode through the forest toward the castle " * 40
        v1 = e.embed_sync([head + "and the queen was waiting"])
        v2 = e.embed_sync([head + "but nobody was there at all " * 5000])  # ~150k characters
        assert e.truncated_texts == 2
        np.testing.assert_array_equal(v1, v2)  # only the first 64 tokens count
        q = e.embed_sync([head], query=True)  # the instruction survives the cut
        assert np.isfinite(q).all()
        assert e.profile.max_tokens == 64


def test_empty_and_whitespace_texts_are_embedded(emb: LocalEmbedder) -> None:
    """Decision: "" and whitespace are embedded as they are (the end-of-text token alone, or
    whitespace tokens plus it), not refused; they are valid, distinct unit vectors."""
    v = run(emb.embed(["", "   ", "\n\n", "word"]))
    assert v.shape == (4, 64)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert len({row.tobytes() for row in v}) == 4
    assert float(run(emb.embed([""]))[0] @ v[0]) > 0.9999


def test_unicode_and_odd_characters(emb: LocalEmbedder) -> None:
    texts = [
        "héllo wörld",
        "世界の竜は北の山で眠る",
        "🐉🔥🏰",
        "שלום עולם",
        "e\u0301\u0301",
        "nul\x00byte",
        "lone \ud800 surrogate",
        "<|endoftext|> is just text here",
        "\t\r\n",
    ]
    v = run(emb.embed(texts))
    assert v.shape == (len(texts), 64)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # special-token text in user input is tokenized as text, not as the special token
    eot_only = run(emb.embed([""]))[0]
    assert not np.allclose(v[7], eot_only)


def test_bad_input_is_a_400_and_empty_list_is_empty(emb: LocalEmbedder) -> None:
    for bad in ("just a string", None, ["ok", 3], [b"bytes"]):
        with pytest.raises(EmbeddingError) as info:
            run(emb.embed(bad))  # type: ignore[arg-type]  # the wrong types are the point
        assert info.value.status == 400
    out = run(emb.embed([]))
    assert out.shape == (0, 64) and out.dtype == np.float32


# -- failures and recovery ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["missing", "not_gguf", "truncated_header", "truncated_tensors", "bad_version"])
def test_broken_model_fails_the_request_and_the_embedder_recovers(kind: str, tiny_gguf: Path, tmp_path: Path) -> None:
    good = tiny_gguf.read_bytes()
    bad = tmp_path / f"{kind}.gguf"
    if kind == "not_gguf":
        bad.write_bytes(b"<html>not a model</html>" * 10)
    elif kind == "truncated_header":
        bad.write_bytes(good[:3000])
    elif kind == "truncated_tensors":
        bad.write_bytes(good[: len(good) // 2])
    elif kind == "bad_version":
        bad.write_bytes(good[:4] + struct.pack("<I", 99) + good[8:])
    expected = {
        "missing": "cannot be read",
        "not_gguf": "not a GGUF",
        "truncated_header": "truncated",
        "truncated_tensors": "could not be loaded",
        "bad_version": "version 99",
    }[kind]
    e = LocalEmbedder(bad, n_threads=1)
    try:
        assert e.profile.model_id == kind  # describing a broken file never raises
        for _ in range(2):  # a failed load is retried on the next request, and fails the same way
            with pytest.raises(EmbeddingError) as info:
                run(e.embed(["hello"]))
            assert info.value.status == 503
            assert expected in str(info.value)
            assert bad.name in str(info.value)
        # the file is fixed in place: the next request loads it
        shutil.copyfile(tiny_gguf, bad)
        assert run(e.embed(["hello"])).shape == (1, 64)
        # pointing at another (broken, then good) file
        e.set_model(tmp_path / "nowhere.gguf")
        with pytest.raises(EmbeddingError):
            run(e.embed(["hello"]))
        e.set_model(tiny_gguf)
        assert run(e.embed(["hello"])).shape == (1, 64)
    finally:
        e.close()


def test_header_reader_rejects_corrupt_headers(tiny_gguf: Path, tmp_path: Path) -> None:
    good = tiny_gguf.read_bytes()
    cases = {
        "magic": b"GGUX" + good[4:],
        "short": good[:20],
        "huge_string": good[:24] + struct.pack("<Q", 1 << 60) + good[32:],
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.gguf"
        p.write_bytes(data)
        with pytest.raises(GgufFormatError):
            read_gguf_info(p)


def test_reranker_gguf_is_refused(tmp_path: Path, tiny_gguf: Path) -> None:
    with LocalEmbedder(tiny_gguf, n_threads=1, pooling="last") as e:
        assert e.profile.prompt_version == "v1"  # same as declared: same vectors, same profile
    with LocalEmbedder(tiny_gguf, n_threads=1, pooling="mean") as e:
        assert e.profile.prompt_version == "v1+pool-mean"
        mean = e.embed_sync(["pooled by mean"])
        assert mean.shape == (1, 64)
    with pytest.raises(ValueError):
        LocalEmbedder(tiny_gguf, pooling="rank")


def test_closed_embedder_refuses_politely(tiny_gguf: Path) -> None:
    e = LocalEmbedder(tiny_gguf, n_threads=1)
    e.embed_sync(["load it"])
    e.close()
    e.close()  # idempotent
    with pytest.raises(EmbeddingError) as info:
        run(e.embed(["x"]))
    assert info.value.status == 503


# -- threading ----------------------------------------------------------------------------------


def test_many_concurrent_tasks_share_one_worker_thread(tiny_gguf: Path) -> None:
    texts = [f"message number {i} about the {['dragon', 'queen', 'harbour'][i % 3]}" for i in range(60)]
    with LocalEmbedder(tiny_gguf, n_threads=1) as e:
        sequential = e.embed_sync(texts)
        seen: set[int] = set()
        original = e._decode_one

        def spy(*args, **kwargs):
            seen.add(threading.get_ident())
            return original(*args, **kwargs)

        e._decode_one = spy  # type: ignore[method-assign]  # a spy, to see which thread decodes

        async def main():
            return await asyncio.gather(*(e.embed([t], query=i % 2 == 1) for i, t in enumerate(texts)))

        results = run(main())
        assert len(seen) == 1 and threading.get_ident() not in seen
        for i, row in enumerate(results):
            if i % 2 == 0:  # alone here, packed with neighbours in the sequential call
                assert float(row[0] @ sequential[i]) > 0.9999
        workers = [t for t in threading.enumerate() if t.ident in seen]
        assert workers and workers[0].name.startswith("dle-embedder")


def test_cancelled_request_leaves_the_embedder_usable(tiny_gguf: Path) -> None:
    with LocalEmbedder(tiny_gguf, n_threads=1) as e:

        async def main():
            big = asyncio.create_task(e.embed([f"text {i} " * 50 for i in range(3000)]))
            await asyncio.sleep(0.05)
            big.cancel()
            with pytest.raises(asyncio.CancelledError):
                await big
            return await e.embed(["still works"])

        assert run(main()).shape == (1, 64)
        assert e.tokens_processed < 3000 * 100  # the cancelled job stopped early


def test_embedder_works_from_two_event_loops(tiny_gguf: Path) -> None:
    with LocalEmbedder(tiny_gguf, n_threads=1) as e:
        results = []

        def other_loop():
            results.append(asyncio.run(e.embed(["from a thread"])))

        t = threading.Thread(target=other_loop)
        t.start()
        here = run(e.embed(["from a thread"]))
        t.join(30)
        np.testing.assert_array_equal(results[0], here)


# -- packing, measured alternative ---------------------------------------------------------------


@pytest.mark.parametrize("pack_text_tokens", [None, 12])
def test_packed_batches_match_one_sequence_per_decode(tiny_gguf: Path, pack_text_tokens) -> None:
    texts = [f"short text {i} " * (1 + i % 7) for i in range(40)]
    with (
        LocalEmbedder(tiny_gguf, n_threads=1, batch_tokens=0) as single,
        LocalEmbedder(tiny_gguf, n_threads=1, batch_tokens=128, pack_text_tokens=pack_text_tokens) as packed,
    ):
        a = single.embed_sync(texts)
        b = packed.embed_sync(texts)
    # the same vectors up to float rounding (matrix kernels add in another order for bigger batches)
    assert (np.sum(a * b, axis=1) > 0.9999).all()
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert packed.tokens_processed == single.tokens_processed


def test_plan_batches_groups_short_texts_only() -> None:
    assert plan_batches([5, 50, 5, 5], 0, 32, 64) == [[0], [1], [2], [3]]
    assert plan_batches([5, 50, 5, 5], 256, 32, 64) == [[0, 2, 3], [1]]
    assert plan_batches([5, 50, 5, 5], 256, None, 64) == [[0, 1, 2, 3]]
    assert plan_batches([100, 100, 100], 256, None, 64) == [[0, 1], [2]]
    assert plan_batches([1] * 5, 256, 32, 2) == [[0, 1], [2, 3], [4]]
    assert plan_batches([300, 10], 256, None, 64) == [[0], [1]]  # too long for a group: alone
    assert plan_batches([], 256, 32, 64) == []


# -- vector checks ------------------------------------------------------------------------------


def test_normalise_vectors_checks_everything() -> None:
    np.testing.assert_allclose(normalise_vectors([[3, 4]]), [[0.6, 0.8]])
    for bad, what in [
        ([[0, 0]], "zero"),
        ([[1, float("nan")]], "non-finite"),
        ([[1, 2], [1]], "equally long"),
        ([["1", "2"]], "numbers"),
        ([[True, False]], "numbers"),
        ([1, 2], "equally long"),
        ([[1e39, 1]], "non-finite"),
    ]:
        with pytest.raises(EmbeddingError) as info:
            normalise_vectors(bad)
        assert what in str(info.value)
    with pytest.raises(EmbeddingError, match="expected 2"):
        normalise_vectors([[1, 2]], expected=2)
    with pytest.raises(EmbeddingError, match="dimension 3"):
        normalise_vectors([[1, 2]], dim=3)


# -- a real model: meaning ----------------------------------------------------------------------


@pytest.mark.skipif(not MINILM.is_file(), reason="../shared/models/all-MiniLM-L6-v2-Q8_0.gguf is not here")
def test_real_model_ranks_the_paraphrased_passage_first() -> None:
    passages = [
        "Bread is made by mixing flour, water, salt and yeast, letting the dough rise, then baking it in a hot oven.",
        "The red dragon Vharzul sleeps in a cave beneath the northern mountains and wakes once a century.",
        "The harbour guild controls every ship that docks in Saltmere and taxes all imported spices.",
        "Queen Elara was crowned after her brother died in the war against the eastern clans.",
        "To repair a leaking roof, replace the broken shingles and seal the gaps with tar.",
    ]
    queries = [
        "How do you bake a loaf of bread?",
        "Where is the dragon's lair?",
        "Who taxes the ships in the port?",
        "How did the queen come to the throne?",
        "My house roof lets the rain in; how do I fix it?",
    ]
    with LocalEmbedder(MINILM) as e:
        profile = e.profile
        assert profile.model_id == "all-MiniLM-L6-v2-Q8_0" and profile.quantisation == "Q8_0"
        assert profile.prompt_version == "raw" and profile.max_tokens == 512  # BERT: no instruction
        docs = run(e.embed(passages))
        qs = run(e.embed(queries, query=True))
        assert docs.shape == (5, 384)
    scores = qs @ docs.T
    assert list(scores.argmax(axis=1)) == [0, 1, 2, 3, 4], scores
