"""Optimize Keys and Summarize without an AI connection (issue 21, item 8), on the real desktop app
offscreen: the Vault view stays in front with the entry the user was working on, and says in place,
above the entry, what is missing, with a button to the Channels view; the Librarian is left alone
(no session, no error in its chat). With a connection, the proposal flow runs as before
(tests/ui/test_librarian_view.py)."""

from __future__ import annotations

import asyncio

from tests.ui.conftest import wait_for


def test_without_a_connection_they_stay_in_the_vault_view_and_say_what_is_missing(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    vault, librarian = window.vault_view, window.librarian_view
    window.vault_view_action.trigger()

    async def scenario():
        await wait_for(lambda: vault.model.rowCount() == 61, what="the sample entries")
        entry = vault.snapshot.find("Tidewriting")
        assert vault.show_entry(entry.uid)
        for button, needs in ((vault.optimize_button, "Optimize Keys"), (vault.summarize_button, "Summarize")):
            button.click()
            await wait_for(
                lambda: window.tabs.currentWidget() is not vault or vault.ai_notice.isVisible(),
                what="an answer to the click",
            )
            await asyncio.sleep(0.2)  # anything the click set off has had its turn
            assert window.tabs.currentWidget() is vault
            text = vault.ai_notice.text()
            assert f"{needs} needs an AI connection" in text and "no connection profile yet" in text, text
            assert vault.current_uid() == entry.uid and "Rules/Tidewriting.md" in vault.detail.toPlainText()
            assert librarian.session is None and librarian.chat.transcript.toPlainText() == ""
            vault.ai_notice.close_button.click()
            assert not vault.ai_notice.isVisible()

        vault.summarize_button.click()
        await wait_for(lambda: vault.ai_notice.isVisible(), what="the notice")
        vault.ai_notice.button.click()
        assert window.tabs.currentWidget() is window.channels_view
        assert vault.ai_notice.isHidden()  # acted on; the next click checks again
        await wait_for(
            lambda: window.channels_view.profiles_panel.add_button.hasFocus(), what="Add… in the Channels view"
        )

    qloop.run_until_complete(scenario())


def test_the_entry_buttons_wait_for_an_entry(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    vault = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: vault.model.rowCount() == 61, what="the sample entries")
        assert vault.current_uid() is None
        assert not vault.optimize_button.isEnabled() and not vault.summarize_button.isEnabled()
        assert vault.select_uid(vault.snapshot.find("Tidewriting").uid)
        assert vault.optimize_button.isEnabled() and vault.summarize_button.isEnabled()
        vault.filter.setText("zzz-no-such-thing")
        assert not vault.optimize_button.isEnabled()

    qloop.run_until_complete(scenario())
