"""The writers in the app's views, on the real desktop app (engine thread, note writer, writer
state in the data folder) with the fake AI provider answering the writer prompts: the Librarian
view's Suggestions queue (a suggestion Auto Lorebook really made, accepted with an edit into a file
on disk, rejected, opened in a Librarian session; why an empty queue is empty) and the
SillyTavern view's Chats → Writers tab (a chat's AI Notepad and Session Scribe notes, Open, Clear)."""

from __future__ import annotations

import asyncio

import pytest

from dle_desktop.core.pipeline.chat_input import parse_chat_document, parse_messages
from dle_desktop.ui.librarian.lists import SESSIONS_TAB, SUGGESTIONS_TAB
from dle_desktop.ui.librarian.suggestions import EMPTY_OFF
from dle_desktop.ui.sillytavern.chat_writers import NoteDialog
from tests.fakes.ai_provider import ai_fake  # noqa: F401 - the fixture
from tests.ui.conftest import wait_for
from tests.writers.conftest import SUMMARY, answer_writers, chat, writer_settings

CHAT = "Mira - 2026-12-02"
TALK = ("Do you have the brass key?", "Hobb shows a brass key.", "Where does it lead?", "To the sea gate.")
NOTES = "- Mira owes Hobb a favour."


@pytest.fixture
def writers_app(make_desktop, vault_copy, qloop, ai_fake, tmp_path):
    """The app with Auto Lorebook and AI Notepad on, its connection the fake provider."""
    ai_fake.default(answer_writers)
    settings = writer_settings(ai_fake, autoSuggestEnabled=True, autoSuggestFolder="New", aiNotepadEnabled=True)
    desk = make_desktop(vault_copy, settings=settings)
    desk.window.sillytavern_view.installs_panel.home = tmp_path / "home"  # never the real home's SillyTavern
    qloop.run_until_complete(wait_for(lambda: desk.runtime.engine.snapshot is not None, what="the index"))
    return desk


async def _suggest(desk) -> list[str]:
    """Auto Lorebook run for real on CHAT (the fake answers its prompt); the titles it kept."""
    engine = desk.runtime.engine
    run = await desk.bridge.call(engine.writers.suggest.run(CHAT, parse_messages(chat(*TALK))))
    return [s["suggestion"]["title"] for s in run["suggestions"]]


async def _queue(desk):
    view = desk.window.librarian_view
    desk.window.librarian_view_action.trigger()
    view.lists.setCurrentIndex(SUGGESTIONS_TAB)
    await view.suggestions.refresh()
    return view, view.suggestions


def test_a_real_suggestion_is_listed_accepted_with_an_edit_and_written(writers_app, qloop, vault_copy):
    desk = writers_app

    async def scenario():
        titles = await _suggest(desk)
        assert "Brass Key" in titles
        view, queue = await _queue(desk)
        shown = [queue.list.item(r).text().split("\n")[0] for r in range(queue.list.count())]
        assert sorted(shown) == sorted(titles) and queue.hint.isHidden()
        assert view.lists.tabText(SUGGESTIONS_TAB) == f"Suggestions ({len(titles)})"
        assert queue.select(next(p["id"] for p in queue.items if p["suggestion"]["title"] == "Brass Key"))
        preview = queue.preview.toPlainText()
        assert "Brass Key" in preview and "A key that opens the sea gate." in preview and CHAT in preview

        dialogs = []

        def edit_and_accept(dialog) -> bool:
            dialogs.append(dialog)
            assert dialog.title.text() == "Brass Key" and dialog.keys.text() == "brass key, the key"
            dialog.title.setText("Sea Gate Key")
            return True

        queue.confirm = edit_and_accept
        assert await queue.accept_selected()
        written = vault_copy / "New" / "Sea Gate Key.md"
        text = written.read_text(encoding="utf-8")
        assert "\n# Sea Gate Key\n" in text and 'keys: ["brass key", "the key"]' in text
        assert not (vault_copy / "New" / "Brass Key.md").exists()
        assert queue.message.text().startswith("Wrote “Sea Gate Key” to New/Sea Gate Key.md in vault")
        assert "Sea Gate Key" not in [p["suggestion"]["title"] for p in queue.items]
        assert "Brass Key" not in [p["suggestion"]["title"] for p in queue.items]
        pending = await desk.bridge.pending_suggestions()
        assert len(pending) == len(titles) - 1
        # the written entry is in the index at once: the window can show it in the Vault view
        window = desk.window
        await wait_for(lambda: window.vault_view.snapshot.find("Sea Gate Key") is not None, what="the new entry")
        assert await window.open_note("vault", "New/Sea Gate Key.md") == "Showing New/Sea Gate Key.md (vault)"
        assert window.vault_view.snapshot.by_uid[window.vault_view.current_uid()].title == "Sea Gate Key"
        assert window.tabs.currentWidget() is window.vault_view

    qloop.run_until_complete(scenario())


def test_a_refused_accept_says_why_and_the_suggestion_keeps_waiting(writers_app, qloop, vault_copy):
    desk = writers_app

    async def scenario():
        await _suggest(desk)
        _view, queue = await _queue(desk)
        taken = desk.runtime.engine.snapshot.entries[0].title
        before = len(queue.items)

        def retitle(dialog) -> bool:
            dialog.title.setText(taken)
            return True

        queue.confirm = retitle
        assert not await queue.accept_selected()
        assert f"“{taken}” not written:" in queue.message.text() and "already exists" in queue.message.text()
        assert len(queue.items) == before

    qloop.run_until_complete(scenario())


def test_reject_removes_it_and_the_empty_queue_says_why(writers_app, qloop):
    desk = writers_app

    async def scenario():
        titles = await _suggest(desk)
        view, queue = await _queue(desk)
        for _ in titles:
            gone = queue.selected()
            assert gone is not None
            assert await queue.reject_selected()
            assert gone["id"] not in [p["id"] for p in queue.items]
            assert "nothing was written" in queue.message.text()
        assert await desk.bridge.pending_suggestions() == []
        assert queue.list.count() == 0 and not queue.hint.isHidden()
        assert queue.hint.text().startswith("No suggestions waiting. Auto Lorebook proposes entries every 10")
        assert view.lists.tabText(SUGGESTIONS_TAB) == "Suggestions"
        assert not queue.accept_button.isEnabled() and not queue.reject_button.isEnabled()

        # Auto Lorebook off: the queue says how to turn it on
        off = desk.runtime.ctx.settings.replace(auto_suggest_enabled=False)
        await desk.apply_settings(off, {})
        await queue.refresh()
        assert queue.hint.text() == EMPTY_OFF and "Settings → Writers" in EMPTY_OFF

    qloop.run_until_complete(scenario())


def test_open_in_a_librarian_session_makes_it_the_draft(writers_app, qloop):
    desk = writers_app

    async def scenario():
        await _suggest(desk)
        view, queue = await _queue(desk)
        assert queue.select(next(p["id"] for p in queue.items if p["suggestion"]["title"] == "Brass Key"))
        assert queue.open_selected()
        session = view.session
        assert session is not None and session.title == "Suggestion: Brass Key"
        assert session.draft.title == "Brass Key" and session.draft.keys == ("brass key", "the key")
        assert session.draft.summary == "A key that opens the sea gate."
        assert view.editor.title.text() == "Brass Key" and view.editor.keys.text() == "brass key, the key"
        assert "sea gate" in view.editor.content.toPlainText()
        assert view.lists.currentIndex() == SESSIONS_TAB
        saved = None
        for _ in range(200):  # saved with its draft, on the engine thread, soon after
            saved = await desk.bridge.run(view.lib.sessions.load, session.id)
            if saved is not None:
                break
            await asyncio.sleep(0.05)
        assert saved is not None and saved.draft.title == "Brass Key"
        # it stays in the queue until accepted or rejected
        assert "Brass Key" in [p["suggestion"]["title"] for p in await desk.bridge.pending_suggestions()]

    qloop.run_until_complete(scenario())


def test_the_chats_tab_shows_a_chats_notepad_and_session_notes_and_clears(writers_app, qloop):
    desk = writers_app
    engine = desk.runtime.engine
    view = desk.window.sillytavern_view
    panel = view.chats_panel

    async def scenario():
        doc = parse_chat_document({"chat_id": CHAT, "messages": chat(*TALK)})
        await desk.bridge.call(engine.retrieval.retrieve(doc))  # SillyTavern's generation: the chat's state
        reply = await desk.bridge.call(
            engine.writers.notepad.process(CHAT, 3, 0, f"To the sea gate.\n<dle-notes>\n{NOTES}\n</dle-notes>")
        )
        assert reply["text"] == "To the sea gate." and reply["stored"]
        scribed = await desk.bridge.call(engine.writers.scribe.run(CHAT, parse_messages(chat(*TALK))))
        note = scribed["note"]

        desk.window.tabs.setCurrentWidget(view)
        view.inner_tabs.setCurrentWidget(panel)
        await view.idle()
        await panel.refresh()
        assert panel.select_chat(CHAT)
        await view.idle()
        writers = panel.steering.writers
        panel.steering.tabs.setCurrentWidget(writers)
        assert writers.notepad.toPlainText() == NOTES
        size = len(NOTES.encode("utf-8"))
        assert writers.notepad_size.text() == f"{size / 1024:.1f} KiB of 64 KiB · AI Notepad is on, tag mode"
        assert writers.note_list.count() == 1 and writers.note_list.item(0).text().startswith(note["title"])
        assert writers.summary.toPlainText() == SUMMARY
        assert writers.notes_label.text() == "1 session note, newest first."

        # Open: a session note is not a lore entry, so it opens on its own, read from the vault
        writers.note_list.setCurrentRow(0)
        await writers.open_selected()
        assert writers.message.text() == f"Opened {note['path']} (vault)"
        dialogs = _viewers(desk)
        assert len(dialogs) == 1 and dialogs[0].windowTitle() == note["path"].rsplit("/", 1)[-1]
        assert "# Session: " in dialogs[0].text.toPlainText() and SUMMARY in dialogs[0].text.toPlainText()
        dialogs[0].reject()

        asked = []
        writers.confirm = lambda text: asked.append(text) or False
        assert not await writers.clear()  # Cancel: nothing cleared
        assert asked and CHAT in asked[0] and (await desk.bridge.ai_notepad(CHAT))["text"] == NOTES
        writers.confirm = lambda text: True
        assert await writers.clear()
        assert writers.notepad.toPlainText() == "" and not writers.clear_button.isEnabled()
        assert (await desk.bridge.ai_notepad(CHAT))["text"] == ""
        assert writers.notepad_size.text().startswith("empty (at most 64 KiB)")

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(view.idle())


def test_a_suggestion_asked_for_by_id_opens_in_a_session(writers_app, qloop):
    """What SillyTavern's review popup asks for ("Open in Librarian", app/show's `suggestion`)."""
    desk = writers_app
    view = desk.window.librarian_view

    async def scenario():
        await _suggest(desk)
        chosen = next(p for p in await desk.bridge.pending_suggestions() if p["suggestion"]["title"] == "Brass Key")
        said = await view.show_suggestion(chosen["id"])
        assert said == "Suggestion “Brass Key” is the draft of a new Librarian session"
        assert view.session is not None and view.session.draft.title == "Brass Key"
        assert view.editor.title.text() == "Brass Key"
        said = await view.show_suggestion("nosuchsuggestion")
        assert "nosuchsuggestion" in said and "not waiting" in said
        assert view.lists.currentIndex() == SUGGESTIONS_TAB

    qloop.run_until_complete(scenario())


def test_a_note_by_vault_and_path_opens_where_it_can(writers_app, qloop, vault_copy):
    """The window's open_note (the Writers tab's Open): an entry in the Vault view, a session note
    in a viewer, a missing note said so."""
    desk = writers_app
    window = desk.window

    async def scenario():
        entry = window.vault_view.snapshot.find("Lantern Quay")
        assert await window.open_note(entry.vault, entry.path) == f"Showing {entry.path} ({entry.vault})"
        assert window.vault_view.current_uid() == entry.uid and not _viewers(desk)
        scribed = await desk.bridge.call(desk.runtime.engine.writers.scribe.run(CHAT, parse_messages(chat(*TALK))))
        path = scribed["note"]["path"]
        assert await window.open_note("", path) == f"Opened {path} (vault)"  # the vault the index knows
        assert len(_viewers(desk)) == 1 and SUMMARY in _viewers(desk)[0].text.toPlainText()
        _viewers(desk)[0].reject()
        gone = await window.open_note("vault", "Sessions/Gone.md")
        assert gone == "Sessions/Gone.md is not in vault any more (moved or deleted)"
        assert not _viewers(desk)

    qloop.run_until_complete(scenario())


def _viewers(desk) -> list[NoteDialog]:
    return [d for d in desk.window.findChildren(NoteDialog) if d.isVisible()]
