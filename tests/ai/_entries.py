"""Entries built directly, so the AI-search tests need neither notes nor a vault."""

from __future__ import annotations

from dle_desktop.core.entry import Entry


def entry(
    title: str, *, vault: str = "v", path: str | None = None, content: str | None = None, tokens: int = 10, **kw
) -> Entry:
    return Entry(
        vault=vault,
        path=path or f"{title}.md",
        title=title,
        content=content if content is not None else f"{title} is a thing of note.",
        content_hash="h",
        token_estimate=tokens,
        **kw,
    )
