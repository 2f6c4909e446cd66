import pytest

from dle_desktop.core.pipeline.chat_formats import parse_chat_text
from dle_desktop.core.pipeline.chat_input import ChatInputError


def test_plain_lines_first_speaker_is_user_and_continuations_join():
    doc = parse_chat_text("Mira: hello\nNarrator: the quay\nglitters\nMira: ok")
    assert [(m.name, m.is_user) for m in doc.messages] == [("Mira", True), ("Narrator", False), ("Mira", True)]
    assert doc.messages[1].mes == "the quay\nglitters"


def test_sillytavern_jsonl_export():
    text = (
        '{"user_name": "You", "character_name": "Seraphina", "chat_metadata": {}}\n'
        '{"name": "You", "is_user": true, "mes": "hi", "send_date": "x"}\n'
        '{"name": "Seraphina", "is_user": false, "mes": "hello", "swipe_id": 1, "swipes": ["a", "hello"]}\n'
    )
    doc = parse_chat_text(text)
    assert doc.character_name == "Seraphina"
    assert [m.mes for m in doc.messages] == ["hi", "hello"]
    assert doc.messages[1].swipe_id == 1


def test_json_document_and_errors():
    assert len(parse_chat_text('{"messages": [{"name": "a", "mes": "b"}], "folderFilter": ["X"]}').messages) == 1
    with pytest.raises(ChatInputError, match="not valid JSON"):
        parse_chat_text('{"messages": [')
    with pytest.raises(ChatInputError, match="line 2"):
        parse_chat_text('{"user_name": "a"}\n{broken')
    with pytest.raises(ChatInputError, match="Name: message"):
        parse_chat_text("just some text without a speaker")
