"""What the three writers share: what they ask of the engine, their errors, one AI call on a
channel, and the vault and folder a new note goes to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from dle_desktop.ai.types import ChatRequest
from dle_desktop.errors import DleError, InputError, VaultPathError, WriteRefused
from dle_desktop.vault.filenames import note_path_for_title

if TYPE_CHECKING:
    from dle_desktop.ai.channels import ResolvedChannel
    from dle_desktop.ai.service import AiService
    from dle_desktop.ai.types import ChatResponse, ConnectionProfile
    from dle_desktop.core.entry import TagConfig
    from dle_desktop.core.index import IndexSnapshot
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.settings import Settings
    from dle_desktop.vault.sources import VaultSource
    from dle_desktop.vault.writer import NoteWriter


class WritersHost(Protocol):
    """What the writers ask of the engine they work over (`engine.Engine` satisfies it)."""

    @property
    def paths(self) -> AppPaths: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def snapshot(self) -> IndexSnapshot | None: ...
    @property
    def sources(self) -> list[VaultSource]: ...
    @property
    def writer(self) -> NoteWriter: ...
    @property
    def ai(self) -> AiService: ...
    @property
    def tag_config(self) -> TagConfig: ...


class WriterBusy(DleError):
    """The chat's Session Scribe is already running."""

    http_status = 409


class WriterCancelled(DleError):
    http_status = 409


class ChannelNotSetUp(DleError):
    """The writer's channel has no connection (or AI calls are off for this run): a 409, since the
    request is fine and the app's setup is what must change; an open breaker stays a 503."""

    http_status = 409


class AnswerRefused(DleError):
    """The model answered, but nothing in the answer can be written (the message says why)."""

    http_status = 502


async def ask(host: WritersHost, channel: str, system: str, user: str) -> str:
    """One call on `channel` (its breaker, throttle-free like every tool call, usage counted),
    with the channel's own max tokens; answers the model's text."""
    from dle_desktop.ai.service import AiUnavailable  # the HTTP client loads with the first call

    def build(resolved: ResolvedChannel, _profile: ConnectionProfile) -> ChatRequest:
        return ChatRequest(system=system, user_parts=(user,), max_tokens=resolved.max_tokens)

    def text(response: ChatResponse) -> str:
        return response.text

    try:
        return await host.ai.call(channel, build, text, skip_throttle=True)
    except AiUnavailable as exc:
        if exc.reason in ("config", "offline"):
            raise ChannelNotSetUp(str(exc)) from None
        raise


def vault_for_new(host: WritersHost) -> str:
    """New notes go to the first enabled vault, as the Librarian's do."""
    source = next((s for s in host.sources if s.enabled), None)
    if source is None:
        raise WriteRefused("no vault is open to write to; nothing written")
    return source.name


def note_path(title: str, folder: str, setting: str) -> str:
    """`folder/<title made safe>.md`; a folder that leaves the vault is refused in words."""
    try:
        return note_path_for_title(title, folder.strip())
    except VaultPathError as exc:
        raise InputError(f"the folder setting {setting} ({folder!r}) cannot hold a note: {exc}") from None
