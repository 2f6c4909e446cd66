"""Steering the lore from inside SillyTavern with DeepLore Enhanced's commands, in a real
SillyTavern and Chromium against DLE Desktop's `serve` and the fake LLM that records every prompt:
a location gates an entry in and out of the prompt, the folder filter limits it to a folder, each
reply's lore button lists exactly what its prompt held and follows swipes (and a page reload),
analytics count injections, the lore-share warning speaks once, every command name and alias is
registered and answers, and bad arguments get a message and change nothing.

The tests run in file order on one page; each opens a chat of its own."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.sillytavern.conftest import CHARACTER
from tests.e2e.sillytavern.dle_server import VAULT_NOTES, DleServer
from tests.e2e.sillytavern.test_bridge import (
    chat_state,
    clear_toasts,
    close_popups,
    popup_text,
    prompt_for,
    requests_with,
    run_command,
    text_of,
    toast_text,
    token,
)
from tests.fakes.ai_provider import FakeAiProvider

pytestmark = pytest.mark.usefixtures("bridge_page")

#: DLE's command names and aliases (dle-behaviour §5.12) the bridge registers: a missing one fails.
COMMANDS = {
    "dle": [],
    "dle-why": [],
    "dle-context": [],
    "dle-status": [],
    "dle-refresh": ["dle-r"],
    "dle-pin": [],
    "dle-unpin": [],
    "dle-block": [],
    "dle-unblock": [],
    "dle-notebook": [],
    "dle-pins": [],
    "dle-set-field": [],
    "dle-clear-field": [],
    "dle-set-era": ["dle-era"],
    "dle-set-location": ["dle-loc"],
    "dle-set-scene": [],
    "dle-set-characters": [],
    "dle-context-state": ["dle-ctx"],
    "dle-clear-all-context": ["dle-reset-context"],
    "dle-set-folder": ["dle-folder"],
    "dle-clear-folder": [],
    "dle-inspect": ["dle-i"],
    "dle-simulate": [],
    "dle-health": ["dle-h"],
    "dle-lint": ["dle-l"],
    "dle-cache-info": [],
    "dle-browse": ["dle-b"],
    "dle-graph": ["dle-g"],
    "dle-librarian": [],
    "dle-analytics": [],
}

#: Each e2e note's marker (what the prompt shows) → its title (what the bridge lists).
TITLE_OF = {
    re.search(r"LORE-[A-Z]+", text).group(0): re.search(r"^# (.+)$", text, re.M).group(1)
    for text in VAULT_NOTES.values()
}


def titles_in(fake: FakeAiProvider, tok: str) -> set[str]:
    body = text_of(prompt_for(fake, tok))
    return {title for marker, title in TITLE_OF.items() if marker in body}


def execute(page, command: str) -> str:
    """Run a slash command as a script would; its text (what /pipe passes on)."""
    return page.evaluate(
        """async (c) => { const r = await SillyTavern.getContext().executeSlashCommandsWithOptions(c);
                          return String(r?.pipe ?? ''); }""",
        command,
    )


def chat_id(page) -> str:
    return page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")


def new_chat(page) -> str:
    close_popups(page)
    old = chat_id(page)
    run_command(page, "/newchat")
    page.wait_js(
        "a new chat to open",
        "(old) => { const id = SillyTavern.getContext().getCurrentChatId(); return id && id !== old ? id : false; }",
        arg=old,
        timeout=30,
    )
    page.dismiss_popups()
    return chat_id(page)


def wait_state(dle: DleServer, chat: str, check, what: str, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    state = chat_state(dle, chat)
    while time.monotonic() < deadline and not check(state):
        time.sleep(0.2)
        state = chat_state(dle, chat)
    assert check(state), f"{what}: {state}"
    return state


def last_reply_index(page) -> int:
    return page.evaluate("() => SillyTavern.getContext().chat.length - 1")


def wait_linked(page, message: int, swipe: int) -> None:
    page.wait_js(
        f"the lore of message {message}, swipe {swipe} to be tied to it in DLE Desktop",
        """([m, s]) => globalThis.dleDesktopBridge.sources.linked.some(l => l.message === m && l.swipe === s)""",
        arg=[message, swipe],
        timeout=30,
    )


def wait_idle(page) -> None:
    page.wait_js(
        "the generation to finish",
        "() => { const s = document.querySelector('#mes_stop'); return !s || getComputedStyle(s).display === 'none'; }",
        timeout=60,
    )


def sources_popup(page, message: int, shot: str = "") -> list[str]:
    """Open the lore button of message `message` (in its "…" menu) as a person would; the titles listed."""
    close_popups(page)
    node = page.page.locator(f'#chat .mes[mesid="{message}"]')
    button = node.locator(".dle-desktop-bridge-sources-button")
    page.wait_for(
        "the lore button on the reply",
        f'#chat .mes[mesid="{message}"] .dle-desktop-bridge-sources-button',
        state="attached",
    )
    if not button.is_visible():
        node.locator(".extraMesButtonsHint").click()
    button.click()
    shown = popup_text(page, "Lore behind")
    rows = page.evaluate("""() => { const all = [...document.querySelectorAll('.dle-desktop-bridge-popup')];
        const last = all[all.length - 1];
        return [...last.querySelectorAll('.dle-desktop-bridge-sources tbody tr')].map(r => r.cells[0].innerText); }""")
    assert rows or "No lore was injected" in shown, shown
    if shot:
        page.screenshot(shot)
    close_popups(page)
    return rows


# ---- every command is there and answers ------------------------------------------------------


def test_every_dle_command_and_alias_is_registered(bridge_page):
    registered = bridge_page.evaluate("() => Object.keys(SillyTavern.getContext().SlashCommandParser.commands)")
    wanted = [name for command, aliases in COMMANDS.items() for name in (command, *aliases)]
    missing = [name for name in wanted if name not in registered]
    assert not missing, f"not registered in SillyTavern: {missing}"
    # /dle-inspect is its own command now, not an alias of /dle-why
    assert bridge_page.evaluate(
        "() => { const c = SillyTavern.getContext().SlashCommandParser.commands;"
        " return c['dle-inspect'] !== c['dle-why'] && c['dle-i'] === c['dle-inspect']; }"
    )


def test_every_command_without_an_argument_answers_in_words(bridge_page, dle):
    chat = new_chat(bridge_page)
    answers = {}
    for command in (
        "/dle",
        "/dle-why",
        "/dle-context",
        "/dle-i",
        "/dle-status",
        "/dle-ctx",
        "/dle-pins",
        "/dle-analytics",
        "/dle-simulate",
        "/dle-h",
        "/dle-l",
        "/dle-cache-info",
        "/dle-b",
        "/dle-clear-folder",
        "/dle-reset-context",
        "/dle-r",
        "/dle-cache-info clear",
    ):
        answers[command] = execute(bridge_page, command)
        close_popups(bridge_page)
    silent = [c for c, text in answers.items() if not text.strip()]
    assert not silent, f"no answer from {silent}"
    assert all("/dle-set-folder" in answers["/dle"] and f"/{name}" in answers["/dle"] for name in COMMANDS)
    assert "errors" in answers["/dle-h"] and "skipped notes" in answers["/dle-l"]
    assert "Index:" in answers["/dle-cache-info"] and "cleared" in answers["/dle-cache-info clear"]
    assert "Ferryman Oske" in answers["/dle-analytics"] and "Never injected" in answers["/dle-analytics"]
    # The commands that take one, with one.
    assert execute(bridge_page, "/dle-set-scene combat") == "scene_type is now combat in this chat."
    assert execute(bridge_page, "/dle-set-characters Oske, Seraphina").startswith(
        "character_present is now Oske, Seraphina"
    )
    assert execute(bridge_page, "/dle-era Founding") == "era is now Founding in this chat."
    context = chat_state(dle, chat)["context"]
    assert set(context) == {"scene_type", "character_present", "era"}, context
    assert execute(bridge_page, "/dle-block Harbour Map") == 'Blocked "Harbour Map" in this chat.'
    assert execute(bridge_page, "/dle-notebook The tide turns at noon.").startswith("Author's Notebook saved")
    state = chat_state(dle, chat)
    assert [b["title"] for b in state["blocks"]] == ["Harbour Map"] and state["notebook"] == "The tide turns at noon."
    assert execute(bridge_page, "/dle-unblock Harbour Map") == 'Unblocked "Harbour Map" in this chat.'
    execute(bridge_page, "/dle-reset-context")
    wait_state(dle, chat, lambda s: s["context"] == {} and s["blocks"] == [], "the chat was not reset")
    # Under `serve` there is no window to show: the server's words come back.
    for command in ("/dle-g", "/dle-librarian review", "/dle-librarian gap 3"):
        said = execute(bridge_page, command)
        assert "cannot show" in said and "serve" in said, said


def test_the_palette_lists_every_command_and_a_click_runs_one(bridge_page):
    run_command(bridge_page, "/dle")
    shown = popup_text(bridge_page, "DLE Desktop commands")
    for name in COMMANDS:
        assert f"/{name}" in shown, name
    bridge_page.page.locator('.dle-desktop-bridge-palette-item[data-command="dle-pins"]').click()
    assert "Pins and blocks of this chat" in popup_text(bridge_page, "Pins and blocks")
    close_popups(bridge_page)
    # One that needs an argument goes into the input box instead.
    run_command(bridge_page, "/dle")
    popup_text(bridge_page, "DLE Desktop commands")
    bridge_page.page.locator('.dle-desktop-bridge-palette-item[data-command="dle-set-field"]').click()
    assert bridge_page.page.locator("#send_textarea").input_value() == "/dle-set-field "
    bridge_page.page.locator("#send_textarea").fill("")
    close_popups(bridge_page)


def test_browse_finds_entries_as_typed_and_pins_one(bridge_page, dle):
    chat = new_chat(bridge_page)
    run_command(bridge_page, "/dle-b")
    popup_text(bridge_page, "Browse the vault")
    listed = "() => [...document.querySelectorAll('.dle-desktop-bridge-browse-list tbody tr')].map(r => r.cells[0].innerText)"
    every = sorted(e["title"] for e in dle.get("/api/dle/v1/entries").json()["entries"])
    assert sorted(bridge_page.evaluate(listed)) == every
    bridge_page.page.locator(".dle-desktop-bridge-browse-q").fill("oske")  # a key
    assert bridge_page.evaluate(listed) == ["Ferryman Oske"]
    bridge_page.page.locator('.dle-desktop-bridge-override[data-list="pins"][data-title="Ferryman Oske"]').click()
    wait_state(dle, chat, lambda s: [p["title"] for p in s["pins"]] == ["Ferryman Oske"], "Pin did not pin the entry")
    close_popups(bridge_page)
    assert "Pinned: Ferryman Oske" in execute(bridge_page, "/dle-pins")
    close_popups(bridge_page)
    execute(bridge_page, "/dle-unpin Ferryman Oske")
    wait_state(dle, chat, lambda s: s["pins"] == [], "the pin was not removed")


# ---- gating context --------------------------------------------------------------------------


def test_a_location_keeps_a_gated_entry_out_and_lets_it_in(bridge_page, fake_llm, dle):
    chat = new_chat(bridge_page)
    run_command(bridge_page, "/dle-set-location Moonwell Quay")
    wait_state(dle, chat, lambda s: s["context"] == {"location": ["Moonwell Quay"]}, "the location was not set")
    out = token()
    bridge_page.send(f"We buy fish at the salt market. {out}", f"Fake LLM reply to {out}.")
    assert "LORE-SALT" not in text_of(prompt_for(fake_llm, out))
    run_command(bridge_page, "/dle-why")
    why = popup_text(bridge_page, "Salt Market")
    assert "contextual gating" in why, why
    close_popups(bridge_page)

    run_command(bridge_page, "/dle-loc Saltmarsh")  # the alias
    wait_state(dle, chat, lambda s: s["context"] == {"location": ["Saltmarsh"]}, "the location was not changed")
    inside = token()
    bridge_page.send(f"Back to the salt market. {inside}", f"Fake LLM reply to {inside}.")
    assert "LORE-SALT" in text_of(prompt_for(fake_llm, inside))
    panel = bridge_page.wait_js(
        "the panel to show the chat's context and last generation",
        """() => { const t = document.getElementById('dle_desktop_bridge_chat')?.innerText ?? '';
                   return t.includes('location: Saltmarsh') && t.includes('Last generation') ? t : false; }""",
    )
    assert "tokens" in panel and "budget" in panel, panel


def test_without_a_value_the_values_the_vault_uses_are_offered(bridge_page, dle):
    chat = new_chat(bridge_page)
    run_command(bridge_page, "/dle-set-location")
    shown = popup_text(bridge_page, "Set Location")
    assert "Saltmarsh" in shown and "1 entry" in shown and "through" in shown, shown
    bridge_page.page.locator('.dle-desktop-bridge-pick[data-value="Saltmarsh"]').click()
    bridge_page.page.locator("dialog[open] .popup-button-ok").click()
    wait_state(dle, chat, lambda s: s["context"] == {"location": ["Saltmarsh"]}, "the picked value was not set")
    assert "location: Saltmarsh" in execute(bridge_page, "/dle-context-state")
    close_popups(bridge_page)
    assert execute(bridge_page, "/dle-clear-field location").startswith("location cleared")
    wait_state(dle, chat, lambda s: s["context"] == {}, "the field was not cleared")


# ---- folder filter ---------------------------------------------------------------------------


def test_the_folder_filter_limits_the_prompt_to_that_folder(bridge_page, fake_llm, dle):
    chat = new_chat(bridge_page)
    # A quoted path with a space: only that folder (and below).
    run_command(bridge_page, '/dle-folder "Places/Old Town"')
    wait_state(dle, chat, lambda s: s["folder_filter"] == ["Places/Old Town"], "the quoted folder was not set")
    tok = token()
    bridge_page.send(f"At the salt market, Oske points at the clock tower. {tok}", f"Fake LLM reply to {tok}.")
    held = titles_in(fake_llm, tok)
    assert "Clock Tower" in held and not {"Salt Market", "Ferryman Oske"} & held, held
    run_command(bridge_page, "/dle-set-folder Places")
    wait_state(dle, chat, lambda s: s["folder_filter"] == ["Places"], "the folder filter was not changed")
    tok = token()
    bridge_page.send(f"Oske sells eels at the salt market. {tok}", f"Fake LLM reply to {tok}.")
    held = titles_in(fake_llm, tok)
    assert "Salt Market" in held and "Ferryman Oske" not in held, held
    assert "World Rules" in held  # a constant is exempt from the filter, as in DLE
    run_command(bridge_page, "/dle-clear-folder")
    wait_state(dle, chat, lambda s: s["folder_filter"] is None, "the folder filter was not cleared")


# ---- bad arguments ---------------------------------------------------------------------------


def test_bad_arguments_get_a_message_and_change_nothing(bridge_page, dle):
    chat = new_chat(bridge_page)
    run_command(bridge_page, "/dle-set-era Founding")
    wait_state(dle, chat, lambda s: s["context"] == {"era": ["Founding"]}, "the era was not set")
    run_command(bridge_page, '/dle-set-folder "Places/Old Town"')
    before = wait_state(dle, chat, lambda s: s["folder_filter"] == ["Places/Old Town"], "the folder was not set")
    clear_toasts(bridge_page)

    run_command(bridge_page, "/dle-set-field weather rain")
    said = toast_text(bridge_page, "weather")
    assert "location" in said and "era" in said and "Nothing was changed" in said, said  # the known fields are named
    run_command(bridge_page, "/dle-set-folder Attic")
    said = toast_text(bridge_page, "Attic")
    assert "Places" in said and "People" in said and "Nothing was changed" in said, said  # the known folders are named
    assert "HTTP" not in said, said  # the server's words, not a status code
    assert "Name a field" in execute(bridge_page, "/dle-set-field")
    said = execute(
        bridge_page, "/dle-set-field weather"
    )  # no value: the picker is not opened for a field the vault lacks
    assert 'no field "weather"' in said and "location" in said, said
    said = execute(bridge_page, '/dle-set-folder "Places/New Town"')
    assert "New Town" in said and "Places" in said, said
    assert "Name the field" in execute(bridge_page, "/dle-clear-field")
    assert 'not "sideways"' in execute(bridge_page, "/dle-librarian sideways")
    assert 'not "bogus"' in execute(bridge_page, "/dle-cache-info bogus")
    assert "No entry is titled" in execute(bridge_page, "/dle-pin Nobody At All")
    after = chat_state(dle, chat)
    for key in ("context", "folder_filter", "pins", "blocks"):
        assert after[key] == before[key], key
    execute(bridge_page, "/dle-clear-all-context")
    execute(bridge_page, "/dle-clear-folder")
    wait_state(dle, chat, lambda s: s["context"] == {} and s["folder_filter"] is None, "the chat was not reset")


# ---- which lore shaped this reply ------------------------------------------------------------


def test_each_reply_lists_the_lore_its_prompt_held_and_follows_swipes(bridge_page, fake_llm, dle):
    chat = new_chat(bridge_page)
    run_command(bridge_page, "/dle-set-location Saltmarsh")
    wait_state(dle, chat, lambda s: s["context"] == {"location": ["Saltmarsh"]}, "the location was not set")
    tok = token()
    bridge_page.send(f"The salt market, then the clock tower. {tok}", f"Fake LLM reply to {tok}.")
    reply = last_reply_index(bridge_page)
    wait_linked(bridge_page, reply, 0)
    first = titles_in(fake_llm, tok)
    assert {"Salt Market", "Clock Tower", "World Rules"} <= first, first
    assert set(sources_popup(bridge_page, reply, shot="steering-sources-popup")) == first

    # A swipe with the location changed: the new swipe's lore is its own.
    run_command(bridge_page, "/dle-set-location Moonwell Quay")
    wait_state(dle, chat, lambda s: s["context"] == {"location": ["Moonwell Quay"]}, "the location was not changed")
    before = len(requests_with(fake_llm, tok))
    bridge_page.page.locator("#chat .mes").last.locator(".swipe_right").click()
    wait_linked(bridge_page, reply, 1)
    wait_idle(bridge_page)
    assert len(requests_with(fake_llm, tok)) == before + 1
    second = titles_in(fake_llm, tok)
    assert "Salt Market" not in second and "Clock Tower" in second, second
    assert set(sources_popup(bridge_page, reply)) == second
    # Back to the first swipe: its own lore again.
    bridge_page.page.locator("#chat .mes").last.locator(".swipe_left").click()
    bridge_page.wait_js(
        "the first swipe to show", "(m) => SillyTavern.getContext().chat[m].swipe_id === 0", arg=reply, timeout=15
    )
    assert set(sources_popup(bridge_page, reply)) == first

    # The greeting was written without the bridge: the popup says so in words.
    close_popups(bridge_page)
    bridge_page.page.locator('#chat .mes[mesid="0"] .extraMesButtonsHint').click()
    bridge_page.page.locator('#chat .mes[mesid="0"] .dle-desktop-bridge-sources-button').click()
    assert "no lore on record for message 0" in popup_text(bridge_page, "Lore behind this reply")
    close_popups(bridge_page)

    # The page reloaded: the button reads DLE Desktop, not the page's memory.
    bridge_page.open()
    bridge_page.wait_js("the bridge to start again", "() => globalThis.dleDesktopBridge?.ready === true", timeout=90)
    bridge_page.evaluate("() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.enabled = true; }")
    if chat_id(bridge_page) != chat:
        bridge_page.open_character(CHARACTER)
    assert chat_id(bridge_page) == chat
    assert set(sources_popup(bridge_page, reply)) == first
    execute(bridge_page, "/dle-clear-all-context")


# ---- analytics and the lore share ------------------------------------------------------------


def oske_injected_overall(dle: DleServer) -> int:
    table = dle.get("/api/dle/v1/analytics").json()["entries"]
    return next(e["injected"] for e in table if e["title"] == "Ferryman Oske")


def test_analytics_count_an_entry_injected_twice_as_two(bridge_page, fake_llm, dle):
    chat = new_chat(bridge_page)
    # Other chats of the session may have injected it already: overall counts from here on.
    before = oske_injected_overall(dle)
    # Pinned, so that the second generation does not hold it back as a duplicate of the first.
    run_command(bridge_page, "/dle-pin Ferryman Oske")
    wait_state(dle, chat, lambda s: [p["title"] for p in s["pins"]] == ["Ferryman Oske"], "the pin was not set")
    for text in ("Who rows the ferry tonight?", "Let us cross the river."):
        tok = token()
        bridge_page.send(f"{text} {tok}", f"Fake LLM reply to {tok}.")
        assert "LORE-OSKE" in text_of(prompt_for(fake_llm, tok))
    run_command(bridge_page, "/dle-unpin Ferryman Oske")
    wait_state(dle, chat, lambda s: s["pins"] == [], "the pin was not removed")
    run_command(bridge_page, "/dle-analytics")
    popup_text(bridge_page, "Lore analytics")
    rows = bridge_page.evaluate("""() => [...document.querySelectorAll('.dle-desktop-bridge-analytics tbody tr')]
        .map(r => [...r.cells].map(c => c.innerText))""")
    oske = next(r for r in rows if r[0] == "Ferryman Oske")
    assert oske[2] == str(before + 2) and oske[4] == "2", (before, oske)  # injected overall and in this chat
    never = bridge_page.evaluate("""() => [...document.querySelectorAll('.dle-desktop-bridge-popup')].pop()
        .querySelector('.dle-desktop-bridge-never')?.innerText ?? ''""")
    assert sorted(never.split("\n")) == sorted(r[0] for r in rows if r[2] == "0"), never  # every row never injected
    # A click on a header sorts by it (a second click the other way).
    header = bridge_page.page.locator(".dle-desktop-bridge-analytics th", has_text="Injected here")
    header.click()
    column = bridge_page.evaluate("""() => [...document.querySelectorAll('.dle-desktop-bridge-analytics tbody tr')]
        .map(r => Number(r.cells[4].innerText))""")
    assert column == sorted(column, reverse=True) and column[0] >= 2, column
    header.click()
    column = bridge_page.evaluate("""() => [...document.querySelectorAll('.dle-desktop-bridge-analytics tbody tr')]
        .map(r => Number(r.cells[4].innerText))""")
    assert column == sorted(column), column
    bridge_page.screenshot("steering-analytics")
    close_popups(bridge_page)


def test_lore_over_a_fifth_of_the_context_is_pointed_out_once(bridge_page, fake_llm, dle):
    chat = new_chat(bridge_page)
    bridge_page.evaluate("""() => { globalThis.__dleShareToasts = [];
        new MutationObserver(() => document.querySelectorAll('#toast-container .toast').forEach(t => {
            if (t.dataset.seen) return; t.dataset.seen = '1'; globalThis.__dleShareToasts.push(t.innerText); }))
        .observe(document.body, { childList: true, subtree: true }); }""")
    # Pinned: every generation carries the same long entry, so the share stays where it is.
    run_command(bridge_page, "/dle-pin Harbour Chronicle")
    wait_state(dle, chat, lambda s: [p["title"] for p in s["pins"]] == ["Harbour Chronicle"], "the pin was not set")
    tok = token()
    bridge_page.send(f"Read me the chronicle. {tok}", f"Fake LLM reply to {tok}.")
    assert "LORE-CHRONICLE" in text_of(prompt_for(fake_llm, tok))
    size, tokens = bridge_page.evaluate("""() => [SillyTavern.getContext().chatCompletionSettings.openai_max_context,
        globalThis.dleDesktopBridge.state.last.result.total_tokens]""")
    share = round(tokens / size * 100)
    assert share > 20, (tokens, size)
    said = toast_text(bridge_page, "of the context")
    assert f"Lore takes {share}% of the context ({tokens} of {size} tokens)" in said, said
    tok = token()
    bridge_page.send(f"And once more from the top. {tok}", f"Fake LLM reply to {tok}.")
    assert "LORE-CHRONICLE" in text_of(prompt_for(fake_llm, tok))
    assert bridge_page.evaluate("() => globalThis.dleDesktopBridge.state.last.result.total_tokens") == tokens
    bridge_page.page.wait_for_timeout(1000)
    warnings = bridge_page.evaluate("() => globalThis.__dleShareToasts.filter(t => t.includes('of the context'))")
    assert len(warnings) == 1, warnings  # the same share again: no second notice
    execute(bridge_page, "/dle-unpin Harbour Chronicle")
