"""SillyTavern's page in headless Chromium, driven the way a person uses it: open it, dismiss what
pops up, pick a character, type a message, press Send, wait for the reply.

Every wait has a bound and fails with what was on the page (a screenshot) and what SillyTavern
logged, so a failure in CI says where it stopped."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from tests.e2e.sillytavern.sillytavern import SillyTavern

# SillyTavern's own markup, the same on 1.12 and 1.19.
SEND_TEXTAREA = "#send_textarea"
SEND_BUTTON = "#send_but"
CHARACTER_CARD = "#rm_print_characters_block .character_select"
CHARACTERS_DRAWER = "#rightNavDrawerIcon"  # the top bar's "Character Management" button
CHAT_MESSAGES = "#chat .mes"
LEFT_DRAWER_ICON = "#leftNavDrawerIcon"  # the top bar's "AI Response Configuration" button
STREAM_TOGGLE = "#stream_toggle"
POPUP_OK = "dialog.popup[open] .popup-button-ok, #dialogue_popup_ok:visible"


class StepFailed(AssertionError):
    """A step on the page did not happen in time (the message carries a screenshot and the log)."""


class StPage:
    def __init__(self, page: Page, st: SillyTavern, shots: Path) -> None:
        self.page = page
        self.st = st
        self.shots = shots
        self.console: list[str] = []
        self._shot_numbers = itertools.count(1)
        page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda exc: self.console.append(f"pageerror: {exc}"))

    # ---- evidence

    def screenshot(self, name: str) -> Path:
        path = self.shots / f"{next(self._shot_numbers):02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
        try:
            self.page.screenshot(path=str(path), full_page=False)
        except PlaywrightError as exc:  # a crashed page still deserves a readable failure
            return Path(f"(no screenshot: {exc})")
        return path

    def fail(self, what: str, cause: BaseException | None = None) -> StepFailed:
        shot = self.screenshot("failure-" + what[:40])
        console = "\n".join(self.console[-15:]) or "(none)"
        return StepFailed(
            f"{what}\n  screenshot: {shot}\n  page console (last lines):\n{console}\n"
            f"  SillyTavern log {self.st.log_path} (tail):\n{self.st.log_tail()}"
            + (f"\n  cause: {cause}" if cause else "")
        )

    def wait_js(self, what: str, expression: str, arg: Any = None, timeout: float = 30.0) -> Any:
        """Wait until `expression` (a JS function of `arg`) returns something truthy; return it."""
        try:
            return self.page.wait_for_function(expression, arg=arg, timeout=timeout * 1000).json_value()
        except PlaywrightError as exc:
            raise self.fail(f"{what} (not within {timeout:.0f} s)", exc) from None

    def wait_for(self, what: str, selector: str, timeout: float = 30.0, state: str = "visible") -> None:
        try:
            self.page.locator(selector).first.wait_for(state=state, timeout=timeout * 1000)
        except PlaywrightError as exc:
            raise self.fail(f"{what} (not within {timeout:.0f} s)", exc) from None

    # ---- steps

    def open(self, timeout: float = 90.0) -> None:
        """Load SillyTavern and wait until it is ready for input: the character list is filled,
        the extensions are loaded and the chat-completion API is connected."""
        try:
            self.page.goto(self.st.url + "/", wait_until="domcontentloaded", timeout=timeout * 1000)
        except PlaywrightError as exc:
            raise self.fail("SillyTavern's page did not load", exc) from None
        self.wait_for("the character list", CHARACTER_CARD, timeout, state="attached")
        self.wait_js(
            "SillyTavern to connect to the chat-completion API",
            "() => { const status = window.SillyTavern?.getContext?.().onlineStatus;"
            " return status !== undefined && status !== 'no_connection'; }",
            timeout=timeout,
        )
        self.dismiss_popups()

    def dismiss_popups(self) -> int:
        """Press OK on whatever dialog SillyTavern opened by itself (welcome notes, first-run
        questions); returns how many there were."""
        closed = 0
        for _ in range(5):
            ok = self.page.locator(POPUP_OK)
            if ok.count() == 0 or not ok.first.is_visible():
                break
            ok.first.click()
            closed += 1
        return closed

    def open_character(self, name: str, timeout: float = 30.0) -> None:
        """Click the character's card in the list and wait for its chat (the greeting)."""
        card = self.page.locator(CHARACTER_CARD).filter(has_text=name).first
        try:
            if not card.is_visible():  # 1.19 starts on its welcome screen with the drawer closed
                self.page.locator(CHARACTERS_DRAWER).click(timeout=timeout * 1000)
            card.click(timeout=timeout * 1000)
        except PlaywrightError as exc:
            raise self.fail(f"no character card named {name!r} to click", exc) from None
        self.wait_js(
            f"{name}'s chat to open",
            "(name) => { const c = SillyTavern.getContext();"
            " return c.characterId !== undefined && c.name2 === name && c.chat.length > 0; }",
            arg=name,
            timeout=timeout,
        )
        self.wait_for(f"{name}'s greeting", CHAT_MESSAGES, timeout)

    def send(self, text: str, expect_reply: Callable[[str], bool] | str, timeout: float = 60.0) -> str:
        """Type `text`, press Send, wait for the model's reply to be shown in full and for
        SillyTavern to accept input again; return the reply's text as shown."""
        before = self.page.locator(CHAT_MESSAGES).count()
        box = self.page.locator(SEND_TEXTAREA)
        box.fill(text)
        self.press_send()
        expected = expect_reply if isinstance(expect_reply, str) else None
        shown = self.wait_js(
            "the reply to appear in the chat",
            """([before, expected]) => {
                const ctx = SillyTavern.getContext();
                const last = ctx.chat[ctx.chat.length - 1];
                const stop = document.querySelector('#mes_stop');
                const idle = !stop || getComputedStyle(stop).display === 'none';
                if (document.querySelectorAll('#chat .mes').length < before + 2 || !last || last.is_user || !idle)
                    return false;
                const node = document.querySelector('#chat .mes:last-child .mes_text');
                const text = node ? node.innerText : '';
                return (expected === null || text.includes(expected)) ? text : false;
            }""",
            arg=[before, expected],
            timeout=timeout,
        )
        if callable(expect_reply) and not expect_reply(shown):
            raise self.fail(f"the reply shown was not the one expected: {shown!r}")
        return shown

    def press_send(self, attempts: int = 5) -> None:
        """Press Send until SillyTavern takes the message (the box empties). Right after a reply
        is shown SillyTavern may still be finishing that generation and ignores a click."""
        box = self.page.locator(SEND_TEXTAREA)
        for _ in range(attempts):
            self.page.locator(SEND_BUTTON).click()
            try:
                self.page.wait_for_function(
                    "(sel) => document.querySelector(sel)?.value === ''", arg=SEND_TEXTAREA, timeout=3000
                )
                return
            except PlaywrightError:
                continue
        raise self.fail(
            f"SillyTavern did not take the message {box.input_value()[:60]!r} after {attempts} presses of Send"
        )

    def set_streaming(self, on: bool) -> None:
        """Tick or untick "Streaming" in the left drawer (AI Response Configuration), as a person would."""
        drawer = self.page.locator(LEFT_DRAWER_ICON)
        drawer.click()
        box = self.page.locator(STREAM_TOGGLE)
        try:
            box.set_checked(on, timeout=10_000)
        except PlaywrightError as exc:
            raise self.fail("could not switch streaming " + ("on" if on else "off"), exc) from None
        finally:
            drawer.click()
        self.wait_js(
            "SillyTavern to take the streaming setting",
            "(on) => SillyTavern.getContext().chatCompletionSettings?.stream_openai === on"
            " || document.querySelector('#stream_toggle').checked === on",
            arg=on,
            timeout=10,
        )

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)
