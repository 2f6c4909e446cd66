"""/dle-review's prompt (core.writers.review): DLE's header with the count and the size, every
entry but the guides as `## Title` and its text joined by `---`, the question (or the general one),
and the answer's length only when one is set."""

from __future__ import annotations

from dle_desktop.core.body import estimate_tokens
from dle_desktop.core.entry import Entry
from dle_desktop.core.writers.review import DEFAULT_QUESTION, SEPARATOR, review_prompt


def entry(title: str, content: str, guide: bool = False) -> Entry:
    return Entry("v", f"{title}.md", title, content, "h", estimate_tokens(content), guide=guide)


def test_every_entry_but_the_guides_in_order_with_the_header_and_question():
    built = review_prompt(
        [entry("Ash", " The ash wood.\n"), entry("How to write", "guide text", guide=True), entry("Birch", "Birch.")],
        "What contradicts?",
        response_tokens=0,
    )
    body = "## Ash\nThe ash wood." + SEPARATOR + "## Birch\nBirch."
    assert (
        built.text
        == f"[DeepLore Enhanced Review — 2 entries, ~{estimate_tokens(body)} tokens]\n\n{body}\n\nWhat contradicts?"
    )
    assert (built.entries, built.question) == (2, "What contradicts?")
    assert built.tokens == estimate_tokens(built.text)
    assert "guide text" not in built.text


def test_no_question_asks_the_general_one_and_a_length_is_asked_for_when_set():
    built = review_prompt([entry("Ash", "x")], "  ", response_tokens=250)
    assert built.question == DEFAULT_QUESTION
    assert built.text.endswith(f"{DEFAULT_QUESTION}\n\nKeep your response under 250 tokens.")


def test_an_empty_vault_still_asks():
    built = review_prompt([], "anything?")
    assert built.entries == 0 and built.text == "[DeepLore Enhanced Review — 0 entries, ~0 tokens]\n\nanything?"
