"""Body rules from DLE: title, wikilinks and the cleaned text that gets injected."""

from __future__ import annotations

import re

_H1_RE = re.compile(r"^#\s+(.+)$", re.MULTILINE)
_LINK_IN_TITLE_RE = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")
_LINK_TARGET_RE = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]+)?\]\]")

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
    if "[[" not in body:
        return ()
    text = _without_first_h1(body)
    seen: dict[str, None] = {}
    if "![[" not in text:  # no embeds: every match is a link
        for target in _LINK_TARGET_RE.findall(text):
            target = target.strip()
            if target.endswith("\\"):
                target = target[:-1].rstrip()
            if target:
                seen.setdefault(target)
        return tuple(seen)
    # The pattern starts with the literal `[[`, which the regex engine searches for fast; the
    # `!` of an embed is the character just before it (a match never ends in `!`, so it
    # cannot belong to the previous match).
    for m in _LINK_TARGET_RE.finditer(text):
        start = m.start()
        if start and text[start - 1] == "!":
            continue
        target = m.group(1).strip()
        if target.endswith("\\"):
            target = target[:-1].rstrip()
        if target and target not in seen:
            seen[target] = None
    return tuple(seen)


def clean_content(body: str) -> str:
    """The text DLE injects: comments, exclusions, embeds and markup removed, links flattened."""
    # Each pass runs only when the text holds what its pattern must start with: most notes have
    # no comments, markup or embeds, and a pass that cannot match still scans the whole note.
    text = body.replace("\r\n", "\n")
    if "%%" in text:
        text = _EXCLUDE_BLOCK_RE.sub("", text)
        text = _INLINE_COMMENT_RE.sub("", text)
        text = _BLOCK_COMMENT_RE.sub("", text)
    if "<" in text:
        text = _DIV_TAG_RE.sub("", text)
    text = _without_first_h1(text)
    if "![" in text:
        text = _EMBED_RE.sub("", text)
        text = _MD_IMAGE_RE.sub("", text)
    if "[[" in text:
        text = _ALIASED_LINK_RE.sub(lambda m: m.group(2), text)  # faster than a template on 3.11
        text = _PLAIN_LINK_RE.sub(lambda m: m.group(1), text)
    if "\n\n\n" in text:
        text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


def estimate_tokens(text: str) -> int:
    """DLE's fallback estimate (ST's tokenizer is not available outside ST): ceil(chars / 4)."""
    return -(-len(text) // 4)
