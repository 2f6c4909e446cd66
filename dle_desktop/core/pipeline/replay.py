"""Replaying a whole chat: where its generations fall and the state it starts from (the
driver, with semantic and AI lookups at the edge, is `RetrievalService.dry_run`)."""

from __future__ import annotations

from dle_desktop.core.pipeline.chat_input import ChatDocument
from dle_desktop.core.pipeline.state import ChatState


def initial_state(doc: ChatDocument) -> ChatState:
    return ChatState(
        pins=doc.pins or (),
        blocks=doc.blocks or (),
        context=doc.context or {},
        folder_filter=doc.folder_filter,
        notebook=doc.notebook or "",
    )


def cut_points(doc: ChatDocument, replay: bool) -> list[int]:
    """Message counts at which a generation runs: after each user message (replay), else once
    at the end."""
    points = [i + 1 for i, m in enumerate(doc.messages) if m.is_user] if replay else []
    return points or [len(doc.messages)]
