"""`dle-desktop embed`: embed one text with a local GGUF model and print the vector.

For users checking that a model works, and for tests. Errors (missing file, not a GGUF, a model
llama.cpp cannot load) print a message and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dle_desktop.cli.errors import fail, run_command
from dle_desktop.errors import DleError


def add_embed_arguments(p: Any) -> None:
    # Accepted as on every subcommand; embedding one text keeps nothing in the data folder.
    p.add_argument("--data-dir", metavar="DIR", default=argparse.SUPPRESS, help="accepted as on every subcommand")
    p.add_argument("--embedding-model", required=True, metavar="PATH", help="a local GGUF embedding model")
    p.add_argument("--text", required=True, help="the text to embed ('-' reads it from standard input)")
    p.add_argument("--query", action="store_true", help="embed as a search query (adds the model's query instruction)")
    p.add_argument("--threads", type=int, metavar="N", help="CPU threads for llama.cpp (default: all available)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run_embed(args: Any) -> int:
    # Imported here: building the parser (every command) must not load the vector store.
    from dle_desktop.vectors.contracts import EmbeddingError

    return run_command(lambda: _embed(args), errors=(DleError, EmbeddingError))


def _embed(args: Any) -> int:
    from dle_desktop.vectors.embedder import LocalEmbedder
    from dle_desktop.vectors.model_manager import ModelManager

    text = sys.stdin.read() if args.text == "-" else args.text
    path = ModelManager(".").local_model(args.embedding_model)
    if args.threads is not None and args.threads < 1:
        return fail("--threads must be at least 1", 2)
    embedder = LocalEmbedder(path, n_threads=args.threads)
    try:
        vector = embedder.embed_sync([text], query=args.query)[0]
        profile = embedder.profile
    finally:
        embedder.close()
    _print([float(x) for x in vector], profile, args)
    return 0


def _print(values: list[float], profile: Any, args: Any) -> None:
    if args.json:
        json.dump(
            {"model": profile.model_id, "dim": len(values), "query": bool(args.query), "vector": values}, sys.stdout
        )
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    head = ", ".join(f"{v:.5f}" for v in values[:8])
    print(
        f"model {profile.model_id} ({profile.quantisation or 'unknown quantisation'}), prompt {profile.prompt_version}, "
        f"max {profile.max_tokens} tokens"
    )
    print(
        f"{'query' if args.query else 'document'} vector, {len(values)} dimensions: [{head}{', …' if len(values) > 8 else ''}]"
    )
