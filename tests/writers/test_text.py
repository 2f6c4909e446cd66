"""The writers' pure text functions (core/writers): DLE's messages, the Obsidian cleaning, the
session and suggestion notes to the byte, the permissive parsing with its repairs and refusals,
the notepad's tags, asides, 64 KiB trim and rollback."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from dle_desktop.core.pipeline.chat_input import parse_messages
from dle_desktop.core.writers.notepad import (
    NOTEPAD_CAP_BYTES,
    append_notes,
    extract_message,
    injection_text,
    read_extracted,
    remove_notes,
    strip_asides,
    take_notes,
    trim_oldest,
)
from dle_desktop.core.writers.prompts import SCRIBE_PROMPT, chosen
from dle_desktop.core.writers.scribe import (
    MAX_SUMMARY_CHARS,
    SummaryRefused,
    clean_summary,
    scribe_message,
    session_note,
    strip_obsidian_syntax,
    transcript,
)
from dle_desktop.core.writers.suggest import (
    Suggestion,
    SuggestionsRefused,
    parse_suggestions,
    suggest_message,
    suggestion_note,
)

# -- Session Scribe ------------------------------------------------------------------------------


def test_the_scribe_message_has_dles_markers_in_order_and_leaves_out_what_is_empty():
    assert scribe_message("A: hi", "before", "the key") == (
        "[PREVIOUS SESSION NOTE]\nbefore\n\n[RECENT CONVERSATION]\nA: hi\n\n[ADDITIONAL FOCUS]\nthe key"
    )
    assert scribe_message("A: hi") == "[RECENT CONVERSATION]\nA: hi"
    assert chosen("  ", SCRIBE_PROMPT) == SCRIBE_PROMPT and chosen("mine", SCRIBE_PROMPT) == "mine"


def test_the_transcript_takes_the_last_messages_and_skips_system_notes():
    msgs = parse_messages(
        [
            {"name": "A", "is_user": True, "mes": "one"},
            {"name": "Sys", "is_system": True, "mes": "hidden"},
            {"name": "B", "mes": "two"},
        ]
    )
    assert transcript(msgs, 20) == "A (user): one\nB (character): two"
    assert transcript(msgs, 1) == "B (character): two"


def test_obsidian_syntax_is_made_inert():
    raw = (
        "Intro {{date}} and <% tp.file.title %> here.\n"
        "%% a hidden\ncomment %%\n"
        "```dataview\nTABLE file.name\n```\n"
        "```button\nname Go\n```\n"
        "~~~customjs\nrun()\n~~~\n"
        "See [the map](obsidian://open?vault=x&file=Map) and obsidian://open?file=y too.\n"
        "Inline `= this.file.name` value.\n"
        "---\n"
        "After the rule.\n"
        "```python\nkept = 1\n```"
    )
    assert strip_obsidian_syntax(raw) == (
        "Intro  and  here.\n\nSee the map and  too.\nInline  value.\n- - -\nAfter the rule.\n```python\nkept = 1\n```"
    )


def test_a_summary_is_refused_when_nothing_is_left_and_cut_when_it_runs_away():
    with pytest.raises(SummaryRefused, match="empty"):
        clean_summary("%% nothing %%\n{{x}}")
    long = ("word " * 200 + "\n\n") * 100
    cut = clean_summary(long)
    assert len(cut) <= MAX_SUMMARY_CHARS and cut.endswith("word")


def test_the_session_note_is_dles_to_the_byte():
    note = session_note('Mira "the Fox"\n', "- she ran", datetime(2026, 1, 2, 3, 4, 5))
    assert note.title == 'Mira "the Fox" - 2026-01-02 03-04-05'
    assert note.text == (
        "---\n"
        "tags: [lorebook-session]\n"
        'date: "2026-01-02T03:04:05"\n'
        'character: "Mira \\"the Fox\\""\n'
        "---\n"
        '# Session: Mira "the Fox", 2026-01-02 03:04:05\n\n'
        "- she ran\n"
    )
    assert session_note("  ", "x", datetime(2026, 1, 2)).title.startswith("Unknown - ")


# -- Auto Lorebook ---------------------------------------------------------------------------------


def test_the_suggestion_message_lists_the_existing_titles_then_the_chat():
    assert suggest_message(["Old Hobb", 'The "Quay"'], "A: hi") == (
        "## Existing lorebook entries (do NOT suggest these):\n"
        '"Old Hobb", "The \\"Quay\\""\n\n'
        "## Recent Chat:\nA: hi\n\n"
        "Suggest new lorebook entries as a JSON array."
    )


GOOD = {"title": "Brass Key", "type": "lore", "keys": ["key", "brass"], "summary": "A key.", "content": "Old."}


def test_suggestions_are_read_out_of_prose_fences_and_thinking():
    raw = "<think>[not this]</think>Sure!\n```json\n" + json.dumps([GOOD]) + "\n```\nHope it helps."
    found, dropped = parse_suggestions(raw, [])
    assert found == [Suggestion("Brass Key", "lore", ("key", "brass"), "A key.", "Old.")] and dropped == []
    wrapped = json.dumps({"suggestions": [GOOD]})
    assert parse_suggestions(wrapped, [])[0][0].title == "Brass Key"


def test_repairs_trailing_commas_a_cut_off_array_odd_types_and_too_few_or_many_keys():
    raw = '[{"title": "A", "summary": "s", "type": "Weapon", "keys": "x, x, y",}, {"title": "B", "summ'
    found, _ = parse_suggestions(raw, [])
    assert [(s.title, s.type, s.keys, s.content) for s in found] == [("A", "lore", ("x", "y"), "s")]
    one_key = parse_suggestions(json.dumps([GOOD | {"keys": ["only"]}]), [])[0][0]
    assert one_key.keys == ("Brass Key", "only")
    many = parse_suggestions(json.dumps([GOOD | {"keys": list("abcdefg")}]), [])[0][0]
    assert many.keys == tuple("abcde")


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"title": "../../etc/passwd", "summary": "s"}, "slash"),
        ({"title": "a..b", "summary": "s"}, "'..'"),
        ({"title": "  ", "summary": "s"}, "empty"),
        ({"title": ". .", "summary": "s"}, "only dots"),
        ({"title": 7, "summary": "s"}, "not text"),
        ({"title": "T", "summary": " "}, "summary is empty"),
        ({"title": "x" * 201, "summary": "s"}, "limit"),
        ("just text", "not an object"),
    ],
)
def test_items_that_cannot_be_written_are_dropped_with_the_reason(item, reason):
    found, dropped = parse_suggestions(json.dumps([item, GOOD]), [])
    assert [s.title for s in found] == ["Brass Key"]
    assert len(dropped) == 1 and reason in dropped[0].reason


def test_existing_and_repeated_titles_are_dropped_case_insensitively():
    found, dropped = parse_suggestions(json.dumps([GOOD, GOOD | {"title": "brass key"}]), ["Old Hobb"])
    assert len(found) == 1 and dropped[0].reason.startswith("an entry with this title")
    found, dropped = parse_suggestions(json.dumps([GOOD]), ["BRASS KEY"])
    assert found == [] and dropped[0].title == "Brass Key"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("Nothing is missing, all good.", "holds no JSON"),
        ('[{"title": "x" "summary": "y"}]', "broken JSON"),
        ("[" + "x" * 1_000_000 + "]", "over the limit"),
    ],
)
def test_unusable_answers_are_refused_with_a_clear_reason(raw, reason):
    with pytest.raises(SuggestionsRefused, match=reason):
        parse_suggestions(raw, [])


def test_an_empty_array_is_nothing_missing():
    assert parse_suggestions("[]", []) == ([], [])


def test_the_suggestion_note_is_dles_to_the_byte():
    s = Suggestion("Brass Key", "lore", ("brass key", 'the "key"'), "A key: old.", "Old.\n\nGreen.")
    assert suggestion_note(s) == (
        "---\n"
        "type: lore\n"
        "priority: 50\n"
        'tags: ["lorebook"]\n'
        'keys: ["brass key", "the \\"key\\""]\n'
        'summary: "A key: old."\n'
        "---\n"
        "# Brass Key\n\n"
        "Old.\n\nGreen.\n"
    )


# -- AI Notepad ------------------------------------------------------------------------------------


def test_tag_blocks_come_out_of_the_reply():
    text, notes = take_notes(
        "She smiled.\n\n<dle-notes>\n- owes a favour\n</dle-notes>\nThe end.<DLE-NOTES>x</DLE-NOTES>"
    )
    assert text == "She smiled.\n\nThe end." and notes == "- owes a favour\nx"
    assert take_notes("no notes here") == ("no notes here", "")


def test_extract_mode_strips_every_kind_of_aside():
    reply = (
        "He left. [OOC: nice scene] (OOC: brb) [Note to self: the gate] [Author's note: pacing] "
        "[Authors note: x] [Session note: y] [meta: z] [Ordinary: stays] (aside stays)"
    )
    text, asides = strip_asides(reply)
    assert text == "He left. [Ordinary: stays] (aside stays)" and len(asides) == 7


def test_the_extraction_message_and_answer():
    assert extract_message("", "Hi") == "[Previous session notes]\n(none yet)\n\n[Latest AI response]\nHi"
    assert read_extracted(" NOTHING_TO_NOTE. ") == "" and read_extracted("<think>hm</think>- a") == "- a"


def test_the_notepad_is_trimmed_from_its_oldest_end_at_a_paragraph():
    notes = [f"note {i} " + "x" * 1000 for i in range(80)]
    pad = ""
    for n in notes:
        pad = append_notes(pad, n)
    assert len(pad.encode("utf-8")) <= NOTEPAD_CAP_BYTES
    assert pad.endswith(notes[-1]) and pad.startswith("note ") and "\n\nnote" in pad
    assert notes[0] not in pad
    assert trim_oldest("a" * 10 + "\nbbb", 5) == "bbb"  # no paragraph: a line
    assert trim_oldest("é" * 10, 5) == "éé"  # no line either: the newest bytes, whole characters


def test_rollback_takes_out_the_last_occurrence_only():
    pad = append_notes(append_notes(append_notes("", "same"), "other"), "same")
    assert remove_notes(pad, "same") == "same\n\nother"
    assert remove_notes("same\n\nother", "same") == "other"
    assert remove_notes("other", "gone") == "other"


def test_what_is_injected_per_mode():
    assert injection_text("", "extract", "INSTR") == ""
    assert injection_text("", "tag", "INSTR") == "INSTR"
    assert injection_text("n1", "tag", "INSTR") == "[Your previous session notes]\nn1\n[End of session notes]\n\nINSTR"
    assert injection_text("n1", "extract", "INSTR") == "[Your previous session notes]\nn1\n[End of session notes]"
