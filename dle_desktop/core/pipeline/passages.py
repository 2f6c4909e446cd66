"""An entry as passages for semantic search: its title with its summary, then its body in chunks
that keep paragraphs whole where they fit. Each passage is embedded on its own and an entry is
scored by its best passage, so one paragraph about the brewer is not averaged away in a long
entry. Pure and deterministic: the embedder's side (vectors/vault_embeddings.py) and the
pipeline's verdicts ("matched on: ...") cut the same passages from the same entry."""

from __future__ import annotations

import re

from dle_desktop.core.entry import Entry

#: A chunk grows paragraph by paragraph up to this many characters ...
CHUNK_CHARS = 600
#: ... and a single paragraph longer than this is cut at sentence ends.
MAX_CHUNK_CHARS = 900
#: Passages per entry at most (the summary passage included); the rest of a very long entry is
#: not searched.
MAX_PASSAGES = 16
#: Characters of a passage shown in a verdict.
EXCERPT_CHARS = 120
#: Bump when the cutting changes: every passage is then embedded anew.
PASSAGE_VERSION = 1

_PARAGRAPHS = re.compile(r"\n\s*\n+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


def _sentences(paragraph: str) -> list[str]:
    """A long paragraph in pieces of at most MAX_CHUNK_CHARS, cut after sentence ends (or at a
    space, for a sentence longer than that)."""
    out: list[str] = []
    cur = ""
    for sent in _SENTENCE_END.split(paragraph):
        while len(sent) > MAX_CHUNK_CHARS:
            cut = sent.rfind(" ", 0, MAX_CHUNK_CHARS)
            cut = cut if cut > MAX_CHUNK_CHARS // 2 else MAX_CHUNK_CHARS
            if cur:
                out.append(cur)
                cur = ""
            out.append(sent[:cut].strip())
            sent = sent[cut:].strip()
        if cur and len(cur) + 1 + len(sent) > CHUNK_CHARS:
            out.append(cur)
            cur = sent
        else:
            cur = f"{cur} {sent}".strip()
    if cur:
        out.append(cur)
    return [s for s in out if s]


def body_chunks(content: str) -> list[str]:
    """The body in chunks of whole paragraphs (up to CHUNK_CHARS each; a longer paragraph alone,
    cut at sentence ends past MAX_CHUNK_CHARS)."""
    chunks: list[str] = []
    cur = ""
    for para in _PARAGRAPHS.split(content or ""):
        para = " ".join(para.split())
        if not para:
            continue
        if len(para) > MAX_CHUNK_CHARS:
            if cur:
                chunks.append(cur)
                cur = ""
            chunks.extend(_sentences(para))
            continue
        if cur and len(cur) + 2 + len(para) > CHUNK_CHARS:
            chunks.append(cur)
            cur = para
        else:
            cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        chunks.append(cur)
    return chunks


def entry_passages(e: Entry) -> list[str]:
    """What is embedded for `e`, in order: title + summary (when there is a summary), then each
    body chunk headed by the title."""
    passages = [f"{e.title}\n{e.summary}"] if e.summary else []
    for chunk in body_chunks(e.content):
        passages.append(f"{e.title}\n{chunk}")
        if len(passages) >= MAX_PASSAGES:
            break
    return passages


def passage_excerpt(e: Entry, index: int, limit: int = EXCERPT_CHARS) -> str | None:
    """A short excerpt of passage `index` of `e` without the title heading (None if there is no
    such passage, e.g. an entry edited since it was embedded)."""
    passages = entry_passages(e)
    if not 0 <= index < len(passages):
        return None
    text = passages[index]
    if "\n" in text:
        text = text.split("\n", 1)[1]
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text
