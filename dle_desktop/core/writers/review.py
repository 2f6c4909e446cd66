"""/dle-review (dle-behaviour §5.5): the whole vault as one prompt for the chat's own model, with
DLE's header and the user's question. DLE posts this as a visible user message, so the dump stays
in the chat's history; the bridge instead sends it as a quiet prompt and keeps only the question
and the answer in the chat."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dle_desktop.core.body import estimate_tokens
from dle_desktop.core.entry import Entry

#: What is asked when the user gives no question.
DEFAULT_QUESTION = (
    "Review this lorebook for consistency, gaps, contradictions, and opportunities for improvement. "
    "Be specific about which entries you're referring to."
)
SEPARATOR = "\n\n---\n\n"


@dataclass(frozen=True)
class ReviewPrompt:
    text: str
    entries: int
    tokens: int
    question: str


def reviewed_entries(entries: Iterable[Entry]) -> list[Entry]:
    """What the review reads: every entry the writer sees (guides are the Librarian's own)."""
    return [e for e in entries if not e.guide]


def review_prompt(entries: Iterable[Entry], question: str, response_tokens: int = 0) -> ReviewPrompt:
    chosen = reviewed_entries(entries)
    body = SEPARATOR.join(f"## {e.title}\n{e.content.strip()}" for e in chosen)
    tokens = estimate_tokens(body)
    asked = question.strip() or DEFAULT_QUESTION
    parts = [f"[DeepLore Enhanced Review — {len(chosen)} entries, ~{tokens} tokens]", body, asked]
    if response_tokens > 0:
        parts.append(f"Keep your response under {response_tokens} tokens.")
    text = "\n\n".join(p for p in parts if p)
    return ReviewPrompt(text=text, entries=len(chosen), tokens=estimate_tokens(text), question=asked)
