"""The Librarian without an AI connection (issue 21, item 7), on the real desktop app offscreen: it
says up front what is missing, with a button to the right place in the Channels view; Send and the
draft are off, the empty draft shows no errors, nothing is created; a connection added meanwhile
makes it usable without a restart. The Gaps tab says why it is empty and its buttons wait for a
gap. Inside the Channels view no message sends the user to the Channels view."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from dle_desktop.ui.librarian.view import LibrarianView
from tests.ui.conftest import wait_for

PROFILE = {"id": "local", "name": "Local", "provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}


def sessions_on_disk(view: LibrarianView) -> list[str]:
    folder = view.bridge.paths.data_dir / "librarian" / "sessions"
    return sorted(p.name for p in folder.glob("*")) if folder.exists() else []


def test_without_a_connection_it_says_what_is_missing_and_creates_nothing(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    view = window.librarian_view
    window.librarian_view_action.trigger()

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="the sample entries")
        await wait_for(lambda: view.notice.isVisible(), what="the notice")
        assert "needs an AI connection" in view.notice.text() and "no connection profile yet" in view.notice.text()
        assert view.notice.button.text() == "Add a connection…"
        assert not view.chat.send_button.isEnabled() and not view.chat.input.isEnabled()
        assert not view.editor.write_button.isEnabled() and not view.editor.title.isEnabled()
        assert not view.lists.new_button.isEnabled() and not view.lists.summarize_button.isEnabled()
        report = view.editor.report.text()
        assert "✗" not in report and "#a33" not in report, report  # nothing typed: no red errors

        # Whatever still reaches the view (Ctrl+Enter, a gap's double-click) starts nothing.
        view.chat.input.setPlainText("Make an entry for Mira.")
        view.chat.sendRequested.emit("Make an entry for Mira.")
        view.lists.newRequested.emit("new")
        await view.refresh()
        assert view.session is None and sessions_on_disk(view) == []
        assert view.chat.transcript.toPlainText() == ""

        # The button opens the Channels view where a connection is added: the profile list.
        view.notice.button.click()
        channels = window.channels_view
        assert window.tabs.currentWidget() is channels
        await wait_for(lambda: channels.profiles_panel.add_button.hasFocus(), what="Add… in focus")

        # A connection added (Apply in the Channels view): usable at once, no restart.
        settings = desk.runtime.ctx.settings.replace(connection_profiles=[PROFILE], ai_search_profile_id="local")
        task = desk.apply_settings(settings, {})
        assert task is not None
        await task
        window.librarian_view_action.trigger()
        await wait_for(lambda: view.chat.send_button.isEnabled(), what="Send enabled")
        assert not view.notice.isVisible()
        assert view.editor.isEnabled() and view.lists.new_button.isEnabled()
        assert view.chat.input.isEnabled()

    qloop.run_until_complete(scenario())


def test_a_profile_not_chosen_opens_the_librarian_row(make_desktop, vault_copy, qloop):
    from dle_desktop.state.settings import settings_from_mapping

    desk = make_desktop(vault_copy, settings=settings_from_mapping({"connection_profiles": [PROFILE]}))
    window = desk.window
    view = window.librarian_view
    window.librarian_view_action.trigger()

    async def scenario():
        await wait_for(lambda: view.notice.isVisible(), what="the notice")
        assert "no connection profile chosen" in view.notice.text()
        assert view.notice.button.text() == "Choose a connection…"
        window.channels_view.channel_panel.select_channel("ai_search")
        view.notice.button.click()
        assert window.tabs.currentWidget() is window.channels_view
        assert window.channels_view.channel_panel.current_channel() == "librarian"

    qloop.run_until_complete(scenario())


def test_the_gaps_tab_says_why_it_is_empty_and_its_buttons_wait_for_a_gap(make_desktop, vault_copy, qloop):
    from dle_desktop.state.settings import settings_from_mapping

    settings = settings_from_mapping({"connection_profiles": [PROFILE], "aiSearchProfileId": "local"})
    desk = make_desktop(vault_copy, settings=settings)
    window = desk.window
    view = window.librarian_view
    lists = view.lists
    window.librarian_view_action.trigger()
    buttons = (lists.open_gap, lists.hide_gap, lists.dismiss_gap)

    async def scenario():
        await view.refresh()
        assert lists.gaps.count() == 0 and not lists.gaps_hint.isHidden()
        assert "No gaps recorded yet" in lists.gaps_hint.text() and "search" in lists.gaps_hint.text()
        assert not any(b.isEnabled() for b in buttons)

        engine = view.bridge.engine
        await view.bridge.run(engine.gaps.record_search_miss, "zyxwv quorble", "asked in SillyTavern")
        await wait_for(lambda: lists.gaps.count() == 1, what="the gap listed")
        assert lists.gaps_hint.isHidden()
        assert not any(b.isEnabled() for b in buttons)  # none selected yet
        lists.gaps.setCurrentRow(0)
        assert all(b.isEnabled() for b in buttons)
        lists.hide_gap.click()
        await wait_for(lambda: lists.gaps.count() == 0, what="the gap hidden")
        assert not any(b.isEnabled() for b in buttons)
        assert "No gaps" in lists.gaps_hint.text()

    qloop.run_until_complete(scenario())


def _texts(root: QWidget) -> list[str]:
    """Every text the Channels view shows or explains: labels, table cells and their tooltips."""
    out = [w.text() for w in root.findChildren(QLabel)]
    table = root.channel_panel.table
    for r in range(table.rowCount()):
        for c in range(table.columnCount()):
            item = table.item(r, c)
            out += [item.text(), item.toolTip() or ""]
    profiles = root.profiles_panel.profile_list
    out += [profiles.item(r).text() for r in range(profiles.count())]
    return out


def test_inside_the_channels_view_no_message_points_to_the_channels_view(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    window = desk.window
    view = window.channels_view
    window.channels_view_action.trigger()

    async def scenario():
        await wait_for(lambda: window.vault_view.model.rowCount() == 61, what="the sample entries")
        panel = view.channel_panel
        panel.select_channel("librarian")
        strip = panel.strips["librarian"]
        strip.button.click()
        await wait_for(lambda: strip.result.text() not in ("", "Testing…"), what="the test's answer")
        texts = _texts(view)
        assert not [t for t in texts if "Channels view" in t], [t for t in texts if "Channels view" in t]
        assert any("add one with Add… on the left" in t for t in texts)
        assert "no connection profile yet" in strip.result.text()

        # A profile id that no longer exists: "choose one of yours" names the place here too.
        settings = desk.runtime.ctx.settings.replace(connection_profiles=[PROFILE], ai_search_profile_id="gone")
        task = desk.apply_settings(settings, {})
        assert task is not None
        await task
        view.sync_external()
        strip.button.click()
        await wait_for(lambda: "does not exist" in strip.result.text(), what="the test's answer")
        texts = _texts(view)
        assert not [t for t in texts if "Channels view" in t], [t for t in texts if "Channels view" in t]

    qloop.run_until_complete(scenario())
