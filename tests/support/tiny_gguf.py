"""Generate Qwen3-architecture embedding GGUFs with random weights, for tests and benchmarks.

`make_tiny_qwen3_gguf` writes a model of a few hundred kilobytes (2 layers, hidden size 64, a
small byte-level BPE vocabulary learnt from a fixed text) that the real llama.cpp loads as
`qwen3` with last-token pooling and embeds with in about a millisecond. Its weights are random
but seeded, so its embeddings are deterministic: the tests run the real llama.cpp code path with
no download.

`make_qwen3_0_6b_shaped_gguf` writes a model with Qwen3-Embedding-0.6B's shapes (hidden 1024,
28 layers, 16 query heads, 8 KV heads, head size 128, FFN 3072, 151,669 tokens, tied output) in
Q8_0, about 640 MB, to measure speed only (`benchmarks/bench_embedder.py`). Never used in tests.

Needs the `gguf` package (a test dependency); the app itself never imports this module.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np

# A fixed text to learn the BPE merges from: English prose with the letters and pairs lore text
# uses most, so common words become a few tokens (as with a real vocabulary) rather than bytes.
_CORPUS = (
    """
The dragon sleeps in the northern mountains, and the village below keeps its fires low.
Bread and cheese are traded at the market of the river town every morning of the week.
A red dragon was seen over the harbour; the guild of lantern makers closed their doors.
Given a conversation context, retrieve relevant passages and memories about the story.
She remembered the old king, the broken crown and the promise made at the stone bridge.
The knight rode through the forest toward the castle where the queen was waiting for him.
Magic in this world comes from the moon, and every mage must pay a price for the power.
They talked about the weather, the war in the east, the merchants and the price of salt.
What is the name of the tavern where the thieves meet? Who owns the ship in the harbour?
Characters, places, factions, artifacts, history, creatures and rules of the setting.
"""
    * 3
)

_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_WORD_RE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+")

# Shapes of Qwen3-Embedding-0.6B (config.json of Qwen/Qwen3-Embedding-0.6B).
QWEN3_0_6B = dict(
    hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, ffn=3072, n_vocab=151669, context_length=32768
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character table (what byte-level BPE vocabularies are written in)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def _learn_bpe(n_merges: int) -> tuple[list[str], list[str]]:
    """(tokens, merges): the 256 byte tokens, then one token per merge learnt from `_CORPUS`.
    Deterministic: ties between equally frequent pairs are broken by the pair's text."""
    b2u = _bytes_to_unicode()
    words = Counter("".join(b2u[b] for b in w.encode("utf-8")) for w in _WORD_RE.findall(_CORPUS))
    seqs = {w: list(w) for w in words}
    tokens = [b2u[b] for b in range(256)]
    known = set(tokens)
    merges: list[str] = []
    while len(merges) < n_merges:
        pairs: Counter[tuple[str, str]] = Counter()
        for w, count in words.items():
            s = seqs[w]
            for a, b in pairwise(s):
                pairs[(a, b)] += count
        if not pairs:
            break
        best_count = max(pairs.values())
        if best_count < 2:
            break
        a, b = min(p for p, c in pairs.items() if c == best_count)
        merges.append(f"{a} {b}")
        if a + b not in known:
            known.add(a + b)
            tokens.append(a + b)
        for w, s in seqs.items():
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return tokens, merges


def _english_bpe(vocab_size: int) -> tuple[list[str], list[str]]:
    """(tokens, merges) of a byte-level BPE with up to `vocab_size` tokens learnt, with the
    `tokenizers` library, from English prose found on every machine: CPython's own
    documentation (`pydoc_data`) and the bundled sample vault. Qwen3's real 151k-token vocabulary
    makes almost every common English word one token; `_learn_bpe`'s 240 merges make it three or
    four, which doubles the tokens a chat message costs and so the time a benchmark measures.
    This vocabulary lands in between (still pessimistic for rare words)."""
    import json
    import pydoc_data.topics

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    texts = list(pydoc_data.topics.topics.values())
    vault = Path(__file__).resolve().parents[2] / "resources" / "sample_vault"
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(vault.rglob("*.md"))]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    b2u = _bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    known = set(tokens)
    for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]):
        if t not in known:
            known.add(t)
            tokens.append(t)
    return tokens, merges


def _write_qwen3(
    path: Path,
    *,
    seed: int,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    n_merges: int,
    n_vocab: int | None,
    context_length: int,
    quant: str,
    name: str,
    english_vocab: int = 0,
) -> Path:
    import gguf  # test/benchmark dependency only

    rng = np.random.default_rng(seed)
    tokens, merges = _english_bpe(english_vocab) if english_vocab else _learn_bpe(n_merges)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    if n_vocab is not None:  # pad to a real vocabulary's size with tokens the tokenizer never produces
        pad = n_vocab - len(tokens) - len(_SPECIALS)
        tokens += [f"<|unused_{i}|>" for i in range(pad)]
        types += [gguf.TokenType.UNUSED] * pad
    special_ids = {}
    for s in _SPECIALS:
        special_ids[s] = len(tokens)
        tokens.append(s)
        types.append(gguf.TokenType.CONTROL)
    vocab = len(tokens)

    qtype = {
        "F32": gguf.GGMLQuantizationType.F32,
        "F16": gguf.GGMLQuantizationType.F16,
        "Q8_0": gguf.GGMLQuantizationType.Q8_0,
    }[quant]
    ftype = {
        "F32": gguf.LlamaFileType.ALL_F32,
        "F16": gguf.LlamaFileType.MOSTLY_F16,
        "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    }[quant]

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    w = gguf.GGUFWriter(tmp, "qwen3")
    w.add_name(name)
    w.add_type("model")
    w.add_file_type(int(ftype))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(context_length)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_pooling_type(gguf.PoolingType.LAST)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([int(t) for t in types])
    w.add_token_merges(merges)
    w.add_eos_token_id(special_ids["<|endoftext|>"])
    w.add_pad_token_id(special_ids["<|endoftext|>"])
    w.add_bos_token_id(special_ids["<|endoftext|>"])
    w.add_add_bos_token(False)

    def matrix(rows: int, cols: int, scale: float) -> np.ndarray:
        return rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(scale)

    def add(name_: str, data: np.ndarray) -> None:
        if data.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name_, data.astype(np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name_, data.astype(np.float16))
        else:
            q = gguf.quants.quantize(data, qtype)
            w.add_tensor(name_, q, raw_shape=q.shape, raw_dtype=qtype)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731 - RMS norm weights
    add("token_embd.weight", matrix(vocab, hidden, 1.0))
    add("output_norm.weight", ones(hidden))  # no output.weight: tied to token_embd, as in Qwen3-0.6B
    for i in range(layers):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", ones(hidden))
        add(p + "attn_q.weight", matrix(heads * head_dim, hidden, hidden**-0.5))
        add(p + "attn_k.weight", matrix(kv_heads * head_dim, hidden, hidden**-0.5))
        add(p + "attn_v.weight", matrix(kv_heads * head_dim, hidden, hidden**-0.5))
        add(p + "attn_output.weight", matrix(hidden, heads * head_dim, (heads * head_dim) ** -0.5))
        add(p + "attn_q_norm.weight", ones(head_dim))
        add(p + "attn_k_norm.weight", ones(head_dim))
        add(p + "ffn_norm.weight", ones(hidden))
        add(p + "ffn_gate.weight", matrix(ffn, hidden, hidden**-0.5))
        add(p + "ffn_up.weight", matrix(ffn, hidden, hidden**-0.5))
        add(p + "ffn_down.weight", matrix(hidden, ffn, ffn**-0.5))
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def make_tiny_qwen3_gguf(
    path: str | os.PathLike[str],
    seed: int = 0,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    ffn: int = 128,
    n_merges: int = 240,
    context_length: int = 2048,
    n_vocab: int | None = None,
) -> Path:
    """Write a tiny Qwen3 embedding GGUF (F32, last-token pooling) to `path` and return it.

    Same arguments → byte-identical file. The vocabulary: 256 byte tokens, `n_merges` learnt
    merges and the specials `<|endoftext|>` (EOS and padding), `<|im_start|>`, `<|im_end|>`;
    `n_vocab` pads it to a real model's size (llama.cpp's buffers grow with the vocabulary)."""
    return _write_qwen3(
        Path(path),
        seed=seed,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=hidden // heads,
        ffn=ffn,
        n_merges=n_merges,
        n_vocab=n_vocab,
        context_length=context_length,
        quant="F32",
        name="Tiny Qwen3 Embedding (random)",
    )


def make_qwen3_0_6b_shaped_gguf(
    path: str | os.PathLike[str], seed: int = 0, quant: str = "Q8_0", english_vocab: int = 0
) -> Path:
    """Write a GGUF with Qwen3-Embedding-0.6B's shapes and random weights (`quant` "Q8_0" or
    "F16"), for throughput benchmarks only: ~640 MB in Q8_0, a minute or so to generate.
    `english_vocab` > 0 gives it a byte-level BPE of that many tokens learnt from English text
    (`_english_bpe`, needs the `tokenizers` package), so a chat message costs about the tokens it
    would with the real model; 0 keeps the toy 240-merge vocabulary."""
    s = QWEN3_0_6B
    return _write_qwen3(
        Path(path),
        seed=seed,
        hidden=s["hidden"],
        layers=s["layers"],
        heads=s["heads"],
        kv_heads=s["kv_heads"],
        head_dim=s["head_dim"],
        ffn=s["ffn"],
        n_merges=240,
        n_vocab=s["n_vocab"],
        context_length=s["context_length"],
        quant=quant,
        name="Qwen3-0.6B-shaped Embedding (random)",
        english_vocab=english_vocab,
    )
