"""The OpenAPI 3.1 document of the embedded server's whole HTTP API (ours under /api/dle/v1, and
the routes SillyTavern calls), built in code and served at GET /api/dle/v1/openapi.json.

The schemas are generated from models: request bodies and query strings from the ones the routes
validate with (schemas_lore.py, schemas_chat.py, schemas_vectors.py), answers from answers.py,
answers_chat.py and answers_vectors.py. This module adds the operations: paths, statuses and what
each means. tests/retrieval/test_openapi.py checks that
every route of the server is documented (and nothing else is) and validates real answers against
the document, and tests/server/test_openapi_fuzz.py fuzzes the live server with schemathesis
against it. The routes SillyTavern calls (vectors, embeddings) are described in openapi_vectors.py.

Not described yet: authentication. When the server asks for a token, add a `securitySchemes`
entry (and `security` on the operations) here."""

from __future__ import annotations

from pydantic import BaseModel

from dle_desktop import __version__
from dle_desktop.server import (
    answers,
    answers_chat,
    openapi_steer,
    openapi_vectors,
    openapi_worldinfo,
    openapi_writers,
    schemas,
    schemas_chat,
    schemas_lore,
)
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

#: Every answer model the document names (and, through them, the models they use).
ANSWERS: list[type[BaseModel]] = [
    answers.Error,
    answers.Status,
    answers.EntryList,
    answers.Entry,
    answers.HealthReport,
    answers.Skipped,
    answers.SyncResult,
    answers.LoreSearchResult,
    answers.GapRecord,
    answers.GapList,
    answers.BridgeInfo,
    answers.PrefetchResult,
    answers.BridgeState,
    answers.AiState,
    answers.BreakerReset,
    answers.CacheCleared,
    answers.ConnectionTest,
    answers_chat.Generation,
    answers_chat.ChatList,
    answers_chat.ChatState,
    answers_chat.ChatDeleted,
    answers_chat.ForkResult,
    answers_chat.Records,
    answers_chat.Pins,
    answers_chat.Blocks,
    answers_chat.ChatContext,
    answers_chat.ChatFolderFilter,
    answers_chat.Notebook,
    *openapi_vectors.ANSWERS,
    *openapi_steer.ANSWERS,
    *openapi_writers.ANSWERS,
    *openapi_worldinfo.ANSWERS,
]
_SCHEMAS: dict[str, dict] = schemas.components(ANSWERS)


#: Request bodies, by component name: generated from the models the routes validate with.
REQUEST_BODIES: dict[str, type[schemas.RequestModel]] = {
    "RetrieveRequest": schemas_chat.RetrieveRequest,
    "ForkRequest": schemas_chat.ForkRequest,
    **{model.__name__: model for model, _ in schemas_chat.FIELD_UPDATES.values()},
    "PrefetchRequest": schemas_lore.PrefetchRequest,
    "LoreSearchRequest": schemas_lore.LoreSearchRequest,
    "LoreFlagRequest": schemas_lore.LoreFlagRequest,
    "BridgeHello": schemas_lore.BridgeHello,
    **openapi_steer.REQUEST_BODIES,
    **openapi_writers.REQUEST_BODIES,
    **openapi_worldinfo.REQUEST_BODIES,
}
_SCHEMAS.update(schemas_chat.SHARED_SCHEMAS)
_SCHEMAS.update({name: schemas.request_schema(model) for name, model in REQUEST_BODIES.items()})
_SCHEMAS.update(openapi_vectors.SCHEMAS)


# -- operations --------------------------------------------------------------------------------


def _field_paths() -> dict[str, dict]:
    fields = [  # (path segment, response schema, update schema, what)
        ("pins", "Pins", "PinsUpdate", "pinned entries (always injected, as constants of priority 10)"),
        ("blocks", "Blocks", "BlocksUpdate", "blocked entries (never injected)"),
        ("context", "ChatContext", "ContextUpdate", "the gating context"),
        ("folder-filter", "ChatFolderFilter", "FolderFilterUpdate", "the folder filter (key `folder_filter`)"),
        ("notebook", "Notebook", "NotebookUpdate", "the Author's Notebook (injected when notebook_enabled)"),
    ]
    out = {}
    for seg, schema, update, what in fields:
        name = "".join(p.capitalize() for p in seg.split("-"))
        out[f"{API}/chats/{{chat_id}}/{seg}"] = {
            "get": operation(
                f"get{name}",
                f"Read a chat's {what}",
                json_answer(ref_to(schema), what),
                tag="chats",
                params=[CHAT_ID_PARAM],
                errors=BAD_CHAT_ID,
            ),
            "put": operation(
                f"put{name}",
                f"Set a chat's {what}",
                json_answer(ref_to(schema), f"{what}, as saved"),
                tag="chats",
                params=[CHAT_ID_PARAM],
                body=ref_to(update),
                errors=BODY_ERRORS,
            ),
        }
    return out


def build_document() -> dict:
    paths: dict[str, dict] = {
        f"{API}/status": {
            "get": operation(
                "getStatus", "Engine and vault status", json_answer(ref_to("Status"), "status"), tag="lore"
            )
        },
        f"{API}/entries": {
            "get": operation(
                "listEntries",
                "List entries (without content)",
                json_answer(ref_to("EntryList"), "entries"),
                tag="lore",
                params=query_params(schemas_lore.EntriesQuery),
            )
        },
        f"{API}/entries/{{vault}}/{{path}}": {
            "get": operation(
                "getEntry",
                "One entry in full",
                json_answer(ref_to("Entry"), "the entry"),
                tag="lore",
                params=[
                    {"name": "vault", "in": "path", "required": True, "schema": STR},
                    {
                        "name": "path",
                        "in": "path",
                        "required": True,
                        "schema": STR,
                        "description": "vault-relative path; may contain '/'",
                    },
                ],
                errors={"404": error_answer("no entry at that vault and path")},
            )
        },
        f"{API}/health": {
            "get": operation(
                "getHealth", "Vault health check", json_answer(ref_to("HealthReport"), "findings"), tag="lore"
            )
        },
        f"{API}/skipped": {
            "get": operation(
                "getSkipped",
                "Notes that were not indexed, and index warnings",
                json_answer(ref_to("Skipped"), "skipped notes"),
                tag="lore",
            )
        },
        f"{API}/sync": {
            "post": operation(
                "syncNow",
                "Sync the vaults now",
                json_answer(ref_to("SyncResult"), "what changed"),
                tag="lore",
                params=query_params(schemas_lore.SyncQuery),
                errors={
                    "400": error_answer("force is not 0 or 1"),
                    "502": error_answer("the sync failed (vault unreachable, ...)"),
                },
            )
        },
        f"{API}/retrieve": {
            "post": operation(
                "retrieve",
                "Run the retrieval pipeline for one generation of a chat",
                json_answer(ref_to("Generation"), "what to inject, and why"),
                tag="retrieval",
                body=ref_to("RetrieveRequest"),
                errors={**BODY_ERRORS, "503": error_answer("the vault index is not ready yet; retry shortly")},
                description="Requests for the same chat are serialised; different chats run side by side and never see "
                "each other's state.",
            )
        },
        f"{API}/chats": {
            "get": operation(
                "listChats",
                "Chats with stored state",
                json_answer(ref_to("ChatList"), "the chats, most recently saved first"),
                tag="chats",
                params=query_params(schemas_chat.ChatsQuery),
                errors={"400": error_answer("limit is not a whole number from 1 to 500")},
            )
        },
        f"{API}/lore/search": {
            "post": operation(
                "searchLore",
                "Search the vault for a tool-calling model (DLE's librarian `search`)",
                json_answer(ref_to("LoreSearchResult"), "the best hit in full, its linked entries, and the misses"),
                tag="gaps",
                body=ref_to("LoreSearchRequest"),
                errors={**BODY_ERRORS, "503": error_answer("the vault index is not ready yet; retry shortly")},
                description="Guide entries and exclude_titles are never returned. A query with no hit records a gap "
                "(or merges into a similar one: frequency +1). A refused body records nothing.",
            )
        },
        f"{API}/lore/flag": {
            "post": operation(
                "flagLore",
                "Record missing or outdated lore (DLE's librarian `flag`)",
                json_answer(ref_to("GapRecord"), "the gap record, after merging"),
                tag="gaps",
                body=ref_to("LoreFlagRequest"),
                errors=BODY_ERRORS,
                description="A flag like an existing pending record of its type merges into it: frequency +1, the "
                "higher urgency, the reason appended.",
            )
        },
        f"{API}/gaps": {
            "get": operation(
                "listGaps",
                "The gap records",
                json_answer(ref_to("GapList"), "the records"),
                tag="gaps",
                params=query_params(schemas_lore.GapsQuery),
                errors={"400": error_answer("status or include_hidden is not one of its values")},
            )
        },
        f"{API}/bridge/hello": {
            "post": operation(
                "bridgeHello",
                "The SillyTavern bridge extension says who it is; the answer is what it needs to know",
                json_answer(ref_to("BridgeInfo"), "the server's side"),
                tag="bridge",
                body=ref_to("BridgeHello"),
                errors=BODY_ERRORS,
                description="Sent on load, on a chat change and as a heartbeat (the bridge counts as connected for "
                "90 s after its last request).",
            )
        },
        f"{API}/semantic/prefetch": {
            "post": operation(
                "semanticPrefetch",
                "Embed chat messages for the semantic query before the generation that needs them",
                json_answer(
                    ref_to("PrefetchResult"),
                    "how many messages are being embedded in the background (0 with the "
                    "reason when semantic search is off or there is no model)",
                ),
                tag="bridge",
                body=ref_to("PrefetchRequest"),
                errors=BODY_ERRORS,
                description="Messages are cleaned as the semantic query cleans them (no speaker names, no OOC asides) "
                "and kept in the query cache, so the next generation's lookup finds them embedded. "
                "Best effort: a failure only costs that cache hit.",
            )
        },
        f"{API}/bridge": {
            "get": operation(
                "getBridge",
                "What the SillyTavern bridge extension last told the server",
                json_answer(ref_to("BridgeState"), "the bridge's state"),
                tag="bridge",
            )
        },
        f"{API}/chats/{{chat_id}}": {
            "get": operation(
                "getChat",
                "A chat's state",
                json_answer(ref_to("ChatState"), "the state"),
                tag="chats",
                params=[CHAT_ID_PARAM],
                errors=BAD_CHAT_ID,
            ),
            "delete": operation(
                "deleteChat",
                "Forget a chat's state and decision records",
                json_answer(ref_to("ChatDeleted"), "done"),
                tag="chats",
                params=[CHAT_ID_PARAM],
                errors=BAD_CHAT_ID,
            ),
        },
        f"{API}/chats/{{chat_id}}/fork": {
            "post": operation(
                "forkChat",
                "Start a branched chat with the state of the chat it came from",
                json_answer(ref_to("ForkResult"), "copied, or why not"),
                tag="chats",
                params=[CHAT_ID_PARAM],
                body=ref_to("ForkRequest"),
                errors={**BODY_ERRORS, "400": error_answer("bad chat id, or a bad `from`")},
                description="A chat that has state of its own is never overwritten. Decision records are not copied.",
            )
        },
        f"{API}/chats/{{chat_id}}/records": {
            "get": operation(
                "getChatRecords",
                "A chat's recent decision records",
                json_answer(ref_to("Records"), "records, newest first"),
                tag="chats",
                params=[CHAT_ID_PARAM, *query_params(schemas_chat.RecordsQuery)],
                errors={"400": error_answer("bad chat id, or limit is not a whole number from 1 to 50")},
            )
        },
        **_field_paths(),
        f"{API}/ai": {
            "get": operation(
                "getAi",
                "AI channels, usage counts and the circuit breaker",
                json_answer(ref_to("AiState"), "the AI side"),
                tag="ai",
            )
        },
        f"{API}/ai/breaker/reset": {
            "post": operation(
                "resetBreaker",
                "Close the AI circuit breaker now",
                json_answer(ref_to("BreakerReset"), "the breaker"),
                tag="ai",
            )
        },
        f"{API}/ai/cache/clear": {
            "post": operation(
                "clearAiCache",
                "Forget cached AI-search answers",
                json_answer(ref_to("CacheCleared"), "which chat, or all"),
                tag="ai",
                params=query_params(schemas_chat.CacheClearQuery),
                errors={"400": error_answer("bad chat id")},
            )
        },
        f"{API}/ai/channels/{{channel}}/test": {
            "post": operation(
                "testChannel",
                'DLE\'s connection test ("Reply OK." / "ping") on a channel\'s connection',
                json_answer(
                    ref_to("ConnectionTest"), "the result; a failure is ok=false with the reason, not an error status"
                ),
                tag="ai",
                params=[
                    {
                        "name": "channel",
                        "in": "path",
                        "required": True,
                        "schema": {
                            "type": "string",
                            "enum": ["ai_search", "scribe", "auto_suggest", "ai_notepad", "librarian", "optimize_keys"],
                        },
                    }
                ],
                errors={"404": error_answer("unknown channel")},
            )
        },
        f"{API}/openapi.json": {
            "get": operation(
                "getOpenApi",
                "This document",
                {
                    "description": "the OpenAPI document",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                tag="meta",
            )
        },
        **openapi_steer.PATHS,
        **openapi_writers.PATHS,
        **openapi_worldinfo.PATHS,
        **openapi_vectors.VECTOR_PATHS,
        **openapi_vectors.EMBEDDING_PATHS,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "DLE Desktop API",
            "version": __version__,
            "description": "The local lore engine's HTTP API. Host must be a loopback name or one listed in "
            "server_allowed_hosts (403 otherwise); a browser Origin must be listed in "
            "server_allowed_origins (403 otherwise); listed origins and clients on other machines "
            "send the server token as Authorization: Bearer or X-DLE-Token (401 otherwise). "
            "Listed origins get CORS answers: their preflights are answered on every path, and "
            "every answer to them (refusals included) carries Access-Control-Allow-Origin. "
            "Bodies over 64 MiB get 413. Every error of /api/dle/v1 and every refusal is JSON "
            '{"error": "..."}; the SillyTavern-facing routes answer other errors in the shape '
            "their callers read.",
        },
        "servers": [{"url": "http://127.0.0.1:8765", "description": "the default address (setting server_port)"}],
        "tags": [
            {"name": "lore", "description": "the index"},
            {"name": "retrieval", "description": "the retrieval pipeline"},
            {"name": "chats", "description": "per-chat state"},
            {"name": "steering", "description": "what a chat can be steered with, analytics, and the app's window"},
            {"name": "ai", "description": "AI connection channels"},
            {"name": "writers", "description": "Session Scribe, Auto Lorebook and AI Notepad"},
            {"name": "worldinfo", "description": "SillyTavern World Info books into the vault and back out"},
            {"name": "gaps", "description": "the lore API for tool-calling models, and the gap records it leaves"},
            {"name": "bridge", "description": "the SillyTavern bridge extension (dle-desktop-bridge)"},
            {"name": "vectors", "description": "SillyTavern's Vector API (its wire format, not ours)"},
            {
                "name": "embeddings",
                "description": "embedding-backend endpoints in the formats SillyTavern's "
                "sources call, served by the local model",
            },
            {"name": "meta", "description": "this document"},
        ],
        "paths": paths,
        "components": {"schemas": _SCHEMAS},
        "x-catch-all-routes": openapi_vectors.UNSUPPORTED,
    }


DOCUMENT = build_document()
