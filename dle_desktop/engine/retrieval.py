"""Retrieval for chats: runs the pure pipeline against the engine's current snapshot and keeps
each chat's state in SQLite. Requests for the same chat are serialised; different chats run
side by side and never see each other's state."""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.ai_stage import AiOutcome
from dle_desktop.core.pipeline.chat_input import ChatDocument
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.formatting import Group
from dle_desktop.core.pipeline.replay import cut_points, initial_state
from dle_desktop.core.pipeline.run import (
    GenerationResult,
    Pending,
    begin_generation,
    finish_generation,
    prepare,
    semantic_query,
)
from dle_desktop.core.pipeline.semantic_query import SemanticQuery
from dle_desktop.core.pipeline.stage_context import SemanticHit
from dle_desktop.core.pipeline.state import ChatState
from dle_desktop.errors import DleError, InputError
from dle_desktop.state.chat_store import ChatStore

EDITABLE = ("pins", "blocks", "context", "folder_filter", "notebook")


class NotReady(DleError):
    http_status = 503


def stamp_injections(state: ChatState, result: GenerationResult, now: float) -> ChatState:
    """When each injected entry last reached a prompt (wall-clock time is the engine's to know,
    not the pure pipeline's): the analytics' `last_injected_at`."""
    keys = {i.entry.tracker_key for i in result.injected}
    if not keys:
        return state
    analytics = {k: ({**v, "last_injected_at": now} if k in keys else v) for k, v in state.analytics.items()}
    return state.replace(analytics=analytics)


#: (query, top_k) -> (hits best first, a note when partial or missing). The query is a
#: `SemanticQuery` (its `text` is the whole query as one text).
AsyncSemanticLookup = Callable[[SemanticQuery, int], Awaitable[tuple[Sequence[SemanticHit], "str | None"]]]
#: (pending generation, chat id or None for a dry run) -> what the AI chose (never raises).
AiSelect = Callable[[Pending, "str | None"], Awaitable[AiOutcome]]


#: chat id -> prompt groups a generation of that chat also carries (the AI Notepad's).
ExtraGroups = Callable[[str], Awaitable[Sequence[Group]]]
#: Told a chat was reset (its writers stop and forget it).
ResetListener = Callable[[str], Awaitable[None]]
#: Told a chat was forked from another (source, target), once its state is copied.
ForkListener = Callable[[str, str], Awaitable[None]]


#: Told of every generation `retrieve` returns in this context (see `observe_generations`).
GenerationObserver = Callable[[ChatDocument, GenerationResult], None]
_observer: ContextVar[GenerationObserver | None] = ContextVar("dle_generation_observer", default=None)


@contextmanager
def observe_generations(callback: GenerationObserver) -> Iterator[None]:
    """Within the block (one request's task), `callback(doc, result)` is called for each
    generation `RetrievalService.retrieve` returns: the SillyTavern bridge's monitor sees the
    chat and the result without reading the request or the answer again."""
    token = _observer.set(callback)
    try:
        yield
    finally:
        _observer.reset(token)


@dataclass
class RetrievalService:
    store_factory: Callable[[], ChatStore]
    snapshot_getter: Callable[[], IndexSnapshot | None]
    config: MatchConfig
    semantic_lookup: AsyncSemanticLookup | None = None
    ai_select: AiSelect | None = None
    extra_groups: ExtraGroups | None = None
    reset_listeners: list[ResetListener] = field(default_factory=list)
    fork_listeners: list[ForkListener] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._store: ChatStore | None = None
        # Weak values: a chat's lock lives while a request holds or awaits it, so the table does
        # not grow with every chat id ever seen (a defaultdict kept one lock per id forever).
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, chat_id: str) -> asyncio.Lock:
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[chat_id] = lock
        return lock

    @property
    def store(self) -> ChatStore:
        if self._store is None:
            self._store = self.store_factory()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def snapshot(self) -> IndexSnapshot:
        snap = self.snapshot_getter()
        if snap is None:
            raise NotReady("the vault index is not ready yet; try again in a moment")
        return snap

    async def warm(self, snapshot: IndexSnapshot) -> None:
        """Build the keyword automaton for a new snapshot before the next request needs it."""
        await asyncio.to_thread(prepare, snapshot, self.config)
        if self.config.fuzzy_search_enabled:
            await asyncio.to_thread(lambda: snapshot.bm25)  # built once, off the request path

    @staticmethod
    def apply_document(state: ChatState, doc: ChatDocument) -> ChatState:
        changes = {}
        for name in EDITABLE:
            value = getattr(doc, name)
            if name in doc.present and value is not None:
                changes[name] = value
        if "folder_filter" in doc.present and doc.folder_filter is None:
            changes["folder_filter"] = None
        return state.replace(**changes) if changes else state

    async def retrieve(self, doc: ChatDocument, config: MatchConfig | None = None) -> GenerationResult:
        if not doc.chat_id:
            raise InputError("chat_id is missing")
        cfg = config or self.config
        snap = self.snapshot()
        hits, note = await self._semantic(doc.messages, cfg)
        async with self._lock(doc.chat_id):
            loaded = await asyncio.to_thread(self.store.load, doc.chat_id)
            state = self.apply_document(loaded, doc)
            rng = random.Random(doc.seed) if doc.seed is not None else random.Random()
            result, new_state = await self._generate(
                snap, doc.messages, state, cfg, doc.character_name, rng, doc.swipe, hits, note, doc.chat_id
            )
            if not doc.dry_run and result.skipped_reason is not None and new_state is not loaded:
                # Nothing was generated, but pins/context sent with the request still count.
                await asyncio.to_thread(self.store.save, doc.chat_id, new_state)
            if not doc.dry_run and result.skipped_reason is None:
                injected = result.to_json()["injected"]
                record = {
                    "injected": [i["title"] for i in injected],
                    "sources": injected,
                    "verdicts": [v.to_json() for v in result.verdicts],
                    "total_tokens": result.total_tokens,
                }
                if result.semantic_query is not None:
                    record["semantic_query"] = result.semantic_query
                new_state = stamp_injections(new_state, result, time.time())
                await asyncio.to_thread(self.store.save, doc.chat_id, new_state, record)
                result = replace(result, record=new_state.generation_count)
        if self.extra_groups is not None and result.skipped_reason is None:
            extra = await self.extra_groups(doc.chat_id)
            if extra:
                result = replace(result, groups=(*result.groups, *extra))
        observer = _observer.get()
        if observer is not None:
            observer(doc, result)
        return result

    async def _semantic(self, messages, cfg: MatchConfig) -> tuple[Sequence[SemanticHit] | None, str | None]:
        query = semantic_query(messages, cfg)
        if query is None:
            return None, None
        if self.semantic_lookup is None:
            return None, "semantic search is on but no embedding model is available here"
        return await self.semantic_lookup(query, cfg.semantic_top_k)

    async def _generate(
        self,
        snap: IndexSnapshot,
        messages,
        state: ChatState,
        cfg: MatchConfig,
        character_name: str | None,
        rng: random.Random,
        swipe: bool | None,
        hits,
        note,
        chat_id: str | None,
    ) -> tuple[GenerationResult, ChatState]:
        """begin → (AI) → finish; the pure halves run off the event loop."""
        pending = await asyncio.to_thread(
            begin_generation,
            snap,
            messages,
            state,
            cfg,
            character_name=character_name,
            rng=rng,
            swipe=swipe,
            semantic_hits=hits,
            semantic_note=note,
        )
        if isinstance(pending, GenerationResult):
            return pending, state
        outcome = None
        if pending.needs_ai:
            if self.ai_select is None:
                outcome = AiOutcome("error", message="AI search is on but no AI connection is available here")
            else:
                outcome = await self.ai_select(pending, chat_id)
        return await asyncio.to_thread(finish_generation, pending, outcome)

    async def dry_run(
        self,
        snap: IndexSnapshot,
        doc: ChatDocument,
        cfg: MatchConfig | None = None,
        replay: bool = False,
        seed: int | None = None,
        cuts: Sequence[int] | None = None,
    ) -> list[dict]:
        """The whole chat through the pipeline (once, once per user message, or at each of `cuts`
        messages, with the state carried along), with semantic and AI stages as configured; no
        stored state is touched."""
        cfg = cfg or self.config
        rng = random.Random(seed)
        state = initial_state(doc)
        messages = list(doc.messages)
        out = []
        for cut in cuts or cut_points(doc, replay):
            hits, note = await self._semantic(messages[:cut], cfg)
            result, state = await self._generate(
                snap, messages[:cut], state, cfg, doc.character_name, rng, None, hits, note, None
            )
            record = result.to_json()
            record["messages"] = cut
            out.append(record)
        return out

    async def state(self, chat_id: str) -> ChatState:
        async with self._lock(chat_id):
            return await asyncio.to_thread(self.store.load, chat_id)

    async def update(self, chat_id: str, **changes) -> ChatState:
        unknown = set(changes) - set(EDITABLE)
        if unknown:
            raise InputError(f"cannot set {', '.join(sorted(unknown))}")
        async with self._lock(chat_id):
            state = await asyncio.to_thread(self.store.load, chat_id)
            new = state.replace(**changes)
            await asyncio.to_thread(self.store.save, chat_id, new)
            return new

    async def fork(self, source: str, target: str) -> str | None:
        """A branch (or checkpoint) of `source` starts with its state, as DLE's chat metadata is
        copied with a branch. None when copied, else why not."""
        if source == target:
            return "a chat cannot be forked from itself"
        first, second = sorted((source, target))  # one lock order, so two forks never wait on each other
        async with self._lock(first), self._lock(second):
            reason = await asyncio.to_thread(self.store.copy_state, source, target)
            if reason is None:
                # The branch's first message is a new one, never a regeneration of the parent's last:
                # without this, a branch from an early message looks like a swipe and rolls back.
                copied = await asyncio.to_thread(self.store.load, target)
                await asyncio.to_thread(self.store.save, target, copied.replace(last_swipe_key=None, before_last=None))
        if reason is None:
            for listener in self.fork_listeners:
                await listener(source, target)
        return reason

    async def reset(self, chat_id: str) -> bool:
        async with self._lock(chat_id):
            deleted = await asyncio.to_thread(self.store.delete, chat_id)
        for listener in self.reset_listeners:
            await listener(chat_id)
        return deleted

    async def records(self, chat_id: str, limit: int = 10) -> list[dict]:
        return await asyncio.to_thread(self.store.records, chat_id, limit)

    async def link_source(self, chat_id: str, message: int, swipe: int, record: int) -> dict | None:
        """Tie decision record `record` to the reply it wrote (message index, swipe id)."""
        return await asyncio.to_thread(self.store.sources.link, chat_id, message, swipe, record)

    async def source(self, chat_id: str, message: int, swipe: int) -> dict | None:
        return await asyncio.to_thread(self.store.sources.get, chat_id, message, swipe)

    async def list_chats(self, limit: int = 500) -> list[dict]:
        return await asyncio.to_thread(self.store.list_chats, limit)
