"""Body rules from DLE: title, wikilinks and the cleaned text that gets injected."""

from __future__ import annotations

import re

_H1_RE = re.compile(r"^#\s+(.+)$", re.MULTILINE)
_LINK_IN_TITLE_RE = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")
_WIKILINK_RE = re.compile(r"(!?)\[\[([^\]|]+)(?:\|[^\]]+)?\]\]")

_EXCLUDE_BLOCK_RE = re.compile(r"%%deeplore-exclude%%[\s\S]*?%%/deeplore-exclude%%")
_INLINE_COMMENT_RE = re.compile(r"%%[^%\n]+%%")
_BLOCK_COMMENT_RE = re.compile(r"^%%[\s\S]*?^%%$", re.MULTILINE)
_DIV_TAG_RE = re.compile(r"</?div\b[^>]*>", re.IGNORECASE)
_EMBED_RE = re.compile(r"!\[\[[^\]]*\]\]")
_MD_IMAGE_RE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_ALIASED_LINK_RE = re.compile(r"\[\[([^\]|]+)\|([^\]]+)\]\]")
_PLAIN_LINK_RE = re.compile(r"\[\[([^\]]+)\]\]")
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")


def _display_link_text(text: str) -> str:
    return _LINK_IN_TITLE_RE.sub(lambda m: m.group(2) or m.group(1), text)


def extract_title(body: str, filename: str) -> str:
    """The first H1 anywhere in the body, links shown as their display text; else the file name."""
    m = _H1_RE.search(body)
    if m:
        title = _display_link_text(m.group(1)).strip()
        if title:
            return title
    base = filename.rsplit("/", 1)[-1]
    return base[:-3] if base.lower().endswith(".md") else base


def _without_first_h1(body: str) -> str:
    m = _H1_RE.search(body)
    if not m:
        return body
    end = m.end()
    if end < len(body) and body[end] == "\n":
        end += 1
    return body[: m.start()] + body[end:]


def extract_wikilinks(body: str) -> tuple[str, ...]:
    """Link targets in order of first appearance; embeds (`![[...]]`) are not links."""
    seen: dict[str, None] = {}
    for m in _WIKILINK_RE.finditer(_without_first_h1(body)):
        if m.group(1):
            continue
        target = m.group(2).strip()
        if target.endswith("\\"):
            target = target[:-1].rstrip()
        if target and target not in seen:
            seen[target] = None
    return tuple(seen)


def clean_content(body: str) -> str:
    """The text DLE injects: comments, exclusions, embeds and markup removed, links flattened."""
    text = body.replace("\r\n", "\n")
    text = _EXCLUDE_BLOCK_RE.sub("", text)
    text = _INLINE_COMMENT_RE.sub("", text)
    text = _BLOCK_COMMENT_RE.sub("", text)
    text = _DIV_TAG_RE.sub("", text)
    text = _without_first_h1(text)
    text = _EMBED_RE.sub("", text)
    text = _MD_IMAGE_RE.sub("", text)
    text = _ALIASED_LINK_RE.sub(lambda m: m.group(2), text)
    text = _PLAIN_LINK_RE.sub(lambda m: m.group(1), text)
    text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


def estimate_tokens(text: str) -> int:
    """DLE's fallback estimate (ST's tokenizer is not available outside ST): ceil(chars / 4)."""
    return -(-len(text) // 4)
