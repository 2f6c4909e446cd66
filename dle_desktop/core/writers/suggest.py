"""Auto Lorebook's text (dle-behaviour §5.2): the message listing the existing entries and the
chat, the model's suggestions read permissively and checked (what cannot be repaired is dropped
with its reason), and the note an accepted suggestion becomes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dle_desktop.core.model_json import ArrayShape, find_array, without_thinking
from dle_desktop.core.writers.scribe import strip_obsidian_syntax

TYPES = ("character", "location", "lore", "organization", "story")
DEFAULT_PRIORITY = 50
#: Longer answers are refused unread: a 2048-token answer is far below.
MAX_ANSWER_CHARS = 200_000
MAX_SUGGESTIONS = 20
MAX_TITLE = 200
MAX_KEY = 100
MAX_KEYS = 5
MAX_SUMMARY = 1_000
MAX_CONTENT = 20_000

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _is_suggestion_array(value: list[Any]) -> bool:
    """An array holding an object (its items are checked one by one later), or an empty one."""
    return not value or any(isinstance(v, dict) for v in value)


#: The provider client has already taken the text out of its response, so an object with a
#: `content` field is a suggestion, not an envelope; a cut-off array keeps its whole objects.
_SUGGESTIONS = ArrayShape(
    _is_suggestion_array,
    wrapper_keys=("suggestions", "entries", "results", "items"),
    salvage=lambda item: isinstance(item, dict),
    read_envelopes=False,
)


class SuggestionsRefused(ValueError):
    """Nothing usable in the model's answer; the message says why."""


@dataclass(frozen=True)
class Suggestion:
    title: str
    type: str
    keys: tuple[str, ...]
    summary: str
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "type": self.type,
            "keys": list(self.keys),
            "summary": self.summary,
            "content": self.content,
        }


@dataclass(frozen=True)
class Dropped:
    title: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "reason": self.reason}


def suggest_message(existing_titles: Iterable[str], conversation: str) -> str:
    listed = ", ".join(json.dumps(t, ensure_ascii=False) for t in existing_titles) or "(none yet)"
    return (
        f"## Existing lorebook entries (do NOT suggest these):\n{listed}\n\n"
        f"## Recent Chat:\n{conversation.strip()}\n\n"
        "Suggest new lorebook entries as a JSON array."
    )


def check_title(value: Any) -> str:
    """A title an entry may have, or ValueError saying what is wrong with it."""
    if not isinstance(value, str):
        raise ValueError("the title is not text")
    title = " ".join(value.split())
    if not title:
        raise ValueError("the title is empty")
    if len(title) > MAX_TITLE:
        raise ValueError(f"the title is {len(title)} characters; the limit is {MAX_TITLE}")
    if "/" in title or "\\" in title:
        raise ValueError("the title has a slash; a title names one note, not a folder path")
    if ".." in title:
        raise ValueError("the title has '..'")
    if not title.strip(". "):
        raise ValueError("the title is only dots")
    if _CONTROL.search(value.replace("\n", " ").replace("\t", " ")):
        raise ValueError("the title has a control character")
    return title


def _keys(value: Any, title: str) -> tuple[str, ...]:
    raw = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            continue
        key = " ".join(_CONTROL.sub(" ", item).split())[:MAX_KEY]
        if key and key.lower() not in {k.lower() for k in out}:
            out.append(key)
    if len(out) < 2 and title.lower() not in {k.lower() for k in out}:
        out.insert(0, title[:MAX_KEY])  # a suggestion with too few keys is still found by its name
    return tuple(out[:MAX_KEYS])


def _text(value: Any, limit: int) -> str:
    return strip_obsidian_syntax(value)[:limit].strip() if isinstance(value, str) else ""


def check_suggestion(item: Any) -> Suggestion:
    """One suggestion made fit to write (type, keys, lengths repaired), or ValueError."""
    if not isinstance(item, dict):
        raise ValueError("not an object")
    title = check_title(item.get("title"))
    summary = " ".join(_text(item.get("summary"), MAX_SUMMARY).split())
    if not summary:
        raise ValueError("the summary is empty")
    kind = str(item.get("type") or "").strip().lower()
    content = _text(item.get("content"), MAX_CONTENT) or summary
    return Suggestion(title, kind if kind in TYPES else "lore", _keys(item.get("keys"), title), summary, content)


def parse_suggestions(raw: str, existing_titles: Iterable[str]) -> tuple[list[Suggestion], list[Dropped]]:
    """The suggestions worth reviewing, and those dropped with the reason. SuggestionsRefused when
    the answer is unusable as a whole (too long, no JSON, broken JSON)."""
    if len(raw) > MAX_ANSWER_CHARS:
        raise SuggestionsRefused(
            f"the model's answer is {len(raw):,} characters; over the limit of {MAX_ANSWER_CHARS:,}, it was not read"
        )
    items = find_array(raw, _SUGGESTIONS)
    if items is None:
        answer = without_thinking(raw)
        if "[" not in answer and "{" not in answer:
            raise SuggestionsRefused("the model's answer holds no JSON (expected an array of suggestions)")
        raise SuggestionsRefused(
            "the model's answer is broken JSON that could not be repaired, or holds no array of suggestion objects"
        )
    taken = {t.strip().lower() for t in existing_titles}
    kept: list[Suggestion] = []
    dropped: list[Dropped] = []
    for item in items:
        name = str(item.get("title", ""))[:MAX_TITLE] if isinstance(item, dict) else ""
        try:
            suggestion = check_suggestion(item)
        except ValueError as exc:
            dropped.append(Dropped(name, str(exc)))
            continue
        if suggestion.title.lower() in taken:
            dropped.append(Dropped(suggestion.title, "an entry with this title already exists"))
            continue
        if len(kept) >= MAX_SUGGESTIONS:
            dropped.append(Dropped(suggestion.title, f"more than {MAX_SUGGESTIONS} suggestions in one answer"))
            continue
        taken.add(suggestion.title.lower())
        kept.append(suggestion)
    return kept, dropped


def _flow(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in values) + "]"


def suggestion_note(s: Suggestion, lorebook_tag: str = "lorebook") -> str:
    """The note DLE writes for an accepted suggestion."""
    return (
        "---\n"
        f"type: {s.type}\n"
        f"priority: {DEFAULT_PRIORITY}\n"
        f"tags: {_flow([lorebook_tag])}\n"
        f"keys: {_flow(s.keys)}\n"
        f"summary: {json.dumps(s.summary, ensure_ascii=False)}\n"
        "---\n"
        f"# {s.title}\n\n"
        f"{s.content.strip()}\n"
    )
