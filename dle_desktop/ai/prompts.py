"""The editable prompt texts under `resources/prompts/`, and the JSON schemas that ask providers
for structured output. Reading the bundled files is the only I/O of the AI-search helpers."""

from __future__ import annotations

import re
from functools import lru_cache

from dle_desktop.state.paths import resources_dir

_NAME = re.compile(r"^[a-z0-9_]+$")

AI_SEARCH_SYSTEM = "ai_search_system"
AI_SEARCH_NEW_CHAT = "ai_search_new_chat"
CATEGORY_PREFILTER = "category_prefilter"


@lru_cache(maxsize=16)
def load_prompt(name: str) -> str:
    """The text of `resources/prompts/<name>.md`, without its trailing newline."""
    stem = name[:-3] if name.endswith(".md") else name
    if not _NAME.match(stem):
        raise ValueError(f"a prompt name is lowercase letters, digits and _, not {name!r}")
    path = resources_dir() / "prompts" / f"{stem}.md"
    return path.read_text(encoding="utf-8").rstrip("\n")


_CONFIDENCE = {"type": "string", "enum": ["high", "medium", "low"]}

#: Structured output for AI search. Every property is required and no others are allowed, as
#: strict mode (OpenAI) demands; non-strict providers read it the same way.
LORE_SELECTION_SCHEMA: dict = {
    "name": "lore_selection",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "selected": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "confidence": _CONFIDENCE,
                        "reason": {"type": "string"},
                    },
                    "required": ["title", "confidence", "reason"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["selected"],
        "additionalProperties": False,
    },
}

#: Structured output for the hierarchical pre-filter's category call.
CATEGORY_SCHEMA: dict = {
    "name": "category_selection",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"categories": {"type": "array", "items": {"type": "string"}}},
        "required": ["categories"],
        "additionalProperties": False,
    },
}
