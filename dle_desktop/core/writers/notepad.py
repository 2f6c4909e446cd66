"""AI Notepad's text (dle-behaviour §5.3): the `<dle-notes>` blocks taken out of a reply (tag
mode), the visible asides stripped from it (extract mode), the extraction call's message and
answer, the chat's notepad capped at 64 KiB from its oldest end, a reply's notes rolled back,
and what is injected before the next reply."""

from __future__ import annotations

import re

from dle_desktop.core.writers.prompts import NOTHING_TO_NOTE

#: The chat's notepad keeps at most this many bytes (UTF-8), the newest.
NOTEPAD_CAP_BYTES = 64 * 1024
#: One reply's notes; a runaway block is cut here.
MAX_REPLY_NOTES = 8 * 1024

_BLOCK = re.compile(r"<dle-notes>([\s\S]*?)</dle-notes>", re.I)
#: With the spaces before it, so "text [OOC: x] more" closes up to "text more".
_ASIDE = re.compile(
    r"[ \t]*(?:\[\s*(?:OOC|Note to self|Author'?s note|Session note|Meta)\s*:[^\]]*\]|\(\s*OOC\s*:[^)]*\))",
    re.I,
)
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_SPACES_BEFORE_BREAK = re.compile(r"[ \t]+\n")
_BLANK_RUNS = re.compile(r"\n{3,}")


def _tidy(text: str) -> str:
    return _BLANK_RUNS.sub("\n\n", _SPACES_BEFORE_BREAK.sub("\n", text)).strip()


def _cut(notes: str) -> str:
    encoded = notes.encode("utf-8")
    return notes if len(encoded) <= MAX_REPLY_NOTES else encoded[:MAX_REPLY_NOTES].decode("utf-8", "ignore").rstrip()


def take_notes(reply: str) -> tuple[str, str]:
    """(the reply as shown, its notes): every `<dle-notes>` block comes out of the text."""
    found = [m.group(1).strip() for m in _BLOCK.finditer(reply)]
    if not found:
        return reply, ""
    return _tidy(_BLOCK.sub("", reply)), _cut("\n".join(n for n in found if n))


def strip_asides(reply: str) -> tuple[str, list[str]]:
    """(the reply without its note-like asides, the asides): `[OOC: ...]`, `(OOC: ...)`,
    `[Note to self: ...]`, `[Author's note: ...]`, `[Session note: ...]`, `[Meta: ...]`."""
    asides = [m.group(0).strip() for m in _ASIDE.finditer(reply)]
    if not asides:
        return reply, []
    return _tidy(_ASIDE.sub("", reply)), asides


def previous_notes_block(notes: str) -> str:
    return f"[Your previous session notes]\n{notes.strip()}\n[End of session notes]"


def extract_message(previous: str, reply: str) -> str:
    return f"[Previous session notes]\n{previous.strip() or '(none yet)'}\n\n[Latest AI response]\n{reply.strip()}"


def read_extracted(answer: str) -> str:
    """The notes the extraction call answered; "" for NOTHING_TO_NOTE (or nothing)."""
    text = _THINK.sub("", answer).strip()
    if not text or text.strip(" .`*\"'").upper() == NOTHING_TO_NOTE:
        return ""
    return _cut(text)


def trim_oldest(notepad: str, cap: int = NOTEPAD_CAP_BYTES) -> str:
    """`notepad` within `cap` bytes: the oldest text goes, at a paragraph boundary when one leaves
    it within the cap, else at a line, else mid-line."""
    if len(notepad.encode("utf-8")) <= cap:
        return notepad
    for boundary in ("\n\n", "\n"):
        start = notepad.find(boundary)
        while start != -1:
            rest = notepad[start + len(boundary) :]
            if len(rest.encode("utf-8")) <= cap:
                return rest.lstrip("\n")
            start = notepad.find(boundary, start + 1)
    return notepad.encode("utf-8")[-cap:].decode("utf-8", "ignore")


def append_notes(notepad: str, notes: str, cap: int = NOTEPAD_CAP_BYTES) -> str:
    """The notepad with a reply's notes added at its end (a blank line between replies)."""
    if not notes.strip():
        return notepad
    joined = f"{notepad}\n\n{notes.strip()}" if notepad.strip() else notes.strip()
    return trim_oldest(joined, cap)


def remove_notes(notepad: str, notes: str) -> str:
    """The notepad without the last occurrence of a reply's notes (a rollback); unchanged when they
    are no longer there (trimmed away, or the notepad was cleared)."""
    notes = notes.strip()
    if not notes:
        return notepad
    at = notepad.rfind("\n\n" + notes)
    if at != -1:
        return notepad[:at] + notepad[at + 2 + len(notes) :]
    if notepad.startswith(notes):
        return notepad[len(notes) :].lstrip("\n")
    return notepad


def injection_text(notepad: str, mode: str, instruction: str) -> str:
    """What goes into the prompt before the next reply: the previous notes and, in tag mode, the
    instruction to keep them. "" when there is nothing to inject."""
    parts = [previous_notes_block(notepad)] if notepad.strip() else []
    if mode == "tag":
        parts.append(instruction.strip())
    return "\n\n".join(parts)
