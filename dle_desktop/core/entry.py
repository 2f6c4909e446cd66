"""The parsed form of one lore note. Frozen: an index snapshot shares entries freely."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class TagConfig:
    """Tag names are settings in DLE; these are its defaults."""

    lorebook: str = "lorebook"
    constant: str = "lorebook-always"
    never: str = "lorebook-never"
    seed: str = "lorebook-seed"
    bootstrap: str = "lorebook-bootstrap"
    guide: str = "lorebook-guide"

    def signature(self) -> str:
        return "|".join(asdict(self).values())


@dataclass(frozen=True)
class ParseWarning:
    code: str  # W_ALIAS_USED, W_COMMA_SPLIT, W_COERCED_NUM, W_NOT_IMPLEMENTED, W_BAD_VALUE, W_TRUNCATED
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Skip:
    """A file that did not become an entry, and why."""

    vault: str
    path: str
    code: str  # SKIP_NO_FRONTMATTER, SKIP_NO_LOREBOOK_TAG, SKIP_ENABLED_FALSE, SKIP_NEVER_INSERT_TAG,
    #            SKIP_BAD_FRONTMATTER, SKIP_READ_ERROR, SKIP_OUTSIDE_VAULT
    reason: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "vault": self.vault, "code": self.code, "reason": self.reason, "line": self.line}


@dataclass(frozen=True, eq=False)
class Entry:
    vault: str
    path: str  # vault-relative, '/'-separated
    title: str
    content: str
    content_hash: str
    token_estimate: int
    keys: tuple[str, ...] = ()
    refine_keys: tuple[str, ...] = ()
    priority: float = 100
    constant: bool = False
    seed: bool = False
    bootstrap: bool = False
    guide: bool = False
    #: What the note asks for, as written.
    original_requires: tuple[str, ...] = ()
    original_excludes: tuple[str, ...] = ()
    original_cascade_links: tuple[str, ...] = ()
    #: What the index keeps: references to titles that exist (DLE strips dangling ones).
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    cascade_links: tuple[str, ...] = ()
    scan_depth: int | None = None
    exclude_recursion: bool = False
    warmup: int | None = None
    cooldown: int | None = None
    probability: float | None = None
    position: str | None = None  # before | after | in_chat
    depth: int | None = None
    role: str | None = None  # system | user | assistant
    outlet: str | None = None
    graph: bool = True
    tags: tuple[str, ...] = ()
    summary: str = ""
    links: tuple[str, ...] = ()
    resolved_links: tuple[str, ...] = ()
    custom_fields: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[ParseWarning, ...] = ()
    #: SillyTavern World Info fields kept for a round trip (note_parser.ST_ROUND_TRIP_FIELDS), as
    #: written; only the World Info export reads them. A plain default, so entries pickled by an
    #: older version read it as empty.
    st_fields: tuple[tuple[str, Any], ...] = ()

    @cached_property
    def uid(self) -> str:
        """Stable identity across re-syncs: the vault and the file."""
        return f"{self.vault}\x00{self.path}"

    @cached_property
    def tracker_key(self) -> str:
        """DLE's per-entry key for cooldowns, pins and analytics."""
        return f"{self.vault}:{self.title}"

    @property
    def folder(self) -> str | None:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else None

    def to_json(self, with_content: bool = True) -> dict[str, Any]:
        out = {
            "path": self.path,
            "vault": self.vault,
            "title": self.title,
            "keys": list(self.keys),
            "refine_keys": list(self.refine_keys),
            "priority": self.priority,
            "constant": self.constant,
            "seed": self.seed,
            "bootstrap": self.bootstrap,
            "guide": self.guide,
            "requires": list(self.requires),
            "excludes": list(self.excludes),
            "cascade_links": list(self.cascade_links),
            "scan_depth": self.scan_depth,
            "exclude_recursion": self.exclude_recursion,
            "warmup": self.warmup,
            "cooldown": self.cooldown,
            "probability": self.probability,
            "position": self.position,
            "depth": self.depth,
            "role": self.role,
            "outlet": self.outlet,
            "graph": self.graph,
            "tags": list(self.tags),
            "summary": self.summary,
            "links": list(self.links),
            "resolved_links": list(self.resolved_links),
            "folder": self.folder,
            "custom_fields": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.custom_fields.items()},
            "token_estimate": self.token_estimate,
            "content_hash": self.content_hash,
            "original_requires": list(self.original_requires),
            "original_excludes": list(self.original_excludes),
            "original_cascade_links": list(self.original_cascade_links),
            "warnings": [w.to_json() for w in self.warnings],
        }
        if with_content:
            out["content"] = self.content
        return out
