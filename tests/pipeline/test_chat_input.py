"""Reading chats as users have them (issue: interfaces and bad input): every error names the
field; camelCase spellings DLE users have are accepted."""

from __future__ import annotations

import pytest

from dle_desktop.core.pipeline.chat_input import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES,
    ChatInputError,
    parse_chat_document,
    parse_messages,
)
from dle_desktop.core.pipeline.state import EntryRef

from .conftest import note, run, snapshot, titles

GOOD = {"name": "Anon", "mes": "hello", "is_user": True}


def test_a_bare_list_of_sillytavern_messages():
    doc = parse_chat_document(
        [
            GOOD,
            {
                "name": "Bot",
                "mes": "hi",
                "is_user": False,
                "swipe_id": 2,
                "extra": {"type": "narrator"},
                "send_date": "x",
                "swipes": ["a"],
            },
        ]
    )
    assert [m.mes for m in doc.messages] == ["hello", "hi"]
    assert doc.messages[1].swipe_id == 2 and doc.messages[1].skipped_in_scan
    assert doc.messages[0].is_user and not doc.messages[1].is_user


def test_an_object_with_every_field():
    doc = parse_chat_document(
        {
            "messages": [GOOD],
            "context": {"era": ["dawn", 3], "level": 5, "flag": True, "gone": None},
            "pins": ["A", {"title": "B", "vault": "w"}, {"title": "C", "vaultSource": "x"}],
            "blocks": ["D"],
            "folder_filter": ["/Characters/", "Places"],
            "character_name": "Aria",
            "chat_id": "c1",
            "notebook": "n",
            "swipe": True,
            "dry_run": True,
            "seed": 4,
            "settings": {"scanDepth": 3},
        }
    )
    assert doc.context == {"era": ["dawn", "3"], "level": "5", "flag": "true"}
    assert doc.pins == (EntryRef("A"), EntryRef("B", "w"), EntryRef("C", "x"))
    assert doc.blocks == (EntryRef("D"),)
    assert doc.folder_filter == ("Characters", "Places")
    assert (doc.character_name, doc.chat_id, doc.notebook, doc.swipe, doc.dry_run, doc.seed) == (
        "Aria",
        "c1",
        "n",
        True,
        True,
        4,
    )
    assert doc.settings == {"scanDepth": 3}


@pytest.mark.parametrize(
    "camel,snake,value",
    [
        ("folderFilter", "folder_filter", ["Places"]),
        ("characterName", "character_name", "Aria"),
        ("chatId", "chat_id", "c9"),
        ("dryRun", "dry_run", True),
    ],
)
def test_camel_case_aliases_are_accepted(camel, snake, value):
    doc = parse_chat_document({"messages": [GOOD], camel: value})
    got = getattr(doc, snake)
    assert got == (tuple(value) if isinstance(value, list) else value)
    assert snake in doc.present


def test_is_thoughts_is_read_from_the_message():
    doc = parse_chat_document([{"name": "Bot", "mes": "thinking", "is_thoughts": True}])
    assert doc.messages[0].is_thoughts and doc.messages[0].skipped_in_scan


def test_missing_optional_message_fields_get_defaults():
    [m] = parse_messages([{"mes": "x", "name": None, "is_user": None, "extra": None}])
    assert (m.name, m.is_user, m.is_system, m.swipe_id, m.extra) == ("", False, False, None, {})


BAD = [
    ("not a chat", "a chat is a list"),
    (42, "a chat is a list"),
    ({"context": {}}, "messages is missing"),
    ({"messages": "hello"}, "messages must be a list"),
    ([GOOD, "hello"], "messages[1]"),
    ([{"name": "Anon"}], "messages[0].mes is missing"),
    ([{"name": "Anon", "mes": 5}], "messages[0].mes must be text"),
    ([GOOD, {"name": 7, "mes": "x"}], "messages[1].name"),
    ([{"name": "x" * 1001, "mes": "x"}], "messages[0].name"),
    ([{"mes": "x", "is_user": "yes"}], "messages[0].is_user"),
    ([{"mes": "x", "is_system": 1}], "messages[0].is_system"),
    ([{"mes": "x", "is_thoughts": "no"}], "messages[0].is_thoughts"),
    ([{"mes": "x", "swipe_id": -1}], "messages[0].swipe_id"),
    ([{"mes": "x", "swipe_id": True}], "messages[0].swipe_id"),
    ([{"mes": "x", "swipe_id": 1.5}], "messages[0].swipe_id"),
    ([{"mes": "x", "extra": []}], "messages[0].extra"),
    ({"messages": [GOOD], "bogus": 1, "alsoBad": 2}, "alsoBad, bogus"),
    ({"messages": [GOOD], "chat_id": ""}, "chat_id"),
    ({"messages": [GOOD], "chat_id": 5}, "chat_id"),
    ({"messages": [GOOD], "chat_id": "x" * 513}, "chat_id"),
    ({"messages": [GOOD], "chat_id": " c1 "}, "chat_id starts or ends with whitespace"),
    ({"messages": [GOOD], "chat_id": "c\n1"}, "chat_id has a control character (U+000A)"),
    ({"messages": [GOOD], "chat_id": "c", "chatId": "c"}, "give chat_id or chatId, not both"),
    ({"messages": [GOOD], "folder_filter": [], "folderFilter": ["A"]}, "give folder_filter or folderFilter, not both"),
    (
        {"messages": [GOOD], "pins": [{"title": "A", "vault": "v", "vaultSource": "v"}]},
        "pins[0]: give vault or vaultSource",
    ),
    ({"messages": [GOOD], "characterName": 5}, "character_name"),
    ({"messages": [GOOD], "notebook": []}, "notebook"),
    ({"messages": [GOOD], "swipe": "yes"}, "swipe"),
    ({"messages": [GOOD], "dry_run": 1}, "dry_run"),
    ({"messages": [GOOD], "seed": True}, "seed"),
    ({"messages": [GOOD], "seed": "4"}, "seed"),
    ({"messages": [GOOD], "settings": []}, "settings"),
    ({"messages": [GOOD], "context": []}, "context"),
    ({"messages": [GOOD], "context": {"era": {"a": 1}}}, "context.era"),
    ({"messages": [GOOD], "context": {"era": [True]}}, "context.era"),
    ({"messages": [GOOD], "pins": "A"}, "pins"),
    ({"messages": [GOOD], "pins": ["A", ""]}, "pins[1]"),
    ({"messages": [GOOD], "pins": [{"vault": "v"}]}, "pins[0]"),
    ({"messages": [GOOD], "pins": [5]}, "pins[0]"),
    ({"messages": [GOOD], "pins": [{"title": "A", "vault": 3}]}, "pins[0]"),
    ({"messages": [GOOD], "blocks": [None]}, "blocks[0]"),
    ({"messages": [GOOD], "folder_filter": [1]}, "folder_filter"),
    ({"messages": [GOOD], "folderFilter": {"a": 1}}, "folder_filter"),
]


@pytest.mark.parametrize("raw,needle", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_input_raises_an_error_that_names_the_field(raw, needle):
    with pytest.raises(ChatInputError) as info:
        parse_chat_document(raw)
    assert needle in str(info.value)
    assert len(str(info.value)) < 300  # bounded, never echoes a huge value


def test_a_10_mb_message_is_refused_with_its_index():
    huge = "x" * (10 * 1024 * 1024)
    with pytest.raises(ChatInputError) as info:
        parse_chat_document([GOOD, {"name": "Bot", "mes": huge}])
    text = str(info.value)
    assert "messages[1].mes" in text and str(MAX_MESSAGE_CHARS) in text and len(text) < 300


def test_a_message_at_the_limit_is_accepted():
    [m] = parse_messages([{"mes": "x" * MAX_MESSAGE_CHARS}])
    assert len(m.mes) == MAX_MESSAGE_CHARS


def test_too_many_messages_are_refused():
    with pytest.raises(ChatInputError) as info:
        parse_messages([{"mes": ""}] * (MAX_MESSAGES + 1))
    assert "messages" in str(info.value)


def test_a_parsed_chat_runs_through_the_pipeline():
    snap = snapshot(note("Dragon", ["dragon"]))
    doc = parse_chat_document({"messages": [{"name": "Anon", "mes": "a dragon!", "is_user": True}]})
    assert titles(run(snap, doc.messages)[0]) == ["Dragon"]
