"""Issue 22 in the app: the SillyTavern view's Chats panel shows and edits how the selected chat is
steered (gating context, folder filter, pins and blocks) and the entries injected most in it. The
chat is made by real generations over HTTP, as SillyTavern makes them; the panel reads and writes
through the bridge; a refused change shows the engine's words and changes nothing."""

from __future__ import annotations

import asyncio
import shutil

import httpx
import pytest
from PySide6.QtCore import Qt

from tests.ui.conftest import wait_for

CHAT = "Tamsin - 2026-12-02"
API = "/api/dle/v1"
GENERATED: dict[str, list[list[str]]] = {}  # the fixture's generations: what each injected
SO_FAR = (
    "We walk along Lantern Quay to the Old Harbour.",
    "The quay is busy tonight.",
    "Back at Lantern Quay, the lamplighters' tower is dark.",
)


def _http(desk, method: str, path: str, body: dict) -> httpx.Response:
    with httpx.Client(base_url=desk.runtime.server.url, timeout=30) as client:
        return client.request(method, API + path, json=body, headers={"X-DLE-Token": desk.runtime.server_token()})


async def _generate(desk, *texts: str) -> dict:
    """A generation after these messages (user and character in turn): each call sends a longer
    chat, as SillyTavern does, so none is taken for a swipe of the one before."""
    messages = [
        {"name": "User" if i % 2 == 0 else "Narrator", "mes": t, "is_user": i % 2 == 0} for i, t in enumerate(texts)
    ]
    body = {"chat_id": CHAT, "messages": messages}
    r = await asyncio.to_thread(_http, desk, "POST", "/retrieve", body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def steering(make_desktop, vault_copy, tmp_path, qloop):
    """The app with its server, one chat with two generations and a pin and a block, the
    SillyTavern view open at it."""
    desk = make_desktop(vault_copy, runtime_options={"port": 0})
    view = desk.window.sillytavern_view
    view.installs_panel.home = tmp_path / "home"  # never the real home's SillyTavern
    panel = view.chats_panel

    async def setup() -> None:
        await wait_for(lambda: desk.runtime.engine.snapshot is not None, what="the index")
        for upto in (1, len(SO_FAR)):
            gen = await _generate(desk, *SO_FAR[:upto])
            GENERATED.setdefault(CHAT, []).append([i["title"] for i in gen["injected"]])
        for path, body in (("pins", {"pins": ["Tidewriting"]}), ("blocks", {"blocks": ["Old Harbour"]})):
            r = await asyncio.to_thread(_http, desk, "PUT", f"/chats/{CHAT}/{path}", body)
            assert r.status_code == 200, r.text
        desk.window.tabs.setCurrentWidget(view)
        await view.idle()
        await panel.refresh()
        assert panel.select_chat(CHAT)
        await view.idle()

    GENERATED.clear()
    qloop.run_until_complete(setup())
    yield desk, panel.steering
    qloop.run_until_complete(view.idle())


async def _state(desk):
    return await desk.bridge.chat_state(CHAT)


def test_the_selected_chat_shows_its_steering_and_analytics(steering, qloop):
    _desk, steer = steering
    assert steer.chat_id == CHAT and steer.tabs.isEnabled()
    assert f"Chat “{CHAT}”" in steer.heading.text() and "1 pin, 1 block" in steer.heading.text()
    rows = steer.gating.rows
    assert list(rows) == ["era", "location", "scene_type", "character_present", "faction", "threat_level"]
    location = rows["location"].box
    values = [location.itemText(i) for i in range(location.count())]
    assert "Lantern Quay" in values and "Old Harbour" in values
    shown = location.model().index(values.index("Lantern Quay"), 0).data(Qt.ItemDataRole.DisplayRole)
    assert "lets" in shown and "through" in shown  # the popup says what each value lets through
    assert location.currentText() == ""  # not set
    assert [steer.pins.pins.item(i).text() for i in range(steer.pins.pins.count())] == ["Tidewriting"]
    assert [steer.pins.blocks.item(i).text() for i in range(steer.pins.blocks.count())] == ["Old Harbour"]
    folders = [
        steer.folders.folders.item(i).data(Qt.ItemDataRole.UserRole) for i in range(steer.folders.folders.count())
    ]
    assert "Places" in folders and "Characters" in folders
    table = steer.analytics.table
    top = {table.item(r, 0).text(): int(table.item(r, 1).text()) for r in range(table.rowCount())}
    injected = [t for gen in GENERATED[CHAT] for t in gen]
    assert "Lantern Quay" in top and "Tidewriting" in top
    for title, count in top.items():  # the most injected, counted as the generations injected them
        assert count == injected.count(title), title
    assert max(top.values()) == 2 and list(top.values()) == sorted(top.values(), reverse=True)
    assert "over 2 generations" in steer.analytics.summary.text()


def test_a_field_is_set_from_the_list_cleared_and_clear_all_empties_the_context(steering, qloop):
    desk, steer = steering
    row = steer.gating.rows["location"]

    async def scenario() -> None:
        row.box.setEditText("Lantern Quay")
        row.set_button.click()
        await wait_for(lambda: "set to Lantern Quay" in steer.gating.message.text(), what="the field set")
        assert (await _state(desk)).context == {"location": ["Lantern Quay"]}
        # Picking from the list adds to a multi-valued field.
        row.box.lineEdit().textEdited.emit(row.box.currentText())  # as typing leaves it
        row.box.activated.emit([row.box.itemText(i) for i in range(row.box.count())].index("Old Harbour"))
        assert row.box.currentText() == "Lantern Quay, Old Harbour"
        row.edit.returnPressed.emit()
        await wait_for(lambda: "Old Harbour;" in steer.gating.message.text(), what="both values set")
        assert (await _state(desk)).context == {"location": ["Lantern Quay", "Old Harbour"]}
        await wait_for(lambda: "location = Lantern Quay, Old Harbour" in steer.heading.text(), what="the heading")
        # The next generation is gated by it: an entry of another location stays out.
        gen = await _generate(desk, *SO_FAR, "Yes.", "Lantern Quay, then Heron's Rest.")
        assert "Heron's Rest" not in [i["title"] for i in gen["injected"]]

        steer.gating.rows["era"].box.setEditText("Founding")
        steer.gating.rows["era"].set_button.click()
        await wait_for(lambda: "Era set to Founding" in steer.gating.message.text(), what="era set")
        row.clear_button.click()
        await wait_for(lambda: "Location cleared" in steer.gating.message.text(), what="the field cleared")
        assert (await _state(desk)).context == {"era": ["Founding"]}
        assert row.box.currentText() == ""
        steer.gating.clear_all_button.click()
        await wait_for(lambda: "Every gating field cleared" in steer.gating.message.text(), what="all cleared")
        assert (await _state(desk)).context == {}
        assert steer.gating.rows["era"].box.currentText() == ""
        assert not steer.gating.clear_all_button.isEnabled()

    qloop.run_until_complete(scenario())


def test_a_value_the_field_cannot_take_shows_the_engines_words_and_changes_nothing(steering, qloop):
    desk, steer = steering
    threat = steer.gating.rows["threat_level"]

    async def scenario() -> None:
        threat.box.setEditText("3")
        threat.set_button.click()
        await wait_for(lambda: "Threat Level set to 3" in steer.gating.message.text(), what="a number set")
        threat.box.setEditText("very high")
        threat.set_button.click()
        await wait_for(lambda: "takes a number" in steer.gating.message.text(), what="the engine's message")
        assert "very high" in steer.gating.message.text()
        assert (await _state(desk)).context == {"threat_level": "3"}
        assert threat.box.currentText() == "very high"  # kept, to be corrected

    qloop.run_until_complete(scenario())


def test_the_folder_filter_is_picked_from_the_vaults_folders_and_an_unknown_one_is_refused(steering, vault_copy, qloop):
    desk, steer = steering
    tab = steer.folders

    def tick(*paths: str) -> None:
        for i in range(tab.folders.count()):
            item = tab.folders.item(i)
            on = item.data(Qt.ItemDataRole.UserRole) in paths
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    async def scenario() -> None:
        tick("Places", "Characters")
        tab.apply_button.click()
        await wait_for(lambda: "Only entries in" in tab.message.text(), what="the filter applied")
        assert set((await _state(desk)).folder_filter) == {"Places", "Characters"}
        gen = await _generate(desk, *SO_FAR, "Yes.", "Lantern Quay, Tamsin Reed and the Drowned Bell.")
        keyed = [i["title"] for i in gen["injected"] if not i["matched_by"].startswith("(")]
        assert "Tamsin Reed" in keyed  # Characters/
        for title in keyed:  # titles repeat (a tavern and a bell): one of them is inside the filter
            paths = [e.path for e in desk.runtime.engine.snapshot.entries if e.title == title]
            assert any("/" not in p or p.startswith(("Places/", "Characters/")) for p in paths), (title, paths)
        assert any(v["stage"] == "folder filter" and v["outcome"] == "removed" for v in gen["verdicts"])

        # The folder goes from the vault while the list still shows it: the engine refuses it.
        shutil.rmtree(vault_copy / "Creatures")
        await wait_for(
            lambda: not any(e.path.startswith("Creatures/") for e in desk.runtime.engine.snapshot.entries),
            what="the folder gone from the index",
        )
        tick("Creatures")
        tab.apply_button.click()
        await wait_for(lambda: "no folder" in tab.message.text(), what="the engine's message")
        assert "'Creatures'" in tab.message.text() and "Places" in tab.message.text()
        assert set((await _state(desk)).folder_filter) == {"Places", "Characters"}  # unchanged

        tab.clear_button.click()
        await wait_for(lambda: "every folder" in tab.message.text(), what="the filter cleared")
        assert (await _state(desk)).folder_filter is None

    qloop.run_until_complete(scenario())


def test_pins_and_blocks_are_removed(steering, qloop):
    desk, steer = steering
    tab = steer.pins

    async def scenario() -> None:
        assert not tab.remove_pin.isEnabled()
        tab.pins.item(0).setSelected(True)
        tab.remove_pin.click()
        await wait_for(lambda: "Unpinned Tidewriting" in tab.message.text(), what="the pin removed")
        state = await _state(desk)
        assert state.pins == () and [b.title for b in state.blocks] == ["Old Harbour"]
        assert tab.pins.count() == 0 and tab.pins_label.text() == "Pinned: none"
        tab.blocks.item(0).setSelected(True)
        tab.remove_block.click()
        await wait_for(lambda: "Unblocked Old Harbour" in tab.message.text(), what="the block removed")
        assert (await _state(desk)).blocks == ()
        await wait_for(lambda: "0 pins, 0 blocks" in steer.heading.text(), what="the heading")

    qloop.run_until_complete(scenario())


def test_without_one_chat_selected_nothing_can_be_changed(steering, qloop):
    desk, steer = steering
    panel = desk.window.sillytavern_view.chats_panel
    panel.table.clearSelection()
    assert steer.chat_id is None and not steer.tabs.isEnabled()
    assert "Select one chat" in steer.heading.text()


def test_refresh_reads_the_vaults_fields_again(steering, vault_copy, qloop):
    desk, steer = steering
    panel = desk.window.sillytavern_view.chats_panel
    definitions = vault_copy / "DeepLore" / "field-definitions.yaml"
    text = definitions.read_text(encoding="utf-8")
    extra = "  - name: weather\n    label: Weather\n    type: string\n    multi: false\n    values: [fog, rain]\n"
    definitions.write_text(text.replace("fields:\n", "fields:\n" + extra, 1), encoding="utf-8")

    async def scenario() -> None:
        await wait_for(
            lambda: any(f.name == "weather" for f in desk.runtime.engine.snapshot.field_definitions.fields),
            what="the new field in the index",
        )
        panel.refresh_button.click()
        await wait_for(lambda: "weather" in steer.gating.rows, what="the new field's row")
        box = steer.gating.rows["weather"].box
        assert [box.itemText(i) for i in range(box.count())] == ["fog", "rain"]  # declared, no note uses them

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(desk.window.sillytavern_view.idle())


class _FirstAnalyticsHeld:
    """The real bridge, except that the first `entry_analytics` call waits for `release`: a re-read
    that has read the chat's state and is still on its way while the user changes it."""

    def __init__(self, bridge) -> None:
        self._bridge = bridge
        self.release = asyncio.Event()
        self.held = asyncio.Event()

    def __getattr__(self, name: str):
        return getattr(self._bridge, name)

    async def entry_analytics(self, chat_id: str):
        if not self.held.is_set():
            self.held.set()
            await self.release.wait()
        return await self._bridge.entry_analytics(chat_id)


def test_a_re_read_that_started_before_a_change_does_not_show_the_old_values(steering, qloop):
    """Defect (CI, stop 31): Clear all, then the era box showed 'Founding' again, because the
    re-read started by the previous change arrived after Clear all and showed what it had read."""
    desk, steer = steering
    era = steer.gating.rows["era"]

    async def scenario() -> None:
        era.box.setEditText("Founding")
        era.set_button.click()
        await wait_for(lambda: "Era set to Founding" in steer.gating.message.text(), what="era set")
        await desk.window.sillytavern_view.idle()
        held = _FirstAnalyticsHeld(desk.bridge)
        steer.bridge = held
        steer.runner(steer.load)  # reads the state (era = Founding), then waits
        await wait_for(held.held.is_set, what="the re-read under way")
        steer.gating.clear_all_button.click()
        await wait_for(lambda: "Every gating field cleared" in steer.gating.message.text(), what="all cleared")
        # Clear all's own re-read is not held: it shows the cleared chat first, then the old one ends.
        await wait_for(lambda: "no gating context" in steer.heading.text(), what="the cleared chat shown")
        held.release.set()
        await desk.window.sillytavern_view.idle()
        assert (await _state(desk)).context == {}
        assert era.box.currentText() == ""
        assert "no gating context" in steer.heading.text()
        assert not steer.gating.clear_all_button.isEnabled()

    qloop.run_until_complete(scenario())
