"""Reads a chat as SillyTavern users have it (a list of messages, or an object with messages
and per-chat settings), checking every field so bad input gets a message that names it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dle_desktop.core.chat_id import ChatIdError, check_chat_id
from dle_desktop.core.pipeline.chat import ChatMessage
from dle_desktop.core.pipeline.state import EntryRef

MAX_MESSAGES = 20_000
MAX_MESSAGE_CHARS = 1_000_000
MAX_NAME_CHARS = 1_000
#: camelCase spellings DLE users have, mapped to ours.
ALIASES = {"folderFilter": "folder_filter", "characterName": "character_name", "chatId": "chat_id", "dryRun": "dry_run"}
DOC_FIELDS = {
    "messages",
    "context",
    "pins",
    "blocks",
    "folder_filter",
    "character_name",
    "chat_id",
    "notebook",
    "swipe",
    "dry_run",
    "seed",
    "settings",
}


def has_lone_surrogate(value: object) -> bool:
    """True when decoded JSON holds a \\ud800-\\udfff escape without its pair: valid JSON
    grammar, but not text (it can be neither stored as UTF-8 nor printed)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


class ChatInputError(ValueError):
    """The chat or request does not have the expected shape; the message says where."""


@dataclass(frozen=True)
class ChatDocument:
    messages: tuple[ChatMessage, ...]
    chat_id: str | None = None
    character_name: str | None = None
    context: dict[str, Any] | None = None
    pins: tuple[EntryRef, ...] | None = None
    blocks: tuple[EntryRef, ...] | None = None
    folder_filter: tuple[str, ...] | None = None
    notebook: str | None = None
    swipe: bool | None = None
    dry_run: bool = False
    seed: int | None = None
    settings: dict[str, Any] | None = None
    present: frozenset[str] = field(default_factory=frozenset)


def _message(raw: Any, i: int) -> ChatMessage:
    where = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise ChatInputError(f"{where} must be an object with name and mes, not {type(raw).__name__}")
    mes = raw.get("mes")
    if mes is None:
        raise ChatInputError(f"{where}.mes is missing (the message text)")
    if not isinstance(mes, str):
        raise ChatInputError(f"{where}.mes must be text, not {type(mes).__name__}")
    if len(mes) > MAX_MESSAGE_CHARS:
        raise ChatInputError(f"{where}.mes is {len(mes)} characters; the limit is {MAX_MESSAGE_CHARS}")
    name = raw.get("name", "")
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise ChatInputError(f"{where}.name must be text, not {type(name).__name__}")
    if len(name) > MAX_NAME_CHARS:
        raise ChatInputError(f"{where}.name is longer than {MAX_NAME_CHARS} characters")
    flags = {}
    for flag in ("is_user", "is_system", "is_thoughts"):
        v = raw.get(flag, False)
        if v is None:
            v = False
        if not isinstance(v, bool):
            raise ChatInputError(f"{where}.{flag} must be true or false, not {v!r}"[:200])
        flags[flag] = v
    swipe_id = raw.get("swipe_id")
    if isinstance(swipe_id, float) and swipe_id.is_integer():
        swipe_id = int(swipe_id)  # JSON's 3.0 is the whole number 3
    if swipe_id is not None and (isinstance(swipe_id, bool) or not isinstance(swipe_id, int) or swipe_id < 0):
        raise ChatInputError(f"{where}.swipe_id must be a whole number ≥ 0")
    extra = raw.get("extra")
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise ChatInputError(f"{where}.extra must be an object")
    return ChatMessage(name=name, mes=mes, swipe_id=swipe_id, extra=extra, **flags)


def parse_messages(raw: Any) -> tuple[ChatMessage, ...]:
    if not isinstance(raw, list):
        raise ChatInputError(f"messages must be a list, not {type(raw).__name__}")
    if len(raw) > MAX_MESSAGES:
        raise ChatInputError(f"{len(raw)} messages; the limit is {MAX_MESSAGES}")
    return tuple(_message(m, i) for i, m in enumerate(raw))


def parse_refs(raw: Any, name: str) -> tuple[EntryRef, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ChatInputError(f"{name} must be a list of titles or {{title, vault}} objects")
    out = []
    for i, item in enumerate(raw):
        try:
            out.append(EntryRef.from_json(item))
        except ValueError as exc:
            raise ChatInputError(f"{name}[{i}]: {exc}") from None
    return tuple(out)


def parse_context(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ChatInputError("context must be an object of field: value")
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if v is None:
            continue
        if isinstance(v, list):
            if not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
                raise ChatInputError(f"context.{k} must be text, a number, or a list of those")
            out[str(k)] = [str(x) for x in v]
        elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
            out[str(k)] = v if isinstance(v, str) else str(v)
        elif isinstance(v, bool):
            out[str(k)] = "true" if v else "false"
        else:
            raise ChatInputError(f"context.{k} must be text, a number, or a list of those")
    return out


def parse_folder_filter(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ChatInputError("folder_filter must be a list of folder paths")
    return tuple(x.strip().strip("/") for x in raw if x.strip().strip("/"))


def parse_chat_document(raw: Any, allowed: set[str] | None = None) -> ChatDocument:
    """A bare list of messages, or an object with `messages` and optional chat settings."""
    if isinstance(raw, list):
        return ChatDocument(messages=parse_messages(raw))
    if not isinstance(raw, dict):
        raise ChatInputError(f"a chat is a list of messages or an object with messages, not {type(raw).__name__}")
    both = sorted(alias for alias, name in ALIASES.items() if alias in raw and name in raw)
    if both:
        # One of the two would be dropped silently; which one the caller meant is unknowable.
        raise ChatInputError("; ".join(f"give {ALIASES[a]} or {a}, not both" for a in both))
    doc: dict[str, Any] = {ALIASES[k] if k in ALIASES else k: v for k, v in raw.items()}  # noqa: SIM401 - mypy types .get(k, k) on a JSON key as str | None
    allowed = allowed or DOC_FIELDS
    unknown = sorted(k for k in doc if k not in allowed)
    if unknown:
        raise ChatInputError(f"unknown field(s): {', '.join(unknown)}")
    if "messages" not in doc:
        raise ChatInputError("messages is missing")
    chat_id = doc.get("chat_id")
    if chat_id is not None:
        try:
            check_chat_id(chat_id, "chat_id")
        except ChatIdError as exc:
            raise ChatInputError(str(exc)) from None
    name = doc.get("character_name")
    if name is not None and not isinstance(name, str):
        raise ChatInputError("character_name must be text")
    notebook = doc.get("notebook")
    if notebook is not None and not isinstance(notebook, str):
        raise ChatInputError("notebook must be text")
    swipe = doc.get("swipe")
    if swipe is not None and not isinstance(swipe, bool):
        raise ChatInputError("swipe must be true or false")
    dry = doc.get("dry_run", False)
    if not isinstance(dry, bool):
        raise ChatInputError("dry_run must be true or false")
    seed = doc.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ChatInputError("seed must be a whole number")
    settings = doc.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise ChatInputError("settings must be an object")
    return ChatDocument(
        messages=parse_messages(doc["messages"]),
        chat_id=chat_id,
        character_name=name,
        context=parse_context(doc["context"]) if "context" in doc else None,
        pins=parse_refs(doc["pins"], "pins") if "pins" in doc else None,
        blocks=parse_refs(doc["blocks"], "blocks") if "blocks" in doc else None,
        folder_filter=parse_folder_filter(doc.get("folder_filter")) if "folder_filter" in doc else None,
        notebook=notebook,
        swipe=swipe,
        dry_run=dry,
        seed=seed,
        settings=settings,
        present=frozenset(doc),
    )
