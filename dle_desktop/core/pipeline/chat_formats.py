"""Chats as people have them at hand: our JSON document, SillyTavern's .jsonl chat export, or
plain `Name: text` lines pasted from anywhere."""

from __future__ import annotations

import json
import re
from typing import Any

from dle_desktop.core.pipeline.chat_input import ChatDocument, ChatInputError, parse_chat_document

_LINE_RE = re.compile(r"^\s*([^:\n]{1,80}):\s?(.*)$")


def _from_jsonl(lines: list[str]) -> ChatDocument:
    header: dict[str, Any] = {}
    messages = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ChatInputError(f"line {n} is not valid JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ChatInputError(f"line {n} is not a JSON object")
        if "mes" not in obj and ("user_name" in obj or "character_name" in obj or "chat_metadata" in obj):
            header = obj
            continue
        messages.append({k: obj[k] for k in ("name", "mes", "is_user", "is_system", "swipe_id", "extra") if k in obj})
    doc = {"messages": messages}
    if isinstance(header.get("character_name"), str):
        doc["character_name"] = header["character_name"]
    return parse_chat_document(doc)


def _from_lines(text: str) -> ChatDocument:
    messages: list[dict[str, Any]] = []
    user_name = None
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE_RE.match(line)
        if m:
            name, mes = m.group(1).strip(), m.group(2)
            if user_name is None:
                user_name = name  # the first speaker is taken to be the user
            messages.append({"name": name, "mes": mes, "is_user": name == user_name})
        elif messages:
            messages[-1]["mes"] += "\n" + line  # a continuation line
        else:
            raise ChatInputError("plain-text chats need one 'Name: message' per line")
    if not messages:
        raise ChatInputError("the chat is empty")
    return parse_chat_document({"messages": messages})


def parse_chat_text(text: str) -> ChatDocument:
    stripped = text.strip()
    if not stripped:
        raise ChatInputError("the chat is empty")
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
            if isinstance(data, dict) and "mes" in data and "messages" not in data:
                return _from_jsonl([stripped])  # a one-message .jsonl without its header line
            return parse_chat_document(data)
        except json.JSONDecodeError:
            lines = stripped.splitlines()
            if len(lines) > 1 and lines[0].lstrip().startswith("{"):
                return _from_jsonl(lines)
            raise ChatInputError("the chat looks like JSON but is not valid JSON") from None
    return _from_lines(text)
