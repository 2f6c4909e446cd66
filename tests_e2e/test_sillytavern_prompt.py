"""A real SillyTavern in a real headless Chromium talks to our fake LLM."""

from __future__ import annotations

import uuid


def token() -> str:
    return f"E2E-{uuid.uuid4().hex[:8]}"


def test_message_reaches_the_llm_and_the_reply_is_shown(st_page, fake_llm):
    t = token()
    shown = st_page.send(f"Hello there, {t}", f"Fake LLM reply to {t}.")
    st_page.screenshot("reply")
    assert any(t in r.user_text for r in fake_llm.requests)
    assert f"Fake LLM reply to {t}." in shown
