"""Per-chat state: what the pipeline remembers between generations of one chat.

Immutable: a generation returns a new ChatState; the caller persists it (or not, for a dry run).
Serialises to plain JSON for SQLite."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

#: How many swipe slots (message index | swipe id) keep their injected keys (DLE keeps 10).
SWIPE_SLOTS = 10
ANALYTICS_CAP = 500


@dataclass(frozen=True)
class EntryRef:
    """A pin or block: a title, optionally limited to one vault (bare titles match any vault)."""

    title: str
    vault: str | None = None

    def matches(self, title: str, vault: str) -> bool:
        return self.title.lower() == title.lower() and (self.vault is None or self.vault == vault)

    def to_json(self) -> Any:
        return self.title if self.vault is None else {"title": self.title, "vault": self.vault}

    @classmethod
    def from_json(cls, raw: Any) -> EntryRef:
        if isinstance(raw, str):
            if not raw.strip():
                raise ValueError("a pin or block needs a title")
            return cls(raw.strip())
        if isinstance(raw, dict) and isinstance(raw.get("title"), str) and raw["title"].strip():
            vault, source = raw.get("vault"), raw.get("vaultSource")
            for name, value in (("vault", vault), ("vaultSource", source)):
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"a pin's {name} must be text")
            if "vault" in raw and "vaultSource" in raw:
                raise ValueError("give vault or vaultSource (DLE's name for it), not both")
            return cls(raw["title"].strip(), (vault if vault is not None else source) or None)
        raise ValueError(f"a pin or block is a title or {{title, vault}}, not {raw!r}"[:200])


@dataclass(frozen=True)
class ChatState:
    generation_count: int = 0
    #: tracker key (vault:title) → generations left (DLE's cooldownTracker arithmetic)
    cooldowns: dict[str, int] = field(default_factory=dict)
    #: tracker key → generation count recorded at injection (+1), for the re-injection cooldown
    injection_history: dict[str, int] = field(default_factory=dict)
    #: last generations' injections: [{"gen": n, "entries": [{title,pos,depth,role,hash}]}]
    injection_log: tuple[dict[str, Any], ...] = ()
    pins: tuple[EntryRef, ...] = ()
    blocks: tuple[EntryRef, ...] = ()
    #: gating context: context key → value or list of values
    context: dict[str, Any] = field(default_factory=dict)
    folder_filter: tuple[str, ...] | None = None
    notebook: str = ""
    #: tracker key → times injected in this chat (swipe-aware)
    counts: dict[str, int] = field(default_factory=dict)
    #: "msgIndex|swipeId" → tracker keys injected for that slot
    swipe_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: tracker key → {"matched": n, "injected": n, "last_triggered": generation}
    analytics: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_swipe_key: str | None = None
    #: the generation-tracking part of the state before the last generation, for swipe rollback
    before_last: dict[str, Any] | None = None

    TRACKING = (
        "generation_count",
        "cooldowns",
        "injection_history",
        "injection_log",
        "counts",
        "swipe_keys",
        "analytics",
    )

    def replace(self, **changes: Any) -> ChatState:
        return dataclasses.replace(self, **changes)

    def tracking_snapshot(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.TRACKING}

    def rolled_back(self) -> ChatState:
        """The state as it was before the last generation (a regenerated swipe redoes it)."""
        if self.before_last is None:
            return self
        return dataclasses.replace(self, **self.before_last, before_last=None)

    # -- JSON ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        def enc(v: ChatState) -> dict[str, Any]:
            return {
                "generation_count": v.generation_count,
                "cooldowns": dict(v.cooldowns),
                "injection_history": dict(v.injection_history),
                "injection_log": list(v.injection_log),
                "counts": dict(v.counts),
                "swipe_keys": {k: list(x) for k, x in v.swipe_keys.items()},
                "analytics": dict(v.analytics),
            }

        out = enc(self)
        out.update(
            {
                "pins": [p.to_json() for p in self.pins],
                "blocks": [b.to_json() for b in self.blocks],
                "context": dict(self.context),
                "folder_filter": list(self.folder_filter) if self.folder_filter is not None else None,
                "notebook": self.notebook,
                "last_swipe_key": self.last_swipe_key,
                "before_last": enc(ChatState(**self.before_last)) if self.before_last else None,
            }
        )
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ChatState:
        def tracking(d: dict[str, Any]) -> dict[str, Any]:
            return {
                "generation_count": int(d.get("generation_count", 0)),
                "cooldowns": {str(k): int(v) for k, v in (d.get("cooldowns") or {}).items()},
                "injection_history": {str(k): int(v) for k, v in (d.get("injection_history") or {}).items()},
                "injection_log": tuple(d.get("injection_log") or ()),
                "counts": {str(k): int(v) for k, v in (d.get("counts") or {}).items()},
                "swipe_keys": {str(k): tuple(v) for k, v in (d.get("swipe_keys") or {}).items()},
                "analytics": dict(d.get("analytics") or {}),
            }

        ff = raw.get("folder_filter")
        before = raw.get("before_last")
        return cls(
            **tracking(raw),
            pins=tuple(EntryRef.from_json(p) for p in raw.get("pins") or ()),
            blocks=tuple(EntryRef.from_json(b) for b in raw.get("blocks") or ()),
            context=dict(raw.get("context") or {}),
            folder_filter=tuple(ff) if ff is not None else None,
            notebook=str(raw.get("notebook") or ""),
            last_swipe_key=raw.get("last_swipe_key"),
            before_last=tracking(before) if before else None,
        )
