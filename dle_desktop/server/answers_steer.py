"""What the steering routes answer (routes_steer.py); see answers.py for the conventions."""

from __future__ import annotations

from pydantic import Field

from dle_desktop.server.answers import Answer, StoredContext
from dle_desktop.server.answers_chat import Injected, Verdict


class ValueUse(Answer):
    value: str
    entries: int = Field(description="notes that carry this value")
    lets_through: int = Field(description="notes this field's gate passes with the chat's value set to it")


class FieldGating(Answer):
    enabled: bool
    operator: str
    tolerance: str


class FieldUse(Answer):
    name: str
    label: str
    type: str
    multi: bool
    context_key: str
    gating: FieldGating
    values: list[str] = Field(description="the values field-definitions.yaml lists for it")
    entries_with_field: int
    used_values: list[ValueUse] = Field(
        description="every value the notes use or the definition lists, most used first"
    )


class Fields(Answer):
    source: str = Field(description="`defaults` or the vault file the definitions came from")
    problems: list[str]
    entries: int
    fields: list[FieldUse]


class FolderUse(Answer):
    path: str
    entries: int = Field(description="notes in it or its subfolders")


class Folders(Answer):
    folders: list[FolderUse]


class ContextFieldSet(Answer):
    field: str
    context_key: str
    value: str | list[str] | None = Field(description="as saved; null when cleared")
    context: StoredContext


class FoldersSet(Answer):
    folder_filter: list[str] | None = Field(description="as saved, spelled as the vault spells them; null: off")


class Usage(Answer):
    matched: int
    injected: int
    last_injected_at: float | None = Field(description="Unix time; null if never injected")


class EntryUsage(Usage):
    title: str
    vault: str
    path: str
    chat: Usage | None = Field(None, description="in the chat named by chat_id (present only then)")


class AnalyticsTable(Answer):
    chat_id: str | None
    chats: int = Field(description="chats with analytics")
    never_injected: int
    entries: list[EntryUsage] = Field(description="every entry of the vault, most injected first")


class SourceChanges(Answer):
    added: list[str]
    dropped: list[str]


class MessageSource(Answer):
    message: int
    swipe: int
    gen: int = Field(description="the decision record's number")
    generated_at: float = Field(description="Unix time of the generation")
    injected: list[str]
    sources: list[Injected] = Field(description="what was injected, how it matched, where it went")
    verdicts: list[Verdict]
    total_tokens: int
    semantic_query: str | None = Field(None, description="present when semantic search ran")
    changes: SourceChanges | None = Field(description="against the reply before it; null for the first one on record")


class SimulatedStep(Answer):
    message: int = Field(description="the index of the message the generation followed")
    speaker: str
    is_user: bool
    injected: list[str]
    added: list[str] = Field(description="injected now, not at the step before")
    dropped: list[str] = Field(description="injected at the step before, not now")
    total_tokens: int


class Simulation(Answer):
    messages: int
    simulated: int
    steps: list[SimulatedStep]


class Shown(Answer):
    view: str
    shown: bool
