"""The OpenAPI operations of the writers' routes (routes_writers.py): their paths, answers and
request bodies, merged into the document by openapi.py."""

from __future__ import annotations

from pydantic import BaseModel

from dle_desktop.server import answers_writers, schemas, schemas_writers
from dle_desktop.server.openapi_parts import (
    API,
    BAD_CHAT_ID,
    BODY_ERRORS,
    CHAT_ID_PARAM,
    STR,
    error_answer,
    json_answer,
    operation,
    query_params,
    ref_to,
)

ANSWERS: list[type[BaseModel]] = [
    answers_writers.WriterSettings,
    answers_writers.ScribeRun,
    answers_writers.ScribeHistory,
    answers_writers.ScribeCancelled,
    answers_writers.SuggestRun,
    answers_writers.PendingSuggestions,
    answers_writers.Accepted,
    answers_writers.Rejected,
    answers_writers.ProcessedReply,
    answers_writers.Notepad,
    answers_writers.NotesRolledBack,
    answers_writers.ReviewPromptAnswer,
]

REQUEST_BODIES: dict[str, type[schemas.RequestModel]] = {
    "ScribeRequest": schemas_writers.ScribeRequest,
    "SuggestRequest": schemas_writers.SuggestRequest,
    "SuggestionEdits": schemas_writers.SuggestionEdits,
    "ReplyRequest": schemas_writers.ReplyRequest,
    "ReviewRequest": schemas_writers.ReviewRequest,
    "WriterSwitches": schemas_writers.WriterSwitches,
}

_AI_ERRORS = {
    "502": error_answer("the model answered nothing that can be written, or the provider failed; nothing written"),
    "503": error_answer("no AI call was made: the circuit breaker is open after repeated failures"),
    "504": error_answer("the provider did not answer in the channel's timeout; nothing written"),
}
_ID_PARAM = {
    "name": "suggestion_id",
    "in": "path",
    "required": True,
    "schema": STR | {"pattern": "^[0-9a-f]{1,64}$"},
    "description": "the suggestion's `id`",
}
_NO_SUGGESTION = {"404": error_answer("no such suggestion is waiting")}


def _notes_params() -> list[dict]:
    params = query_params(schemas_writers.NotesQuery)
    return [p | {"required": True} if p["name"] == "message" else p for p in params]


PATHS: dict[str, dict] = {
    f"{API}/review": {
        "post": operation(
            "buildReviewPrompt",
            "/dle-review: the whole vault as one prompt for the chat's own model",
            json_answer(ref_to("ReviewPromptAnswer"), "the prompt, its size, and whether it fits"),
            tag="writers",
            body=ref_to("ReviewRequest"),
            errors={**BODY_ERRORS, "503": error_answer("the vault index is not ready yet")},
            description="DLE's `[DeepLore Enhanced Review — N entries, ~T tokens]` header, every entry as "
            "`## Title` and its text, the question, and the answer's length when review_response_tokens is "
            "set. The bridge sends it as a quiet prompt, so only the question and the answer stay in the chat. "
            "`{}` asks the general question.",
        )
    },
    f"{API}/writers": {
        "get": operation(
            "getWriterSettings",
            "The writers' settings in effect (what the bridge's automatic calls depend on)",
            json_answer(ref_to("WriterSettings"), "Session Scribe, Auto Lorebook and AI Notepad"),
            tag="writers",
        ),
        "put": operation(
            "switchWriters",
            "Turn Session Scribe, Auto Lorebook or AI Notepad on or off (the bridge panel's boxes)",
            json_answer(ref_to("WriterSettings"), "the writers' settings now in effect"),
            tag="writers",
            body=ref_to("WriterSwitches"),
            errors={
                **BODY_ERRORS,
                "409": error_answer("this server cannot change its settings (no settings file behind it)"),
            },
            description="Saved into settings.json and taken at once, by `serve` and the app alike (the app's "
            "Settings show it).",
        ),
    },
    f"{API}/chats/{{chat_id}}/scribe": {
        "post": operation(
            "runScribe",
            "Session Scribe: summarise the chat into a session note in the vault",
            json_answer(ref_to("ScribeRun"), "the note written, or (auto) why none was due"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            body=ref_to("ScribeRequest"),
            errors={
                **BODY_ERRORS,
                "409": error_answer(
                    "this chat's Session Scribe is already running or was cancelled, the note's file exists, "
                    "or the Session Scribe channel is not set up"
                ),
                **_AI_ERRORS,
            },
            description="Writes `{scribe_folder}/{character} - YYYY-MM-DD HH-MM-SS.md` through the note "
            "writer (undoable, indexed at once). One run per chat at a time.",
        ),
        "get": operation(
            "getScribeHistory",
            "The chat's session notes, newest first, and its last summary",
            json_answer(ref_to("ScribeHistory"), "the notes and the Scribe's state"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            errors=BAD_CHAT_ID,
        ),
        "delete": operation(
            "cancelScribe",
            "Cancel the chat's running Session Scribe (nothing is written)",
            json_answer(ref_to("ScribeCancelled"), "whether one was running"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            errors=BAD_CHAT_ID,
        ),
    },
    f"{API}/chats/{{chat_id}}/suggestions": {
        "post": operation(
            "runAutoLorebook",
            "Auto Lorebook: propose entries the chat mentions and the vault lacks",
            json_answer(ref_to("SuggestRun"), "the suggestions waiting for review, and those dropped"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            body=ref_to("SuggestRequest"),
            errors={**BODY_ERRORS, "409": error_answer("the Auto Lorebook channel is not set up"), **_AI_ERRORS},
        ),
        "get": operation(
            "getChatSuggestions",
            "The chat's suggestions waiting for review",
            json_answer(ref_to("PendingSuggestions"), "oldest first"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            errors=BAD_CHAT_ID,
        ),
    },
    f"{API}/suggestions": {
        "get": operation(
            "listSuggestions",
            "Every suggestion waiting for review (or one chat's)",
            json_answer(ref_to("PendingSuggestions"), "oldest first"),
            tag="writers",
            params=query_params(schemas_writers.SuggestionsQuery),
            errors={"400": error_answer("bad chat id")},
        )
    },
    f"{API}/suggestions/{{suggestion_id}}/accept": {
        "post": operation(
            "acceptSuggestion",
            "Write a suggestion (with the user's edits) as `{auto_suggest_folder}/{title}.md`",
            json_answer(ref_to("Accepted"), "the note written"),
            tag="writers",
            params=[_ID_PARAM],
            body=ref_to("SuggestionEdits"),
            errors={
                **BODY_ERRORS,
                **_NO_SUGGESTION,
                "403": error_answer("the vault is read-only"),
                "409": error_answer("an entry with that title exists; the suggestion keeps waiting"),
            },
            description="The body is optional; `{}` or none writes the suggestion as it is.",
        )
    },
    f"{API}/suggestions/{{suggestion_id}}/reject": {
        "post": operation(
            "rejectSuggestion",
            "Drop a suggestion",
            json_answer(ref_to("Rejected"), "it no longer waits"),
            tag="writers",
            params=[_ID_PARAM],
            errors=_NO_SUGGESTION,
        )
    },
    f"{API}/chats/{{chat_id}}/notes": {
        "post": operation(
            "processReply",
            "AI Notepad: take a finished reply's notes out of it and keep them",
            json_answer(ref_to("ProcessedReply"), "the text to show and the notes kept"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            body=ref_to("ReplyRequest"),
            errors=BODY_ERRORS,
            description="Tag mode: the <dle-notes> blocks come out of the text. Extract mode: the "
            "[OOC: ...]-style asides come out and a call on the AI Notepad channel picks the notes. "
            "Sending the same reply again keeps the notes it had.",
        ),
        "delete": operation(
            "rollbackReplyNotes",
            "Take a reply's notes back out of the notepad (a swipe, delete or edit)",
            json_answer(ref_to("NotesRolledBack"), "what was removed, and the notepad"),
            tag="writers",
            params=[CHAT_ID_PARAM, *_notes_params()],
            errors=BAD_CHAT_ID,
        ),
    },
    f"{API}/chats/{{chat_id}}/notepad": {
        "get": operation(
            "getNotepad",
            "The chat's AI Notepad",
            json_answer(ref_to("Notepad"), "the notepad and the notes of each reply"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            errors=BAD_CHAT_ID,
        ),
        "delete": operation(
            "clearNotepad",
            "Clear the chat's AI Notepad",
            json_answer(ref_to("Notepad"), "the notepad, empty"),
            tag="writers",
            params=[CHAT_ID_PARAM],
            errors=BAD_CHAT_ID,
        ),
    },
}
