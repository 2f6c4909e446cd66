"""What the writers' routes answer (routes_writers.py); see answers.py for the conventions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dle_desktop.server.answers import Answer


class WrittenNote(Answer):
    vault: str
    path: str = Field(description="the note's path in its vault")
    title: str


class ScribeNote(WrittenNote):
    created_at: float = Field(description="Unix time")


class ScribeRun(Answer):
    ran: bool = Field(description="false: an automatic call found it off or not due (`reason`)")
    reason: str | None
    note: WrittenNote | None = Field(description="the session note written")
    summary: str | None = Field(description="the summary as written (cleaned of Obsidian syntax)")
    chat_length: int = Field(description="the chat length the next automatic run counts from")


class ScribeHistory(Answer):
    chat_id: str
    running: bool = Field(description="a Session Scribe is writing this chat's note now")
    last_chat_length: int
    last_summary: str
    notes: list[ScribeNote] = Field(description="the chat's session notes, newest first")


class ScribeCancelled(Answer):
    chat_id: str
    cancelled: bool = Field(description="false: none was running")


class Suggestion(Answer):
    title: str
    type: Literal["character", "location", "lore", "organization", "story"]
    keys: list[str]
    summary: str
    content: str


class PendingSuggestion(Answer):
    id: str
    chat_id: str
    created_at: float
    suggestion: Suggestion


class DroppedSuggestion(Answer):
    title: str
    reason: str


class SuggestRun(Answer):
    ran: bool
    reason: str | None
    suggestions: list[PendingSuggestion] = Field(description="waiting for review")
    dropped: list[DroppedSuggestion] = Field(description="what the model suggested that cannot be written, and why")
    written: list[WrittenNote] = Field(description="written at once (auto_suggest_skip_review)")


class PendingSuggestions(Answer):
    suggestions: list[PendingSuggestion] = Field(description="oldest first")


class Accepted(Answer):
    id: str
    written: WrittenNote
    suggestion: Suggestion = Field(description="as written")


class Rejected(Answer):
    id: str
    rejected: Literal[True]


class ReplyNotes(Answer):
    message: int
    swipe: int
    notes: str


class ProcessedReply(Answer):
    enabled: bool = Field(description="false: AI Notepad is off; the text comes back as sent")
    mode: Literal["tag", "extract"]
    text: str = Field(description="the reply to show: without its <dle-notes> blocks (tag) or asides (extract)")
    notes: str = Field(description="the notes kept for this reply")
    stored: bool = Field(description="notes were taken from this reply now")
    pending: bool = Field(description="extract mode without `wait`: the notes are being taken in the background")
    error: str | None = Field(description="why extract mode took no notes (the call failed); the chat goes on")


class Notepad(Answer):
    chat_id: str
    enabled: bool
    mode: Literal["tag", "extract"]
    text: str = Field(description="the chat's notepad, oldest first")
    bytes: int
    cap_bytes: int = Field(description="the oldest notes go beyond this (at a paragraph)")
    replies: list[ReplyNotes] = Field(description="the notes each reply added")


class NotesRolledBack(Notepad):
    removed: list[ReplyNotes]


class ScribeSettings(Answer):
    enabled: bool = Field(description="automatic runs (scribe_enabled); a slash command runs either way")
    interval: int = Field(description="messages between automatic runs (scribe_interval)")
    folder: str
    scan_depth: int = Field(description="messages summarised")
    informed_retrieval: bool = Field(description="AI search reads the last summary")


class AutoSuggestSettings(Answer):
    enabled: bool
    interval: int = Field(description="AI messages between automatic runs")
    folder: str
    skip_review: bool


class NotepadSettings(Answer):
    enabled: bool
    mode: Literal["tag", "extract"]
    position: int
    depth: int
    role: int


class ReviewPromptAnswer(Answer):
    prompt: str = Field(description="the prompt to send as a quiet prompt; empty when it does not fit")
    entries: int = Field(description="entries in it (every entry but the Librarian's guides)")
    tokens: int = Field(description="its size, estimated as DLE does (characters / 4)")
    question: str
    response_tokens: int = Field(
        description="the answer's length asked for (review_response_tokens); 0: the model's own"
    )
    fits: bool = Field(description="false: larger than `context_tokens`; the prompt is left out")


class WriterSettings(Answer):
    scribe: ScribeSettings
    auto_suggest: AutoSuggestSettings
    ai_notepad: NotepadSettings
