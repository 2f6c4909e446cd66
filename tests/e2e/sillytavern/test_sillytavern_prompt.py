"""A real SillyTavern in a real headless Chromium, set to the Custom (OpenAI-compatible) chat
completion source at our fake LLM: what a person types reaches the model, the reply is shown, and a
UI extension shipped in this repository (tests/e2e/sillytavern/proof_extension) puts text into the prompt at the
position, depth and role it asks for."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.sillytavern.conftest import PROOF_GLOBAL_NAME, PROOF_NAME
from tests.e2e.sillytavern.sillytavern import USER
from tests.fakes.ai_provider import FakeAiProvider, SeenAiRequest

MARKER = "DLE-PROOF-MARKER"
IN_PROMPT, IN_CHAT = 0, 1  # SillyTavern's extension_prompt_types
ROLES = {0: "system", 1: "user", 2: "assistant"}  # SillyTavern's extension_prompt_roles


def token() -> str:
    return f"E2E-{uuid.uuid4().hex[:8]}"


def generation_for(fake: FakeAiProvider, tok: str) -> SeenAiRequest:
    """The chat completion SillyTavern sent for the message carrying `tok`."""
    sent = [r for r in fake.requests if r.wire == "openai" and tok in r.user_text]
    assert sent, f"no chat completion carried {tok}; the fake saw {[r.path for r in fake.requests]}"
    return sent[-1]


def dump(messages: list[dict]) -> str:
    return json.dumps([{"role": m.get("role"), "content": str(m.get("content"))[:80]} for m in messages], indent=1)


def marker_index(messages: list[dict], tok: str) -> int:
    found = [
        i
        for i, m in enumerate(messages)
        if f"{MARKER} [seen: " in str(m.get("content")) and tok in str(m.get("content"))
    ]
    assert len(found) == 1, f"the marker for {tok} should be in exactly one message:\n{dump(messages)}"
    return found[0]


def place(st_page, **where) -> None:
    """Change where the proof extension puts its text (its settings, as the app's installer writes them)."""
    st_page.evaluate("(where) => Object.assign(SillyTavern.getContext().extensionSettings.dle_proof, where)", where)


def test_a_typed_message_reaches_the_llm_and_its_reply_is_shown(st_page, fake_llm):
    tok = token()
    shown = st_page.send(f"Hello there, {tok}", f"Fake LLM reply to {tok}.")
    st_page.screenshot("reply")
    request = generation_for(fake_llm, tok)
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "fake-model"
    assert request.body["stream"] is True  # SillyTavern's default, and the fake streamed it back
    assert request.body["messages"][-1]["role"] in ("user", "system")
    assert f"Fake LLM reply to {tok}." in shown


def test_a_reply_without_streaming_is_shown_too(st_page, fake_llm):
    st_page.set_streaming(False)
    try:
        tok = token()
        shown = st_page.send(f"No streaming now, {tok}", f"Fake LLM reply to {tok}.")
    finally:
        st_page.set_streaming(True)
    assert generation_for(fake_llm, tok).body.get("stream") is False
    assert f"Fake LLM reply to {tok}." in shown


def test_the_proof_extension_is_installed_for_the_user_and_loaded(st_page, sillytavern):
    assert (sillytavern.user_dir / "extensions" / PROOF_NAME / "manifest.json").is_file()
    assert sillytavern.user_dir.name == USER
    assert st_page.evaluate("() => globalThis.dleProof?.loaded === true")


def test_sillytavern_finds_extensions_in_the_user_folder_and_the_all_users_folder(st_page):
    found = st_page.evaluate("""async () => {
        const r = await fetch('/api/extensions/discover', { headers: SillyTavern.getContext().getRequestHeaders() });
        return r.ok ? await r.json() : { status: r.status };
    }""")
    assert {"type": "local", "name": f"third-party/{PROOF_NAME}"} in found, found
    assert {"type": "global", "name": f"third-party/{PROOF_GLOBAL_NAME}"} in found, found
    # disabled in the seeded settings, so only the user's copy intercepts generations
    assert st_page.evaluate("() => SillyTavern.getContext().extensionSettings.disabledExtensions") == [
        f"third-party/{PROOF_GLOBAL_NAME}"
    ]


def test_the_seeded_placement_puts_the_marker_last_as_system(st_page, fake_llm):
    """settings.json said: in chat, depth 0, system (written before SillyTavern started)."""
    tok = token()
    st_page.send(f"Where is the marker, {tok}?", f"Fake LLM reply to {tok}.")
    messages = generation_for(fake_llm, tok).body["messages"]
    at = marker_index(messages, tok)
    assert at == len(messages) - 1, dump(messages)
    assert messages[at]["role"] == "system"
    assert f"[seen: Where is the marker, {tok}?]" in messages[at]["content"]  # the interceptor saw this chat


@pytest.mark.parametrize(
    "depth, role", [(1, 1), (2, 2), (3, 0)], ids=["depth1-user", "depth2-assistant", "depth3-system"]
)
def test_the_marker_goes_in_chat_at_the_depth_and_role_asked(st_page, fake_llm, depth, role):
    place(st_page, position=IN_CHAT, depth=depth, role=role)
    try:
        tok = token()
        st_page.send(f"Depth {depth} please, {tok}", f"Fake LLM reply to {tok}.")
    finally:
        place(st_page, position=IN_CHAT, depth=0, role=0)
    messages = generation_for(fake_llm, tok).body["messages"]
    at = marker_index(messages, tok)
    assert messages[at]["role"] == ROLES[role], dump(messages)
    # depth N: N chat messages come after it (the typed one is the last)
    assert at == len(messages) - 1 - depth, dump(messages)
    assert tok in str(messages[-1]["content"]), dump(messages)


def test_the_marker_goes_before_the_chat_history_in_prompt_position(st_page, fake_llm):
    place(st_page, position=IN_PROMPT, depth=0, role=0)
    try:
        tok = token()
        st_page.send(f"Up in the prompt, {tok}", f"Fake LLM reply to {tok}.")
    finally:
        place(st_page, position=IN_CHAT, depth=0, role=0)
    messages = generation_for(fake_llm, tok).body["messages"]
    at = marker_index(messages, tok)
    greeting = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    assert at < greeting, dump(messages)
    assert messages[at]["role"] == "system", dump(messages)


def test_screenshots_of_the_page_are_saved(st_page, shots_dir):
    shot = st_page.screenshot("chat-after-the-proof")
    print(f"screenshot: {shot}")
    assert shot.parent == shots_dir
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
