"""The text the semantic stage searches with, built for meaning rather than for keys.

Keyword matching reads DLE's scan text (`name: text` lines). Meaning is better served by the
messages' own words: speaker names are left out (a name pulls in every entry that shares it),
out-of-character asides (`(( ... ))`, `[OOC: ...]`, `(OOC: ...)`, `OOC: ...` lines) and empty or
system messages are dropped, and the newest message counts most. The query is a list of parts,
one per message (oldest first), so the caller can embed each message once and re-use it while
the window slides over it; `SemanticQuery.weights` says how the parts are combined."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dle_desktop.core.pipeline.chat import ChatMessage, should_skip_generation

#: Characters of one message that go into the query (the end of a long message is kept: in a
#: reply the newest turn of the scene is usually last).
MAX_PART_CHARS = 1200
#: Characters of the query text shown in the decision record.
SHOWN_CHARS = 300

_OOC_PATTERNS = (
    re.compile(r"\(\([^()]*(?:\([^()]*\)[^()]*)*\)\)", re.S),  # (( ... ))
    re.compile(r"\[\s*OOC\s*:[^\]]*\]", re.I | re.S),  # [OOC: ...]
    re.compile(r"\(\s*OOC\s*:[^)]*\)", re.I | re.S),  # (OOC: ...)
    re.compile(r"^\s*OOC\s*:.*$", re.I | re.M),  # OOC: ... (a whole line)
    re.compile(r"<!--.*?-->", re.S),  # HTML comments some presets leave in messages
)
_SPACE = re.compile(r"[ \t\f\v]+")


def clean_message(text: str) -> str:
    """A message's text without out-of-character asides and surplus whitespace ("" when nothing
    in-character is left)."""
    out = text or ""
    for pat in _OOC_PATTERNS:
        out = pat.sub(" ", out)
    lines = (_SPACE.sub(" ", ln).strip() for ln in out.splitlines())
    out = "\n".join(ln for ln in lines if ln)
    if not any(ch.isalnum() for ch in out):
        return ""
    if len(out) > MAX_PART_CHARS:
        out = out[-MAX_PART_CHARS:]
        cut = out.find(" ")
        if 0 <= cut < 40:
            out = out[cut + 1 :]
    return out


@dataclass(frozen=True)
class SemanticQuery:
    """`parts`: the window's in-character message texts, oldest first; the newest is `parts[-1]`.
    The query vector is `last_weight` × the newest part's vector + the rest × the mean of every
    part's vector (normalised); with one part it is that part."""

    parts: tuple[str, ...]
    last_weight: float = 0.5

    @property
    def last(self) -> str:
        return self.parts[-1]

    @property
    def text(self) -> str:
        """The whole query as one text (newest last), e.g. for a lookup that takes one text."""
        return "\n".join(self.parts)

    def weights(self) -> tuple[float, float]:
        """(weight of the newest part, weight of the window's mean)."""
        if len(self.parts) <= 1:
            return 1.0, 0.0
        w = min(1.0, max(0.0, self.last_weight))
        return w, 1.0 - w

    def shown(self) -> str:
        """The query as the decision record shows it: the newest message first, then the window."""
        last = _short(self.last, SHOWN_CHARS)
        if len(self.parts) <= 1:
            return f"«{last}»"
        w_last, _ = self.weights()
        rest = _short(" / ".join(self.parts[:-1]), SHOWN_CHARS)
        return f"«{last}» (weight {w_last:g}), with the {len(self.parts) - 1} message(s) before: «{rest}»"


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def build_semantic_query(messages: Sequence[ChatMessage], depth: int, last_weight: float = 0.5) -> SemanticQuery | None:
    """The query for the last `depth` messages (filtered ones use up depth, as in DLE's scan),
    or None when nothing in-character is left."""
    if depth <= 0 or should_skip_generation(messages):
        return None
    parts = []
    for m in messages[-depth:]:
        if m.skipped_in_scan:
            continue
        text = clean_message(m.mes)
        if text:
            parts.append(text)
    if not parts:
        return None
    return SemanticQuery(tuple(parts), last_weight)
