"""The Vault view's entry detail: the app's writes of the selected note, and Undo for the last one
(conflict-checked: a note edited since shows both versions and stays as it is). Offscreen, on the
real desktop app with its engine thread."""

from __future__ import annotations

from tests.ui.conftest import wait_for


def _select(view, title: str) -> str:
    entry = next(e for e in view.snapshot.entries if e.title == title)
    assert view.select_uid(entry.uid)
    return entry.uid


async def _set_keys(desk, entry, keys):
    engine = desk.bridge.engine
    return await desk.bridge.call(
        engine.writer.set_fields(
            entry.vault, entry.path, {"keys": keys}, base=entry.content_hash, feature="optimize-keys"
        )
    )


def test_a_write_shows_in_the_detail_and_undo_takes_it_back(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="the sample entries")
        uid = _select(view, "Tidewriting")
        assert not view.undo_button.isEnabled()  # nothing written by the app yet
        entry = view.snapshot.by_uid[uid]
        note = vault_copy / entry.path
        before = note.read_bytes()
        await _set_keys(desk, entry, ["tidewriting", "tide script"])
        await wait_for(lambda: view.snapshot.by_uid[uid].keys == ("tidewriting", "tide script"), what="re-index")
        await wait_for(lambda: view.undo_button.isEnabled(), what="the Undo button")
        assert "Written by DLE Desktop" in view.detail.toHtml()
        assert "optimize-keys: fields changed" in view.detail.toPlainText()

        view.undo_button.click()
        await wait_for(lambda: note.read_bytes() == before, what="the note restored")
        await wait_for(lambda: "undid write" in view.detail.toPlainText(), what="the undo listed")
        assert "(undone)" in view.detail.toPlainText()
        await wait_for(lambda: view.snapshot.by_uid[uid].keys == entry.keys, what="the index back")
        # The last write is now the undo; the button offers to put the change back.
        assert view.undo_button.text() == "Redo undone write" and view.undo_button.isEnabled()
        view.undo_button.click()
        await wait_for(lambda: view.snapshot.by_uid[uid].keys == ("tidewriting", "tide script"), what="redone")
        assert note.read_bytes() != before

    qloop.run_until_complete(scenario())


def test_undo_of_a_note_edited_since_shows_both_versions_and_writes_nothing(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61, what="the sample entries")
        uid = _select(view, "Tidewriting")
        entry = view.snapshot.by_uid[uid]
        result = await _set_keys(desk, entry, ["tidewriting", "tide script"])
        await wait_for(lambda: view.undo_button.isEnabled(), what="the Undo button")
        note = vault_copy / entry.path
        theirs = result.after_text.replace("Tidewriting", "Tidewriting (edited in Obsidian)", 1)
        note.write_text(theirs, encoding="utf-8", newline="")

        view.undo_button.click()
        await wait_for(lambda: view.entry_history.conflict_dialog is not None, what="the conflict dialog")
        dialog = view.entry_history.conflict_dialog
        assert dialog.isVisible()
        assert dialog.panes["current"].toPlainText() == theirs
        assert dialog.panes["expected"].toPlainText() == result.after_text
        assert dialog.panes["proposed"].toPlainText() == result.before_text
        assert note.read_text(encoding="utf-8") == theirs
        await wait_for(lambda: "Nothing was undone" in view.detail.toPlainText(), what="the refusal in the detail")
        assert note.read_text(encoding="utf-8") == theirs
        dialog.reject()

    qloop.run_until_complete(scenario())
