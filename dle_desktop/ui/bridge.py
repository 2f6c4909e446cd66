"""The one door between Qt and the engine: engine events become Qt signals (delivered on the
GUI thread), and every piece of engine work the window asks for is a method here that runs on the
engine thread, so views never touch engine state nor wait on it.

No other module of `ui/` imports `dle_desktop.engine` (tests/test_architecture.py and the
import-linter contracts check it): the few pure helpers of the engine layer the window needs
(the settings-change plan, the session's vault list) are handed on from here."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Signal

from dle_desktop.ai.channels import ResolvedChannel, resolve_channel
from dle_desktop.engine.engine import Engine, EngineEvent
from dle_desktop.engine.session_vaults import (
    ADDED,
    COMMAND_LINE,
    SAMPLE,
    SAVED,
    SECOND_LAUNCH,
    SessionVaults,
    VaultRow,
    spec_location,
)
from dle_desktop.engine.settings_apply import ApplyPlan
from dle_desktop.engine.settings_apply import plan as plan_settings_change

if TYPE_CHECKING:
    from pathlib import Path

    from dle_desktop.core.health import HealthReport
    from dle_desktop.core.pipeline.state import ChatState, EntryRef
    from dle_desktop.core.worldinfo import ExportReport, WiBook
    from dle_desktop.librarian.service import Librarian
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.settings import ProfileConfig, Settings
    from dle_desktop.ui.ports import RuntimePort
    from dle_desktop.vault.writer import BatchUndo
    from dle_desktop.worldinfo import BookListing, Collision, ImportPlan, ImportResult

__all__ = [
    "ADDED",
    "COMMAND_LINE",
    "SAMPLE",
    "SAVED",
    "SECOND_LAUNCH",
    "ApplyPlan",
    "EngineBridge",
    "SessionVaults",
    "VaultRow",
    "plan_settings_change",
    "spec_location",
]

T = TypeVar("T")


class EngineBridge(QObject):
    indexChanged = Signal(object, object, str)  # snapshot, ChangeSet | None, source
    indexPartial = Signal(object)  # list of the entries a first index has parsed so far
    progress = Signal(int, int, str)
    syncState = Signal(dict)
    syncError = Signal(str)
    semantic = Signal(dict)  # SemanticStatus.to_json()
    aiBreaker = Signal(dict)  # CircuitBreaker.snapshot(), when a call moved it
    #: A client of the server asked to show a view ({"view", "entry"?, "gap"?, "mode"?}); emitted
    #: on the engine thread, delivered queued on the GUI thread.
    windowRequested = Signal(dict)
    #: A World Info import's progress: {batch, phase (writing | undoing | done | cancelled |
    #: failed), done, total, message?}; at most ten a second while it writes.
    wiImport = Signal(dict)
    #: A World Info sync's outcome (`SyncOutcome.to_json()`): written, unchanged, conflict...
    wiSync = Signal(dict)

    def __init__(self, runtime: RuntimePort, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runtime = runtime
        #: The running engine. Only this module uses it; tests may look at it.
        self.engine: Engine = runtime.engine
        # Emitted on the engine thread; Qt queues them to this object's (GUI) thread.
        self._unsubscribe = self.engine.subscribe(self._on_event)
        self._detach_window: Callable[[], None] | None = None
        self._wi_cancel: threading.Event | None = None

    def _on_event(self, event: EngineEvent) -> None:
        d = event.data
        if event.kind == "index":
            # The window shows this index next (its rows are made on a thread, then the table):
            # the work the engine starts after an index gives way to that, and to the user's
            # first moments with it. Said here, on the engine thread, before that work begins.
            self.engine.activity.user_acted()
            self.indexChanged.emit(d["snapshot"], d.get("changes"), d.get("source", ""))
        elif event.kind == "index_partial":
            self.indexPartial.emit(d["entries"])
        elif event.kind == "progress":
            self.progress.emit(int(d.get("done", 0)), int(d.get("total", 0)), str(d.get("message", "")))
        elif event.kind == "sync_state":
            self.syncState.emit(dict(d))
        elif event.kind == "sync_error":
            self.syncError.emit(str(d.get("message", "")))
        elif event.kind == "semantic":
            self.semantic.emit(dict(d))
        elif event.kind == "ai_breaker":
            self.aiBreaker.emit(dict(d))
        elif event.kind == "wi_import":
            self.wiImport.emit(dict(d))
        elif event.kind == "wi_sync":
            self.wiSync.emit(dict(d))

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a coroutine that runs on the engine loop."""
        try:
            future = self.runtime.thread.submit(coro)
        except BaseException:
            coro.close()  # the engine thread has stopped: the coroutine will never run
            raise
        return await asyncio.wrap_future(future)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a plain function on the engine thread (engine state is only touched there)."""

        async def wrapper() -> T:
            return fn(*args)

        return await self.call(wrapper())

    def rebind(self, engine: Engine) -> None:
        """Listen to a new engine (call before it starts, so its first events are heard)."""
        self._unsubscribe()
        self.engine = engine
        self._unsubscribe = engine.subscribe(self._on_event)
        if self._detach_window is not None:  # the window keeps answering SillyTavern's /dle-graph
            self.attach_window()

    def close(self) -> None:
        self.detach_window()
        self._unsubscribe()

    # -- SillyTavern asking for a view of the window (/dle-graph, /dle-librarian) ------------------
    def attach_window(self) -> None:
        """Answer the server's requests to show a view (POST /app/show) with `windowRequested`;
        the running engine, and each engine that replaces it, until `detach_window`."""
        self.detach_window()
        self._detach_window = self.engine.window.attach(self._window_request)

    def detach_window(self) -> None:
        """No window to show any more: the server answers such requests with a 409 in words."""
        if self._detach_window is not None:
            self._detach_window()
            self._detach_window = None

    @property
    def window_attached(self) -> bool:
        return bool(self.engine.window.attached)

    def _window_request(self, request: dict[str, Any]) -> None:
        self.windowRequested.emit(dict(request))  # from the engine thread: Qt queues it to ours

    # -- what the window reads of the running engine (set when it was made, never changed) -------
    @property
    def settings(self) -> Settings:
        return self.engine.settings

    @property
    def paths(self) -> AppPaths:
        return self.engine.paths

    @property
    def using_sample_vault(self) -> bool:
        return bool(self.engine.using_sample_vault)

    def sample_folder(self) -> str | None:
        """Where the bundled sample vault is read from, while it is the open vault."""
        return self.engine.sources[0].describe() if self.engine.using_sample_vault else None

    def vault_names(self) -> list[str]:
        """The names of every open vault (folder and Obsidian REST), in order."""
        return list(dict.fromkeys(source.name for source in self.engine.sources))

    def folder_vault_names(self) -> list[str]:
        """The names of the open folder vaults, in order."""
        from dle_desktop.vault.sources import FolderSource

        names: list[str] = []
        for source in self.engine.sources:
            if isinstance(source, FolderSource) and source.name not in names:
                names.append(source.name)
        return names

    @property
    def librarian(self) -> Librarian:
        """The engine's Librarian (built with the engine; its methods run through `call`/`run`)."""
        return self.engine.librarian

    # -- the vault -------------------------------------------------------------------------------
    async def sync_now(self, force: bool = False) -> Any:
        return await self.call(self.engine.sync_now(force=force))

    async def cancel_sync(self) -> bool:
        return await self.run(self.engine.cancel_sync)

    async def set_sync_paused(self, paused: bool) -> None:
        await self.run(self.engine.set_sync_paused, paused)

    async def health(self) -> HealthReport:
        return await self.call(self.engine.health_in_background())

    def user_acted(self) -> None:
        """The user did something in the window: the engine's background work gives way a moment
        (`core.user_activity`). Called on the GUI thread; it only notes the time."""
        self.engine.activity.user_acted()

    def give_way(self) -> float:
        """For the window's own background threads (loading code ahead): wait while the user acts."""
        return self.engine.activity.give_way()

    async def status(self) -> dict[str, Any]:
        return await self.run(self.engine.status)

    async def test_chat(self, doc: Any, replay: bool, seed: int | None, ai_mode: str | None) -> Any:
        return await self.call(self.engine.test_chat(doc, replay, seed, ai_mode))

    async def write_history(self, vault: str, path: str, limit: int) -> Any:
        return await self.run(lambda: self.engine.writer.history_for(vault, path, limit))

    async def undo_write(self, record_id: int) -> Any:
        return await self.call(self.engine.writer.undo(record_id, feature="undo"))

    # -- settings and semantic search --------------------------------------------------------------
    async def apply_settings(self, settings: Settings, rebuild_ai: bool) -> None:
        await self.call(self.engine.apply_settings(settings, rebuild_ai))

    async def set_semantic_paused(self, paused: bool) -> None:
        await self.run(self.engine.set_semantic_paused, paused)

    async def embed_vault_now(self) -> None:
        await self.call(self.engine.embed_vault_now())

    # -- AI connections --------------------------------------------------------------------------
    async def ai_snapshot(self) -> Any:
        return await self.run(self.engine.ai.snapshot)

    def ai_channel(self, channel: str) -> ResolvedChannel:
        """What `channel` resolves to under the running engine's settings, as its AI calls will
        (`problem` says why it cannot be used). A pure function of the immutable settings: a view
        may ask before every action, without waiting on the engine thread."""
        return resolve_channel(self.engine.settings, channel)

    async def test_ai_channel(self, channel: str) -> tuple[bool, str, int]:
        return await self.call(self.engine.ai.test_channel(channel))

    async def test_ai_profile(self, config: ProfileConfig, key: str | None) -> tuple[bool, str, int]:
        return await self.call(self.engine.ai.test_profile(config, key))

    async def reset_ai_breaker(self) -> None:
        await self.run(self.engine.ai.reset_breaker)

    async def clear_ai_cache(self) -> None:
        await self.run(self.engine.ai.clear_cache)

    async def reset_ai_usage(self) -> None:
        await self.run(self.engine.ai.reset_usage)

    # -- SillyTavern chats -----------------------------------------------------------------------
    async def list_chats(self, limit: int) -> Any:
        return await self.call(self.engine.retrieval.list_chats(limit))

    async def reset_chat(self, chat_id: str) -> Any:
        return await self.call(self.engine.retrieval.reset(chat_id))

    # -- steering a chat (gating context, folder filter, pins and blocks) and analytics ------------
    async def gating_fields(self) -> dict[str, Any]:
        """The vault's gating fields with the values its notes use (GET /fields' answer)."""
        return await self.call(self.engine.steering.fields())

    async def vault_folders(self) -> list[dict[str, Any]]:
        """The vault's folders, each with how many notes it holds ({path, entries})."""
        answer = await self.run(self.engine.steering.folders)
        return list(answer["folders"])

    async def chat_state(self, chat_id: str) -> ChatState:
        return await self.call(self.engine.retrieval.state(chat_id))

    async def set_context_field(self, chat_id: str, field: str, value: str | None) -> dict[str, Any]:
        """Set (None: clear) one gating field; a field or value the vault refuses raises
        `InputError` (or `NotFound`) with the engine's message, and nothing changes."""
        return await self.call(self.engine.steering.set_field(chat_id, field, value))

    async def clear_context(self, chat_id: str) -> ChatState:
        return await self.call(self.engine.retrieval.update(chat_id, context={}))

    async def set_folder_filter(self, chat_id: str, folders: Sequence[str] | None) -> tuple[str, ...] | None:
        """Replace the chat's folder filter (None or empty: off); a folder the vault does not
        have raises `NotFound` with the engine's message, and nothing changes."""
        return await self.call(self.engine.steering.set_folders(chat_id, folders))

    async def set_pins_blocks(self, chat_id: str, pins: Sequence[EntryRef], blocks: Sequence[EntryRef]) -> ChatState:
        return await self.call(self.engine.retrieval.update(chat_id, pins=tuple(pins), blocks=tuple(blocks)))

    async def entry_usage(self) -> dict[str, Any]:
        """The entries used at least once, over all chats (`entries`, rows as `entry_analytics` gives them)."""
        return {"entries": await self.call(self.engine.steering.used_entries())}

    async def entry_analytics(self, chat_id: str | None = None) -> dict[str, Any]:
        """Per entry, over all chats (and in `chat_id`): matched, injected, last injected."""
        return await self.call(self.engine.steering.analytics(chat_id))

    # -- the writers: Session Scribe, Auto Lorebook, AI Notepad ------------------------------------
    async def scribe_history(self, chat_id: str) -> dict[str, Any]:
        """The chat's Session Scribe: its notes ({vault, path, title, created_at}, newest first),
        its last summary, whether it runs now."""
        return await self.call(self.engine.writers.scribe.history(chat_id))

    async def ai_notepad(self, chat_id: str) -> dict[str, Any]:
        """The chat's AI Notepad: its text, its size in bytes and the cap, the notes per reply."""
        return await self.call(self.engine.writers.notepad.read(chat_id))

    async def clear_ai_notepad(self, chat_id: str) -> dict[str, Any]:
        return await self.call(self.engine.writers.notepad.clear(chat_id))

    async def pending_suggestions(self) -> list[dict[str, Any]]:
        """Auto Lorebook's suggestions waiting for review, from every chat, oldest first
        ({id, chat_id, created_at, suggestion: {title, type, keys, summary, content}})."""
        answer = await self.call(self.engine.writers.suggest.pending(None))
        return list(answer["suggestions"])

    async def accept_suggestion(self, suggestion_id: str, edits: dict[str, Any]) -> dict[str, Any]:
        """Write the suggestion with the user's edits through the note writer; answers where it
        went ({"written": {vault, path, title}}). A bad edit or a taken title raises DleError."""
        return await self.call(self.engine.writers.suggest.accept(suggestion_id, edits))

    async def reject_suggestion(self, suggestion_id: str) -> dict[str, Any]:
        return await self.call(self.engine.writers.suggest.reject(suggestion_id))

    async def read_note(self, vault: str, path: str) -> str | None:
        """A vault note's text as it is now (None when it is gone)."""
        version = await self.call(self.engine.writer.read(vault, path))
        return version.text

    # -- World Info import and export ------------------------------------------------------------
    async def wi_list_books(
        self, install_root: Path, user: str = "default-user", data_root: Path | None = None
    ) -> list[BookListing]:
        """A SillyTavern user's World Info books with their entry counts (unreadable ones with why)."""
        return await self.call(asyncio.to_thread(self.engine.worldinfo.list_books, install_root, user, data_root))

    async def wi_read_book(self, source: Path | str | bytes, name: str | None = None) -> WiBook:
        """A book from a file, or from bytes (pasted JSON); InputError says why it is none."""
        return await self.call(asyncio.to_thread(self.engine.worldinfo.read_book, source, name))

    async def wi_plan_import(self, book: WiBook, vault: str, folder: str, collision: Collision) -> ImportPlan:
        """The preview: one row per entry, nothing written."""
        return await self.call(self.engine.worldinfo.plan_import(book, vault=vault, folder=folder, collision=collision))

    async def wi_run_import(self, plan: ImportPlan) -> ImportResult:
        """Write the plan; progress comes as `wiImport`. Cancelled (`wi_cancel_import`) or failed,
        nothing of it stays (a failure raises ImportFailed, a DleError)."""
        cancel = self._wi_cancel = threading.Event()
        try:
            return await self.call(self.engine.worldinfo.run_import(plan, cancel=cancel))
        finally:
            if self._wi_cancel is cancel:
                self._wi_cancel = None

    def wi_cancel_import(self) -> bool:
        """Stop the import this window started (looked at between notes); False when none runs."""
        if self._wi_cancel is None:
            return False
        self._wi_cancel.set()
        return True

    async def wi_undo_import(self, batch: str) -> BatchUndo:
        """Undo a whole import; notes edited since are left and listed in `conflicts`."""
        return await self.call(self.engine.worldinfo.undo_import(batch))

    async def wi_export(
        self, folder: str | None = None, tag: str | None = None, vault: str | None = None
    ) -> tuple[dict[str, Any], ExportReport]:
        """The indexed entries (filtered) as a World Info book, and what WI cannot express."""
        return await self.call(self.engine.worldinfo.export(folder=folder, tag=tag, vault=vault))

    async def wi_save_book(self, path: Path | str, book: dict[str, Any]) -> None:
        """Write a book file atomically."""
        from dle_desktop.worldinfo import save_book

        await asyncio.to_thread(save_book, path, book)

    async def wi_recent_imports(self, limit: int = 20) -> list[Any]:
        """The imports in the write history, newest first (`BatchSummary`: when, where, how many notes,
        how many undone)."""
        return await self.call(self.engine.worldinfo.recent_imports(limit))

    # -- World Info sync ---------------------------------------------------------------------------
    async def wi_sync_now(self, book_path: str, winner: str | None = None) -> dict[str, Any]:
        """Sync one book now (`winner`: "vault" or "sillytavern" settles a conflict); its outcome."""

        async def run() -> dict[str, Any]:
            sync = self.engine.wi_sync
            config = next((c for c in sync.configs if c.book_path == book_path), None)
            if config is None:
                from dle_desktop.errors import NotFound

                raise NotFound(f"no World Info sync writes {book_path}")
            return (await sync.sync(config, winner)).to_json()  # type: ignore[arg-type]  # checked by the dialog

        return await self.call(run())

    async def wi_sync_outcomes(self) -> list[dict[str, Any]]:
        """The last outcome of each sync in this session."""
        return await self.run(lambda: [o.to_json() for o in self.engine.wi_sync.outcomes.values()])
