"""Run a whole chat through the pipeline: once at its end, or once per user message with the
state carried between generations as in a real chat (replay)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.chat_input import ChatDocument
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.run import run_generation, semantic_query
from dle_desktop.core.pipeline.state import ChatState


def initial_state(doc: ChatDocument) -> ChatState:
    return ChatState(
        pins=doc.pins or (), blocks=doc.blocks or (), context=doc.context or {},
        folder_filter=doc.folder_filter, notebook=doc.notebook or "",
    )


def cut_points(doc: ChatDocument, replay: bool) -> list[int]:
    """Message counts at which a generation runs: after each user message (replay), else once
    at the end."""
    points = [i + 1 for i, m in enumerate(doc.messages) if m.is_user] if replay else []
    return points or [len(doc.messages)]


#: (query text, top_k) -> ((entry uid, similarity) best first, a note when partial or missing).
SemanticLookup = Callable[[str, int], tuple[Sequence[tuple[str, float]], "str | None"]]


def generations(snapshot: IndexSnapshot, doc: ChatDocument, cfg: MatchConfig, replay: bool = False,
                seed: int | None = None, semantic: SemanticLookup | None = None) -> list[dict]:
    """`semantic` looks up the semantic stage's candidates (blocking); without it the stage,
    if enabled, has nothing to add and the record says so."""
    rng = random.Random(seed)
    state = initial_state(doc)
    messages = list(doc.messages)
    out = []
    for cut in cut_points(doc, replay):
        hits, note = None, None
        query = semantic_query(messages[:cut], cfg)
        if query is not None:
            if semantic is None:
                note = "semantic search is on but no embedding model is available here"
            else:
                hits, note = semantic(query, cfg.semantic_top_k)
        result, state = run_generation(snapshot, messages[:cut], state, cfg, character_name=doc.character_name, rng=rng,
                                       semantic_hits=hits, semantic_note=note)
        record = result.to_json()
        record["messages"] = cut
        out.append(record)
    return out
