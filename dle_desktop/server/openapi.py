"""The OpenAPI 3.1 document of the embedded server's whole HTTP API (ours under /api/dle/v1, and
the routes SillyTavern calls), built in code and served at GET /api/dle/v1/openapi.json.

Keep it in step with the routes: tests/retrieval/test_openapi.py checks that every route of the
server is documented (and nothing else is) and validates real answers against the schemas below,
and tests/server/test_openapi_fuzz.py fuzzes the live server with schemathesis against it. The
routes SillyTavern calls (vectors, embeddings) are described in openapi_vectors.py.

Not described yet: authentication. When the server asks for a token, add a `securitySchemes`
entry (and `security` on the operations) here."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dle_desktop import __version__
from dle_desktop.server import openapi_vectors, schemas

API = "/api/dle/v1"

# -- schema helpers ----------------------------------------------------------------------------


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict[str, Any], required: list[str] | None = None, description: str | None = None,
         additional: Any = None) -> dict:
    out: dict[str, Any] = {"type": "object", "properties": props}
    out["required"] = list(props) if required is None else required
    if additional is not None:
        out["additionalProperties"] = additional
    if description:
        out["description"] = description
    return out


def _arr(items: dict, description: str | None = None) -> dict:
    out: dict[str, Any] = {"type": "array", "items": items}
    if description:
        out["description"] = description
    return out


def _map(values: dict, description: str | None = None) -> dict:
    out: dict[str, Any] = {"type": "object", "additionalProperties": values}
    if description:
        out["description"] = description
    return out


def _nullable(schema: dict) -> dict:
    t = schema.get("type")
    if isinstance(t, str):
        return {**schema, "type": [t, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
STRS = _arr(STR)

POSITIONS = "0 after the prompt (IN_PROMPT), 1 in chat at `depth`, 2 before the prompt, -1 an outlet"
ROLES = "0 system, 1 user, 2 assistant"

_SCHEMAS: dict[str, dict] = {
    "Error": _obj({"error": {"type": "string", "description": "what went wrong, fit for a user"}}),
    "VaultStatus": _obj({
        "name": STR, "kind": {"type": "string", "enum": ["folder", "obsidian-rest"]},
        "location": STR, "enabled": BOOL, "entries": INT, "error": _nullable(STR),
    }),
    "SemanticStatus": _obj({
        "enabled": {"type": "boolean", "description": "the semantic stage is on (setting semantic_enabled)"},
        "state": {"type": "string", "enum": ["off", "waiting", "embedding", "paused", "ready", "error"]},
        "done": {"type": "integer", "description": "entries embedded in the current pass"},
        "total": {"type": "integer", "description": "entries the current pass embeds (new or changed ones)"},
        "embedded": {"type": "integer", "description": "entries with a vector for the current model"},
        "entries": {"type": "integer", "description": "entries that should have one"},
        "error": _nullable(STR), "model": _nullable(STR), "paused": BOOL,
        "prefetched": {"type": "integer", "description": "messages embedded ahead of their generation "
                                                         "(POST /semantic/prefetch) since the engine started"},
        "query_cache_hits": {"type": "integer", "description": "query texts a lookup found embedded already"},
        "query_cache_misses": {"type": "integer", "description": "query texts a lookup had to embed itself"},
    }),
    "Breaker": _obj({
        "state": {"type": "string", "enum": ["closed", "open", "half-open"]},
        "failures": {"type": "integer", "description": "breaker-tripping failures in a row"},
        "opened_at": _nullable(NUM), "retry_in_seconds": NUM, "probe_in_flight": BOOL,
    }, description="DLE's AI circuit breaker: 2 failures in a row open it for 30 s, then one probe"),
    "ChannelUsage": _obj({
        "calls": INT, "failures": INT, "input_tokens": INT, "output_tokens": INT, "cache_read_tokens": INT,
        "cache_write_tokens": INT, "cache_hits": {"type": "integer", "description": "AI-search answers replayed from the cache"},
        "last_error": _nullable(STR), "last_latency_ms": _nullable(INT), "last_call_at": _nullable(NUM),
    }, description="counts since usage_since (kept in the data folder across restarts)"),
    "Channel": _obj({
        "label": STR, "mode": {"type": "string", "enum": ["profile", "proxy"]},
        "inherited": {"type": "boolean", "description": "uses AI search's connection"},
        "profile": _nullable(STR), "model": STR, "max_tokens": INT, "timeout_s": NUM,
        "problem": _nullable({"type": "string", "description": "why the channel cannot call (what to set)"}),
        "note": _nullable(STR), "usage": _ref("ChannelUsage"),
    }),
    "AiState": _obj({
        "offline": BOOL, "breaker": _ref("Breaker"),
        "usage_since": {"type": "number", "description": "when the usage counts started (Unix time); they survive restarts"},
        "channels": _obj({c: _ref("Channel") for c in ("ai_search", "scribe", "auto_suggest", "ai_notepad",
                                                         "librarian", "optimize_keys")}),
    }),
    "ConnectionTest": _obj({"ok": BOOL, "message": STR, "latency_ms": INT}),
    "Status": _obj({
        "version": STR, "vaults": _arr(_ref("VaultStatus")), "entries": INT, "skipped": INT,
        "index_version": _nullable(INT), "index_built_at": _nullable(NUM), "syncing": BOOL,
        "sync_paused": BOOL, "sample_vault": BOOL, "last_error": _nullable(STR),
        "semantic": _ref("SemanticStatus"),
        "ai": _obj({"enabled": BOOL, "mode": {"type": "string", "enum": ["two-stage", "ai-only"]},
                    "breaker": {"type": "string", "enum": ["closed", "open", "half-open"]}, "offline": BOOL}),
    }),
    "ParseWarning": _obj({"code": STR, "message": STR}),
    "EntrySummary": _obj({
        "path": {"type": "string", "description": "vault-relative, '/'-separated"},
        "vault": STR, "title": STR, "keys": STRS, "refine_keys": STRS,
        "priority": {"type": "number", "description": "lower runs first; default 100"},
        "constant": BOOL, "seed": BOOL, "bootstrap": BOOL, "guide": BOOL,
        "requires": STRS, "excludes": STRS, "cascade_links": STRS,
        "scan_depth": _nullable(INT), "exclude_recursion": BOOL, "warmup": _nullable(INT),
        "cooldown": _nullable(INT), "probability": _nullable(NUM),
        "position": _nullable({"type": "string", "description": "before | after | in_chat"}),
        "depth": _nullable(INT), "role": _nullable({"type": "string", "description": "system | user | assistant"}),
        "outlet": _nullable(STR), "graph": BOOL, "tags": STRS, "summary": STR, "links": STRS,
        "resolved_links": STRS, "folder": _nullable(STR),
        "custom_fields": {"type": "object", "description": "custom gating fields from the note's frontmatter"},
        "token_estimate": INT, "content_hash": STR, "original_requires": STRS, "original_excludes": STRS,
        "original_cascade_links": STRS, "warnings": _arr(_ref("ParseWarning")),
    }, description="An entry without its content (the entries list)."),
    "Entry": {"allOf": [_ref("EntrySummary"), _obj({"content": STR})],
              "description": "An entry in full, with the text that is injected."},
    "EntryList": _obj({"entries": _arr(_ref("EntrySummary")), "ready": BOOL, "index_version": INT},
                      required=["entries", "ready"],
                      description="`ready` is false (and `entries` empty, no `index_version`) before the first index."),
    "Finding": _obj({"entry": _nullable(STR), "code": STR, "message": STR, "vault": _nullable(STR),
                     "path": _nullable(STR)}),
    "HealthReport": _obj({"errors": _arr(_ref("Finding")), "warnings": _arr(_ref("Finding")),
                          "info": _arr(_ref("Finding"))}),
    "SkippedNote": _obj({"path": STR, "vault": STR, "code": STR, "reason": STR, "line": _nullable(INT)}),
    "Skipped": _obj({"skipped": _arr(_ref("SkippedNote")), "warnings": STRS}),
    "Changes": _obj({"added": STRS, "removed": STRS, "modified": STRS, "keys_changed": STRS, "has_changes": BOOL},
                    description="Changed entries as `vault:path`."),
    "SyncResult": _obj({"changes": _ref("Changes"), "seconds": NUM, "entries": INT}),
    # -- chats ----------------------------------------------------------------------------------
    "StoredContext": _map({"anyOf": [STR, STRS]}, description="Gating context as stored: text or lists of text."),
    "Injected": _obj({
        "title": STR, "vault": STR,
        "tokens": {"type": "integer", "description": "estimated tokens as injected (after truncation)"},
        "truncated": BOOL,
        "original_tokens": _nullable({"type": "integer", "description": "before truncation; null if not truncated"}),
        "matched_by": {"type": "string", "description": "the key, or (constant), (pinned), (bootstrap), "
                                                        "(cascade from: X), (fuzzy, score: n), ..."},
        "position": {"type": "integer", "description": POSITIONS}, "depth": INT,
        "role": {"type": "integer", "description": ROLES}, "priority": NUM,
    }),
    "Group": _obj({
        "key": {"type": "string", "description": "e.g. deeplore_p1_d4_r0, deeplore_notebook"},
        "position": {"type": "integer", "description": POSITIONS},
        "position_name": STR, "depth": INT, "role": {"type": "integer", "description": ROLES}, "role_name": STR,
        "outlet": _nullable(STR), "text": {"type": "string", "description": "the text to inject"},
        "entries": _arr(STR, "titles in this group"),
        "scan": {"type": "boolean", "description": "SillyTavern's allowWIScan for this prompt (setting allow_wi_scan)"},
    }),
    "Verdict": _obj({
        "title": STR, "vault": STR,
        "stage": {"type": "string", "description": "constants, bootstrap, keywords, character, cascade, recursion N, "
                                                   "fuzzy, contextual gating, folder filter, pins, blocks, reinjection "
                                                   "cooldown, requires/excludes, strip duplicates, budget, ..."},
        "outcome": {"type": "string", "enum": ["matched", "skipped", "removed", "injected", "truncated", "cut", "info"]},
        "reason": STR,
    }),
    "Generation": _obj({
        "injected": _arr(_ref("Injected")), "groups": _arr(_ref("Group")), "total_tokens": INT,
        "verdicts": _arr(_ref("Verdict"), "the decision record: every stage's verdict on every entry it touched"),
        "timings_ms": _map(NUM, "milliseconds per stage, and `total`"),
        "skipped_reason": _nullable({"type": "string", "description": "set when DLE would not run at all (the last "
                                                                      "message is a system message or a tool call); "
                                                                      "nothing is saved then"}),
        "notes": STRS,
        "swipe_rollback": {"type": "boolean", "description": "the previous generation's state was rolled back first"},
        "semantic_query": _nullable({"type": "string", "description": "what the semantic stage searched with (the "
                                                                      "newest message and the window before it); "
                                                                      "null when semantic search is off"}),
    }),
    "Analytics": _obj({"matched": INT, "injected": INT, "last_triggered": INT}),
    "ChatState": _obj({
        "chat_id": STR, "generation_count": INT, "pins": _arr(_ref("EntryRef")), "blocks": _arr(_ref("EntryRef")),
        "context": _ref("StoredContext"), "folder_filter": _nullable(STRS), "notebook": STR,
        "cooldowns": _map(INT, "vault:title → generations of cooldown left"),
        "counts": _map(INT, "vault:title → times injected in this chat"),
        "analytics": _map(_ref("Analytics"), "vault:title → match and injection counts"),
    }, description="A chat's state; an unknown chat reads as a fresh one."),
    "ChatDeleted": _obj({"chat_id": STR, "deleted": {"type": "boolean", "description": "false if there was no state"}}),
    "DecisionRecord": _obj({"gen": {"type": "integer", "description": "generation count after this generation"},
                            "created_at": {"type": "number", "description": "Unix time"},
                            "injected": STRS, "verdicts": _arr(_ref("Verdict")), "total_tokens": INT,
                            "semantic_query": {"type": "string", "description": "what the semantic stage searched "
                                                                               "with (only when it was on)"}},
                           required=["gen", "created_at", "injected", "verdicts", "total_tokens"]),
    "Records": _obj({"chat_id": STR, "records": _arr(_ref("DecisionRecord"), "newest first")}),
    "Pins": _obj({"pins": _arr(_ref("EntryRef"))}),
    "Blocks": _obj({"blocks": _arr(_ref("EntryRef"))}),
    "ChatContext": _obj({"context": _ref("StoredContext")}),
    "ChatFolderFilter": _obj({"folder_filter": _nullable(STRS)}),
    "Notebook": _obj({"notebook": STR}),
    "ChatSummary": _obj({
        "chat_id": STR, "generation_count": INT,
        "updated_at": {"type": "number", "description": "when the chat's state was last saved (Unix time, seconds)"},
        "records": {"type": "integer", "description": "decision records kept for the chat (at most 50)"},
    }),
    "ForkResult": _obj({"chat_id": STR, "from": STR,
                        "copied": {"type": "boolean", "description": "false when the chat had state already, the source had none, or both are one chat"},
                        "reason": {"type": ["string", "null"], "description": "why nothing was copied"}}),
    "ChatList": _obj({"chats": _arr(_ref("ChatSummary"), "chats with stored state, most recently saved first")}),
    "PrefetchResult": _obj({"queued": {**INT, "description": "messages handed to the embedder"},
                            "reason": {**STR, "description": "why nothing was queued"}}, required=["queued"]),
    # -- lore API for tool-calling models, and gap records ----------------------------------------
    "LoreSearchResult": _obj({
        "best": _nullable(_obj({"title": STR, "vault": STR, "path": STR,
                                "content": {"type": "string", "description": "`### Title` then the full content"}},
                               description="the single best hit across all queries")),
        "linked": _arr(_obj({"title": STR, "vault": STR, "summary": STR,
                             "manifest": {"type": "string", "description": "the entry as AI search's manifest shows it"}}),
                       "up to 3 entries the best hit links to"),
        "misses": _arr(STR, "the queries that found nothing; each became or merged into a gap record"),
        "gap_ids": _arr(STR, "the gap records the misses went to, in order"),
    }),
    "GapRecord": _obj({
        "id": STR, "type": {"type": "string", "enum": ["search", "flag"]},
        "query": {"type": "string", "description": "the search query or flagged title"},
        "reason": {"type": "string", "description": "every distinct reason given, joined with `; `"},
        "subtype": {"type": "string", "enum": ["gap", "update"]}, "entry_title": STR,
        "urgency": {"type": "string", "enum": ["low", "medium", "high"]},
        "frequency": {"type": "integer", "description": "how often it was asked for (similar records merge)"},
        "status": {"type": "string", "enum": ["pending", "written"]},
        "hidden": {"type": "boolean", "description": "hidden by the user; flagged again, it comes back"},
        "dismissed": {"type": "boolean", "description": "dismissed by the user; it stays buried"},
        "had_results": BOOL, "created": NUM, "updated": NUM,
    }, description="What the story asked for and the vault lacked; the Librarian view's Gaps panel"),
    "GapList": _obj({"gaps": _arr(_ref("GapRecord"), "pending first, then by urgency, frequency and recency")}),
    # -- SillyTavern bridge ---------------------------------------------------------------------
    "BridgeInfo": _obj({
        "server_version": STR,
        "bundled_extension_version": _nullable({"type": "string", "description": "the version of the extension "
                                                                                 "this DLE Desktop ships"}),
        "entries": INT, "index_ready": BOOL, "index_version": _nullable(INT),
        "vector_routing": {"type": "boolean", "description": "setting st_vector_routing: route SillyTavern's "
                                                             "Vector Storage here"},
        "forget_deleted_chats": {"type": "boolean", "description": "setting st_forget_deleted_chats"},
        "ai_search": _obj({"enabled": BOOL, "mode": {"type": "string", "enum": ["two-stage", "ai-only"]},
                           "timeout_ms": {"type": "integer", "description": "AI search's timeout (a retrieve "
                                                                            "may take this long and more)"}}),
        "semantic_enabled": BOOL,
    }),
    "BridgeState": _obj({
        "connected": {"type": "boolean", "description": "the extension was heard from in the last 90 s"},
        "last_contact": _nullable({"type": "number", "description": "Unix time"}),
        "last_contact_age_s": _nullable(NUM),
        "origin": _nullable(STR), "extension_version": _nullable(STR), "st_version": _nullable(STR),
        "chat_id": _nullable(STR), "character": _nullable(STR),
        "generations": {"type": "integer", "description": "retrieves the extension ran since DLE Desktop started"},
        "last_injected": _arr(STR, "titles the last one injected"),
        "last_total_tokens": _nullable(INT), "last_ms": _nullable(NUM), "last_error": _nullable(STR),
    }, description="What the bridge extension last told the server (its hellos, and requests sent with "
                   "X-DLE-Client: st-bridge)."),
}


#: Request bodies, by component name: generated from the models the routes validate with.
REQUEST_BODIES: dict[str, type[schemas.RequestModel]] = {
    "RetrieveRequest": schemas.RetrieveRequest, "ForkRequest": schemas.ForkRequest,
    **{model.__name__: model for model, _ in schemas.FIELD_UPDATES.values()},
    "PrefetchRequest": schemas.PrefetchRequest, "LoreSearchRequest": schemas.LoreSearchRequest,
    "LoreFlagRequest": schemas.LoreFlagRequest, "BridgeHello": schemas.BridgeHello,
}
_SCHEMAS.update(schemas.SHARED_SCHEMAS)
_SCHEMAS.update({name: schemas.request_schema(model) for name, model in REQUEST_BODIES.items()})
_SCHEMAS.update(openapi_vectors.SCHEMAS)


def _query(model: type[schemas.QueryModel]) -> list[dict[str, Any]]:
    """The query parameters of `model` (all optional: each has a default)."""
    out = []
    for name, prop in schemas.request_schema(model)["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        # A query parameter is absent or text: its null alternative means "absent".
        prop = next((s for s in prop.pop("anyOf") if s != {"type": "null"}), {}) | prop if "anyOf" in prop else prop
        param: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": prop}
        out.append(param | ({"description": description} if description else {}))
    return out


# -- operations --------------------------------------------------------------------------------

def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _err(description: str) -> dict:
    return _json(_ref("Error"), description)


_CHAT_ID = {"name": "chat_id", "in": "path", "required": True, "schema": _ref("ChatId"),
            "description": "the chat's id, percent-encoded. A `/` in it may be sent as is (`chats/group/abc`) or "
                           "as `%2F`; only before a part's name (`.../records`, `.../pins`, ...) must it be `%2F`, "
                           "else the name is read as that part"}
_BAD_CHAT_ID = {"400": _err("bad chat id (empty, over 512 characters, a control character, or whitespace at an end)")}
_BODY_ERRORS = {
    "400": _err("the body is empty, not UTF-8, not JSON, or has the wrong shape; `error` names the problem"),
    "413": _err("the body is over the server's limit (64 MiB)"),
}


def _op(op_id: str, summary: str, ok: dict, *, tag: str, params: list | None = None, body: dict | None = None,
        errors: dict | None = None, description: str | None = None) -> dict:
    out: dict[str, Any] = {"operationId": op_id, "summary": summary, "tags": [tag], "responses": {"200": ok, **(errors or {})}}
    if description:
        out["description"] = description
    if params:
        out["parameters"] = params
    if body is not None:
        out["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return out


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
            "get": _op(f"get{name}", f"Read a chat's {what}", _json(_ref(schema), what), tag="chats",
                       params=[_CHAT_ID], errors=_BAD_CHAT_ID),
            "put": _op(f"put{name}", f"Set a chat's {what}", _json(_ref(schema), f"{what}, as saved"), tag="chats",
                       params=[_CHAT_ID], body=_ref(update), errors=_BODY_ERRORS),
        }
    return out


def build_document() -> dict:
    paths: dict[str, dict] = {
        f"{API}/status": {"get": _op("getStatus", "Engine and vault status", _json(_ref("Status"), "status"), tag="lore")},
        f"{API}/entries": {"get": _op(
            "listEntries", "List entries (without content)", _json(_ref("EntryList"), "entries"), tag="lore",
            params=_query(schemas.EntriesQuery))},
        f"{API}/entries/{{vault}}/{{path}}": {"get": _op(
            "getEntry", "One entry in full", _json(_ref("Entry"), "the entry"), tag="lore",
            params=[{"name": "vault", "in": "path", "required": True, "schema": STR},
                    {"name": "path", "in": "path", "required": True, "schema": STR,
                     "description": "vault-relative path; may contain '/'"}],
            errors={"404": _err("no entry at that vault and path")})},
        f"{API}/health": {"get": _op("getHealth", "Vault health check", _json(_ref("HealthReport"), "findings"), tag="lore")},
        f"{API}/skipped": {"get": _op("getSkipped", "Notes that were not indexed, and index warnings",
                                      _json(_ref("Skipped"), "skipped notes"), tag="lore")},
        f"{API}/sync": {"post": _op(
            "syncNow", "Sync the vaults now", _json(_ref("SyncResult"), "what changed"), tag="lore",
            params=_query(schemas.SyncQuery),
            errors={"400": _err("force is not 0 or 1"), "502": _err("the sync failed (vault unreachable, ...)")})},
        f"{API}/retrieve": {"post": _op(
            "retrieve", "Run the retrieval pipeline for one generation of a chat",
            _json(_ref("Generation"), "what to inject, and why"), tag="retrieval", body=_ref("RetrieveRequest"),
            errors={**_BODY_ERRORS, "503": _err("the vault index is not ready yet; retry shortly")},
            description="Requests for the same chat are serialised; different chats run side by side and never see "
                        "each other's state.")},
        f"{API}/chats": {"get": _op(
            "listChats", "Chats with stored state", _json(_ref("ChatList"), "the chats, most recently saved first"),
            tag="chats",
            params=_query(schemas.ChatsQuery),
            errors={"400": _err("limit is not a whole number from 1 to 500")})},
        f"{API}/lore/search": {"post": _op(
            "searchLore", "Search the vault for a tool-calling model (DLE's librarian `search`)",
            _json(_ref("LoreSearchResult"), "the best hit in full, its linked entries, and the misses"), tag="gaps",
            body=_ref("LoreSearchRequest"),
            errors={**_BODY_ERRORS, "503": _err("the vault index is not ready yet; retry shortly")},
            description="Guide entries and exclude_titles are never returned. A query with no hit records a gap "
                        "(or merges into a similar one: frequency +1). A refused body records nothing.")},
        f"{API}/lore/flag": {"post": _op(
            "flagLore", "Record missing or outdated lore (DLE's librarian `flag`)",
            _json(_ref("GapRecord"), "the gap record, after merging"), tag="gaps", body=_ref("LoreFlagRequest"),
            errors=_BODY_ERRORS,
            description="A flag like an existing pending record of its type merges into it: frequency +1, the "
                        "higher urgency, the reason appended.")},
        f"{API}/gaps": {"get": _op(
            "listGaps", "The gap records", _json(_ref("GapList"), "the records"), tag="gaps",
            params=_query(schemas.GapsQuery),
            errors={"400": _err("status or include_hidden is not one of its values")})},
        f"{API}/bridge/hello": {"post": _op(
            "bridgeHello", "The SillyTavern bridge extension says who it is; the answer is what it needs to know",
            _json(_ref("BridgeInfo"), "the server's side"), tag="bridge", body=_ref("BridgeHello"),
            errors=_BODY_ERRORS,
            description="Sent on load, on a chat change and as a heartbeat (the bridge counts as connected for "
                        "90 s after its last request).")},
        f"{API}/semantic/prefetch": {"post": _op(
            "semanticPrefetch", "Embed chat messages for the semantic query before the generation that needs them",
            _json(_ref("PrefetchResult"), "how many messages are being embedded in the background (0 with the "
                  "reason when semantic search is off or there is no model)"), tag="bridge",
            body=_ref("PrefetchRequest"), errors=_BODY_ERRORS,
            description="Messages are cleaned as the semantic query cleans them (no speaker names, no OOC asides) "
                        "and kept in the query cache, so the next generation's lookup finds them embedded. "
                        "Best effort: a failure only costs that cache hit.")},
        f"{API}/bridge": {"get": _op("getBridge", "What the SillyTavern bridge extension last told the server",
                                     _json(_ref("BridgeState"), "the bridge's state"), tag="bridge")},
        f"{API}/chats/{{chat_id}}": {
            "get": _op("getChat", "A chat's state", _json(_ref("ChatState"), "the state"), tag="chats",
                       params=[_CHAT_ID], errors=_BAD_CHAT_ID),
            "delete": _op("deleteChat", "Forget a chat's state and decision records",
                          _json(_ref("ChatDeleted"), "done"), tag="chats", params=[_CHAT_ID], errors=_BAD_CHAT_ID),
        },
        f"{API}/chats/{{chat_id}}/fork": {"post": _op(
            "forkChat", "Start a branched chat with the state of the chat it came from",
            _json(_ref("ForkResult"), "copied, or why not"), tag="chats", params=[_CHAT_ID], body=_ref("ForkRequest"),
            errors={**_BODY_ERRORS, "400": _err("bad chat id, or a bad `from`")},
            description="A chat that has state of its own is never overwritten. Decision records are not copied.")},
        f"{API}/chats/{{chat_id}}/records": {"get": _op(
            "getChatRecords", "A chat's recent decision records", _json(_ref("Records"), "records, newest first"),
            tag="chats",
            params=[_CHAT_ID, *_query(schemas.RecordsQuery)],
            errors={"400": _err("bad chat id, or limit is not a whole number from 1 to 50")})},
        **_field_paths(),
        f"{API}/ai": {"get": _op("getAi", "AI channels, usage counts and the circuit breaker",
                                 _json(_ref("AiState"), "the AI side"), tag="ai")},
        f"{API}/ai/breaker/reset": {"post": _op("resetBreaker", "Close the AI circuit breaker now",
                                                _json(_obj({"breaker": _ref("Breaker")}), "the breaker"), tag="ai")},
        f"{API}/ai/cache/clear": {"post": _op(
            "clearAiCache", "Forget cached AI-search answers", _json(_obj({"cleared": STR}), "which chat, or all"),
            tag="ai", params=_query(schemas.CacheClearQuery),
            errors={"400": _err("bad chat id")})},
        f"{API}/ai/channels/{{channel}}/test": {"post": _op(
            "testChannel", "DLE's connection test (\"Reply OK.\" / \"ping\") on a channel's connection",
            _json(_ref("ConnectionTest"), "the result; a failure is ok=false with the reason, not an error status"),
            tag="ai", params=[{"name": "channel", "in": "path", "required": True,
                               "schema": {"type": "string", "enum": ["ai_search", "scribe", "auto_suggest",
                                                                     "ai_notepad", "librarian", "optimize_keys"]}}],
            errors={"404": _err("unknown channel")})},
        f"{API}/openapi.json": {"get": _op("getOpenApi", "This document",
                                           {"description": "the OpenAPI document",
                                            "content": {"application/json": {"schema": {"type": "object"}}}},
                                           tag="meta")},
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
                           "{\"error\": \"...\"}; the SillyTavern-facing routes answer other errors in the shape "
                           "their callers read.",
        },
        "servers": [{"url": "http://127.0.0.1:8765", "description": "the default address (setting server_port)"}],
        "tags": [{"name": "lore", "description": "the index"},
                 {"name": "retrieval", "description": "the retrieval pipeline"},
                 {"name": "chats", "description": "per-chat state"},
                 {"name": "ai", "description": "AI connection channels"},
                 {"name": "gaps", "description": "the lore API for tool-calling models, and the gap records it leaves"},
                 {"name": "bridge", "description": "the SillyTavern bridge extension (dle-desktop-bridge)"},
                 {"name": "vectors", "description": "SillyTavern's Vector API (its wire format, not ours)"},
                 {"name": "embeddings", "description": "embedding-backend endpoints in the formats SillyTavern's "
                                                       "sources call, served by the local model"},
                 {"name": "meta", "description": "this document"}],
        "paths": paths,
        "components": {"schemas": _SCHEMAS},
        "x-catch-all-routes": openapi_vectors.UNSUPPORTED,
    }


DOCUMENT = build_document()


async def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(DOCUMENT)


routes = [Route(f"{API}/openapi.json", openapi_json, methods=["GET"])]
