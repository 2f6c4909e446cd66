"""Scan text (dle-behaviour §3.2) and the interceptor's skip guard (§3.1)."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.chat import ChatMessage, ai_transcript, scan_lines, scan_text, should_skip_generation
from dle_desktop.core.pipeline.config import MatchConfig
from dle_desktop.core.pipeline.state import ChatState

from .conftest import chat, msg, note, run, snapshot, titles, verdicts


def test_lines_are_name_colon_message_joined_by_newline():
    messages = [msg("hello there", "Anon"), msg("general kenobi", "Bot", user=False)]
    assert scan_text(messages, 4) == "Anon: hello there\nBot: general kenobi"


def test_depth_takes_the_last_n_messages():
    messages = [msg(f"m{i}") for i in range(6)]
    assert scan_lines(messages, 2) == ["Anon: m4", "Anon: m5"]
    assert scan_lines(messages, 100) == [f"Anon: m{i}" for i in range(6)]


def test_depth_zero_scans_nothing():
    assert scan_text([msg("dragon")], 0) == ""


SKIPPED_KINDS = {
    "is_system": dict(is_system=True),
    "extra.is_thoughts": dict(extra={"is_thoughts": True}),
    "extra.tool_invocations": dict(extra={"tool_invocations": [{"name": "x"}]}),
    "extra.type narrator": dict(extra={"type": "narrator"}),
    "extra.isSmallSys": dict(extra={"isSmallSys": True}),
}


@pytest.mark.parametrize("kind", sorted(SKIPPED_KINDS))
def test_each_skipped_kind_is_left_out_of_the_scan_text(kind):
    skipped = msg("the dragon wakes", "Narr", **SKIPPED_KINDS[kind])
    messages = [msg("before"), skipped, msg("after")]
    assert scan_lines(messages, 10) == ["Anon: before", "Anon: after"]
    # ... and through the pipeline the key inside it does not match.
    snap = snapshot(note("Dragon", ["dragon"]))
    result, _ = run(snap, messages)
    assert "Dragon" not in titles(result)


def test_top_level_is_thoughts_is_skipped_too():
    """Stepped-Thinking marks thought messages with a top-level `is_thoughts` flag."""
    thought = ChatMessage(name="Bot", mes="secret dragon plan", is_thoughts=True)
    assert scan_lines([msg("a"), thought, msg("b")], 10) == ["Anon: a", "Anon: b"]


def test_narrator_type_only_skips_narrator():
    other = msg("dragon", extra={"type": "something_else"})
    assert scan_lines([other], 4) == ["Anon: dragon"]


def test_depth_is_sliced_before_filtering_so_skipped_messages_use_up_depth():
    # The key is 3 messages back; one of the last 2 is a system note, so depth 2 sees only "after".
    messages = [msg("the dragon wakes"), msg("system note", is_system=True), msg("after")]
    messages.append(msg("more"))  # last message must not be a system message (else the generation is skipped)
    assert scan_lines(messages, 3) == ["Anon: after", "Anon: more"]
    snap = snapshot(note("Dragon", ["dragon"]))
    r3, _ = run(snap, messages, cfg=MatchConfig(scan_depth=3))
    assert titles(r3) == []
    r4, _ = run(snap, messages, cfg=MatchConfig(scan_depth=4))
    assert titles(r4) == ["Dragon"]


def test_speaker_names_are_part_of_the_haystack():
    snap = snapshot(note("Dragon", ["dragon"]))
    messages = [msg("hello", "Anon"), msg("good day to you", "Dragon", user=False), msg("bye", "Anon")]
    result, _ = run(snap, messages)
    assert titles(result) == ["Dragon"]
    assert verdicts(result, "Dragon", "keywords", "matched")


def test_speaker_name_only_counts_inside_the_window():
    snap = snapshot(note("Dragon", ["dragon"]))
    messages = [msg("hello", "Dragon")] + chat("a", "b", "c", "d")
    result, _ = run(snap, messages)
    assert titles(result) == []


def test_ai_transcript_labels_speakers_and_filters_like_the_scan():
    messages = [msg("hi", "Anon"), msg("note", is_system=True), msg("yo", "", user=False)]
    assert ai_transcript(messages, 10) == "Anon (user): hi\nUnknown (character): yo"


# -- the interceptor guard ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "last",
    [
        dict(is_system=True),
        dict(extra={"tool_invocations": [{"tool": "roll"}]}),
    ],
    ids=["system", "tool-call"],
)
def test_generation_is_skipped_after_a_system_or_tool_call_message(last):
    snap = snapshot(note("Always", tags=["lorebook", "lorebook-always"]), note("Dragon", ["dragon"]))
    messages = chat("a dragon", pad=4) + [msg("the dragon roars", **last)]
    state = ChatState(generation_count=7, cooldowns={"v:X": 2})
    result, new_state = run(snap, messages, state)
    assert result.skipped_reason
    assert result.injected == () and result.groups == ()
    assert new_state is state  # nothing ticks, nothing is logged
    assert should_skip_generation(messages) == result.skipped_reason


def test_generation_runs_when_the_last_message_is_normal():
    assert should_skip_generation(chat("hi")) is None
    assert should_skip_generation([]) is None
