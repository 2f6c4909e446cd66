"""DeepLore Enhanced's writers in a real SillyTavern and Chromium, against DLE Desktop's `serve` and
the fake LLM, which answers SillyTavern's chat and DLE Desktop's writer calls alike (it knows the
Scribe, Auto Lorebook and AI Notepad prompts by their markers, and in a prompt that carries the
AI Notepad's instruction it ends its reply with a <dle-notes> block).

The writers are turned on with the bridge panel's own boxes (which change DLE Desktop's settings).
The suite checks: after 5 messages a session note is in the vault folder and in the index; in tag
mode the <dle-notes> block never shows, its notes reach the next prompt, and a swipe takes them
back out; /dle-newlore proposes, Accept (after an edit) writes the entry, and the next message
naming its key gets it in the prompt; the lore tools leave a "Consulted lore vault" trail that
survives a reload; /dle-review leaves only the question and the answer in the chat.

The tests run in file order on one page; each opens a chat of its own."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.sillytavern.conftest import CHARACTER, TOKEN, reply_for
from tests.e2e.sillytavern.dle_server import DleServer
from tests.e2e.sillytavern.test_bridge import (
    TOOL_NAMES,
    close_popups,
    popup_text,
    prompt_for,
    requests_with,
    run_command,
    set_function_calling,
    set_lore_tools,
    text_of,
    token,
    wait_for_saved_settings,
)
from tests.e2e.sillytavern.test_steering import chat_id, new_chat
from tests.fakes.ai_provider import FakeAiProvider, SeenAiRequest
from tests.writers.conftest import profile_for

pytestmark = pytest.mark.usefixtures("bridge_page")

SUMMARY = "## Events\n- SCRIBE-SUMMARY: Seraphina tended the wanderer's wounds by the moonwell."
SUGGESTION = {
    "title": "Glass Lighthouse",
    "type": "location",
    "keys": ["glass lighthouse", "lighthouse"],
    "summary": "The lighthouse of green glass at the harbour mouth.",
    "content": "LORE-GLASS: the glass lighthouse burns whale oil and sings in a north wind.",
}
REVIEW_ANSWER = "REVIEW-ANSWER: the vault has no entry for the harbour's tolls."
_notes = itertools.count(1)


def writer_aware_reply(request: SeenAiRequest) -> str:
    """The fake LLM for this module: the writers' prompts get their answers, SillyTavern's chat its
    usual reply, with a numbered <dle-notes> block when the AI Notepad's instruction is in the prompt."""
    user = request.user_text
    whole = json.dumps(request.body, ensure_ascii=False) if isinstance(request.body, dict) else ""
    if "[RECENT CONVERSATION]" in user:
        return SUMMARY
    if "## Existing lorebook entries (do NOT suggest these):" in user:
        return "Here is what the chat is missing:\n```json\n" + json.dumps([SUGGESTION]) + "\n```"
    if "[Latest AI response]" in user:
        return "NOTHING_TO_NOTE"
    if "[DeepLore Enhanced Review" in whole:
        return REVIEW_ANSWER
    text = reply_for(request)
    if "dle-notes" in whole:
        tok = TOKEN.findall(user)
        return f"{text}\n<dle-notes>NOTE-{tok[-1] if tok else 'none'}-{next(_notes)}</dle-notes>"
    return text


@pytest.fixture(scope="module", autouse=True)
def writers_connected(dle: DleServer, fake_llm: FakeAiProvider, bridge_page) -> Iterator[None]:
    """DLE Desktop with an AI connection (the fake LLM) that the writers' channels inherit; the
    writers themselves stay off until a test turns them on in the bridge's panel."""
    dle.stop()
    dle.update_settings(connection_profiles=[profile_for(fake_llm)], ai_search_profile_id="fake")
    dle.start()
    fake_llm.default(writer_aware_reply)
    refresh_writers(bridge_page)
    try:
        yield
    finally:
        fake_llm.default(reply_for)
        dle.stop()
        dle.update_settings(
            connection_profiles=[],
            ai_search_profile_id="",
            scribe_enabled=False,
            auto_suggest_enabled=False,
            ai_notepad_enabled=False,
        )
        dle.start()
        refresh_writers(bridge_page)


def refresh_writers(page) -> None:
    page.evaluate("() => globalThis.dleDesktopBridge.writers.refresh()")


def panel_switch(page, key: str, on: bool) -> None:
    """Tick a box of the bridge panel's Writers section, as a person would (its change handler)."""
    page.evaluate(
        """([key, on]) => { const box = document.getElementById('dle_desktop_bridge_writers_' + key);
            box.checked = on; box.dispatchEvent(new Event('change', { bubbles: true })); }""",
        [key, on],
    )
    page.wait_js(
        f"DLE Desktop to take {key}={on}",
        """([key, on]) => { const c = globalThis.dleDesktopBridge.writers.config();
            const now = { scribe_enabled: c?.scribe?.enabled, auto_suggest_enabled: c?.auto_suggest?.enabled,
                          ai_notepad_enabled: c?.ai_notepad?.enabled }[key];
            return now === on; }""",
        arg=[key, on],
        timeout=15,
    )


def settings_on_disk(dle: DleServer) -> dict:
    return json.loads(dle.settings_path.read_text(encoding="utf-8"))


def notepad(dle: DleServer, chat: str) -> dict:
    from urllib.parse import quote

    return dle.get(f"/api/dle/v1/chats/{quote(chat, safe='')}/notepad").json()


def last_message(page) -> dict:
    return page.evaluate("() => { const c = SillyTavern.getContext().chat; return c[c.length - 1]; }")


def wait_until(check, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def session_notes(dle: DleServer) -> list[Path]:
    return sorted((dle.vault / "Sessions").glob(f"{CHARACTER} - *.md"))


# ---- Session Scribe and AI Notepad ------------------------------------------------------------


def test_scribe_after_five_messages_and_the_notepad_hides_keeps_and_rolls_back_notes(bridge_page, fake_llm, dle):
    page = bridge_page
    new_chat(page)
    chat = chat_id(page)
    panel_switch(page, "scribe_enabled", True)
    panel_switch(page, "ai_notepad_enabled", True)
    saved = settings_on_disk(dle)
    assert saved["scribe_enabled"] is True and saved["ai_notepad_enabled"] is True, (
        "the panel saved DLE Desktop's settings"
    )
    before_notes = session_notes(dle)

    first = token()
    page.send(f"The moonwell is cold tonight. {first}", f"Fake LLM reply to {first}.")
    # A streamed reply shows its block while it streams; it is redrawn without it when it ends.
    shown = page.wait_js(
        "the reply redrawn without its notes",
        """() => { const t = document.querySelector('#chat .mes:last-child .mes_text')?.innerText ?? '';
                   return t.includes('Fake LLM reply') && !t.includes('NOTE-') ? t : false; }""",
        timeout=20,
    )
    page.screenshot("writers-notepad-reply")
    assert "dle-notes" not in shown and "NOTE-" not in shown, shown
    assert "dle-notes" in text_of(prompt_for(fake_llm, first)), "the notepad's instruction was in the prompt"
    message = last_message(page)
    assert message["mes"] == f"Fake LLM reply to {first}.", message["mes"]
    kept = message["extra"]["deeplore_ai_notes"]
    assert kept.startswith(f"NOTE-{first}-"), message["extra"]
    assert notepad(dle, chat)["text"] == kept
    assert session_notes(dle) == before_notes, "3 messages: no session note yet"

    second = token()
    page.send(f"Tell me about the forest. {second}", f"Fake LLM reply to {second}.")
    assert kept in text_of(prompt_for(fake_llm, second)), "the notes reached the next prompt"
    # Greeting + 2 messages + 2 replies = 5: the Scribe's interval has passed.
    written = wait_until(lambda: [p for p in session_notes(dle) if p not in before_notes], "a session note", 60)
    assert len(written) == 1, written
    note = written[0].read_text(encoding="utf-8")
    assert note.startswith("---\ntags: [lorebook-session]\n") and f'character: "{CHARACTER}"' in note, note
    assert "SCRIBE-SUMMARY" in note and f"# Session: {CHARACTER}, " in note
    skipped = dle.get("/api/dle/v1/skipped").json()
    assert any(s["path"] == f"Sessions/{written[0].name}" for s in skipped["skipped"]), "indexed at once"

    second_notes = last_message(page)["extra"]["deeplore_ai_notes"]
    assert second_notes in notepad(dle, chat)["text"]
    before = len(requests_with(fake_llm, second))
    page.page.locator("#chat .mes").last.locator(".swipe_right").click()
    page.wait_js(
        "the swipe's reply to be shown",
        """([n, tok]) => { const stop = document.querySelector('#mes_stop');
            const idle = !stop || getComputedStyle(stop).display === 'none';
            const c = SillyTavern.getContext().chat; const last = c[c.length - 1];
            return idle && last.swipe_id === 1 && String(last.mes).includes(tok); }""",
        arg=[before, second],
        timeout=60,
    )

    def swipe_notes() -> str | None:
        now = last_message(page).get("extra", {}).get("deeplore_ai_notes")
        return now if now and now != second_notes else None

    swiped_notes = wait_until(swipe_notes, "the swipe's own notes")

    def rolled_back() -> str | None:
        now = notepad(dle, chat)["text"]
        return now if second_notes not in now else None

    text = wait_until(rolled_back, "the swiped-away reply's notes to leave the notepad")
    assert kept in text and swiped_notes in text, text
    page.wait_js(
        "the swipe redrawn without its notes",
        "() => !(document.querySelector('#chat .mes:last-child .mes_text')?.innerText ?? 'NOTE-').includes('NOTE-')",
        timeout=20,
    )
    assert len(session_notes(dle)) == len(before_notes) + 1, "the swipe did not write a second session note"

    history = page.evaluate("""async () => {
        const r = await SillyTavern.getContext().executeSlashCommandsWithOptions('/dle-scribe-history');
        return String(r?.pipe ?? ''); }""")
    assert written[0].stem in history, history
    close_popups(page)
    panel_switch(page, "scribe_enabled", False)
    panel_switch(page, "ai_notepad_enabled", False)


# ---- Auto Lorebook --------------------------------------------------------------------------------


def test_newlore_proposes_accept_writes_and_the_next_message_gets_the_entry(bridge_page, fake_llm, dle):
    page = bridge_page
    new_chat(page)
    first = token()
    page.send(f"A green light flashes at the harbour mouth. {first}", f"Fake LLM reply to {first}.")
    run_command(page, "/dle-newlore")
    popup_text(page, "Glass Lighthouse", timeout=60)
    page.screenshot("writers-suggestion-review")
    card = page.page.locator(".dle-desktop-bridge-suggestion").filter(
        has=page.page.locator("input[value='Glass Lighthouse']")
    )
    card.locator("[data-field='keys']").fill("glass lighthouse, green beacon")
    card.locator("[data-act='accept']").click()
    said = page.wait_js(
        "the suggestion to be written",
        """() => [...document.querySelectorAll('.dle-desktop-bridge-suggestion-said')]
                  .map(n => n.innerText).find(t => t.startsWith('Written')) || false""",
        timeout=30,
    )
    assert "Glass Lighthouse.md" in said, said
    written = (dle.vault / "Glass Lighthouse.md").read_text(encoding="utf-8")
    assert "priority: 50" in written and "green beacon" in written and "LORE-GLASS" in written, written
    close_popups(page)

    second = token()
    page.send(f"We row toward the green beacon. {second}", f"Fake LLM reply to {second}.")
    assert "LORE-GLASS" in text_of(prompt_for(fake_llm, second)), "the accepted entry fires on its edited key"
    left = dle.get("/api/dle/v1/suggestions").json()["suggestions"]
    assert not [s for s in left if s["title"] == "Glass Lighthouse"], left


# ---- the lore tools' trail ----------------------------------------------------------------------


def test_a_reply_that_used_the_lore_tools_shows_the_trail_after_a_reload(bridge_page, fake_llm, sillytavern):
    page = bridge_page
    new_chat(page)
    tok = token()
    page.set_streaming(False)
    set_function_calling(page, True)
    try:
        set_lore_tools(page, True)
        fake_llm.reply(tool_calls=[{"name": TOOL_NAMES[0], "args": {"queries": ["ember blade", "Qorvath tolls"]}}])
        page.send(f"What hums near liars? {tok}", f"Fake LLM reply to {tok}.", timeout=90)
        trail = page.wait_js(
            "the Consulted lore vault dropdown",
            """() => { const d = document.querySelector('#chat .mes:last-child .dle-desktop-bridge-trail');
                       if (!d) return false; d.open = true; return d.innerText; }""",
            timeout=20,
        )
        page.screenshot("writers-lore-trail")
        assert "Consulted lore vault" in trail and "Ember Blade" in trail and "Qorvath tolls" in trail, trail
        page.open()
        page.wait_js("the bridge to start again", "() => globalThis.dleDesktopBridge?.ready === true")
        page.open_character(CHARACTER)
        again = page.wait_js(
            "the trail after a reload",
            """(tok) => { const nodes = [...document.querySelectorAll('#chat .mes')];
                const hit = nodes.find(n => n.querySelector('.mes_text')?.innerText.includes(tok)
                                            && n.querySelector('.dle-desktop-bridge-trail'));
                return hit ? hit.querySelector('.dle-desktop-bridge-trail').innerText : false; }""",
            arg=f"Fake LLM reply to {tok}.",
            timeout=30,
        )
        assert "Consulted lore vault" in again, again
    finally:
        set_lore_tools(page, False)
        set_function_calling(page, False)
        page.set_streaming(True)
        page.evaluate("() => SillyTavern.getContext().saveSettingsDebounced()")
        wait_for_saved_settings(sillytavern, stream=True, function_calling=False)


# ---- /dle-review ----------------------------------------------------------------------------------


def test_review_keeps_only_the_question_and_the_answer_in_the_chat(bridge_page, fake_llm):
    page = bridge_page
    new_chat(page)
    before = page.evaluate("() => SillyTavern.getContext().chat.length")
    asked = len(fake_llm.requests)
    answer = page.evaluate("""async () => {
        const r = await SillyTavern.getContext().executeSlashCommandsWithOptions('/dle-review What is missing?');
        return String(r?.pipe ?? ''); }""")
    assert answer == REVIEW_ANSWER, answer
    sent = [r for r in fake_llm.requests[asked:] if "[DeepLore Enhanced Review" in json.dumps(r.body)]
    assert len(sent) == 1 and "LORE-EMBER" in json.dumps(sent[0].body), "the whole vault went to the model once"
    chat = page.evaluate("() => SillyTavern.getContext().chat.map(m => ({ mes: m.mes, is_user: m.is_user }))")
    assert chat[before:] == [{"mes": "What is missing?", "is_user": True}, {"mes": REVIEW_ANSWER, "is_user": False}]
    assert not any("[DeepLore Enhanced Review" in m["mes"] for m in chat)
    page.screenshot("writers-review")
    tok = token()
    page.send(f"Thank you. {tok}", f"Fake LLM reply to {tok}.")
    assert "[DeepLore Enhanced Review" not in text_of(prompt_for(fake_llm, tok)), "the dump is not in later prompts"
