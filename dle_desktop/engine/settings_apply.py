"""What a settings change needs: nothing but the window, the running engine told in place, a
fresh AI service, a new engine (which re-syncs the vaults), a restarted HTTP server, or a restarted
Obsidian REST emulation.

Anything not named here needs a new engine: a setting added later is applied the slow, safe way
until someone decides it can be applied in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.state.settings import CHANNELS, FIELDS, Settings

SERVER_FIELDS = frozenset({"server_host", "server_port", "server_enabled"})
#: Who may call the server: the running server rebuilds its access rules, nothing restarts
#: (installing the bridge adds SillyTavern's address; that must not re-read the vaults).
ACCESS_FIELDS = frozenset({"server_allowed_hosts", "server_allowed_origins"})
#: The writers' switches, which SillyTavern's bridge panel turns too (PUT /api/dle/v1/writers): read
#: by the writers per call, so a running engine takes them as they are.
WRITER_SWITCH_FIELDS = frozenset({"scribe_enabled", "auto_suggest_enabled", "ai_notepad_enabled", "ai_notepad_mode"})
#: What a running instance takes from settings.json when another process (or the bridge) wrote it.
FOLLOWED_FIELDS = ACCESS_FIELDS | WRITER_SWITCH_FIELDS
#: The Obsidian REST emulation's options: a change restarts that server only (`Runtime.restart_olra`).
OLRA_FIELDS = frozenset({"olra_enabled", "olra_port", "olra_https", "olra_https_port", "olra_vault"})
#: Read by the window (or set through their own engine calls), never by a running engine.
WINDOW_FIELDS = frozenset({"close_to_tray", "show_sync_toasts", "semantic_paused", "sync_paused", "st_folders"})
#: Where AI calls go: a change starts a fresh AI service (new client, closed breaker, empty cache).
AI_CONNECTION_FIELDS = frozenset(
    {
        "connection_profiles",
        *(
            f"{c}_{part}"
            for c in CHANNELS
            for part in ("connection_mode", "profile_id", "proxy_url", "model", "max_tokens", "timeout")
        ),
    }
)
_AI_PREFIXES = (
    "ai_",
    "scribe_",
    "auto_suggest_",
    "librarian_",
    "optimize_keys_",
    "hierarchical_",
    "decay_",
    "manifest_",
)
#: Read per generation (the pipeline's config, AI search's options, the health check's limits):
#: the running engine takes them and keeps its index.
IN_PLACE_FIELDS = frozenset(
    {f.name for f in dataclasses.fields(MatchConfig)}
    | {n for n in FIELDS if n.startswith(_AI_PREFIXES) and n not in AI_CONNECTION_FIELDS}
    | {"cache_ttl"}
    # What the bridge's hello reports (the engine's settings); the extension acts on them.
    | {"st_vector_routing", "st_forget_deleted_chats"}
    | ACCESS_FIELDS  # the engine's settings are what the access rules are built from
    | {"wi_syncs"}  # the World Info syncs take their new list; nothing is re-read
) - {"librarian_guide_tag"}  # a tag: the vaults are parsed with it


@dataclass(frozen=True)
class ApplyPlan:
    changed: frozenset[str]
    new_engine: bool = False
    rebuild_ai: bool = False
    restart_server: bool = False
    #: The Obsidian REST emulation restarts (alone: the engine and the lore server keep running).
    restart_olra: bool = False
    #: The running server takes new access rules (allowed hosts and origins) without a restart.
    refresh_access: bool = False

    @property
    def in_place(self) -> bool:
        """The running engine takes the new settings (it keeps its index)."""
        return not self.new_engine and bool(
            self.changed - SERVER_FIELDS - OLRA_FIELDS - WINDOW_FIELDS or self.rebuild_ai
        )

    def describe(self) -> str:
        """What applying does, for the status bar."""
        if self.new_engine:
            what = ["re-reading the vaults"]
        elif self.in_place:
            what = ["a fresh AI connection"] if self.rebuild_ai else []
            what.insert(0, "in use from the next generation")
        else:
            what = []
        if self.restart_server:
            what.append("server restarted")
        if self.restart_olra:
            what.append("Obsidian REST emulation restarted")
        return ", ".join(what)


def changed_fields(old: Settings, new: Settings) -> frozenset[str]:
    return frozenset(name for name in FIELDS if getattr(old, name) != getattr(new, name))


def plan(old: Settings, new: Settings, new_key_ids: Iterable[str] = ()) -> ApplyPlan:
    """What applying `new` over `old` (plus the keyring entries `new_key_ids`) must restart."""
    changed = changed_fields(old, new)
    key_ids = tuple(new_key_ids)
    unsorted = changed - SERVER_FIELDS - OLRA_FIELDS - WINDOW_FIELDS - AI_CONNECTION_FIELDS - IN_PLACE_FIELDS
    return ApplyPlan(
        changed=changed,
        # REST vault keys are read when a vault source is made, AI keys on every call.
        new_engine=bool(unsorted) or any(k.startswith("vault:") for k in key_ids),
        rebuild_ai=bool(changed & AI_CONNECTION_FIELDS) or any(k.startswith("ai-profile:") for k in key_ids),
        restart_server=bool(changed & SERVER_FIELDS),
        restart_olra=bool(changed & OLRA_FIELDS),
        refresh_access=bool(changed & ACCESS_FIELDS),
    )


def followed_change(current: Settings, on_disk: Settings) -> Settings | None:
    """`current` with the followed fields of `on_disk` (the allowed hosts and origins, the
    writers' switches) and nothing else of it (what another process wrote into settings.json);
    None when they are the same already."""
    if all(getattr(current, name) == getattr(on_disk, name) for name in FOLLOWED_FIELDS):
        return None
    return current.replace(**{name: getattr(on_disk, name) for name in FOLLOWED_FIELDS})
