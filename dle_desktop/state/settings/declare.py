"""How one setting is declared (`_s`: DLE's name, default, allowed values, its place in the
settings UI), the settings UI's groups, and the checks a declaration may name."""

from __future__ import annotations

import ntpath
import os
from dataclasses import field


def _s(
    default,
    dle: str | None = None,
    lo=None,
    hi=None,
    choices: tuple | None = None,
    doc: str = "",
    group: str | None = None,
    page: str | None = None,
    label: str = "",
    item=None,
    split: bool = True,
):
    """One setting's declaration. `group` (one of `GROUPS`) and `page` ("retrieval", or the page
    that edits it elsewhere: "embeddings", "channels") place it in the settings UI; `label` is its
    name there (default: our name in words); `doc` is the one-line explanation. `item` (lists of
    text only): turns one listed value into its canonical form, or raises ValueError saying what
    is wrong with it. `split` (lists of text only): one string given instead of a list is split at
    commas and spaces; False: it is one value (paths)."""
    return field(
        default=default,
        metadata={
            "dle": dle,
            "lo": lo,
            "hi": hi,
            "choices": choices,
            "doc": doc,
            "group": group,
            "page": page,
            "label": label,
            "item": item,
            "split": split,
        },
    )


def folder_path(value: str) -> str:
    """A folder chosen by the user: an absolute path (`~` expanded), without control characters."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{value[:100]!r} has a control character; a folder path cannot")
    path = os.path.expanduser(value.strip())
    if not path:
        return ""
    if not (os.path.isabs(path) or ntpath.isabs(path)):
        raise ValueError(f"{value[:100]!r} is not an absolute path")
    return path


#: The settings UI's groups in DLE's order (its Matching, Injection and Features tabs, its Vault
#: Tags section) followed by our own; `_s(group=...)` names one of them.
GROUPS = (
    "Matching & Budget",
    "Keyword Matching",
    "Recursive Scan",
    "Re-injection Control",
    "Gating",
    "AI Search",
    "Injection",
    "Author's Notebook",
    "Vault Tags",
    "Semantic Search",
    "DLE Fixes",
)
