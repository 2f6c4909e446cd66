"""Run a whole chat through the pipeline: once at its end, or once per user message with the
state carried between generations as in a real chat (replay)."""

from __future__ import annotations

import random

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.chat_input import ChatDocument
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.run import run_generation
from dle_desktop.core.pipeline.state import ChatState


def initial_state(doc: ChatDocument) -> ChatState:
    return ChatState(
        pins=doc.pins or (), blocks=doc.blocks or (), context=doc.context or {},
        folder_filter=doc.folder_filter, notebook=doc.notebook or "",
    )


def generations(snapshot: IndexSnapshot, doc: ChatDocument, cfg: MatchConfig, replay: bool = False,
                seed: int | None = None) -> list[dict]:
    rng = random.Random(seed)
    state = initial_state(doc)
    messages = list(doc.messages)
    cut_points = [i + 1 for i, m in enumerate(messages) if m.is_user] if replay else []
    if not cut_points:
        cut_points = [len(messages)]
    out = []
    for cut in cut_points:
        result, state = run_generation(snapshot, messages[:cut], state, cfg, character_name=doc.character_name, rng=rng)
        record = result.to_json()
        record["messages"] = cut
        out.append(record)
    return out
