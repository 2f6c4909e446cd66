"""The engine: owns vaults, the current index snapshot and background sync. Qt-free; it runs on
its own asyncio loop (see engine/thread.py) and tells subscribers what happened through plain
callbacks, which the GUI re-posts onto the Qt thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dle_desktop import __version__
from dle_desktop.core.changes import ChangeSet
from dle_desktop.core.entry import TagConfig
from dle_desktop.core.health import HealthChecker, HealthContext, HealthReport
from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.user_activity import GiveWay, UserActivity, no_wait
from dle_desktop.engine.retrieval import RetrievalService
from dle_desktop.engine.settings_apply import ACCESS_FIELDS
from dle_desktop.engine.steering import SteeringService
from dle_desktop.engine.window_requests import WindowRequests
from dle_desktop.errors import ConfigError, DleError
from dle_desktop.librarian.gaps import GapStore
from dle_desktop.state.chat_store import ChatStore
from dle_desktop.state.paths import AppPaths, sample_vault_dir
from dle_desktop.state.secrets import SecretStore
from dle_desktop.state.settings import Settings, VaultConfig
from dle_desktop.vault.cache import IndexCache
from dle_desktop.vault.indexer import ParseOptions, SyncResult, VaultIndexer
from dle_desktop.vault.sources import FolderSource, VaultSource
from dle_desktop.vault.watcher import FolderWatcher

if TYPE_CHECKING:
    from dle_desktop.ai.search import AiSearch
    from dle_desktop.ai.service import AiService
    from dle_desktop.engine.semantic import SemanticSearch
    from dle_desktop.librarian.service import Librarian
    from dle_desktop.vault.writer import NoteWriter
    from dle_desktop.vectors.embedder import LocalEmbedder
    from dle_desktop.vectors.service import VectorService
    from dle_desktop.worldinfo.service import WorldInfoService
    from dle_desktop.worldinfo.sync import WorldInfoSync

log = logging.getLogger(__name__)

SAMPLE_VAULT_NAME = "Sample vault"
CACHE_SAVE_INTERVAL_S = 5.0


@dataclass(frozen=True)
class EngineEvent:
    """What subscribers hear. kind: index | progress | sync_error | sync_state | semantic | ai_breaker
    | wi_import (a World Info import's {batch, phase, done, total, message?})."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


Subscriber = Callable[[EngineEvent], None]


def source_from_spec(spec: str, secrets: SecretStore | None = None, saved: tuple[VaultConfig, ...] = ()) -> VaultSource:
    """A `--vault` argument: a folder path, or http(s)://HOST:PORT for an Obsidian REST vault. The
    REST key comes from DLE_OBSIDIAN_KEY, else from the saved vault at that address (keyring); the
    old http://KEY@HOST:PORT form still works but shows the key to every process list."""
    if spec.startswith(("http://", "https://")):
        from dle_desktop.state.secrets import CLI_VAULT_ENV, CLI_VAULT_SECRET
        from dle_desktop.vault.obsidian_rest import parse_vault_spec

        source = parse_vault_spec(spec)
        if source.has_api_key:
            log.warning(
                "the Obsidian REST key in --vault can be read by other programs in the process list; "
                "give it in %s or save the vault in Settings instead",
                CLI_VAULT_ENV,
            )
        elif secrets is not None:
            key = secrets.get(CLI_VAULT_SECRET) or next(
                (
                    secrets.get(v.secret_id)
                    for v in saved
                    if v.kind == "obsidian-rest"
                    and v.host == source.host
                    and v.port == source.port
                    and v.https == source.https
                ),
                None,
            )
            if key:
                from dle_desktop.vault.obsidian_rest import ObsidianRestSource

                source = ObsidianRestSource(source.name, source.host, source.port, key, https=source.https)
        return source
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ConfigError(f"vault folder not found: {spec}")
    return FolderSource(name=path.resolve().name or str(path), root=path.resolve())


def source_from_config(cfg: VaultConfig, secrets: SecretStore) -> VaultSource:
    if cfg.kind == "folder":
        return FolderSource(name=cfg.name, root=Path(cfg.path), enabled=cfg.enabled)
    from dle_desktop.vault.obsidian_rest import ObsidianRestSource

    return ObsidianRestSource(
        name=cfg.name,
        host=cfg.host,
        port=cfg.port,
        api_key=secrets.get(cfg.secret_id) or "",
        https=cfg.https,
        enabled=cfg.enabled,
    )


def _backlinks_of(snapshot: IndexSnapshot) -> None:
    snapshot.backlinks  # noqa: B018 - computed once and kept by the snapshot


class Engine:
    def __init__(
        self,
        paths: AppPaths,
        settings: Settings,
        secrets: SecretStore | None = None,
        vault_override: list[VaultSource] | None = None,
        use_cache: bool = True,
        ai_offline: bool = False,
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.secrets = secrets or SecretStore()
        self.started_at = time.time()
        self._subscribers: list[Subscriber] = []
        self._sources = self._make_sources(vault_override)
        self._health_checker = HealthChecker()
        #: When the window's user last acted: long background work gives way meanwhile.
        self.activity = UserActivity()
        self.using_sample_vault = (
            bool(self._sources) and self._sources[0].name == SAMPLE_VAULT_NAME and vault_override is None
        )
        self.indexer = VaultIndexer(
            self._sources,
            ParseOptions(
                tags=TagConfig(
                    settings.lorebook_tag,
                    settings.constant_tag,
                    settings.never_insert_tag,
                    settings.seed_tag,
                    settings.bootstrap_tag,
                    settings.librarian_guide_tag,
                ),
                lenient=settings.lenient_authoring,
                field_definitions_path=settings.field_definitions_path,
                conflict_mode=settings.multi_vault_conflict_resolution,
            ),
            IndexCache(paths.index_cache_dir) if use_cache else None,
            self.activity,
        )
        self.watcher: FolderWatcher | None = None
        self.sync_paused = settings.sync_paused
        self.syncing = False
        self.last_sync: SyncResult | None = None
        self.last_error: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._sync_task: asyncio.Task | None = None
        self._pending_paths: dict[str, set[str]] = {}
        self.retrieval = RetrievalService(
            store_factory=lambda: ChatStore(paths.state_db),
            snapshot_getter=lambda: self.indexer.snapshot,
            config=MatchConfig.from_object(settings),
        )
        self.steering = SteeringService(self.retrieval, lambda: self.indexer.snapshot, paths.state_db)
        #: The app's window attaches here so a client (SillyTavern's /dle-graph) can bring it up.
        self.window = WindowRequests()
        self._vectors: VectorService | None = (
            None  # the SillyTavern Vector API service, made on first use (see `vectors`)
        )
        #: The port our HTTP server listens on (set by ServerRunner); vector scopes name it.
        self.server_port: int | None = None
        self._local_embedder: LocalEmbedder | None = None
        self._stopping = False
        # Semantic search and the AI service are made on first use (`semantic`, `ai`): `index`,
        # `health` and `match` never load the vector store or the HTTP client.
        self._semantic: SemanticSearch | None = None
        self.retrieval.semantic_lookup = self._semantic_lookup
        self._ai: AiService | None = None
        self._ai_offline = ai_offline
        self._ai_search: AiSearch | None = None
        from dle_desktop.writers.service import Writers

        #: Session Scribe, Auto Lorebook and AI Notepad over this engine.
        self.writers = Writers(self)
        self.retrieval.ai_select = self._ai_select
        self.retrieval.extra_groups = self.writers.notepad.groups
        self.retrieval.reset_listeners.append(self.writers.forget)
        self.retrieval.fork_listeners.append(self.writers.fork)
        self._writer: NoteWriter | None = None  # the note writer, made on first use (see `writer`)
        self._librarian: Librarian | None = None  # made on first use (see `librarian`)
        self._worldinfo: WorldInfoService | None = None  # made on first use (see `worldinfo`)
        self._wi_sync: WorldInfoSync | None = None  # made when a sync is on (see `wi_sync`)
        # Made here, not on first use: the GUI thread and the server's routes both reach for it,
        # and two stores over one file would each overwrite the other's records.
        self._gaps = GapStore(paths.data_dir / "librarian" / "gaps.json")

    # -- set-up -----------------------------------------------------------------------------
    def _make_sources(self, override: list[VaultSource] | None) -> list[VaultSource]:
        if override is not None:
            return override
        if self.settings.vaults:
            return [source_from_config(v, self.secrets) for v in self.settings.vaults]
        # A first run with nothing configured opens the bundled sample world.
        return [FolderSource(name=SAMPLE_VAULT_NAME, root=sample_vault_dir())]

    @property
    def sources(self) -> list[VaultSource]:
        return list(self._sources)

    @property
    def semantic(self) -> SemanticSearch:
        """The vault's semantic search, sharing the Vector API's store and the one local embedder."""
        if self._semantic is None:
            from dle_desktop.engine.semantic import SemanticSearch

            self._semantic = SemanticSearch(
                lambda: self.vectors.get_store(),
                self.local_embedder,
                on_status=lambda st: self._emit("semantic", **st.to_json()),
            )
            self._semantic.pause(self.settings.semantic_paused)
        return self._semantic

    async def _semantic_lookup(self, query: Any, top_k: int) -> Any:
        return await self.semantic.lookup(query, top_k)

    @property
    def ai(self) -> AiService:
        """One AI client, breaker, throttle and cache for every channel of this engine."""
        if self._ai is None:
            from dle_desktop.ai.service import AiService

            self._ai = AiService(
                self.settings,
                self.secrets,
                offline=self._ai_offline,
                usage_path=self.paths.ai_usage_file,
                on_breaker=lambda snap: self._emit("ai_breaker", **snap),
            )
        return self._ai

    @ai.setter
    def ai(self, service: AiService) -> None:
        self._ai = service
        self._ai_search = None  # AI search asks the new service

    async def _ai_select(self, pending: Any, chat_id: str | None) -> Any:
        if self._ai_search is None:
            from dle_desktop.ai.search import AiSearch

            self._ai_search = AiSearch(self.ai, self.writers.last_summary)
        return await self._ai_search.select(pending, chat_id)

    @property
    def snapshot(self) -> IndexSnapshot | None:
        return self.indexer.snapshot

    @property
    def writer(self):
        """The one way the app changes notes in this engine's vaults (vault/writer.py): each write is
        checked against the version it was based on, recorded in the data folder's write history,
        and re-indexed at once. The bundled sample vault is read-only."""
        if self._writer is None:
            from dle_desktop.vault.write_history import WriteHistory
            from dle_desktop.vault.writer import NoteWriter

            read_only = {}
            if self.using_sample_vault:
                read_only[SAMPLE_VAULT_NAME] = (
                    "the bundled sample vault is read-only; add your own vault folder in Settings to write notes"
                )
            self._writer = NoteWriter(
                lambda: self._sources,
                history=WriteHistory.in_data_dir(self.paths.data_dir),
                on_written=self.note_written,
                read_only=read_only,
            )
        return self._writer

    @property
    def gaps(self) -> GapStore:
        """The gap records of this data folder (librarian/gaps.json): one store, so that what the
        lore API records (search misses, flags) is what the Librarian view lists and merges into."""
        return self._gaps

    @property
    def tag_config(self) -> TagConfig:
        """Which tags mark lore, constants, seeds... as this engine's vaults are parsed."""
        return self.indexer.options.tags

    @property
    def librarian(self) -> Librarian:
        """The Librarian over this engine (its sessions, gaps, AI calls and writes), built here with
        the other services rather than by the view that shows it."""
        if self._librarian is None:
            from dle_desktop.librarian.service import Librarian

            self._librarian = Librarian(self)
        return self._librarian

    @property
    def worldinfo(self) -> WorldInfoService:
        """World Info import and export over this engine's vaults, index and note writer; an
        import's progress is the `wi_import` event."""
        if self._worldinfo is None:
            from dle_desktop.worldinfo.service import WorldInfoService

            self._worldinfo = WorldInfoService(
                self.writer,
                sources=lambda: self._sources,
                snapshot=lambda: self.indexer.snapshot,
                tags=lambda: self.tag_config,
                settings=lambda: self.settings,
                on_event=self._emit,
            )
        return self._worldinfo

    @property
    def wi_sync(self) -> WorldInfoSync:
        """The World Info syncs of the settings: vault folders mirrored into SillyTavern books after
        each re-index; each outcome is the `wi_sync` event."""
        if self._wi_sync is None:
            from dle_desktop.worldinfo.sync import WorldInfoSync
            from dle_desktop.worldinfo.sync_host import ServiceSyncHost

            host = ServiceSyncHost(self.worldinfo, lambda: self.settings, lambda: self.tag_config)
            self._wi_sync = WorldInfoSync(host, self.paths.data_dir / "worldinfo-sync", self.settings.wi_syncs)
            self._wi_sync.on_outcome = lambda outcome: self._emit("wi_sync", **outcome.to_json())
        return self._wi_sync

    def _follow_wi_syncs(self, first: bool, changes: ChangeSet) -> None:
        if self._stopping or not any(c.enabled for c in self.settings.wi_syncs):
            return
        touched = None if first or changes.first_build else (*changes.added, *changes.removed, *changes.modified)
        if touched is None or touched:
            self.wi_sync.index_changed(touched)

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    def _emit(self, kind: str, **data: Any) -> None:
        event = EngineEvent(kind, data)
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:
                log.exception("engine subscriber failed on %s", kind)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def start(self, initial_sync: bool = True, watch: bool | None = None) -> None:
        """Publish the cached index at once, then reconcile and watch in the background."""
        self._loop = asyncio.get_running_loop()
        cached = await asyncio.to_thread(self.indexer.load_cache)
        if cached is not None:
            self._emit("index", snapshot=cached, changes=None, source="cache")
        watching = watch if watch is not None else self.settings.watch_folders
        if initial_sync:
            self._sync_task = self._spawn(self._watch_and_reconcile(watching))
        elif watching:
            self._spawn(self._watch_and_reconcile(watching, reconcile=False))
        self._spawn(self._cache_saver())
        if self.settings.sync_polling_interval > 0 and any(not isinstance(s, FolderSource) for s in self._sources):
            self._spawn(self._poll_remote())

    async def _watch_and_reconcile(self, watching: bool, reconcile: bool = True) -> SyncResult | None:
        """Watch the folders, then reconcile the index with them (a change made between the two
        is seen by the reconcile). Both wait for a quiet moment in a window that shows the cached
        index: the watcher's first walk over the folders is Python on this loop (0.1-0.3 s at
        10,000 notes), and it met the user's first clicks."""
        await self.activity.give_way_async()
        if watching:
            self._start_watcher()
        result = await self._run_sync(force=False, reason="start") if reconcile else None
        # The window's first chosen entry asks for its write history: the writer's code (~0.1 s of
        # imports) and its database are opened now, in a quiet moment, not at that click.
        await self.activity.give_way_async()
        try:
            self.writer  # noqa: B018 - made on first use and kept
        except (OSError, sqlite3.Error, DleError) as exc:  # its first real use tries again and reports it
            log.warning("the note writer could not be made ahead: %s", exc)
        return result

    def _start_watcher(self) -> None:
        folders = [s for s in self._sources if isinstance(s, FolderSource) and s.root.is_dir()]
        if not folders:
            return
        self.watcher = FolderWatcher(self._on_fs_change, on_held=self._on_fs_held)
        self.watcher.paused = self.sync_paused
        for s in folders:
            special = {self.settings.field_definitions_path} if s is self.indexer.primary else set()
            try:
                self.watcher.watch(s.name, s.root, special)
            except OSError as exc:
                log.warning("cannot watch %s (%s); use Sync now after editing", s.root, exc)
        self.watcher.start()

    async def stop(self) -> None:
        self._stopping = True
        self.activity.release()  # work that gives way to the user ends now, it does not wait
        if self.watcher:
            self.watcher.stop()
        if self._wi_sync is not None:
            await self._wi_sync.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.indexer.cache_dirty:
            await asyncio.to_thread(self.indexer.save_cache)
        self.retrieval.close()
        self.writers.close()
        if self._semantic is not None:
            await self._semantic.aclose()
        if self._ai is not None:
            await self._ai.aclose()
        await self._close_vectors()
        if self._writer is not None and self._writer.history is not None:
            self._writer.history.close()
        for s in self._sources:
            try:
                await s.close()
            except Exception:
                log.debug("closing %s failed", s.name, exc_info=True)

    # -- vectors ----------------------------------------------------------------------------
    @property
    def vectors(self):
        """The VectorService behind /api/vector/* and the embedding endpoints, made on first use
        (the store opens its files lazily, the embedder loads its model on the first embed)."""
        if self._vectors is None:
            if self._stopping:  # never reopen the vectors folder behind a stopped engine's back
                raise RuntimeError("DLE Desktop is stopping or switching configuration; try again")
            from dle_desktop.vectors.service import VectorService
            from dle_desktop.vectors.store import VectorStore

            root, threshold = self.paths.vectors_dir, self.settings.vector_ann_threshold
            self._vectors = VectorService(
                lambda: VectorStore(root, ann_threshold=threshold),
                self.local_embedder,
                self._remote_embedder,
                own_port=lambda: self.server_port,
            )
        return self._vectors

    def _remote_embedder(self, source_settings):
        """A remote embedder (llamacpp, vllm, ollama, extras, clouds) for a vector request's source
        settings, with API keys from this engine's secret store; None if the source is not remote."""
        from dle_desktop.vectors.remote import embedder_for_st_source

        return embedder_for_st_source(source_settings, secrets=self.secrets)

    def local_embedder(self):
        """The one local llama.cpp embedder (the `embedding_model_path` setting, else the model
        manager's default). Raises EmbeddingError(503) with a clear message when there is none."""
        if self._local_embedder is None:
            from dle_desktop.vectors.contracts import EmbeddingError

            if self._stopping:
                raise EmbeddingError("DLE Desktop is stopping or switching configuration; try again", 503)
            path = self.settings.embedding_model_path.strip() or self._default_embedding_model()
            if not path:
                raise EmbeddingError(
                    "no local embedding model is configured: download the default model or choose a GGUF "
                    "embedding model file in Settings → Embeddings (--embedding-model PATH on the command line; "
                    "setting embedding_model_path)",
                    503,
                )
            model = Path(path).expanduser()
            if not model.is_file():
                raise EmbeddingError(
                    f"the embedding model {model} does not exist; choose another in Settings → Embeddings "
                    "(setting embedding_model_path)",
                    503,
                )
            from dle_desktop.vectors.embedder import LocalEmbedder

            self._local_embedder = LocalEmbedder(model)
        return self._local_embedder

    def _default_embedding_model(self) -> str:
        """The model manager's default model (Qwen3-Embedding-0.6B Q8_0) if it is downloaded, else ""."""
        try:
            from dle_desktop.vectors.model_manager import ModelManager

            manager = ModelManager(self.paths.models_dir)
            return str(manager.path_for()) if manager.is_available() else ""
        except Exception:
            log.debug("the model manager could not name its default model", exc_info=True)
            return ""

    async def _close_vectors(self) -> None:
        vectors, self._vectors = self._vectors, None
        if vectors is not None:
            await vectors.aclose()
        embedder, self._local_embedder = self._local_embedder, None
        for name in ("aclose", "close"):
            fn = getattr(embedder, name, None)
            if callable(fn):
                try:
                    result = fn()
                    if asyncio.iscoroutine(result):
                        await result
                except Exception:
                    log.debug("closing the local embedder failed", exc_info=True)
                break

    # -- syncing ----------------------------------------------------------------------------
    def _on_fs_change(self, vault: str, paths: set[str], full: bool) -> None:
        """Called on the watcher thread; hop onto the engine loop."""
        if self._loop is None or self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._queue_change, vault, paths, full)

    def _on_fs_held(self, count: int) -> None:
        """Called on the watcher thread while sync is paused: say how many changes wait."""
        if self._loop is None or self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(lambda: self._emit("sync_state", syncing=self.syncing, held=count))

    def _queue_change(self, vault: str, paths: set[str], full: bool) -> None:
        if full:
            self._spawn(self._run_sync(force=False, reason="folder changed"))
            return
        self._pending_paths.setdefault(vault, set()).update(paths)
        self._spawn(self._drain_paths())

    def note_written(self, vault: str, paths: set[str]) -> concurrent.futures.Future | None:
        """Files under vault `vault` were just written by us (the note writer, the Obsidian REST
        emulation's PUT): re-index them now. Callable from any thread; the future is done once the index has them
        (None: the engine is not running, or sync is paused and the watcher holds the change like
        any other). The watcher's own batch for the same files that follows finds the same content
        hash: nothing is parsed twice. The field-definitions file re-reads the whole vault."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._stopping or self.sync_paused:
            return None

        async def index() -> None:
            primary = self.indexer.primary
            if primary is not None and primary.name == vault and self.settings.field_definitions_path in paths:
                await self._run_sync(force=False, reason="field definitions written")
                return
            self._pending_paths.setdefault(vault, set()).update(paths)
            await self._drain_paths()

        return asyncio.run_coroutine_threadsafe(index(), loop)

    async def _drain_paths(self) -> None:
        pending, self._pending_paths = self._pending_paths, {}
        for vault, paths in pending.items():
            try:
                result = await self.indexer.sync_paths(vault, paths)
            except DleError as exc:
                self._report_error(str(exc))
                continue
            except Exception as exc:
                log.exception("re-sync of %s failed", vault)
                self._report_error(f"{vault}: re-reading changed notes failed ({exc}); use Sync now")
                continue
            self._after_sync(result, "file change")

    async def _run_sync(self, force: bool, reason: str) -> SyncResult | None:
        self.syncing = True
        self._emit("sync_state", syncing=True, reason=reason)

        def progress(done: int, total: int, what: str) -> None:
            self._emit("progress", done=done, total=total, message=what)

        def partial(entries: list) -> None:
            self._emit("index_partial", entries=entries)

        try:
            result = await self.indexer.sync_all(progress=progress, force=force, save_cache=False, partial=partial)
        except asyncio.CancelledError:
            self._emit("sync_state", syncing=False, reason="cancelled")
            raise
        except DleError as exc:
            self._report_error(str(exc))
            return None
        finally:
            self.syncing = False
        self._after_sync(result, reason)
        self._emit("sync_state", syncing=False, reason=reason)
        return result

    @property
    def semantic_enabled(self) -> bool:
        return self.retrieval.config.semantic_enabled

    def _after_sync(self, result: SyncResult, reason: str) -> None:
        first = self.last_sync is None
        self.last_sync = result
        changed = result.changes.has_changes or result.changes.first_build
        if changed and self._ai is not None:
            self._ai.clear_cache()  # DLE drops the AI-search cache on every index rebuild
        if (
            self.semantic_enabled
            and not self._stopping
            and (first or result.changes.has_changes or result.changes.first_build)
        ):
            self.semantic.schedule(result.snapshot)
        self.last_error = "; ".join(f"{k} {v}" for k, v in result.vault_errors.items()) or None
        if self.last_error:
            self._emit("sync_error", message=self.last_error)
        self._emit("index", snapshot=result.snapshot, changes=result.changes, source=reason, seconds=result.seconds)
        self._follow_wi_syncs(first, result.changes)
        save = self.indexer.cache_dirty and reason != "file change"
        if save:
            self.indexer.cache_dirty = False
        if changed or save:
            self._spawn(self._after_index(result.snapshot if changed else None, save))

    async def _after_index(self, snapshot: IndexSnapshot | None, save_cache: bool) -> None:
        """The work a new index brings, one piece after another: run side by side, these threads
        took turns at the interpreter lock with the window filling its table (a 10k first start
        showed its entries ~2 s after the index)."""
        give_way = self.activity.give_way_async
        if snapshot is not None:
            # The entry detail lists each entry's backlinks: worked out here, not on the GUI thread.
            await give_way()
            await asyncio.to_thread(_backlinks_of, snapshot)
            await give_way()
            await self.retrieval.warm(snapshot)
        if save_cache:
            await give_way()
            await asyncio.to_thread(self.indexer.save_cache)

    def _report_error(self, message: str) -> None:
        self.last_error = message
        log.warning("sync failed: %s", message)
        self._emit("sync_error", message=message)

    async def sync_now(self, force: bool = False) -> SyncResult | None:
        if self._sync_task and not self._sync_task.done():
            await asyncio.shield(self._sync_task)
        self._sync_task = self._spawn(self._run_sync(force=force, reason="sync now"))
        return await self._sync_task

    def cancel_sync(self) -> bool:
        if self._sync_task and not self._sync_task.done():
            self._sync_task.cancel()
            return True
        return False

    def set_sync_paused(self, paused: bool) -> None:
        self.sync_paused = paused
        if self.watcher:
            if paused:
                self.watcher.paused = True
            else:
                self.watcher.resume()
        held = self.watcher.held() if paused and self.watcher else 0
        self._emit("sync_state", syncing=self.syncing, paused=paused, held=held)

    def set_semantic_paused(self, paused: bool) -> None:
        """Pause or resume embedding the vault's entries (lookups keep working on what is done)."""
        self.semantic.pause(paused)

    async def embed_vault_now(self) -> None:
        """Embed the current snapshot's new or changed entries now (the window's "Embed now")."""
        if self.snapshot is not None:
            await self.semantic.schedule(self.snapshot)

    async def _cache_saver(self) -> None:
        while True:
            await asyncio.sleep(CACHE_SAVE_INTERVAL_S)
            if self.indexer.cache_dirty:
                self.indexer.cache_dirty = False
                await asyncio.to_thread(self.indexer.save_cache)

    async def _poll_remote(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sync_polling_interval)
            if not self.sync_paused and not self.syncing:
                await self._run_sync(force=False, reason="poll")

    # -- settings ---------------------------------------------------------------------------
    async def apply_settings(self, settings: Settings, rebuild_ai: bool = False) -> None:
        """Take settings that the running engine reads per generation (the pipeline's, AI search's,
        the health check's): the next generation uses them, and the index stays as it is. Vaults,
        parsing and watching are fixed when the engine is made (`settings_apply.plan` says which
        changes need a new engine). `rebuild_ai` starts a fresh AI service (a new connection:
        closed breaker, empty cache), keeping the usage counts."""
        from dle_desktop.ai.service import AiService

        old_settings, old_config = self.settings, self.retrieval.config
        config = MatchConfig.from_object(settings)
        self.settings = settings
        self.retrieval.config = config
        if rebuild_ai:
            old_ai = self.ai
            self.ai = AiService(
                settings,
                self.secrets,
                offline=old_ai.offline,
                usage_path=old_ai.usage_path,
                on_breaker=old_ai.on_breaker,
            )
            self.ai.usage, self.ai.usage_since = old_ai.usage, old_ai.usage_since
            await old_ai.aclose()
            self._emit("ai_breaker", **self.ai.breaker.snapshot())
        elif self._ai is not None:
            self._ai.settings = settings
            # A cached answer was chosen under the old prompt and options; who may call the server
            # (the access fields, which `st install` changes while chats run) is not among those.
            access_kept = settings.replace(**{name: getattr(old_settings, name) for name in ACCESS_FIELDS})
            if access_kept != old_settings:
                self._ai.clear_cache()
        if settings.wi_syncs != old_settings.wi_syncs:
            self.wi_sync.configs = settings.wi_syncs
            if any(c.enabled for c in settings.wi_syncs) and self.snapshot is not None and not self._stopping:
                self.wi_sync.index_changed(None)  # a sync turned on writes its book now
        snap = self.snapshot
        if snap is not None and not self._stopping:
            if config != old_config:
                self._spawn(self.retrieval.warm(snap))
            if config.semantic_enabled and not old_config.semantic_enabled:
                self.semantic.schedule(snap)
        if old_config.semantic_enabled and not config.semantic_enabled and self._semantic is not None:
            await self._semantic.aclose()  # stop embedding for a search that is off (made anew if it comes back)

    # -- queries ----------------------------------------------------------------------------
    async def wait_ready(self, timeout: float = 60.0) -> IndexSnapshot:
        """The first real (not cached) snapshot, for headless callers."""
        if self._sync_task is not None:
            await asyncio.wait_for(asyncio.shield(self._sync_task), timeout)
        if self.snapshot is None:
            raise DleError(self.last_error or "the index could not be built")
        return self.snapshot

    async def test_chat(
        self, doc, replay: bool = False, seed: int | None = None, ai_mode: str | None = None
    ) -> list[dict]:
        """A dry run of the pipeline on a pasted chat (no stored chat state is read or written),
        with the semantic and AI stages as configured; `ai_mode` ("off", "two-stage", "ai-only")
        overrides AI search for this run only."""
        snap = self.snapshot
        if snap is None:
            raise DleError("the index is not ready yet")
        cfg = self.retrieval.config
        if ai_mode == "off":
            cfg = dataclasses.replace(cfg, ai_search_enabled=False)
        elif ai_mode in ("two-stage", "ai-only"):
            cfg = dataclasses.replace(cfg, ai_search_enabled=True, ai_search_mode=ai_mode)
        elif ai_mode is not None:
            raise ConfigError(f"AI mode must be off, two-stage or ai-only, not {ai_mode!r}")
        return await self.retrieval.dry_run(snap, doc, cfg, replay, seed)

    async def health_in_background(self) -> HealthReport:
        """`health` on a thread of its own, giving way to the window's user: on 10,000 entries it
        holds the interpreter lock a quarter of a second, the engine loop's requests wait for
        none of it."""
        return await asyncio.to_thread(self.health, self.activity.give_way)

    def health(self, give_way: GiveWay = no_wait) -> HealthReport:
        snap = self.snapshot
        if snap is None:
            snap = IndexSnapshot([])
        s = self.settings
        rest_without_key = tuple(
            src.name
            for src in self._sources
            if src.kind == "obsidian-rest" and src.enabled and not getattr(src, "has_api_key", True)
        )
        ctx = HealthContext(
            enabled_vaults=sum(1 for src in self._sources if src.enabled),
            rest_vaults_without_key=rest_without_key,
            scan_depth=s.scan_depth,
            max_tokens_budget=s.max_tokens_budget,
            unlimited_budget=s.unlimited_budget,
            max_entries=s.max_entries,
            unlimited_entries=s.unlimited_entries,
            cache_ttl=s.cache_ttl,
            index_age_s=(time.time() - snap.built_at) if any(src.kind != "folder" for src in self._sources) else 0.0,
            recursive_scan=s.recursive_scan,
            max_recursion_steps=s.max_recursion_steps,
            injection_position=s.injection_position,
            ai_search_enabled=s.ai_search_enabled,
            ai_search_mode=s.ai_search_mode,
            ai_search_connection_mode=s.ai_search_connection_mode,
            ai_search_profile_id=s.ai_search_profile_id,
            ai_search_proxy_url=s.ai_search_proxy_url,
            scribe_enabled=s.scribe_enabled,
            scribe_connection_mode=s.scribe_connection_mode,
            scribe_profile_id=s.scribe_profile_id,
            scribe_proxy_url=s.scribe_proxy_url,
        )
        return self._health_checker.run(snap, ctx, give_way)

    def status(self) -> dict:
        snap = self.snapshot
        counts = snap.vault_counts() if snap else {}
        errors = self.last_sync.vault_errors if self.last_sync else {}
        return {
            "version": __version__,
            "vaults": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "location": s.describe(),
                    "enabled": s.enabled,
                    "entries": counts.get(s.name, 0),
                    "error": errors.get(s.name),
                }
                for s in self._sources
            ],
            "entries": len(snap) if snap else 0,
            "skipped": len(snap.skipped) if snap else 0,
            "index_version": snap.version if snap else None,
            "index_built_at": snap.built_at if snap else None,
            "syncing": self.syncing,
            "sync_paused": self.sync_paused,
            "sample_vault": self.using_sample_vault,
            "last_error": self.last_error,
            "semantic": self.semantic.status.to_json()
            | {"enabled": self.semantic_enabled, "paused": self.semantic.paused}
            | self.semantic.query_counters(),
            "ai": {
                "enabled": self.settings.ai_search_enabled,
                "mode": self.settings.ai_search_mode,
                "breaker": self.ai.breaker.snapshot()["state"],
                "offline": self.ai.offline,
            },
        }
