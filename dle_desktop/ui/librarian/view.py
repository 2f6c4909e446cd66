"""The Librarian view (Ctrl+4): sessions and gaps on the left, the chat with the librarian in the
middle, the draft editor on the right. Every engine call goes through the bridge; a running turn
is one asyncio task, and Cancel cancels it (the HTTP call under it is aborted at once).

Without a usable AI connection on the Librarian channel the view says so above everything, with a
button to the Channels view, and starts nothing (no session is made, nothing is saved). It looks
again whenever the connection may have changed (the view shown, settings applied, a new index) and
before every action."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QSplitter, QVBoxLayout, QWidget

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.core.pipeline.chat_formats import parse_chat_text
from dle_desktop.errors import DleError
from dle_desktop.librarian.changes import needs_summary
from dle_desktop.librarian.draft import TYPES, Draft
from dle_desktop.librarian.gaps import GapStore
from dle_desktop.librarian.loop import Event
from dle_desktop.librarian.service import Librarian
from dle_desktop.librarian.sessions import Session
from dle_desktop.ui.librarian.ai_notice import FEATURE_CHANNELS, AiMissing, AiNotice, missing
from dle_desktop.ui.librarian.chat import ChatPane
from dle_desktop.ui.librarian.dialogs import ProposalDialog, WritePreviewDialog
from dle_desktop.ui.librarian.draft import DraftEditor
from dle_desktop.ui.librarian.lists import GAPS_TAB, SESSIONS_TAB, SUGGESTIONS_TAB, SessionsPanel
from dle_desktop.ui.librarian.suggestions import SuggestionsPanel
from dle_desktop.ui.widgets.async_util import soon

log = logging.getLogger(__name__)


class _Relay(QObject):
    """Engine-thread callbacks re-posted onto the GUI thread (a queued signal)."""

    event = Signal(object)  # type: ignore[assignment]  # shadows QObject.event(); the name is the relay's interface
    gaps_changed = Signal()


def chat_lines(text: str) -> str:
    """A pasted chat or a SillyTavern .jsonl export as plain `Name: message` lines."""
    try:
        doc = parse_chat_text(text)
    except DleError:
        return text
    lines = [f"{m.name}: {m.mes}" for m in doc.messages if m.mes.strip()]
    return "\n".join(lines) or text


class LibrarianView(QWidget):
    #: where the Channels view should open: a channel to select, or "" for the profile list
    channelsRequested = Signal(str)

    def __init__(self, bridge, parent=None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        #: Whether the Librarian channel has a usable connection (`check_ai` keeps it current).
        self.ai_ready = False
        self._lib: Librarian | None = None
        self.session: Session | None = None
        self.task: asyncio.Future[Any] | None = None
        self.snapshot: IndexSnapshot | None = None
        #: how a dialog is confirmed (tests answer it without a modal loop)
        self.confirm = lambda dialog: dialog.exec() == QDialog.DialogCode.Accepted
        self.relay = _Relay(self)
        self.relay.event.connect(self._on_event)
        self.relay.gaps_changed.connect(self._gaps_changed)
        self._stop_listening: Callable[[], None] | None = None  # while this view listens to a gap store

        self.notice = AiNotice()
        self.notice.channelsRequested.connect(self.channelsRequested)
        self.lists = SessionsPanel()
        self.suggestions = SuggestionsPanel(bridge)
        self.suggestions.open_in_session = self.open_suggestion
        self.lists.add_suggestions(self.suggestions)
        self.chat = ChatPane()
        self.editor = DraftEditor()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.lists)
        split.addWidget(self.chat)
        split.addWidget(self.editor)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 3)
        split.setSizes([240, 480, 460])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.notice)
        layout.addWidget(split, 1)

        self.lists.newRequested.connect(self.ask_new_session)
        self.lists.sessionChosen.connect(self.open_session)
        self.lists.gapOpened.connect(lambda gid: self.new_session("gap", gap_id=gid))
        self.lists.gapHidden.connect(lambda gid: soon(lambda: self._change_gap(self.lib.gaps.hide, gid)))
        self.lists.gapDismissed.connect(lambda gid: soon(lambda: self._change_gap(self.lib.gaps.dismiss, gid)))
        self.lists.summarizeRequested.connect(lambda: soon(self.summarize_all))
        self.lists.currentChanged.connect(self._list_tab_shown)
        self.chat.sendRequested.connect(lambda text: self._start(self.send(text)))
        self.chat.cancelRequested.connect(self.cancel)
        self.editor.writeRequested.connect(lambda: soon(self.write_draft))
        bridge.aiBreaker.connect(lambda _snapshot: self.check_ai())  # a new AI connection starts this way
        self.check_ai()
        self.chat.show_session(None)
        self.refresh_lists()

    @property
    def lib(self) -> Librarian:
        """The running engine's Librarian (a new engine after Settings → OK brings a new one)."""
        lib = self.bridge.librarian
        if lib is not self._lib:
            self._lib = lib
            self._listen(lib.gaps)
        return lib

    def _listen(self, store: GapStore) -> None:
        """Gaps also arrive from the lore API (on the engine's thread): the store's listener
        re-posts onto the GUI thread, and the panel redraws there."""
        if self._stop_listening is not None:
            self._stop_listening()
        relay = self.relay

        def changed() -> None:
            try:
                relay.gaps_changed.emit()
            except RuntimeError:  # the view is gone; stop being called
                stop()

        stop = self._stop_listening = store.subscribe(changed)

    def _gaps_changed(self) -> None:
        if self._lib is not None:
            soon(self._refresh_gaps)

    async def _refresh_gaps(self) -> None:
        self.lists.set_gaps(*await self.bridge.run(_gaps_to_list, self.lib.gaps))

    async def _change_gap(self, change: Callable[[str], object], gap_id: str) -> None:
        """Hide or dismiss a gap on the engine thread (the store is shared with the lore API)."""
        await self.bridge.run(change, gap_id)
        await self.refresh()

    def set_snapshot(self, snapshot) -> None:
        self.snapshot = snapshot
        self.editor.set_context(snapshot, self.session.chat_text if self.session else "")
        self.check_ai()  # a new engine (settings applied) announces itself with its index

    # -- the AI connection ---------------------------------------------------------------------
    def ai_missing(self, feature: str) -> AiMissing | None:
        """What `feature` (librarian | optimize-keys | summarize) lacks to run, as the running
        engine resolves its channel; None when it can run."""
        channel = self.bridge.ai_channel(FEATURE_CHANNELS[feature])
        return missing(feature, channel, bool(self.bridge.settings.connection_profiles))

    def check_ai(self) -> None:
        """Follow the connection as it is now: the notice, Send, the draft, the session buttons."""
        librarian = self.ai_missing("librarian")
        self.ai_ready = librarian is None
        self.notice.show_missing(librarian)
        self.chat.set_available(self.ai_ready)
        self.editor.setEnabled(self.ai_ready)
        self.lists.set_ai(self.ai_ready, self.ai_missing("summarize") is None)
        self.suggestions.set_can_open(self.ai_ready)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.check_ai()  # the user may come back from adding a connection
        soon(self.suggestions.refresh)  # the chats may have suggested entries since

    def _list_tab_shown(self, index: int) -> None:
        if index == SUGGESTIONS_TAB:
            soon(self.suggestions.refresh)

    # -- sessions ------------------------------------------------------------------------------
    def refresh_lists(self) -> None:
        """Re-read the sessions and gaps in the background (their files are not read on the GUI thread)."""
        soon(self.refresh)

    async def refresh(self) -> None:
        lib = self.lib
        sessions = await self.bridge.run(lib.sessions.list)
        gaps, hidden = await self.bridge.run(_gaps_to_list, lib.gaps)
        self.lists.set_sessions(sessions, self.session.id if self.session else None)
        self.lists.set_gaps(gaps, hidden)

    def ask_new_session(self, kind: str) -> None:
        chat = ""
        if kind == "review":
            path, _ = QFileDialog.getOpenFileName(
                self,
                "A SillyTavern chat to review (Cancel to paste one)",
                "",
                "SillyTavern chats (*.jsonl);;Text (*.txt);;All files (*)",
            )
            if path:
                soon(lambda: self._review_file(path))
                return
            else:
                chat, ok = QInputDialog.getMultiLineText(self, "Review a chat", "Paste the chat:")
                if not ok:
                    return
        self.new_session(kind, chat_text=chat)

    async def _review_file(self, path: str) -> None:
        chat = await asyncio.to_thread(Path(path).read_text, encoding="utf-8", errors="replace")
        self.new_session("review", chat_text=chat)

    def new_session(self, kind: str, *, gap_id: str = "", chat_text: str = "") -> None:
        self.check_ai()
        if not self.ai_ready:  # a session could do nothing: none is made (the notice says why)
            return
        self._save_editor()
        text = chat_lines(chat_text) if chat_text else ""
        self.session = self.lib.new_session(kind, gap_id=gap_id, chat_text=text, save=False)
        self._save(self.session)
        self._show_session()

    def open_suggestion(self, suggestion: dict[str, Any]) -> str | None:
        """A new session whose draft is an Auto Lorebook suggestion, to refine with the librarian;
        answers why none was started, or None."""
        self.check_ai()
        if not self.ai_ready:
            return (
                "A Librarian session needs the Librarian's AI connection (see above); "
                "Accept… writes the suggestion without one."
            )
        self._save_editor()
        title = str(suggestion.get("title", "")).strip()
        kind = str(suggestion.get("type", "lore"))
        self.session = self.lib.new_session("new", title=f"Suggestion: {title}", save=False)
        self.session.draft = Draft(
            title=title,
            type=kind if kind in TYPES else "lore",
            keys=tuple(str(k) for k in suggestion.get("keys") or ()),
            summary=str(suggestion.get("summary", "")),
            content=str(suggestion.get("content", "")),
        )
        self._save(self.session)
        self._show_session()
        self.lists.setCurrentIndex(SESSIONS_TAB)
        return None

    def open_session(self, session_id: str) -> None:
        if self.session is not None and self.session.id == session_id:
            return
        self._save_editor()
        soon(lambda: self._open(session_id))

    async def _open(self, session_id: str) -> None:
        self.session = await self.bridge.run(self.lib.sessions.load, session_id)
        self._show_session()

    def _show_session(self) -> None:
        self.chat.show_session(self.session)
        if self.session is not None:
            self.editor.set_draft(self.session.draft)
            self.editor.set_context(self.snapshot, self.session.chat_text)
        self.refresh_lists()

    def _save_editor(self) -> None:
        if self.session is not None and (self.task is None or self.task.done()):
            self.session.draft = self.editor.draft()
            self._save(self.session)

    def _save(self, session: Session) -> None:
        """Write the session on the engine thread (in order with its other reads and writes)."""
        soon(lambda: self.bridge.run(self.lib.sessions.save, session))

    # -- asked for from SillyTavern (/dle-librarian gap <id> | review | audit) ------------------
    async def show_gap(self, gap_id: str) -> str:
        """The Gaps tab at gap `gap_id`, re-read first (SillyTavern may have just recorded it); one
        that was hidden or dismissed is brought back, since it was asked for by name. Says what
        was shown, or why nothing was."""
        gap = await self.bridge.run(self.lib.gaps.get, gap_id)
        if gap is not None and (gap.hidden or gap.dismissed):
            await self.bridge.run(self.lib.gaps.restore, gap_id)
        await self.refresh()
        self.lists.setCurrentIndex(GAPS_TAB)
        if gap is None or not self.lists.select_gap(gap_id):
            return f"SillyTavern asked for gap {gap_id}, which is not recorded (written and removed, or never made)"
        back = " (it was hidden: shown again)" if gap.hidden or gap.dismissed else ""
        return f"Gap “{gap.query}”{back}: Open in a session writes its entry"

    async def show_suggestion(self, suggestion_id: str) -> str:
        """SillyTavern's "open in a Librarian session" for suggestion `suggestion_id`: the
        Suggestions tab at it, re-read first, and a session with it as the draft. Says what was
        done, or why not."""
        await self.suggestions.refresh()
        self.lists.setCurrentIndex(SUGGESTIONS_TAB)
        if not self.suggestions.select(suggestion_id):
            return (
                f"SillyTavern asked for suggestion {suggestion_id}, which is not waiting (accepted, rejected, or "
                "never made)"
            )
        chosen = self.suggestions.selected()
        assert chosen is not None  # just selected
        title = chosen["suggestion"].get("title", "")
        problem = self.open_suggestion(chosen["suggestion"])
        if problem:
            return f"Suggestion “{title}”: {problem}"
        return f"Suggestion “{title}” is the draft of a new Librarian session"

    def open_mode(self, mode: str) -> str:
        """SillyTavern's review/audit. Audit opens an Audit session (as New session → Audit does;
        an empty one already open is reused). Review needs the chat, which the request does not
        carry: the note says how to start it."""
        self.lists.setCurrentIndex(SESSIONS_TAB)
        if mode == "review":
            return (
                "SillyTavern asked for a chat review: New session → Review a chat takes the chat (its .jsonl or pasted)"
            )
        self.check_ai()
        if not self.ai_ready:
            return "SillyTavern asked for an audit: the Librarian needs an AI connection first (see above)"
        if self.session is None or self.session.kind != "audit" or self.session.messages:
            self.new_session("audit")
        return "Audit session open: ask the librarian to check the vault for stale entries"

    # -- a turn --------------------------------------------------------------------------------
    def _start(self, coro) -> None:
        if self.task is not None and not self.task.done():
            coro.close()
            return
        self.task = asyncio.ensure_future(coro)

    async def send(self, text: str) -> None:
        self.check_ai()
        if not self.ai_ready:
            return
        if self.session is None:
            self.new_session("new")
        session = self.session
        assert session is not None  # new_session() sets it
        session.draft = self.editor.draft()  # the user's edits are what the librarian sees
        self.chat.append("user", text)
        self.chat.set_busy(True, "The librarian is working…")
        try:
            await self.bridge.call(self.lib.send(session, text, self.relay.event.emit))
        except asyncio.CancelledError:
            self.chat.append("error", "Cancelled; nothing was written.")
        except DleError:
            pass  # already in the session and shown through the error event
        finally:
            self.chat.set_busy(False)
            if session is self.session:
                self.editor.set_draft(session.draft)
            self.refresh_lists()

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def _on_event(self, event) -> None:
        if event.kind == "status":
            self.chat.status.setText(event.text)
        elif event.kind == "tool_call":
            self.chat.append("tool_call", f"→ {event.text}")
        elif event.kind == "tool_result":
            self.chat.append("tool_result", f"{'✗' if event.data.get('error') else '←'} {event.text}")
        elif event.kind == "repair":
            self.chat.append("repair", event.text)
        elif event.kind == "draft":
            self.editor.set_draft(event.data["draft"])
        elif event.kind == "message":
            self.chat.append("assistant", event.text)
        elif event.kind == "error":
            self.chat.append("error", event.text)

    # -- writing -------------------------------------------------------------------------------
    async def write_draft(self) -> None:
        self.check_ai()
        if not self.ai_ready:
            return
        if self.session is None:
            self.new_session("new")
        assert self.session is not None  # new_session() sets it
        draft = self.editor.draft()
        self.session.draft = draft
        if not draft.keys:
            self.chat.append("error", "This draft has no keys: only AI search or a link can select it.")
        try:
            plan = await self.bridge.call(self.lib.plan_write(draft))
        except DleError as exc:
            self.chat.append("error", str(exc))
            return
        if not self.confirm(WritePreviewDialog(plan, self)):
            return
        try:
            result = await self.bridge.call(self.lib.write(plan, self.session))
        except DleError as exc:
            self.chat.append("error", f"Not written: {exc}")
            return
        self.chat.append("activity", f"Wrote {result.path} in {result.vault} (undo it from the Vault view's entry)")
        self.editor.set_draft(self.session.draft)
        self.refresh_lists()

    # -- Optimize Keys / Summarize ------------------------------------------------------------
    async def propose(self, action: str, uid: str) -> None:
        entry = self.snapshot.by_uid.get(uid) if self.snapshot is not None else None
        if entry is None:
            return
        run = self.lib.optimize_keys if action == "optimize-keys" else self.lib.summarize
        self.chat.set_busy(
            True, f"{'Optimizing keys of' if action == 'optimize-keys' else 'Summarizing'} {entry.title}…"
        )
        try:
            change = await self.bridge.call(run(entry))
        except DleError as exc:
            self.chat.append("error", f"{entry.title}: {exc}")
            return
        finally:
            self.chat.set_busy(False)
        await self._review(change)

    async def _review(self, change) -> bool:
        dialog = ProposalDialog(change, self)
        if not self.confirm(dialog):
            return False
        try:
            await self.bridge.call(self.lib.apply(change.edited(dialog.text())))
        except DleError as exc:
            self.chat.append("error", f"{change.title}: not written: {exc}")
            return False
        self.chat.append("activity", f"Updated {change.base.path}")
        return True

    async def summarize_all(self) -> None:
        if self.ai_missing("summarize") is not None:
            return
        entries = needs_summary(self.snapshot.entries) if self.snapshot is not None else []
        if not entries:
            self.chat.append("activity", "Every entry has a summary.")
            return
        proposals = []

        def progress(done: int, total: int, title: str) -> None:
            self.relay.event.emit(
                Event("status", f"Summarizing {done + 1}/{total}: {title}" if title else f"Summarized {total}")
            )

        def result(change, entry, error) -> None:
            proposals.append((change, entry.title, error))

        self.chat.set_busy(True, f"Summarizing {len(entries)} entries…")
        self.task = asyncio.ensure_future(self.bridge.call(self.lib.summarize_many(entries, progress, result)))
        try:
            await self.task
        except asyncio.CancelledError:
            self.chat.append("error", f"Summarize cancelled after {len(proposals)} of {len(entries)}.")
        finally:
            self.chat.set_busy(False)
        for change, title, error in list(proposals):
            if error:
                self.chat.append("error", f"{title}: {error}")
            elif change is not None:
                await self._review(change)


def _gaps_to_list(store: GapStore) -> tuple[list, int]:
    """The gaps the panel lists, and how many more are hidden or dismissed."""
    shown = store.list()
    return shown, len(store.list(include_hidden=True)) - len(shown)
