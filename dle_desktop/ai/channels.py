"""Connection channels: which connection each AI feature uses (dle-behaviour §4.9).

Six channels, one per AI feature. AI search is the root; the others inherit its connection
unless set to their own, but always keep their own max tokens and timeout. The connection is a
named profile (`Settings.connection_profiles`, keys in the keyring) or, in "proxy" mode, an
Anthropic Messages endpoint such as claude-code-proxy that adds its own authentication.
"""

from __future__ import annotations

from dataclasses import dataclass

from dle_desktop.ai.types import model_optional
from dle_desktop.errors import ConfigError
from dle_desktop.state.settings import CHANNELS, ProfileConfig, Settings

LABELS = {
    "ai_search": "AI search",
    "scribe": "Session Scribe",
    "auto_suggest": "Auto Lorebook",
    "ai_notepad": "AI Notepad",
    "librarian": "Librarian",
    "optimize_keys": "Optimize Keys",
}
#: What each channel is for, shown beside it in the Channels view.
PURPOSES = {
    "ai_search": "chooses the entries for each generation; also the category pre-filter",
    "scribe": "writes session summaries into the vault",
    "auto_suggest": "proposes new lore entries from the chat",
    "ai_notepad": "keeps the AI notepad in extract mode",
    "librarian": "answers lore questions and drafts entries",
    "optimize_keys": "suggests better keywords for an entry",
}


class ChannelNotConfigured(ConfigError):
    """The channel has no usable connection; the message says what to set."""


@dataclass(frozen=True)
class ResolvedChannel:
    """Everything a call on a channel needs. `profile` is None only when `problem` says why."""

    channel: str
    mode: str  # profile | proxy (after inheritance)
    profile: ProfileConfig | None
    model: str
    max_tokens: int
    timeout_s: float
    inherited: bool
    problem: str | None = None
    note: str | None = None

    @property
    def label(self) -> str:
        return LABELS[self.channel]

    def require(self) -> ProfileConfig:
        if self.profile is None:
            raise ChannelNotConfigured(f"{self.label}: {self.problem}")
        return self.profile


def proxy_profile(channel: str, url: str, model: str, timeout_s: float) -> ProfileConfig:
    """An Anthropic Messages connection through a local proxy (DLE's proxy mode). No key: the
    proxy authenticates. Unlike DLE we do not need ST's CORS bridge, so any http(s) URL works."""
    return ProfileConfig(
        id=f"proxy:{channel}",
        name=f"Proxy for {LABELS[channel]}",
        provider="anthropic",
        flavor="anthropic",
        base_url=url.rstrip("/"),
        model=model,
        timeout_s=timeout_s,
    )


def _get(settings: Settings, channel: str, what: str):
    return getattr(settings, f"{channel}_{what}")


def find_profile(settings: Settings, profile_id: str) -> ProfileConfig | None:
    for p in settings.connection_profiles:
        if p.id == profile_id:
            return p
    return None


def resolve_channel(settings: Settings, channel: str) -> ResolvedChannel:
    """The effective connection of `channel` (never raises; `problem` says what is missing)."""
    if channel not in CHANNELS:
        raise ValueError(f"unknown channel {channel!r}")
    max_tokens = _get(settings, channel, "max_tokens")
    timeout_s = _get(settings, channel, "timeout") / 1000.0
    own_mode = _get(settings, channel, "connection_mode")
    note = None
    inherited = channel != "ai_search" and own_mode in ("inherit", "st")
    if own_mode == "st":
        note = (
            "SillyTavern's own connection ('st' mode) is not reachable from DLE Desktop; "
            "this channel uses AI search's connection"
        )
    source = "ai_search" if inherited else channel
    mode = _get(settings, source, "connection_mode")
    # model and proxy URL: the channel's own when set, else AI search's (DLE's inherit rule)
    model = _get(settings, channel, "model") or (settings.ai_search_model if inherited else "")
    proxy_url = (
        _get(settings, channel, "proxy_url")
        if not inherited
        else (_get(settings, channel, "proxy_url") or settings.ai_search_proxy_url)
    )
    profile_id = _get(settings, source, "profile_id")

    def result(profile: ProfileConfig | None, problem: str | None = None) -> ResolvedChannel:
        return ResolvedChannel(
            channel,
            mode,
            profile,
            model or (profile.model if profile else ""),
            max_tokens,
            timeout_s,
            inherited,
            problem,
            note,
        )

    if mode == "proxy":
        if not proxy_url.startswith(("http://", "https://")):
            return result(None, f"the proxy URL must start with http:// or https:// (got {proxy_url!r})")
        if not model:
            return result(None, "proxy mode needs a model name (set the channel's model)")
        return result(proxy_profile(channel, proxy_url, model, timeout_s))
    if not profile_id:
        if not settings.connection_profiles:
            return result(None, "no connection profile yet: add one in the Channels view")
        return result(None, "no connection profile chosen for this channel")
    profile = find_profile(settings, profile_id)
    if profile is None:
        return result(
            None,
            f"the connection profile '{profile_id}' does not exist (it may have been a SillyTavern "
            "Connection Manager profile); choose one of yours in the Channels view",
        )
    if not (model or profile.model or model_optional(profile.provider, profile.flavor)):
        return result(None, f"the connection profile '{profile.name}' has no model; set one")
    return result(profile)


def resolve_all(settings: Settings) -> dict[str, ResolvedChannel]:
    return {c: resolve_channel(settings, c) for c in CHANNELS}
