"""The OpenAPI operations of the steering routes (routes_steer.py): their paths, answers and
request bodies, merged into the document by openapi.py."""

from __future__ import annotations

from pydantic import BaseModel

from dle_desktop.server import answers_steer, schemas, schemas_steer
from dle_desktop.server.openapi_parts import (
    API,
    BAD_CHAT_ID,
    BODY_ERRORS,
    CHAT_ID_PARAM,
    error_answer,
    json_answer,
    operation,
    query_params,
    ref_to,
)

ANSWERS: list[type[BaseModel]] = [
    answers_steer.Fields,
    answers_steer.Folders,
    answers_steer.ContextFieldSet,
    answers_steer.FoldersSet,
    answers_steer.AnalyticsTable,
    answers_steer.MessageSource,
    answers_steer.Simulation,
    answers_steer.Shown,
]

REQUEST_BODIES: dict[str, type[schemas.RequestModel]] = {
    "ContextFieldRequest": schemas_steer.ContextFieldRequest,
    "FolderSelection": schemas_steer.FolderSelection,
    "SourceLink": schemas_steer.SourceLink,
    "ShowRequest": schemas_steer.ShowRequest,
    "SimulateRequest": schemas_steer.SimulateRequest,
}


def _source_params() -> list[dict]:
    params = query_params(schemas_steer.SourceQuery)
    return [p | {"required": True} if p["name"] == "message" else p for p in params]


_NOT_READY = {"503": error_answer("the vault index is not ready yet; retry shortly")}
_UNKNOWN = "a field or folder the vault does not have (`error` names the ones it has); nothing was changed"

PATHS: dict[str, dict] = {
    f"{API}/fields": {
        "get": operation(
            "listFields",
            "The gating fields, with the values the notes use and how many entries each lets through",
            json_answer(ref_to("Fields"), "the fields (field-definitions.yaml, or the defaults)"),
            tag="steering",
            errors=_NOT_READY,
        )
    },
    f"{API}/folders": {
        "get": operation(
            "listFolders",
            "The vault's folders, with how many notes each holds",
            json_answer(ref_to("Folders"), "every folder that holds a note, and its parents"),
            tag="steering",
            errors=_NOT_READY,
        )
    },
    f"{API}/analytics": {
        "get": operation(
            "getAnalytics",
            "Per entry: times matched, times injected, last injected (over all chats, and in one chat)",
            json_answer(ref_to("AnalyticsTable"), "every entry of the vault, the never-injected ones too"),
            tag="steering",
            params=query_params(schemas_steer.AnalyticsQuery),
            errors={"400": error_answer("bad chat id"), **_NOT_READY},
        )
    },
    f"{API}/simulate": {
        "post": operation(
            "simulateChat",
            "Replay a chat message by message with keywords only: what each generation would inject",
            json_answer(ref_to("Simulation"), "one step per message (the newest 300)"),
            tag="retrieval",
            body=ref_to("SimulateRequest"),
            errors={**BODY_ERRORS, **_NOT_READY},
            description="AI search and semantic search are off and the seed is fixed; the chat's stored pins, "
            "blocks, context and folder filter apply unless the body sends its own. Nothing is saved.",
        )
    },
    f"{API}/app/show": {
        "post": operation(
            "showView",
            "Bring a view of the app's window to the front",
            json_answer(ref_to("Shown"), "the window was asked to show it"),
            tag="steering",
            body=ref_to("ShowRequest"),
            errors={**BODY_ERRORS, "409": error_answer("no window runs here (`dle-desktop serve`)")},
        )
    },
    f"{API}/chats/{{chat_id}}/context-field": {
        "post": operation(
            "setContextField",
            "Set or clear one gating field of a chat's context, by the field's name or context key",
            json_answer(ref_to("ContextFieldSet"), "the field as saved, and the whole context"),
            tag="chats",
            params=[CHAT_ID_PARAM],
            body=ref_to("ContextFieldRequest"),
            errors={**BODY_ERRORS, "404": error_answer(_UNKNOWN), **_NOT_READY},
        )
    },
    f"{API}/chats/{{chat_id}}/folders": {
        "put": operation(
            "setFolders",
            "Set a chat's folder filter to folders the vault has",
            json_answer(ref_to("FoldersSet"), "the folder filter as saved"),
            tag="chats",
            params=[CHAT_ID_PARAM],
            body=ref_to("FolderSelection"),
            errors={**BODY_ERRORS, "404": error_answer(_UNKNOWN), **_NOT_READY},
        )
    },
    f"{API}/chats/{{chat_id}}/sources": {
        "get": operation(
            "getMessageSource",
            "The lore a reply (message and swipe) was written with",
            json_answer(ref_to("MessageSource"), "its decision record, and what changed against the reply before"),
            tag="chats",
            params=[CHAT_ID_PARAM, *_source_params()],
            errors={**BAD_CHAT_ID, "404": error_answer("nothing is on record for that message and swipe")},
        ),
        "put": operation(
            "linkMessageSource",
            "Tie the decision record a /retrieve answer named to the reply it wrote",
            json_answer(ref_to("MessageSource"), "the record as kept for that reply"),
            tag="chats",
            params=[CHAT_ID_PARAM],
            body=ref_to("SourceLink"),
            errors={**BODY_ERRORS, "404": error_answer("that record is no longer kept (the newest 50 are)")},
        ),
    },
}
