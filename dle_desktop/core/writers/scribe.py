"""Session Scribe's text (dle-behaviour §5.1): the message it sends, how the model's summary is
cleaned before it reaches the vault, and the session note it becomes."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from dle_desktop.core.pipeline.chat import ChatMessage, ai_transcript

SESSION_TAG = "lorebook-session"
#: A summary longer than this is cut (at a paragraph when one is near): a runaway model must
#: not fill the vault.
MAX_SUMMARY_CHARS = 32_000

_FENCED = re.compile(
    r"^[ \t]*(```|~~~)[ \t]*(dataview|dataviewjs|button|customjs)\b.*?^[ \t]*\1[ \t]*$\n?", re.S | re.M | re.I
)
_TEMPLATER = re.compile(r"<%.*?%>", re.S)
_MACRO = re.compile(r"\{\{.*?\}\}", re.S)
_COMMENT = re.compile(r"%%.*?%%", re.S)
_OBSIDIAN_LINK = re.compile(r"\[([^\]\n]*)\]\(obsidian://[^)\s]*\)")
_OBSIDIAN_URL = re.compile(r"obsidian://\S+")
_INLINE_DATAVIEW = re.compile(r"`\$?=[^`\n]*`")
_RULE = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)
_BLANK_RUNS = re.compile(r"\n{3,}")


def strip_obsidian_syntax(text: str, keep_macros: bool = False) -> str:
    """What a model wrote, made inert in a vault: Templater commands (`<% %>`, `{{ }}`), comments
    (`%% %%`), dataview queries (fenced and inline), button and customjs blocks and obsidian://
    links go (a link keeps its text); a `---` line becomes `- - -` so it cannot open frontmatter
    or be read as one. `keep_macros` keeps `{{ }}`: in imported World Info they are SillyTavern's
    macros (`{{char}}`), not Templater's."""
    out = _FENCED.sub("", text)
    out = _TEMPLATER.sub("", out)
    if not keep_macros:
        out = _MACRO.sub("", out)
    out = _COMMENT.sub("", out)
    out = _OBSIDIAN_LINK.sub(r"\1", out)
    out = _OBSIDIAN_URL.sub("", out)
    out = _INLINE_DATAVIEW.sub("", out)
    out = _RULE.sub("- - -", out)
    return _BLANK_RUNS.sub("\n\n", out).strip()


def transcript(messages: Sequence[ChatMessage], depth: int) -> str:
    """The last `depth` messages as the writers read them (system notes and thoughts left out)."""
    return ai_transcript(messages, depth)


def scribe_message(conversation: str, previous: str = "", focus: str = "") -> str:
    """The user message: the previous note (when there is one), the conversation, and the focus
    the user asked for (when given), each under DLE's marker."""
    parts = []
    if previous.strip():
        parts.append(f"[PREVIOUS SESSION NOTE]\n{previous.strip()}")
    parts.append(f"[RECENT CONVERSATION]\n{conversation.strip()}")
    if focus.strip():
        parts.append(f"[ADDITIONAL FOCUS]\n{focus.strip()}")
    return "\n\n".join(parts)


class SummaryRefused(ValueError):
    """The model's summary cannot be written; the message says why."""


def clean_summary(raw: str) -> str:
    """The summary as it will be written: cleaned, cut to `MAX_SUMMARY_CHARS`. SummaryRefused when
    nothing is left to write."""
    cleaned = strip_obsidian_syntax(raw)
    if not cleaned:
        raise SummaryRefused("the model's summary was empty (or only Obsidian syntax); nothing written")
    if len(cleaned) > MAX_SUMMARY_CHARS:
        cut = cleaned.rfind("\n\n", 0, MAX_SUMMARY_CHARS)
        cleaned = cleaned[: cut if cut > MAX_SUMMARY_CHARS // 2 else MAX_SUMMARY_CHARS].rstrip()
    return cleaned


@dataclass(frozen=True)
class SessionNote:
    title: str  # the file name's stem before it is made safe: "{character} - YYYY-MM-DD HH-MM-SS"
    text: str


def session_note(character: str, summary: str, when: datetime) -> SessionNote:
    """The note DLE writes: `tags: [lorebook-session]`, `date`, `character`, then `# Session: ...`."""
    who = " ".join(character.split()) or "Unknown"
    stamp = when.strftime("%Y-%m-%d %H-%M-%S")
    shown = when.strftime("%Y-%m-%d %H:%M:%S")
    text = (
        "---\n"
        f"tags: [{SESSION_TAG}]\n"
        f"date: {json.dumps(when.isoformat(timespec='seconds'))}\n"
        f"character: {json.dumps(who, ensure_ascii=False)}\n"
        "---\n"
        f"# Session: {who}, {shown}\n\n"
        f"{summary.strip()}\n"
    )
    return SessionNote(f"{who} - {stamp}", text)
