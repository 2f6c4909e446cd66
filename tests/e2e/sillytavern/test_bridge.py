"""The DLE Desktop bridge in a real SillyTavern, in a real Chromium, against DLE Desktop's real
`serve` and a fake LLM that records every prompt: the lore DLE Desktop chooses reaches the prompt
at its place and role, swipes roll back, chats keep their own state, a stopped DLE Desktop never
blocks a reply, refusals are refusals, /dle-why explains, and vector routing stores SillyTavern's
chat vectors in DLE Desktop.

The tests run in file order and share one chat (each sends its own messages)."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from urllib.parse import quote

import httpx
import pytest

from dle_desktop.st_bridge.install import bundled_version
from dle_desktop.vectors.st_hash import get_string_hash
from tests.e2e.sillytavern.dle_server import VAULT_NOTES, DleServer
from tests.fakes.ai_provider import FakeAiProvider, SeenAiRequest

pytestmark = pytest.mark.usefixtures("bridge_page")


def token() -> str:
    return f"E2E-{uuid.uuid4().hex[:8]}"


def requests_with(fake: FakeAiProvider, tok: str) -> list[SeenAiRequest]:
    return [r for r in fake.requests if r.wire == "openai" and tok in r.user_text]


def prompt_for(fake: FakeAiProvider, tok: str) -> list[dict]:
    """The messages of the last completion that carried `tok`, less the proof extension's marker
    (installed for the same user, it adds one at depth 0)."""
    sent = requests_with(fake, tok)
    assert sent, f"no chat completion carried {tok}"
    return [m for m in sent[-1].body["messages"] if "DLE-PROOF-MARKER" not in str(m.get("content"))]


def text_of(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content")) for m in messages)


def index_of(messages: list[dict], marker: str) -> int:
    found = [i for i, m in enumerate(messages) if marker in str(m.get("content"))]
    assert len(found) == 1, f"{marker} should be in exactly one message, found {found}"
    return found[0]


def last_result(page) -> dict:
    return page.evaluate("() => globalThis.dleDesktopBridge.state.last?.result ?? null")


def run_command(page, command: str) -> None:
    page.page.locator("#send_textarea").fill(command)
    page.press_send()


def popup_text(page, must_contain: str, timeout: float = 20.0) -> str:
    return page.wait_js(
        f"a popup that says {must_contain!r}",
        """(needle) => { const all = [...document.querySelectorAll('.dle-desktop-bridge-popup')];
                            const hit = all.reverse().find(p => p.innerText.includes(needle));
                            return hit ? hit.innerText : false; }""",
        arg=must_contain,
        timeout=timeout,
    )


def close_popups(page) -> None:
    page.evaluate("""() => document.querySelectorAll('dialog[open] .popup-button-ok, dialog[open] .popup-button-close')
        .forEach(b => b.click())""")
    page.page.wait_for_timeout(300)


def toast_text(page, must_contain: str, timeout: float = 15.0) -> str:
    return page.wait_js(
        f"a notice that says {must_contain!r}",
        """(needle) => { const t = [...document.querySelectorAll('#toast-container .toast')]
                            .map(n => n.innerText).find(x => x.includes(needle)); return t || false; }""",
        arg=must_contain,
        timeout=timeout,
    )


def clear_toasts(page) -> None:
    page.evaluate("() => globalThis.toastr?.remove?.()")  # at once (clear() fades them out slowly)


# ---- connected -------------------------------------------------------------------------------


def test_the_bridge_says_hello_and_the_app_sees_the_page(bridge_page, dle: DleServer, sillytavern):
    seen = dle.get("/api/dle/v1/bridge").json()
    assert seen["connected"] is True, seen
    assert seen["extension_version"] == bundled_version()
    assert seen["origin"] == sillytavern.url
    panel = bridge_page.evaluate("() => document.getElementById('dle_desktop_bridge_status')?.innerText ?? ''")
    assert "Connected to DLE Desktop" in panel and f"{len(VAULT_NOTES)} entries" in panel, panel


# ---- lore in the prompt ----------------------------------------------------------------------


def test_a_key_puts_its_entry_into_the_prompt_at_its_depth_and_role(bridge_page, fake_llm, dle):
    tok = token()
    bridge_page.send(f"Shall we rest at the moonwell tonight? {tok}", f"Fake LLM reply to {tok}.")
    bridge_page.screenshot("bridge-moonwell")
    messages = prompt_for(fake_llm, tok)
    at = index_of(messages, "LORE-MOONWELL")
    assert messages[at]["role"] == "system"
    # in chat at depth 2: the two newest chat messages (the last reply and the typed one) come after it
    assert at == len(messages) - 3, [m.get("role") for m in messages]
    assert tok in str(messages[-1]["content"])
    assert "<Moonwell Tavern>" in messages[at]["content"]  # DLE's default injection template
    body = text_of(messages)
    assert "LORE-CONSTANT" in body  # a constant entry is always there
    assert "LORE-EMBER" not in body and "LORE-LAMPS" not in body and "LORE-OUTLET" not in body  # keys not named
    result = last_result(bridge_page)
    assert sorted(i["title"] for i in result["injected"]) == ["Moonwell Tavern", "World Rules"]
    seen = dle.get("/api/dle/v1/bridge").json()
    assert seen["generations"] >= 1 and "Moonwell Tavern" in seen["last_injected"], seen


def test_an_entry_on_cooldown_stays_out_and_dle_why_says_why(bridge_page, fake_llm):
    first, second = token(), token()
    bridge_page.send(f"I draw the ember blade. {first}", f"Fake LLM reply to {first}.")
    assert "LORE-EMBER" in text_of(prompt_for(fake_llm, first))
    bridge_page.send(f"The ember blade hums again. {second}", f"Fake LLM reply to {second}.")
    body = text_of(prompt_for(fake_llm, second))
    assert "LORE-EMBER" not in body, "an entry with a cooldown came back at once"
    assert "LORE-CONSTANT" in body
    ember = [v for v in last_result(bridge_page)["verdicts"] if v["title"] == "Ember Blade"]
    assert any("cooldown" in (v["stage"] + v["reason"]).lower() for v in ember), ember

    run_command(bridge_page, "/dle-why")
    shown = popup_text(bridge_page, "Ember Blade")
    bridge_page.screenshot("bridge-dle-why")
    assert "Why this lore?" in shown
    assert "World Rules" in shown and "cooldown" in shown.lower(), shown
    close_popups(bridge_page)


def set_authors_note(page, text: str) -> None:
    """Type into SillyTavern's Author's Note for this chat, inserted every message, as a person would."""
    page.evaluate(
        """(text) => {
        const set = (sel, value) => { const el = document.querySelector(sel); el.value = value;
            el.dispatchEvent(new Event('input', { bubbles: true })); };
        set('#extension_floating_interval', '1');
        set('#extension_floating_prompt', text); }""",
        text,
    )


def test_an_outlet_entry_reaches_the_prompt_through_its_macro(bridge_page, fake_llm):
    set_authors_note(bridge_page, "Map notes: {{dle-outlet-maps}}")
    try:
        tok = token()
        bridge_page.send(f"I unroll the old map. {tok}", f"Fake LLM reply to {tok}.")
        messages = prompt_for(fake_llm, tok)
        at = index_of(messages, "LORE-OUTLET")
        assert "Map notes: " in messages[at]["content"], messages[at]  # where the macro was, not at a depth of its own
        assert "<Harbour Map>" in messages[at]["content"]
        placed = bridge_page.evaluate("() => globalThis.dleDesktopBridge.placedKeys()")
        assert "customWIOutlet_maps" in placed, placed
    finally:
        set_authors_note(bridge_page, "")


def test_a_swipe_rolls_back_and_decides_again(bridge_page, fake_llm):
    tok = token()
    bridge_page.send(f"Back to the moonwell, then. {tok}", f"Fake LLM reply to {tok}.")
    assert "LORE-MOONWELL" in text_of(prompt_for(fake_llm, tok))
    before = len(requests_with(fake_llm, tok))
    bridge_page.page.locator("#chat .mes").last.locator(".swipe_right").click()
    bridge_page.wait_js(
        "the swipe's generation to reach the LLM and its reply to show",
        """(n) => globalThis.dleDesktopBridge.state.last?.type === 'swipe'
                            && !document.querySelector('#mes_stop:not([style*="none"])')""",
        arg=before,
        timeout=60,
    )
    bridge_page.wait_js(
        "the swipe to finish",
        """() => { const s = document.querySelector('#mes_stop');
                            return !s || getComputedStyle(s).display === 'none'; }""",
        timeout=60,
    )
    assert len(requests_with(fake_llm, tok)) == before + 1
    result = last_result(bridge_page)
    assert result["swipe_rollback"] is True
    # Without the rollback the entry injected a moment ago would be held back as a duplicate.
    assert "LORE-MOONWELL" in text_of(prompt_for(fake_llm, tok))
    assert "Moonwell Tavern" in [i["title"] for i in result["injected"]]


def test_another_chat_uses_its_own_state(bridge_page, fake_llm, dle):
    first_chat = bridge_page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")
    run_command(bridge_page, "/newchat")  # SillyTavern's own command, on 1.12 and 1.19
    bridge_page.wait_js(
        "a new chat to open",
        "(old) => { const id = SillyTavern.getContext().getCurrentChatId(); return id && id !== old ? id : false; }",
        arg=first_chat,
        timeout=30,
    )
    bridge_page.dismiss_popups()
    second_chat = bridge_page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")
    tok = token()
    bridge_page.send(f"Tell me of the ember blade. {tok}", f"Fake LLM reply to {tok}.")
    # In the first chat the blade is still cooling down; this chat never injected it.
    assert "LORE-EMBER" in text_of(prompt_for(fake_llm, tok))
    assert bridge_page.evaluate("() => globalThis.dleDesktopBridge.state.last.chatId") == second_chat
    one = dle.get("/api/dle/v1/chats/" + quote(first_chat, safe="")).json()
    two = dle.get("/api/dle/v1/chats/" + quote(second_chat, safe="")).json()
    assert two["generation_count"] == 1, two
    assert one["generation_count"] >= 4, one


def chat_state(dle: DleServer, chat_id: str) -> dict:
    return dle.get("/api/dle/v1/chats/" + quote(chat_id, safe="")).json()


def test_a_branch_starts_with_the_state_of_its_chat(bridge_page, fake_llm, dle):
    parent = bridge_page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")
    before = chat_state(dle, parent)
    run_command(
        bridge_page, "/branch-create"
    )  # from the greeting: the message count matches the parent's last generation
    branch = bridge_page.wait_js(
        "the branch to open",
        "(old) => { const id = SillyTavern.getContext().getCurrentChatId(); return id && id !== old ? id : false; }",
        arg=parent,
        timeout=30,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and chat_state(dle, branch)["generation_count"] == 0:
        time.sleep(0.2)
    copied = chat_state(dle, branch)
    assert copied["generation_count"] == before["generation_count"] and copied["cooldowns"] == before["cooldowns"]
    # The blade was injected in the parent a moment ago: in the branch it is cooling down too.
    tok = token()
    bridge_page.send(f"The ember blade, once more. {tok}", f"Fake LLM reply to {tok}.")
    ember = [v for v in last_result(bridge_page)["verdicts"] if v["title"] == "Ember Blade"]
    assert "LORE-EMBER" not in text_of(prompt_for(fake_llm, tok)), ember
    assert chat_state(dle, branch)["generation_count"] == before["generation_count"] + 1
    assert chat_state(dle, parent)["generation_count"] == before["generation_count"]  # the parent is untouched


def test_a_chat_deleted_in_sillytavern_is_forgotten(bridge_page, dle):
    doomed = bridge_page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")
    assert doomed in [c["chat_id"] for c in dle.get("/api/dle/v1/chats").json()["chats"]]
    run_command(bridge_page, "/delchat")
    deadline = time.monotonic() + 20
    # /delchat confirms its own question (pressing OK ourselves would make 1.12 reopen its chat list).
    while time.monotonic() < deadline and doomed in [
        c["chat_id"] for c in dle.get("/api/dle/v1/chats").json()["chats"]
    ]:
        time.sleep(0.3)
    assert doomed not in [c["chat_id"] for c in dle.get("/api/dle/v1/chats").json()["chats"]]
    bridge_page.wait_js(
        "SillyTavern to open another chat",
        "(old) => { const id = SillyTavern.getContext().getCurrentChatId(); return id && id !== old; }",
        arg=doomed,
        timeout=30,
    )
    # 1.12 leaves its Chat History list open after /delchat (and may redraw it once more): close
    # it, as a person would, until it stays closed.
    closed_since = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = bridge_page.evaluate("""() => { const p = document.querySelector('#shadow_select_chat_popup');
            const open = p && getComputedStyle(p).display !== 'none';
            if (open) document.querySelector('#select_chat_cross')?.click();
            return open; }""")
        if shown:
            closed_since = None
        elif closed_since is None:
            closed_since = time.monotonic()
        elif time.monotonic() - closed_since > 1.5:
            break
        time.sleep(0.25)
    assert closed_since is not None, "SillyTavern's Chat History list would not close"


def test_deeplore_enhanced_itself_beside_the_bridge_is_pointed_out(browser, sillytavern, dle, shots_dir):
    """DLE's external hook present at load (as when the DeepLore Enhanced extension is enabled too):
    the bridge says both would inject, once, and its panel keeps saying it."""
    from tests.e2e.sillytavern.st_page import StPage

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script("globalThis.deepLoreEnhanced_matchText = () => ({ text: '', count: 0, tokens: 0 });")
        page = StPage(context.new_page(), sillytavern, shots_dir)
        page.open()
        page.wait_js(
            "the bridge to notice DeepLore Enhanced",
            "() => globalThis.dleDesktopBridge?.state?.dleAlsoActive === true",
            timeout=30,
        )
        notice = toast_text(page, "DeepLore Enhanced is also active")
        assert "Turn one of them off" in notice
        panel = page.evaluate("() => document.getElementById('dle_desktop_bridge_status')?.innerText ?? ''")
        assert "both inject lore" in panel, panel
    finally:
        context.close()


# ---- refusals and failures -------------------------------------------------------------------


def test_with_dle_desktop_stopped_the_reply_still_comes_and_a_notice_says_why(bridge_page, fake_llm, dle):
    clear_toasts(bridge_page)
    dle.stop()
    try:
        tok = token()
        shown = bridge_page.send(f"Is anyone at the moonwell? {tok}", f"Fake LLM reply to {tok}.", timeout=90)
        assert f"Fake LLM reply to {tok}." in shown
        notice = toast_text(bridge_page, "without lore")
        bridge_page.screenshot("bridge-dle-stopped")
        assert "not reachable" in notice, notice
        body = text_of(prompt_for(fake_llm, tok))
        assert "LORE-" not in body, "lore from an earlier generation stayed in the prompt"
    finally:
        dle.start()
    # Back up: the next generation gets its lore again, without reloading SillyTavern.
    tok = token()
    bridge_page.send(f"Harbour lamps are lit. {tok}", f"Fake LLM reply to {tok}.")
    assert "LORE-LAMPS" in text_of(prompt_for(fake_llm, tok))


def test_a_wrong_token_is_refused_and_the_user_is_told(bridge_page, fake_llm, dle):
    clear_toasts(bridge_page)
    bridge_page.evaluate(
        "() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.token = 'not-the-token'; }"
    )
    try:
        tok = token()
        bridge_page.send(f"The moonwell again? {tok}", f"Fake LLM reply to {tok}.")
        notice = toast_text(bridge_page, "refused the token")
        assert "without lore" in notice
        assert "LORE-" not in text_of(prompt_for(fake_llm, tok))
    finally:
        bridge_page.evaluate("() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.token = ''; }")
    answer = bridge_page.evaluate(
        """async (url) => { const r = await fetch(url + '/api/dle/v1/status',
        { headers: { 'X-DLE-Token': 'wrong' } }); return { status: r.status, body: await r.json() }; }""",
        dle.url,
    )
    assert answer["status"] == 401 and answer["body"]["cause"] == "bad_token", answer


class BlackHole:
    """A TCP server on 127.0.0.1 that accepts connections and never answers: a DLE Desktop that hangs."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def hanging_dle(bridge_page):
    hole = BlackHole()
    bridge_page.evaluate(
        "(url) => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.server_url = url; }", hole.url
    )
    try:
        yield hole
    finally:
        bridge_page.evaluate("""() => { const s = SillyTavern.getContext().extensionSettings.dle_desktop_bridge;
            s.server_url = ''; s.deadline_ms = 0; }""")
        hole.close()


def test_a_hanging_dle_desktop_costs_the_deadline_and_no_more(bridge_page, fake_llm, hanging_dle):
    clear_toasts(bridge_page)
    bridge_page.evaluate("() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.deadline_ms = 1500; }")
    tok = token()
    started = time.monotonic()
    bridge_page.send(f"Anyone at the moonwell? {tok}", f"Fake LLM reply to {tok}.")
    waited = time.monotonic() - started
    notice = toast_text(bridge_page, "without lore")
    assert "did not answer within 1.5 s" in notice, notice
    assert waited >= 1.5, waited  # it did wait for the deadline (an upper bound is not a test's business)
    assert "LORE-" not in text_of(prompt_for(fake_llm, tok))


def test_stop_aborts_the_request_in_flight(bridge_page, fake_llm, hanging_dle):
    clear_toasts(bridge_page)
    bridge_page.evaluate(
        "() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.deadline_ms = 120000; }"
    )
    tok = token()
    bridge_page.page.locator("#send_textarea").fill(f"Never mind, {tok}")
    bridge_page.press_send()
    bridge_page.wait_js(
        "the bridge to be waiting on the hanging server",
        "() => document.querySelector('#mes_stop')"
        " && getComputedStyle(document.querySelector('#mes_stop')).display !== 'none'",
        timeout=20,
    )
    bridge_page.page.wait_for_timeout(500)
    bridge_page.page.locator("#mes_stop").click()
    bridge_page.wait_js(
        "the generation to end after Stop (the deadline is two minutes away)",
        "() => { const s = document.querySelector('#mes_stop'); return !s || getComputedStyle(s).display === 'none'; }",
        timeout=30,
    )
    shown = bridge_page.evaluate(
        "() => [...document.querySelectorAll('#toast-container .toast')].map(t => t.innerText).join('|')"
    )
    assert "without lore" not in shown, "a Stop is not a failure to tell the user about"
    assert not bridge_page.evaluate(
        "() => globalThis.dleDesktopBridge.state.lastError?.includes('did not answer within 120')"
    )


def test_a_foreign_web_page_is_refused(browser, fake_llm, dle):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(fake_llm.url + "/", wait_until="domcontentloaded")  # another origin on this machine
        outcome = page.evaluate(
            """async (url) => { try { const r = await fetch(url + '/api/dle/v1/status');
            return 'read: ' + r.status; } catch (e) { return 'blocked: ' + e.name; } }""",
            dle.url,
        )
        assert outcome == "blocked: TypeError", outcome
    finally:
        context.close()
    refused = httpx.get(dle.url + "/api/dle/v1/status", headers={"Origin": fake_llm.url, "X-DLE-Token": dle.token()})
    assert refused.status_code == 403 and refused.json()["cause"] == "forbidden_origin"
    assert "access-control-allow-origin" not in refused.headers


# ---- vector routing --------------------------------------------------------------------------


def test_with_vector_routing_on_sillytavern_vectors_land_in_our_store(bridge_page, dle):
    dle.stop()
    dle.update_settings(st_vector_routing=True)
    dle.start()
    try:
        bridge_page.evaluate("() => globalThis.dleDesktopBridge.hello()")
        bridge_page.wait_js(
            "the bridge to learn that routing is on",
            "() => globalThis.dleDesktopBridge.state.server?.vector_routing === true",
        )
        chat_id = bridge_page.evaluate("() => SillyTavern.getContext().getCurrentChatId()")
        # As a person would: Extensions → Vector Storage → "Enabled for chat messages".
        bridge_page.evaluate("""() => { const box = document.querySelector('#vectors_enabled_chats');
            box.checked = true; box.dispatchEvent(new Event('input', { bubbles: true }));
            box.dispatchEvent(new Event('change', { bubbles: true })); }""")
        tok = token()
        bridge_page.send(f"The lamplighters walk the quay at dusk. {tok}", f"Fake LLM reply to {tok}.")
        typed = f"The lamplighters walk the quay at dusk. {tok}"
        # Vector Storage syncs a few messages per event; "Vectorize All" does the whole chat now.
        # SillyTavern 1.12 aborts it while it still counts the reply's generation as in progress
        # (is_send_press; on a busy machine that outlasts the reply shown), so it is pressed again
        # every 10 s until the message is there.
        deadline = time.monotonic() + 120
        hashes: list = []
        pressed = 0.0
        while time.monotonic() < deadline and get_string_hash(typed) not in hashes:
            if time.monotonic() - pressed > 10:  # not while a run is still going (its progress shows)
                bridge_page.evaluate("""() => { const run = document.querySelector('#vectorize_progress');
                    if (run && getComputedStyle(run).display !== 'none') return;
                    document.querySelector('#vectors_vectorize_all').click(); }""")
                pressed = time.monotonic()
            listed = dle.post("/api/vector/list", {"collectionId": chat_id, "source": "transformers"})
            hashes = listed.json() if listed.status_code == 200 else []
            time.sleep(0.5)
        bridge_page.screenshot("bridge-vectors-routed")
        assert get_string_hash(typed) in hashes, f"the typed message did not reach DLE Desktop's store: {hashes}"
        assert len(set(hashes)) >= 3, hashes  # the greeting and the earlier messages too
        assert bridge_page.evaluate("() => globalThis.dleDesktopBridge.routingStats.routed") > 0
        found = dle.post(
            "/api/vector/query",
            {"collectionId": chat_id, "source": "transformers", "searchText": typed, "topK": 10, "threshold": 0.0},
        )
        assert found.status_code == 200, found.text
        stored = dle.post("/api/vector/list", {"collectionId": chat_id, "source": "transformers"}).json()
        assert found.json()["hashes"] and set(found.json()["hashes"]) <= set(stored), found.json()
    finally:
        bridge_page.evaluate("""() => { const box = document.querySelector('#vectors_enabled_chats');
            box.checked = false; box.dispatchEvent(new Event('input', { bubbles: true }));
            box.dispatchEvent(new Event('change', { bubbles: true })); }""")
        dle.stop()
        dle.update_settings(st_vector_routing=False)
        dle.start()


# ---- semantic prefetch -----------------------------------------------------------------------


def semantic_counters(dle: DleServer) -> dict:
    return dle.get("/api/dle/v1/status").json()["semantic"]


def test_with_semantic_search_on_the_bridge_embeds_the_reply_and_the_draft_ahead(bridge_page, dle):
    dle.stop()
    dle.update_settings(semantic_enabled=True)
    dle.start()
    try:
        bridge_page.evaluate("() => globalThis.dleDesktopBridge.hello()")
        bridge_page.wait_js(
            "the bridge to learn that semantic search is on",
            "() => globalThis.dleDesktopBridge.state.server?.semantic_enabled === true",
        )
        tok = token()
        bridge_page.send(f"Tell me about the bell under the water {tok}", f"Fake LLM reply to {tok}.")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and semantic_counters(dle)["prefetched"] < 1:
            time.sleep(0.3)
        assert semantic_counters(dle)["prefetched"] >= 1, "the reply was not prefetched when it arrived"
        # Typing the next message (and pausing) sends it too; pressing Send then finds it embedded.
        draft = f"Then I will row out to it at slack water {token()}"
        before = semantic_counters(dle)["prefetched"]
        bridge_page.page.locator("#send_textarea").fill(draft)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and semantic_counters(dle)["prefetched"] <= before:
            time.sleep(0.3)
        counters = semantic_counters(dle)
        assert counters["prefetched"] > before, "the typed message was not prefetched"
        misses = counters["query_cache_misses"]
        bridge_page.press_send()
        bridge_page.wait_js(
            "the reply to the typed message",
            "() => { const c = SillyTavern.getContext().chat; return c.length && !c[c.length - 1].is_user"
            " && c[c.length - 2]?.mes?.includes('slack water'); }",
            timeout=60,
        )
        after = semantic_counters(dle)
        assert after["query_cache_misses"] == misses, (counters, after)  # nothing left to embed at Send
        assert after["query_cache_hits"] > counters["query_cache_hits"]
    finally:
        dle.stop()
        dle.update_settings(semantic_enabled=False)
        dle.start()


# ---- lore tools (SillyTavern's function calling) ---------------------------------------------

TOOL_NAMES = ("dle_search_lore", "dle_flag_lore")


def registered_tools(page) -> list[str]:
    return page.evaluate(
        "() => SillyTavern.getContext().ToolManager.tools.map(t => t.toFunctionOpenAI().function.name)"
    )


def set_lore_tools(page, on: bool) -> None:
    """Tick or untick the bridge panel's "Let the model search the lore vault" box (its change handler)."""
    page.evaluate(
        """(on) => { const box = document.getElementById('dle_desktop_bridge_lore_tools');
        box.checked = on; box.dispatchEvent(new Event('change', { bubbles: true })); }""",
        on,
    )


def set_function_calling(page, on: bool) -> None:
    """SillyTavern's own "Enable function calling" box (AI Response Configuration)."""
    page.evaluate(
        """(on) => { const box = document.getElementById('openai_function_calling');
        box.checked = on; box.dispatchEvent(new Event('input', { bubbles: true })); }""",
        on,
    )
    page.wait_js(
        "SillyTavern to take the function-calling setting",
        "(on) => SillyTavern.getContext().chatCompletionSettings.function_calling === on",
        arg=on,
        timeout=10,
    )


def wait_for_saved_settings(st, stream: bool, function_calling: bool, timeout: float = 15.0) -> None:
    """SillyTavern saves its settings a second after a change; later pages (the proof's) load them,
    so the test leaves them saved as it found them."""
    import json

    deadline = time.monotonic() + timeout
    oai: dict = {}
    while time.monotonic() < deadline:
        try:
            oai = json.loads((st.user_dir / "settings.json").read_text(encoding="utf-8")).get("oai_settings", {})
        except (OSError, ValueError):
            oai = {}
        if oai.get("stream_openai") is stream and bool(oai.get("function_calling")) is function_calling:
            return
        time.sleep(0.25)
    raise AssertionError(
        f"SillyTavern did not save stream={stream}, function_calling={function_calling}: "
        f"{ {k: oai.get(k) for k in ('stream_openai', 'function_calling')} }"
    )


def gaps(dle: DleServer) -> list[dict]:
    return dle.get("/api/dle/v1/gaps").json()["gaps"]


def test_lore_tools_let_the_model_search_the_vault_and_a_miss_becomes_a_gap(bridge_page, fake_llm, dle, sillytavern):
    page = bridge_page
    assert page.evaluate("() => SillyTavern.getContext().extensionSettings.dle_desktop_bridge.lore_tools") is False
    assert not set(TOOL_NAMES) & set(registered_tools(page)), "the lore tools are off by default"
    miss = "Qorvath glassweavers"
    tok = token()
    page.set_streaming(False)  # the fake LLM streams text only; a tool call comes back whole
    set_function_calling(page, True)
    try:
        set_lore_tools(page, True)
        assert set(TOOL_NAMES) <= set(registered_tools(page))
        assert page.evaluate("() => SillyTavern.getContext().isToolCallingSupported()") is True
        status = page.evaluate("() => document.getElementById('dle_desktop_bridge_lore_tools_status').innerText")
        assert "Lore tools on" in status, status
        # The model's first answer is a call of our search tool; the second (the default) is the reply.
        fake_llm.reply(
            tool_calls=[{"name": "dle_search_lore", "args": {"queries": [miss], "reason": "the user asked about it"}}]
        )
        page.send(f"What do you know about {miss}? {tok}", f"Fake LLM reply to {tok}.", timeout=90)
        page.screenshot("bridge-lore-tool-call")
        sent = requests_with(fake_llm, tok)
        assert len(sent) == 2, [r.body.get("messages", [])[-1:] for r in sent]
        offered = [t["function"]["name"] for t in sent[0].body.get("tools") or []]
        assert set(TOOL_NAMES) <= set(offered), offered
        tool_messages = [m for m in sent[1].body["messages"] if m.get("role") == "tool"]
        assert tool_messages, sent[1].body["messages"][-3:]
        result = str(tool_messages[-1]["content"])
        assert f'Nothing in the vault about "{miss}"; noted as a gap' in result, result
        recorded = [g for g in gaps(dle) if g["query"] == miss]
        assert len(recorded) == 1 and recorded[0]["type"] == "search", gaps(dle)
        assert "the user asked about it" in recorded[0]["reason"]
        # What the bridge injected this generation is not searched again.
        injected = sorted(i["title"] for i in last_result(page)["injected"])
        assert (
            injected and sorted(page.evaluate("() => globalThis.dleDesktopBridge.tools.injectedTitles()")) == injected
        )

        # A search that hits returns the entry's text; a flag returns a confirmation and records a gap.
        found = page.evaluate("() => globalThis.dleDesktopBridge.tools.search({ queries: ['ember blade'] })")
        assert "LORE-EMBER" in found and "From the lore vault" in found, found
        flagged = page.evaluate("""() => globalThis.dleDesktopBridge.tools.flag({ title: 'Harbour tolls of Qorvath',
            reason: 'the story charged one', urgency: 'high', flag_type: 'gap' })""")
        assert flagged.startswith('Flagged "Harbour tolls of Qorvath" as missing lore') and "high" in flagged, flagged
        flags = [g for g in gaps(dle) if g["query"] == "Harbour tolls of Qorvath"]
        assert len(flags) == 1 and flags[0]["type"] == "flag" and flags[0]["urgency"] == "high", gaps(dle)
        # Bad arguments and a refusal come back to the model as text, never as an error thrown into ST.
        assert "1 to 4 search queries" in page.evaluate("() => globalThis.dleDesktopBridge.tools.search({})")
        page.evaluate(
            "() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.token = 'not-the-token'; }"
        )
        try:
            refused = page.evaluate("() => globalThis.dleDesktopBridge.tools.search({ queries: ['anything'] })")
        finally:
            page.evaluate("() => { SillyTavern.getContext().extensionSettings.dle_desktop_bridge.token = ''; }")
        assert refused.startswith("The lore vault could not be searched") and "token" in refused, refused

        set_lore_tools(page, False)
        assert not set(TOOL_NAMES) & set(registered_tools(page)), "turning the setting off unregisters the tools"
    finally:
        set_lore_tools(page, False)
        set_function_calling(page, False)
        page.set_streaming(True)
        page.evaluate("() => SillyTavern.getContext().saveSettingsDebounced()")
        wait_for_saved_settings(sillytavern, stream=True, function_calling=False)
