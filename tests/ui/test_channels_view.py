"""The Channels view, driven like a user would: the real app and engine (on its thread) on a copy of
the sample vault, and the fake AI provider — a real HTTP server on loopback — behind the profiles."""

from __future__ import annotations

import re

import pytest
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QMessageBox, QTableWidget

from dle_desktop.ai.errors import AiError
from dle_desktop.ai.types import ChatRequest, default_base_url
from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.ui.channels.profile_editor import ProfileEditor, new_profile_id
from dle_desktop.ui.channels.view import CHANNELS, ChannelsView
from tests.fakes.ai_provider import ai_fake  # noqa: F401 - fixture
from tests.ui.conftest import wait_for

KEY = "sk-test-SECRET-abc123456789"
ROW = {c: i for i, c in enumerate(CHANNELS)}


def settings_for(vault, **changes) -> Settings:
    """Settings naming the test vault, so the engine that Apply starts opens the same folder."""
    return Settings().replace(vaults=[{"name": "vault", "kind": "folder", "path": str(vault)}], **changes)


def fake_profile(fake, pid: str = "fake-1", name: str = "Fake", **extra) -> dict:
    return {
        "id": pid,
        "name": name,
        "provider": "openai",
        "flavor": "custom",
        "base_url": fake.url + "/v1",
        "model": "fake-model",
        **extra,
    }


def open_view(desk) -> ChannelsView:
    view = desk.window.channels_view
    desk.window.tabs.setCurrentWidget(view)
    return view


def cell(view, channel: str, column: str) -> str:
    from dle_desktop.ui.channels.view import COLUMNS

    return view.channel_panel.table.item(ROW[channel], COLUMNS.index(column)).text()


def status_tip(view, channel: str) -> str:
    """The channel's whole status: the Status cell says it in a word or two."""
    from dle_desktop.ui.channels.view import COLUMNS

    return view.channel_panel.table.item(ROW[channel], COLUMNS.index("Status")).toolTip()


def texts(widget) -> list[str]:
    """Every text a user could read or copy out of the widget tree."""
    out = [w.text() for w in widget.findChildren(QLabel)] + [w.text() for w in widget.findChildren(QLineEdit)]
    for table in widget.findChildren(QTableWidget):
        out += [
            table.item(r, c).text()
            for r in range(table.rowCount())
            for c in range(table.columnCount())
            if table.item(r, c) is not None
        ]
    for lst in widget.findChildren(QListWidget):
        out += [lst.item(r).text() for r in range(lst.count())]
    return out


async def settled(desk) -> None:
    """Until the window shows the running engine's index (after Apply: the new engine's), so no
    engine event is still on its way when the test's event loop closes."""
    if desk.apply_task is not None:  # settings are applied in the background
        await desk.apply_task
    view = desk.window.vault_view
    await wait_for(
        lambda: (snap := desk.runtime.engine.snapshot) is not None and view.snapshot is snap,
        timeout=60,
        what="the new engine's index in the window",
    )


async def ai_call(desk, channel: str = "ai_search") -> str:
    """One real AI call on a channel, the way AI search makes its calls."""
    engine = desk.bridge.engine

    def request(_resolved, _profile):
        return ChatRequest(system="Pick lore.", user_parts=("The chat.",), max_tokens=32)

    return await desk.bridge.call(engine.ai.call(channel, request, lambda answer: answer.text))


def test_profile_ids_are_slugs_with_a_suffix():
    pid = new_profile_id("My Local Llama!")
    assert re.fullmatch(r"my-local-llama-[0-9a-f]{6}", pid)
    assert new_profile_id("!!!").startswith("profile-")
    assert new_profile_id("x") != new_profile_id("x")


def test_editor_prefills_the_server_address_until_the_user_types_one(qapp):
    ed = ProfileEditor(None, taken_names={"Taken"}, taken_ids=set(), key_state="none", persistent=True)
    ed.name.setText("Router")
    ed.flavor.setCurrentIndex(ed.flavor.findData("openrouter"))
    assert ed.base_url.text() == default_base_url("openai", "openrouter")
    assert ed.raw()["base_url"] == ""  # the built-in address is not copied into the settings
    ed.model.setText("some/model")
    assert ed.save_button.isEnabled()
    ed.flavor.setCurrentIndex(ed.flavor.findData("groq"))
    assert ed.base_url.text() == default_base_url("openai", "groq")
    ed.provider.setCurrentIndex(ed.provider.findData("anthropic"))
    assert ed.base_url.text() == "https://api.anthropic.com"
    assert not ed.form.isRowVisible(ed.flavor) and ed.form.isRowVisible(ed.thinking)

    ed.provider.setCurrentIndex(ed.provider.findData("openai"))
    ed.flavor.setCurrentIndex(ed.flavor.findData("custom"))
    assert ed.base_url.text() == ""
    assert "needs a server URL" in ed.problem.text() and not ed.save_button.isEnabled()
    QTest.keyClicks(ed.base_url, "http://127.0.0.1:9/v1")  # typed by the user
    ed.flavor.setCurrentIndex(ed.flavor.findData("vllm"))
    assert ed.base_url.text() == "http://127.0.0.1:9/v1"  # what the user typed stays

    ed.flavor.setCurrentIndex(ed.flavor.findData("azure"))
    assert ed.form.isRowVisible(ed.api_version)
    ed.base_url.setText("https://user:pw@example.com")
    assert "credentials" in ed.problem.text() and not ed.save_button.isEnabled()
    ed.base_url.setText("https://res.openai.azure.com")
    ed.model.clear()
    assert "deployment name" in ed.problem.text()
    ed.model.setText("gpt-deploy")
    ed.name.setText("taken")
    assert "already called" in ed.problem.text() and not ed.save_button.isEnabled()
    ed.name.setText("Azure")
    assert ed.save_button.isEnabled() and ed.problem.isHidden()
    ed.deleteLater()


def test_new_profile_key_goes_to_the_keyring_and_the_connection_test_reports(make_desktop, vault_copy, ai_fake, qloop):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    view = open_view(desk)
    secrets = desk.runtime.ctx.secrets
    assert cell(view, "ai_search", "Status") == "✗ no profile"
    assert status_tip(view, "ai_search").startswith("no connection profile yet")

    async def scenario():
        ed = view.profiles_panel.add_profile()
        assert not ed.save_button.isEnabled() and not ed.test.button.isEnabled()  # no name yet
        ed.name.setText("Fake local")
        ed.base_url.setText(ai_fake.url + "/v1")
        ed.model.setText("fake-model")
        ed.key.setText(KEY)
        assert ed.save_button.isEnabled()

        ai_fake.reply("OK", usage={"input": 8, "output": 1})
        await ed.run_test()
        ok = ed.test.result.text()
        assert ok.startswith("✓") and "connected" in ok and " ms" in ok
        assert ai_fake.last.headers["authorization"] == f"Bearer {KEY}"  # the typed key, not yet saved

        ai_fake.fail(401)
        await ed.run_test()
        bad = ed.test.result.text()
        assert bad.startswith("✗") and KEY not in bad and "key" in bad.lower()

        ed.save_button.click()
        assert ed.key.text() == ""  # the key left the widget
        (profile,) = view.profiles()
        assert re.fullmatch(r"fake-local-[0-9a-f]{6}", profile.id)
        assert view.new_keys == {profile.secret_id: KEY}
        assert view.dirty and view.dirty_label.isVisible() and view.apply_button.isEnabled()
        assert "key saved on Apply" in view.profiles_panel.profile_list.item(0).text()
        # AI search had no profile: it takes the first one added, and is ready at once (unsaved)
        assert view.draft["ai_search_profile_id"] == profile.id
        assert cell(view, "ai_search", "Status") == "○ off"
        assert cell(view, "scribe", "Connection") == "↳ Fake local"
        assert secrets.get(profile.secret_id) is None  # nothing stored before Apply

        assert view.apply()
        await desk.apply_task  # applied in the background
        assert not view.dirty and view.dirty_label.isHidden()
        assert secrets.get(profile.secret_id) == KEY
        raw = desk.runtime.ctx.paths.settings_file.read_text(encoding="utf-8")
        assert KEY not in raw and profile.id in raw
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert saved.connection_profiles == (profile,) and saved.ai_search_profile_id == profile.id
        assert desk.bridge.engine.settings.connection_profiles == (profile,)
        assert "key stored" in view.profiles_panel.profile_list.item(0).text()
        assert all(KEY not in t for t in texts(desk.window))

        # Editing shows the stored state, never the key; without a keyring that is said plainly.
        again = view.profiles_panel.edit_profile(profile.id)
        assert again.key.text() == "" and "stored" in again.key.placeholderText()
        assert "memory for this session only" in again.key_note.text()
        ai_fake.reply("OK")
        await again.run_test()  # nothing typed: the engine uses the stored key
        assert again.test.result.text().startswith("✓")
        assert ai_fake.last.headers["authorization"] == f"Bearer {KEY}"
        again.reject()
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_a_hanging_connection_test_is_cancelled(make_desktop, vault_copy, ai_fake, qloop):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    view = open_view(desk)

    async def scenario():
        ed = view.profiles_panel.add_profile()
        ed.name.setText("Slow")
        ed.base_url.setText(ai_fake.url + "/v1")
        ai_fake.hang()
        task = ed.run_test()
        await wait_for(lambda: ai_fake.waiting == 1, what="the request at the fake")
        assert ed.test.cancel_button.isVisible() and ed.test.busy.isVisible()
        assert not ed.test.button.isEnabled() and ed.test.result.text() == "Testing…"
        ed.test.cancel_button.click()
        await wait_for(lambda: ai_fake.disconnects == 1, what="the fake to see the client leave")
        await wait_for(task.done)
        assert ed.test.result.text() == "Test cancelled."
        assert ed.test.cancel_button.isHidden() and ed.test.button.isEnabled()
        ed.reject()
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_channels_inherit_test_and_count_usage(make_desktop, vault_copy, ai_fake, qloop):
    desk = make_desktop(
        vault_copy,
        settings=settings_for(
            vault_copy,
            connection_profiles=[fake_profile(ai_fake)],
            ai_search_profile_id="fake-1",
            librarian_connection_mode="proxy",
        ),
    )
    desk.runtime.ctx.secrets.set("ai-profile:fake-1", KEY)
    view = open_view(desk)

    # Inheritance, as resolve_channel says it
    assert cell(view, "ai_search", "Connection") == "Fake"
    assert cell(view, "auto_suggest", "Connection") == "↳ Fake" and cell(view, "auto_suggest", "Status") == "✓ ready"
    assert cell(view, "librarian", "Status") == "✗ no model"
    assert status_tip(view, "librarian").startswith("proxy mode needs a model")
    view.channel_panel.select_channel("scribe")
    assert view.channel_panel.mode.currentData() == "inherit" and not view.channel_panel.profile_combo.isEnabled()
    assert view.channel_panel.resolved.text().startswith("AI search's connection: profile 'Fake', model fake-model")
    assert view.channel_panel.model.placeholderText() == "default: fake-model"
    view.channel_panel.mode.setCurrentIndex(view.channel_panel.mode.findData("profile"))
    assert view.channel_panel.profile_combo.isEnabled()
    assert cell(view, "scribe", "Status") == "✗ no profile"
    assert status_tip(view, "scribe") == "no connection profile chosen for this channel"
    assert "✗" in view.channel_panel.resolved.text() and "b3261e" in view.channel_panel.resolved.styleSheet()
    view.channel_panel.profile_combo.setCurrentIndex(view.channel_panel.profile_combo.findData("fake-1"))
    assert cell(view, "scribe", "Status") == "✓ ready" and cell(view, "scribe", "Connection") == "Fake"
    QTest.keyClicks(view.channel_panel.model, "other-model")
    assert cell(view, "scribe", "Model") == "other-model" and view.dirty

    async def scenario():
        # The AI search channel is untouched: its Test is the engine's own channel test.
        view.channel_panel.select_channel("ai_search")
        view.channel_panel.strips["ai_search"].button.click()
        await view.channel_panel.strips["ai_search"].task
        result = view.channel_panel.strips["ai_search"].result.text()
        assert result.startswith("✓ AI search via OpenAI-compatible server (fake-model): ")
        assert ai_fake.last.model == "fake-model" and ai_fake.last.headers["authorization"] == f"Bearer {KEY}"
        # Scribe has unsaved edits: Test checks what the view shows
        view.channel_panel.select_channel("scribe")
        assert view.channel_panel.tests.currentWidget() is view.channel_panel.strips["scribe"]
        await view.channel_panel.test_channel("scribe")
        assert view.channel_panel.strips["scribe"].result.text().startswith("✓ Session Scribe (unsaved settings)")
        assert ai_fake.last.model == "other-model"
        ai_fake.fail(500)
        await view.channel_panel.test_channel("scribe")
        assert view.channel_panel.strips["scribe"].result.text().startswith("✗ Session Scribe (unsaved settings)")
        view.channel_panel.select_channel("librarian")
        await view.channel_panel.test_channel("librarian")  # unchanged here: the engine's own test says what is missing
        assert (
            view.channel_panel.strips["librarian"]
            .result.text()
            .startswith("✗ Librarian is not set up: proxy mode needs a model")
        )

        # Usage after a real call on the channel
        ai_fake.reply('[{"title": "Gorduin"}]', usage={"input": 900, "output": 12})
        assert await ai_call(desk) == '[{"title": "Gorduin"}]'
        await view.refresh()
        assert cell(view, "ai_search", "Calls") == "1" and cell(view, "ai_search", "Tokens in / out") == "900 / 12"
        assert cell(view, "ai_search", "Last call").endswith(" ms")
        view.channel_panel.select_channel("ai_search")
        assert view.channel_panel.usage.text().startswith("1 call · 0 failed · tokens 900 in / 12 out")
        assert cell(view, "scribe", "Calls") == "0"
        assert view.channel_panel.usage_since.text().startswith("Usage counted since ")

        # Apply starts a fresh AI service; the counts carry over, until Reset counts
        assert view.apply()
        await desk.apply_task  # applied in the background
        await view.refresh()
        assert cell(view, "ai_search", "Calls") == "1"
        assert desk.bridge.engine.settings.scribe_model == "other-model"
        view.channel_panel.reset_usage_button.click()
        await wait_for(lambda: cell(view, "ai_search", "Calls") == "0", what="the counts reset")
        assert cell(view, "ai_search", "Tokens in / out") == "0 / 0"
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_breaker_opens_shows_the_wait_and_resets(make_desktop, vault_copy, ai_fake, qloop):
    desk = make_desktop(
        vault_copy,
        settings=settings_for(vault_copy, connection_profiles=[fake_profile(ai_fake)], ai_search_profile_id="fake-1"),
    )
    view = open_view(desk)

    async def scenario():
        await view.refresh()
        assert (
            view.breaker_panel.breaker_label.text().startswith("Closed")
            and not view.breaker_panel.reset_button.isEnabled()
        )
        for _ in range(2):
            ai_fake.fail(500)
            with pytest.raises(AiError):
                await ai_call(desk)
        await view.refresh()
        assert re.fullmatch(
            r"Open after 2 failures: AI calls are paused, retrying in \d+ s\.", view.breaker_panel.breaker_label.text()
        )
        assert view.breaker_panel.reset_button.isEnabled()
        assert cell(view, "ai_search", "Calls") == "2 (2 failed)"
        view.channel_panel.select_channel("ai_search")
        assert view.channel_panel.last_error.isVisible() and view.channel_panel.last_error.text().startswith(
            "Last error: "
        )
        view.breaker_panel.reset_button.click()
        await wait_for(lambda: view.breaker_panel.breaker_label.text().startswith("Closed"), what="the breaker closed")
        assert desk.bridge.engine.ai.breaker.state == "closed"
        assert view.breaker_panel.breaker_message.text() == "Breaker reset."
        view.breaker_panel.clear_cache_button.click()
        await wait_for(lambda: view.breaker_panel.breaker_message.text() == "AI cache cleared.")
        ai_fake.reply("fine")
        assert await ai_call(desk) == "fine"  # calls go out again
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_delete_a_profile_in_use_warns_and_removes_its_key(make_desktop, vault_copy, ai_fake, qloop):
    desk = make_desktop(
        vault_copy,
        settings=settings_for(
            vault_copy,
            connection_profiles=[fake_profile(ai_fake), fake_profile(ai_fake, "spare-2", "Spare")],
            ai_search_profile_id="fake-1",
        ),
    )
    secrets = desk.runtime.ctx.secrets
    secrets.set("ai-profile:fake-1", KEY)
    view = open_view(desk)

    async def scenario():
        view.profiles_panel.profile_list.setCurrentRow(0)
        copy = view.profiles_panel.duplicate_profile()
        assert copy.name == "Fake (copy)" and copy.id != "fake-1" and copy.base_url == ai_fake.url + "/v1"
        assert view.new_keys == {copy.secret_id: KEY}  # the copy gets the same key on Apply

        box = view.profiles_panel.delete_profile("spare-2")
        assert "used by" not in box.text()
        box.button(QMessageBox.No).click()
        assert view.profile("spare-2") is not None

        box = view.profiles_panel.delete_profile("fake-1")
        assert "'Fake' is used by AI search, Session Scribe (through AI search)" in box.text()
        box.button(QMessageBox.Yes).click()
        assert view.profile("fake-1") is None and view.draft["ai_search_profile_id"] == ""
        assert cell(view, "ai_search", "Status") == "✗ no profile"
        assert status_tip(view, "ai_search") == "no connection profile chosen for this channel"
        assert secrets.get("ai-profile:fake-1") == KEY  # removed only on Apply
        assert view.apply()
        await desk.apply_task  # applied in the background
        assert secrets.get("ai-profile:fake-1") is None
        assert secrets.get(copy.secret_id) == KEY
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert [p.id for p in saved.connection_profiles] == ["spare-2", copy.id]
        await settled(desk)

    qloop.run_until_complete(scenario())


def test_edits_apply_and_survive_a_restart(make_desktop, vault_copy, ai_fake, qloop, tmp_path):
    data_dir = tmp_path / "data"
    desk = make_desktop(
        vault_copy,
        data_dir=data_dir,
        settings=settings_for(vault_copy, connection_profiles=[fake_profile(ai_fake)], ai_search_profile_id="fake-1"),
    )
    view = open_view(desk)
    changes = []
    view.dirtyChanged.connect(changes.append)

    view.search_panel.ai_enabled.setChecked(True)
    view.search_panel.ai_mode.setCurrentIndex(view.search_panel.ai_mode.findData("ai-only"))
    view.search_panel.ai_threshold.setCurrentIndex(view.search_panel.ai_threshold.findData("high"))
    view.search_panel.ai_error.setCurrentIndex(view.search_panel.ai_error.findData("none"))
    view.search_panel.ai_empty.setCurrentIndex(view.search_panel.ai_empty.findData("keyword"))
    view.search_panel.ai_budget.setChecked(False)
    assert not view.search_panel.aggressiveness.isEnabled()
    view.search_panel.prefilter.setChecked(True)
    assert view.search_panel.aggressiveness.isEnabled()
    view.search_panel.aggressiveness.setValue(50)
    view.channel_panel.select_channel("optimize_keys")
    view.channel_panel.mode.setCurrentIndex(view.channel_panel.mode.findData("proxy"))
    view.channel_panel.proxy_url.selectAll()
    QTest.keyClicks(view.channel_panel.proxy_url, "http://127.0.0.1:42070")
    QTest.keyClicks(view.channel_panel.model, "claude-via-proxy")
    view.channel_panel.max_tokens.setValue(2000)
    view.channel_panel.timeout.setValue(45.5)
    assert cell(view, "optimize_keys", "Connection") == "proxy http://127.0.0.1:42070"
    assert cell(view, "ai_search", "Status") == "✓ ready"
    assert changes == [True]

    # Revert drops it all; the same edits again, then Apply
    view.revert()
    assert not view.dirty and not view.search_panel.ai_enabled.isChecked() and changes == [True, False]
    view.search_panel.ai_enabled.setChecked(True)
    view.search_panel.ai_mode.setCurrentIndex(view.search_panel.ai_mode.findData("ai-only"))
    view.search_panel.prefilter.setChecked(True)
    view.search_panel.aggressiveness.setValue(50)
    view.channel_panel.select_channel("optimize_keys")
    view.channel_panel.mode.setCurrentIndex(view.channel_panel.mode.findData("proxy"))
    QTest.keyClicks(view.channel_panel.model, "claude-via-proxy")
    view.channel_panel.timeout.setValue(45.5)
    assert view.apply() and changes == [True, False, True, False]
    qloop.run_until_complete(desk.apply_task)  # applied in the background
    assert desk.bridge.engine.settings.ai_search_mode == "ai-only"

    settings_file = desk.runtime.ctx.paths.settings_file
    saved = SettingsStore(settings_file).load()
    assert (
        saved.ai_search_enabled,
        saved.ai_search_mode,
        saved.hierarchical_pre_filter,
        saved.hierarchical_aggressiveness,
    ) == (True, "ai-only", True, 0.5)
    assert (saved.optimize_keys_connection_mode, saved.optimize_keys_model, saved.optimize_keys_timeout) == (
        "proxy",
        "claude-via-proxy",
        45500,
    )
    assert saved.vaults == desk.runtime.ctx.settings.vaults  # the rest of the settings are kept

    qloop.run_until_complete(settled(desk))
    desk.quit()

    again = make_desktop(vault_copy, data_dir=data_dir, settings=SettingsStore(settings_file).load())
    view = open_view(again)
    assert view.search_panel.ai_enabled.isChecked() and view.search_panel.ai_mode.currentData() == "ai-only"
    assert view.search_panel.prefilter.isChecked() and view.search_panel.aggressiveness.value() == 50
    assert view.channel_panel.current_channel() == "optimize_keys"  # the window remembers where the user was
    assert view.channel_panel.mode.currentData() == "proxy" and view.channel_panel.model.text() == "claude-via-proxy"
    assert view.channel_panel.timeout.value() == 45.5 and not view.dirty
    assert cell(view, "optimize_keys", "Status") == "✓ ready"
    qloop.run_until_complete(settled(again))


def test_the_view_is_a_tab_with_a_shortcut_and_shows_unsaved_changes(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy, settings=settings_for(vault_copy))
    window = desk.window
    assert window.channels_view_action.shortcut().toString() == "Ctrl+2"
    assert window.vault_view_action.shortcut().toString() == "Ctrl+1"
    window.channels_view_action.trigger()
    assert window.tabs.currentWidget() is window.channels_view
    assert window.tabs.tabText(1) == "Channels"
    window.channels_view.search_panel.ai_enabled.setChecked(True)
    assert window.tabs.tabText(1) == "Channels •"
    window.channels_view.revert()
    assert window.tabs.tabText(1) == "Channels"
    window.vault_view_action.trigger()
    assert window.tabs.currentWidget() is window.vault_view
    qloop.run_until_complete(settled(desk))
