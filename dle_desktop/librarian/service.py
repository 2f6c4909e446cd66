"""The Librarian over a running engine: its sessions and gap records in the data folder, its
AI calls on the engine's channels (breaker and usage counted as every AI call), its writes
through `Engine.writer` (conflict-checked, recorded for undo, re-indexed at once). Every
coroutine here runs on the engine's loop; the view reaches them through the bridge."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dle_desktop.ai.prompts import load_prompt
from dle_desktop.ai.types import ChatRequest, ChatResponse
from dle_desktop.core.entry import Entry, TagConfig
from dle_desktop.errors import NoteExists, WriteRefused
from dle_desktop.librarian import changes, loop
from dle_desktop.librarian.changes import ProposedChange
from dle_desktop.librarian.draft import Draft, Target
from dle_desktop.librarian.gaps import GapStore
from dle_desktop.librarian.protocol import SessionResponse
from dle_desktop.librarian.sessions import Session, SessionStore
from dle_desktop.librarian.tools import ToolContext
from dle_desktop.vault.filenames import note_path_for_title
from dle_desktop.vault.frontmatter_edit import edit_fields, replace_body
from dle_desktop.vault.writer import NoteVersion, NoteWriter, WriteResult

if TYPE_CHECKING:
    from dle_desktop.ai.service import AiService
    from dle_desktop.core.index import IndexSnapshot
    from dle_desktop.state.paths import AppPaths
    from dle_desktop.state.settings import Settings
    from dle_desktop.vault.sources import VaultSource

SYSTEM_PROMPT = "librarian_system"
OPTIMIZE_KEYS_PROMPT = "librarian_optimize_keys"
SUMMARIZE_PROMPT = "librarian_summarize"
FEATURE = "librarian"


@dataclass(frozen=True)
class WritePlan:
    """What "Write to vault" will do, shown to the user before it happens."""

    vault: str
    path: str
    text: str  # the exact file text
    base: NoteVersion | None  # None: a new note
    diff: str = ""  # for an update

    @property
    def is_update(self) -> bool:
        return self.base is not None


class LibrarianHost(Protocol):
    """What the Librarian asks of the engine it works over (`engine.Engine` satisfies it)."""

    @property
    def paths(self) -> AppPaths: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def snapshot(self) -> IndexSnapshot | None: ...
    @property
    def sources(self) -> list[VaultSource]: ...
    @property
    def gaps(self) -> GapStore: ...
    @property
    def writer(self) -> NoteWriter: ...
    @property
    def ai(self) -> AiService: ...
    @property
    def tag_config(self) -> TagConfig: ...


class Librarian:
    def __init__(self, engine: LibrarianHost) -> None:
        self.engine = engine
        # The engine's store, so the lore API's gaps and ours are one list.
        self.gaps: GapStore = engine.gaps
        self.sessions = SessionStore(engine.paths.data_dir / "librarian" / "sessions")

    # -- context ---------------------------------------------------------------------------------
    @property
    def tags(self) -> TagConfig:
        return self.engine.tag_config

    def tool_context(self, session: Session) -> ToolContext:
        return ToolContext(
            snapshot=lambda: self.engine.snapshot,
            gaps=self.gaps,
            chat_lines=lambda: [ln for ln in session.chat_text.splitlines() if ln.strip()],
        )

    async def call(self, channel: str, req: ChatRequest) -> ChatResponse:
        """One request on `channel`, its max tokens the channel's (the user's setting wins)."""

        def build(resolved, _profile) -> ChatRequest:
            return dataclasses.replace(req, max_tokens=resolved.max_tokens)

        return await self.engine.ai.call(channel, build, lambda resp: resp, skip_throttle=True)

    # -- sessions --------------------------------------------------------------------------------
    def new_session(
        self, kind: str = "new", *, gap_id: str = "", chat_text: str = "", title: str = "", save: bool = True
    ) -> Session:
        """A new session (for a gap: titled after it, its draft named after it), saved unless
        `save` is False (the view saves it off the GUI thread)."""
        gap = self.gaps.get(gap_id) if gap_id else None
        session = Session.new(
            kind, title=title or (f"Gap: {gap.query}" if gap else ""), gap_id=gap_id, chat_text=chat_text
        )
        if gap is not None and gap.subtype == "gap":
            session.draft = Draft(title=gap.query)
        if save:
            self.sessions.save(session)
        return session

    async def send(self, session: Session, text: str, emit: loop.Emit) -> SessionResponse:
        """The user's message to the librarian; the session is saved whatever happens (cancel too)."""
        gap = self.gaps.get(session.gap_id) if session.gap_id else None
        gap_text = f"{gap.query} — {gap.reason} (urgency {gap.urgency}, seen {gap.frequency}×)" if gap else ""
        try:
            return await loop.run_turn(
                lambda req: self.call("librarian", req),
                session,
                text,
                self.tool_context(session),
                emit,
                system_prompt=load_prompt(SYSTEM_PROMPT),
                gap_text=gap_text,
            )
        finally:
            self.sessions.save(session)

    # -- writing ---------------------------------------------------------------------------------
    def _vault_for_new(self) -> str:
        sources = self.engine.sources
        if not sources:
            raise WriteRefused("no vault is open to write to")
        return sources[0].name

    async def plan_write(self, draft: Draft, *, vault: str = "", folder: str = "") -> WritePlan:
        """The exact file a draft becomes. A new note whose title exists → NoteExists, nothing written."""
        if not draft.title.strip():
            raise WriteRefused("the draft has no title; nothing written")
        writer = self.engine.writer
        if draft.target is None:
            vault = vault or self._vault_for_new()
            snap = self.engine.snapshot
            existing = snap.find(draft.title.strip()) if snap is not None else None
            path = note_path_for_title(draft.title, folder)
            if existing is not None:
                raise NoteExists(
                    f"an entry titled '{existing.title}' already exists ({existing.path} in "
                    f"{existing.vault}); nothing written. Open it to update it, or choose another "
                    "title",
                    existing.vault,
                    existing.path,
                    None,
                )
            current = await writer.read(vault, path)
            if current.exists:
                raise NoteExists(
                    f"{path} already exists in {vault}; nothing written (choose another title)",
                    vault,
                    path,
                    current.text,
                )
            return WritePlan(vault, path, draft.note_text(self.tags), None)
        base = await writer.read(draft.target.vault, draft.target.path)
        if base.text is None:
            raise WriteRefused(f"{draft.target.path} is no longer in the vault; nothing written")
        text = self._updated_text(base, draft)
        return WritePlan(base.vault, base.path, text, base, changes.unified_diff(base.text, text, base.path))

    def _updated_text(self, base: NoteVersion, draft: Draft) -> str:
        """Only what the draft changed: the frontmatter fields that differ (in place, comments kept)
        and the body only when the content was edited."""
        snap = self.engine.snapshot
        entry = next((e for e in (snap.entries if snap else ()) if (e.vault, e.path) == (base.vault, base.path)), None)
        fm = draft.frontmatter(self.tags)
        was = (
            {"priority": entry.priority, "tags": list(entry.tags), "keys": list(entry.keys), "summary": entry.summary}
            if entry
            else {}
        )
        changed: dict[str, Any] = {
            k: fm[k]
            for k in ("priority", "tags", "keys", "summary")
            if k in fm and (not entry or _differs(was.get(k), fm[k]))
        }
        if entry and draft.summary.strip() == "" and entry.summary:
            changed.pop("summary", None)
        text = edit_fields(base.text or "", changed) if changed else base.text or ""
        if entry is None or draft.content.strip() != entry.content.strip():
            text = replace_body(text, draft.body())
        return text

    async def write(self, plan: WritePlan, session: Session | None = None) -> WriteResult:
        writer = self.engine.writer
        if plan.base is None:
            result = await writer.create(plan.vault, plan.path, plan.text, feature=FEATURE)
        else:
            result = await writer.write(plan.vault, plan.path, plan.text, base=plan.base, feature=FEATURE)
        if session is not None:
            if session.gap_id:
                self.gaps.mark_written(session.gap_id)
            version = await writer.read(plan.vault, plan.path)
            # Later writes of this session update the note just written, checked against this version.
            if session.draft.title.strip() and version.hash:
                session.draft = dataclasses.replace(session.draft, target=Target(plan.vault, plan.path, version.hash))
            self.sessions.save(session)
        return result

    # -- Optimize Keys / Summarize ----------------------------------------------------------------
    async def optimize_keys(self, entry: Entry) -> ProposedChange:
        return await changes.optimize_keys(
            lambda req: self.call("optimize_keys", req),
            self.engine.writer.read,
            entry,
            prompt=load_prompt(OPTIMIZE_KEYS_PROMPT),
            mode=getattr(self.engine.settings, "optimize_keys_mode", "two-stage"),
        )

    async def summarize(self, entry: Entry) -> ProposedChange:
        return await changes.summarize(
            lambda req: self.call("ai_search", req),
            self.engine.writer.read,
            entry,
            prompt=load_prompt(SUMMARIZE_PROMPT),
        )

    async def summarize_many(
        self,
        entries: Sequence[Entry],
        on_progress: Callable[[int, int, str], None],
        on_result: Callable[[ProposedChange | None, Entry, str | None], None],
    ) -> int:
        return await changes.summarize_many(
            lambda req: self.call("ai_search", req),
            self.engine.writer.read,
            entries,
            prompt=load_prompt(SUMMARIZE_PROMPT),
            on_progress=on_progress,
            on_result=on_result,
        )

    async def apply(self, change: ProposedChange) -> WriteResult:
        return await self.engine.writer.write(
            change.base.vault, change.base.path, change.new_text, base=change.base, feature=change.feature
        )


def _differs(old: Any, new: Any) -> bool:
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        return [str(x) for x in old] != [str(x) for x in new]
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return float(old) != float(new)
    return old != new
