"""What the server may ask of the engine, as the server needs it: the routes see these protocols,
never the engine class, so the composition root (app/runtime.py) may hand in anything that
satisfies them and mypy checks that it does.

Routes reach them through `services(request)`; `ServerRunner.set_engine` swaps the engine behind
it, so a route always reads the one being served now."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request

if TYPE_CHECKING:
    from dle_desktop.core.health import HealthReport
    from dle_desktop.core.index import IndexSnapshot
    from dle_desktop.core.pipeline.chat import ChatMessage
    from dle_desktop.core.pipeline.chat_input import ChatDocument
    from dle_desktop.core.pipeline.run import GenerationResult
    from dle_desktop.core.pipeline.state import ChatState
    from dle_desktop.core.worldinfo import ExportReport, WiBook
    from dle_desktop.librarian.gaps import GapStore
    from dle_desktop.state.secrets import SecretStore
    from dle_desktop.state.settings import Settings
    from dle_desktop.vault.indexer import SyncResult
    from dle_desktop.vault.sources import VaultSource
    from dle_desktop.vault.writer import BatchUndo
    from dle_desktop.vectors.service import VectorService
    from dle_desktop.worldinfo.model import Collision, ImportPlan, ImportResult


class ChatRetrieval(Protocol):
    """Retrieval and per-chat state (routes_chat, routes_bridge)."""

    async def retrieve(self, doc: ChatDocument) -> GenerationResult: ...
    async def state(self, chat_id: str) -> ChatState: ...
    async def update(self, chat_id: str, **changes: Any) -> ChatState: ...
    async def fork(self, source: str, target: str) -> str | None: ...
    async def reset(self, chat_id: str) -> bool: ...
    async def records(self, chat_id: str, limit: int = 10) -> list[dict]: ...
    async def list_chats(self, limit: int = 500) -> list[dict]: ...


class BreakerView(Protocol):
    def snapshot(self) -> dict: ...


class AiControls(Protocol):
    """The AI side (routes_ai)."""

    @property
    def breaker(self) -> BreakerView: ...
    def snapshot(self) -> dict[str, Any]: ...
    def reset_breaker(self) -> None: ...
    def clear_cache(self, chat_id: str | None = None) -> None: ...
    async def test_channel(self, channel: str) -> tuple[bool, str, int]: ...


class SemanticPrefetch(Protocol):
    def prefetch(self, messages: Sequence[str]) -> asyncio.Task | None: ...


class Steering(Protocol):
    """Steering a chat by name, analytics, and each reply's lore (routes_steer)."""

    async def fields(self) -> dict[str, Any]: ...
    def folders(self) -> dict[str, Any]: ...
    async def set_field(self, chat_id: str, field_name: str, value: str | Sequence[str] | None) -> dict[str, Any]: ...
    async def set_folders(self, chat_id: str, folders: Sequence[str] | None) -> tuple[str, ...] | None: ...
    async def analytics(self, chat_id: str | None = None) -> dict[str, Any]: ...
    async def simulate(self, doc: ChatDocument) -> dict[str, Any]: ...
    async def link_source(self, chat_id: str, message: int, swipe: int, record: int) -> dict[str, Any]: ...
    async def source(self, chat_id: str, message: int, swipe: int) -> dict[str, Any]: ...


class ScribePort(Protocol):
    async def run(
        self,
        chat_id: str,
        messages: Sequence[ChatMessage],
        *,
        character: str | None = None,
        focus: str = "",
        chat_length: int | None = None,
        auto: bool = False,
    ) -> dict[str, Any]: ...
    async def history(self, chat_id: str) -> dict[str, Any]: ...
    def cancel(self, chat_id: str) -> bool: ...


class SuggestPort(Protocol):
    async def run(
        self, chat_id: str, messages: Sequence[ChatMessage], *, ai_messages: int | None = None, auto: bool = False
    ) -> dict[str, Any]: ...
    async def pending(self, chat_id: str | None = None) -> dict[str, Any]: ...
    async def accept(self, suggestion_id: str, edits: Mapping[str, Any]) -> dict[str, Any]: ...
    async def reject(self, suggestion_id: str) -> dict[str, Any]: ...


class NotepadPort(Protocol):
    async def process(
        self, chat_id: str, message: int, swipe: int, text: str, *, wait: bool = True
    ) -> dict[str, Any]: ...
    async def rollback(
        self, chat_id: str, message: int, swipe: int | None, *, later: bool = False
    ) -> dict[str, Any]: ...
    async def read(self, chat_id: str) -> dict[str, Any]: ...
    async def clear(self, chat_id: str) -> dict[str, Any]: ...


class WritersPort(Protocol):
    """Session Scribe, Auto Lorebook and AI Notepad (routes_writers)."""

    @property
    def scribe(self) -> ScribePort: ...
    @property
    def suggest(self) -> SuggestPort: ...
    @property
    def notepad(self) -> NotepadPort: ...


class WindowPort(Protocol):
    """Shows a view of the app's window; raises NotAvailableHere when there is none (`serve`)."""

    def show(self, view: str, **where: Any) -> None: ...


class WorldInfoPort(Protocol):
    """SillyTavern World Info in and out of the vault (routes_worldinfo; worldinfo.WorldInfoService)."""

    async def plan_import(
        self, book: WiBook, *, vault: str, folder: str = "", collision: Collision = "rename"
    ) -> ImportPlan: ...
    async def run_import(self, plan: ImportPlan) -> ImportResult: ...
    async def undo_import(self, batch: str) -> BatchUndo: ...
    async def export(
        self, *, folder: str | None = None, tag: str | None = None, vault: str | None = None
    ) -> tuple[dict[str, Any], ExportReport]: ...


class LoreEngine(Protocol):
    """Everything the routes ask of the engine. `vectors` may raise while the engine stops."""

    @property
    def settings(self) -> Settings: ...
    @property
    def secrets(self) -> SecretStore: ...
    @property
    def snapshot(self) -> IndexSnapshot | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def semantic_enabled(self) -> bool: ...
    @property
    def retrieval(self) -> ChatRetrieval: ...
    @property
    def ai(self) -> AiControls: ...
    @property
    def semantic(self) -> SemanticPrefetch: ...
    @property
    def gaps(self) -> GapStore: ...
    @property
    def vectors(self) -> VectorService | None: ...
    @property
    def steering(self) -> Steering: ...
    @property
    def window(self) -> WindowPort: ...
    @property
    def writers(self) -> WritersPort: ...
    @property
    def worldinfo(self) -> WorldInfoPort: ...
    @property
    def sources(self) -> Sequence[VaultSource]: ...
    def status(self) -> dict: ...
    def health(self) -> HealthReport: ...
    async def sync_now(self, force: bool = False) -> SyncResult | None: ...


class BridgeEvents(Protocol):
    """What the SillyTavern bridge's calls are recorded in (st_bridge.monitor.BridgeMonitor)."""

    def hello(
        self,
        *,
        origin: str | None,
        extension_version: str | None,
        st_version: str | None,
        chat_id: str | None,
        character: str | None,
        last_error: str | None,
    ) -> None: ...
    def generation(
        self,
        *,
        origin: str | None,
        chat_id: str | None,
        character: str | None,
        injected: list[str],
        total_tokens: int,
        ms: float,
    ) -> None: ...
    def touch(self, *, origin: str | None = None) -> None: ...
    def snapshot(self, now: float | None = None) -> dict: ...


#: Saves the writers' switches into settings.json and applies them (`Runtime.switch_writers`).
WriterSwitch = Callable[[Mapping[str, Any]], Awaitable[None]]


@dataclass
class ServerServices:
    engine: LoreEngine
    bridge: BridgeEvents
    switch_writers: WriterSwitch | None = None


def services(request: Request) -> ServerServices:
    return services_of(request.app)


def services_of(app: Any) -> ServerServices:
    found = app.state.services
    assert isinstance(found, ServerServices)
    return found


def engine(request: Request) -> LoreEngine:
    return services(request).engine
