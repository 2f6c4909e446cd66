"""The Librarian view offscreen, on the real desktop app (engine thread, note writer) with the
fake AI provider as the librarian's connection: a session drafts an entry with tool calls, the
user edits the draft, writes it, sees it in the Vault view, and undoes it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from dle_desktop.state.settings import settings_from_mapping
from tests.fakes.ai_provider import ai_fake  # noqa: F401 - the fixture
from tests.ui.conftest import wait_for

# docs/screenshots only when asked (DLE_UPDATE_SCREENSHOTS=1): a test run must not change the tree.
SHOT = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("DLE_UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "dle-desktop-screenshots"
) / "librarian-view.png"
DRAFT = {
    "message": "Nothing on Mira in the vault, so here is a first draft. She smuggles past Old Hobb.",
    "draft": {
        "title": "Mira Vell",
        "type": "character",
        "priority": 50,
        "tags": ["lorebook", "smuggler"],
        "keys": ["Mira", "Mira Vell"],
        "summary": "A smuggler working the night quays; select when Mira or contraband comes up.",
        "content": '<div class="meta-block">[Role: smuggler | Affiliation: none | Status: active]</div>\n\n'
        "Mira Vell runs contraband through Lantern Quay after the lanterns go out.",
    },
    "action": "update_draft",
}


def _settings(fake):
    return settings_from_mapping(
        {
            "connection_profiles": [
                {"id": "fake", "name": "Fake", "provider": "anthropic", "base_url": fake.url, "model": "fake-model"}
            ],
            "aiSearchProfileId": "fake",
        }
    )


def test_a_session_drafts_edits_writes_and_undoes(make_desktop, vault_copy, qloop, ai_fake, tmp_path):
    ai_fake.reply(tool_calls=[{"name": "search_vault", "args": {"query": "Mira smuggler"}}])
    ai_fake.reply(text=json.dumps(DRAFT))
    desk = make_desktop(vault_copy, settings=_settings(ai_fake))
    window = desk.window
    view = window.librarian_view
    vault = window.vault_view
    window.librarian_view_action.trigger()
    assert window.tabs.currentWidget() is view
    previews = []
    view.confirm = lambda dialog: previews.append(dialog) or True

    async def scenario():
        await wait_for(lambda: vault.model.rowCount() == 61, what="the sample entries")
        view.new_session("review", chat_text="Mira: Passage tonight, Hobb.\nOld Hobb: Not past my lanterns, Mira.")
        view.chat.input.setPlainText("Make an entry for Mira.")
        view.chat.send_button.click()
        await wait_for(lambda: view.editor.title.text() == "Mira Vell", what="the draft")
        await wait_for(lambda: view.chat.send_button.isEnabled(), what="the turn to end")
        shown = view.chat.transcript.toPlainText()
        assert "→ search_vault(query='Mira smuggler')" in shown and "She smuggles past Old Hobb" in shown
        view.editor.refresh_report()
        assert "Mira ×2" in view.editor.report.text()  # the key preview against the reviewed chat

        view.editor.keys.setText("Mira, Mira Vell, the smuggler")  # the user's edit
        view.editor.refresh_report()
        window.resize(1280, 780)
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(SHOT))

        await view.write_draft()
        assert previews and "keys:\n  - Mira\n  - Mira Vell\n  - the smuggler\n" in previews[0].view.toPlainText()
        note = vault_copy / "Mira Vell.md"
        assert note.read_text(encoding="utf-8") == previews[0].view.toPlainText()
        await wait_for(lambda: vault.model.rowCount() == 62, what="the new entry in the Vault view")
        entry = vault.snapshot.find("Mira Vell")
        assert entry.keys == ("Mira", "Mira Vell", "the smuggler")
        assert view.editor.target_label.text() == "Updates Mira Vell.md"

        assert vault.select_uid(entry.uid)
        await wait_for(lambda: vault.undo_button.isEnabled(), what="the Undo button")
        vault.undo_button.click()
        await wait_for(lambda: not note.exists(), what="the write undone")
        await wait_for(lambda: vault.model.rowCount() == 61, what="the entry gone from the Vault view")

    qloop.run_until_complete(scenario())


def test_optimize_keys_from_the_vault_view_shows_the_diff_and_writes_it(make_desktop, vault_copy, qloop, ai_fake):
    ai_fake.reply(text=json.dumps({"suggested": ["tidewriting", "tide script"], "reasoning": "the names used"}))
    desk = make_desktop(vault_copy, settings=_settings(ai_fake))
    window = desk.window
    view, vault = window.librarian_view, window.vault_view
    seen = []
    view.confirm = lambda dialog: seen.append(dialog) or True

    async def scenario():
        await wait_for(lambda: vault.model.rowCount() == 61, what="the sample entries")
        entry = next(e for e in vault.snapshot.entries if e.title == "Tidewriting")
        assert vault.select_uid(entry.uid)
        vault.entryActionRequested.emit("optimize-keys", entry.uid)
        await wait_for(
            lambda: vault.snapshot.find("Tidewriting").keys == ("tidewriting", "tide script"),
            what="the new keys indexed",
        )
        assert window.tabs.currentWidget() is view
        diff = seen[0].change.diff
        changed = [ln[1:] for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert changed and all(ln.startswith(("keys:", "  - ", "- ")) for ln in changed), changed
        assert "tide script" in diff and seen[0].change.note == "the names used"

    qloop.run_until_complete(scenario())


def test_a_gap_recorded_through_the_lore_api_shows_in_the_gaps_panel(make_desktop, vault_copy, qloop):
    import threading

    from dle_desktop.librarian.lore_search import search_lore

    desk = make_desktop(vault_copy)
    window = desk.window
    view = window.librarian_view
    window.librarian_view_action.trigger()
    engine = view.bridge.engine

    async def scenario():
        await wait_for(lambda: engine.snapshot is not None and len(engine.snapshot) == 61, what="the sample entries")
        assert view.lib.gaps is engine.gaps  # one store: the view's and the lore API's

        def texts() -> list[str]:
            return [view.lists.gaps.item(i).text() for i in range(view.lists.gaps.count())]

        assert not any("zyxwv quorble" in t for t in texts())
        # Off the GUI thread, as the server's route runs it.
        worker = threading.Thread(
            target=search_lore,
            args=(engine.snapshot, engine.gaps, ["zyxwv quorble"]),
            kwargs={"reason": "asked in SillyTavern"},
        )
        worker.start()
        worker.join()
        await wait_for(
            lambda: any("zyxwv quorble  ×1" in t and "asked in SillyTavern" in t for t in texts()),
            what="the new gap in the panel",
        )
        assert view.lists.tabText(1) == f"Gaps ({view.lists.gaps.count()})"

    qloop.run_until_complete(scenario())
