"""Chat messages in SillyTavern's shape, and the scan text DLE builds from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatMessage:
    name: str
    mes: str
    is_user: bool = False
    is_system: bool = False
    swipe_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Stepped-Thinking thought messages carry a top-level `is_thoughts` flag (dle-behaviour §3.2).
    is_thoughts: bool = False

    @property
    def skipped_in_scan(self) -> bool:
        """System notes, thoughts, tool calls, narrator and small-system lines are not scanned."""
        x = self.extra or {}
        return bool(
            self.is_system
            or self.is_thoughts
            or x.get("is_thoughts")
            or x.get("tool_invocations")
            or x.get("type") == "narrator"
            or x.get("isSmallSys")
        )


def scan_lines(messages: Sequence[ChatMessage], depth: int) -> list[str]:
    """The last `depth` messages (filtered ones still use up depth), as `name: text` lines."""
    if depth <= 0:
        return []
    return [f"{m.name}: {m.mes}" for m in messages[-depth:] if not m.skipped_in_scan]


def scan_text(messages: Sequence[ChatMessage], depth: int) -> str:
    return "\n".join(scan_lines(messages, depth))


def ai_transcript(messages: Sequence[ChatMessage], depth: int) -> str:
    out = []
    for m in messages[-depth:] if depth > 0 else []:
        if m.skipped_in_scan:
            continue
        out.append(f"{m.name or 'Unknown'} ({'user' if m.is_user else 'character'}): {m.mes}")
    return "\n".join(out)


def should_skip_generation(messages: Sequence[ChatMessage]) -> str | None:
    """DLE does not run for a tool-call continuation or after a system message."""
    if not messages:
        return None
    last = messages[-1]
    if (last.extra or {}).get("tool_invocations"):
        return "the last message is a tool call continuation"
    if last.is_system:
        return "the last message is a system message"
    return None
