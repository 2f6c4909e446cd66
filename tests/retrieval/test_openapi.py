"""The OpenAPI document: every route of the server is in it and nothing else is, it is served, its
references resolve, and real answers from a live server match its schemas. (tests/server/
test_openapi_fuzz.py fuzzes the live server against it.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from starlette.routing import Route

from dle_desktop.core.pipeline.chat_input import MAX_MESSAGE_CHARS, MAX_MESSAGES, MAX_NAME_CHARS
from dle_desktop.server import openapi
from dle_desktop.server.app import build_app
from dle_desktop.server.schemas_chat import RETRIEVE_FIELDS
from dle_desktop.state.settings import settings_from_mapping
from tests.fakes.ai_provider import ai_fake  # noqa: F401 - the fixture

from ._schema import check, errors, resolve
from ._support import API, messages

DOC = openapi.DOCUMENT
WI_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "worldinfo" / "st"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _starlette_routes(prefix: str = "/") -> set[tuple[str, str]]:
    app = build_app(None)
    out = set()
    for route in app.routes:
        assert isinstance(route, Route), route
        if not route.path.startswith(prefix):
            continue
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)  # {path:path} → {path}
        for method in route.methods - {"HEAD"}:
            out.add((path, method))
    return out


def _documented(prefix: str = "/") -> set[tuple[str, str]]:
    return {
        (path, m.upper())
        for path, item in DOC["paths"].items()
        for m in item
        if m in METHODS and path.startswith(prefix)
    }


def test_every_route_is_documented_and_nothing_else():
    # Every route the server has, ours and SillyTavern's; the catch-all under /api/vector/ has no
    # operation to describe and is documented beside the paths.
    catch_all = {(path, m) for path, m in _starlette_routes() if path in DOC["x-catch-all-routes"]}
    assert {p for p, _ in catch_all} == set(DOC["x-catch-all-routes"]) == {"/api/vector/{name}"}
    routes, documented = _starlette_routes() - catch_all, _documented()
    assert routes - documented == set(), "routes missing from the OpenAPI document"
    assert documented - routes == set(), "documented operations the server does not have"
    assert {p for p, _ in routes if not p.startswith(API + "/")} == {
        *(
            f"/api/vector/{r}"
            for r in ("list", "insert", "delete", "query", "query-multi", "purge", "purge-all", "scopes-enabled")
        ),
        "/api/backends/kobold/embed",
        "/v1/embeddings",
        "/v1/models",
        "/api/embed",
        "/api/embeddings",
        "/api/extra/embeddings",
        "/api/embeddings/compute",
        "/api/modules",
    }
    routes = _starlette_routes(API + "/")
    # The routes the brief names, explicitly.
    expected = {
        "status",
        "entries",
        "entries/{vault}/{path}",
        "health",
        "skipped",
        "sync",
        "retrieve",
        "chats/{chat_id}",
        "chats/{chat_id}/records",
        "chats/{chat_id}/fork",
        "openapi.json",
        "ai",
        "ai/breaker/reset",
        "ai/cache/clear",
        "ai/channels/{channel}/test",
        "chats",
        "bridge",
        "bridge/hello",
        "lore/search",
        "lore/flag",
        "gaps",
        "semantic/prefetch",
        "fields",
        "folders",
        "analytics",
        "simulate",
        "app/show",
        "chats/{chat_id}/context-field",
        "chats/{chat_id}/folders",
        "chats/{chat_id}/sources",
        "chats/{chat_id}/scribe",
        "chats/{chat_id}/suggestions",
        "chats/{chat_id}/notes",
        "chats/{chat_id}/notepad",
        "suggestions",
        "writers",
        "review",
        "suggestions/{suggestion_id}/accept",
        "suggestions/{suggestion_id}/reject",
        "worldinfo/import/preview",
        "worldinfo/import",
        "worldinfo/import/undo",
        "worldinfo/export",
    }
    expected |= {f"chats/{{chat_id}}/{f}" for f in ("pins", "blocks", "context", "folder-filter", "notebook")}
    assert {p.removeprefix(API + "/") for p, _ in routes} == expected
    for f in ("pins", "blocks", "context", "folder-filter", "notebook"):
        assert {m for p, m in routes if p == f"{API}/chats/{{chat_id}}/{f}"} == {"GET", "PUT"}
    assert {m for p, m in routes if p == f"{API}/chats/{{chat_id}}"} == {"GET", "DELETE"}
    assert {m for p, m in routes if p == f"{API}/chats/{{chat_id}}/scribe"} == {"GET", "POST", "DELETE"}
    assert {m for p, m in routes if p == f"{API}/chats/{{chat_id}}/notes"} == {"POST", "DELETE"}


def _walk(node, found: list[str]) -> None:
    if isinstance(node, dict):
        if "$ref" in node:
            found.append(node["$ref"])
        for v in node.values():
            _walk(v, found)
    elif isinstance(node, list):
        for v in node:
            _walk(v, found)


def test_document_is_well_formed():
    assert DOC["openapi"] == "3.1.0"
    assert DOC["info"]["title"] and DOC["info"]["version"]
    json.dumps(DOC)  # plain JSON
    refs: list[str] = []
    _walk(DOC, refs)
    assert refs
    for ref in refs:
        resolve({"$ref": ref}, DOC)  # KeyError if dangling
    used = {r.rsplit("/", 1)[1] for r in refs}
    assert set(DOC["components"]["schemas"]) - used == set(), "unused schemas"
    op_ids = [op["operationId"] for item in DOC["paths"].values() for m, op in item.items() if m in METHODS]
    assert len(op_ids) == len(set(op_ids))
    for path, item in DOC["paths"].items():
        names = set(re.findall(r"\{(\w+)\}", path))
        for m, op in item.items():
            declared = {p["name"] for p in op.get("parameters", ()) if p["in"] == "path"}
            assert declared == names, (path, m)
            assert "200" in op["responses"] or (path, m) == ("/api/modules", "options")
            if not path.startswith(API + "/"):
                continue  # SillyTavern's routes answer errors in the shapes their callers read
            for status, resp in op["responses"].items():
                if status != "200":
                    assert resp["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_retrieve_request_schema_matches_the_accepted_fields():
    schema = DOC["components"]["schemas"]["RetrieveRequest"]
    aliases = {"chatId", "characterName", "dryRun", "folderFilter"}
    assert set(schema["properties"]) - aliases == RETRIEVE_FIELDS
    assert schema["additionalProperties"] is False
    ok = {
        "chat_id": "c",
        "messages": messages("hello"),
        "dry_run": True,
        "pins": ["A", {"title": "B", "vault": "v"}],
        "context": {"era": ["x", 1]},
        "folder_filter": None,
        "seed": 3,
    }
    check(ok, schema, DOC)
    assert errors({"chatId": "c", "messages": []}, schema, DOC) == []
    assert errors({"messages": []}, schema, DOC), "chat_id is required"
    assert errors({"chat_id": "c", "messages": [], "bogus": 1}, schema, DOC), "unknown fields are refused"
    assert errors({"chat_id": "c", "chatId": "c", "messages": []}, schema, DOC), "one spelling per field"
    assert errors({"chat_id": "c", "messages": [], "folder_filter": [], "folderFilter": []}, schema, DOC)
    for bad in ("", " c", "c\n", "a\x00b", "x" * 513):
        assert errors({"chat_id": bad, "messages": []}, schema, DOC), repr(bad)
    assert errors({"chat_id": "group/abc", "messages": []}, schema, DOC) == []
    # The documented limits are the enforced ones.
    assert schema["properties"]["messages"]["maxItems"] == MAX_MESSAGES
    message = DOC["components"]["schemas"]["ChatMessage"]["properties"]
    assert message["mes"]["maxLength"] == MAX_MESSAGE_CHARS and message["name"]["maxLength"] == MAX_NAME_CHARS
    assert set(message) >= {"name", "mes", "is_user", "is_system", "swipe_id", "extra"}


def test_document_is_served(server):
    r = server.client.get(f"{API}/openapi.json")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == json.loads(json.dumps(DOC))


def _schema_of(path: str, method: str, status: str = "200") -> dict:
    return DOC["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]


def _request_schema(path: str, method: str) -> dict:
    return DOC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


@pytest.fixture
def busy_server(server):
    """A server with a chat that has state, records, pins and a truncated and a skipped entry."""
    server.put("c1", "pins", "pins", ["Hidden Archive", {"title": "Lantern Quay", "vault": "lore"}])
    server.put("c1", "context", "context", {"era": ["Eel Year", "Founding"], "location": "Saffre"})
    server.put("c1", "folder-filter", "folder_filter", ["People", "Places"])
    server.put("c1", "notebook", "notebook", "remember the bell")
    server.retrieve("c1", messages("tamsin rings the bell; omen of eels"), seed=1)
    server.retrieve("c1", messages("tamsin rings the bell; omen of eels", "tamsin again"), seed=1)
    return server


def _writers_answer(req) -> str:
    """The fake provider's answers to the Session Scribe and Auto Lorebook prompts."""
    if "[RECENT CONVERSATION]" in req.user_text:
        return "## Events\n- Tamsin rang the bell."
    if "## Existing lorebook entries" in req.user_text:
        return json.dumps(
            [
                {"title": t, "type": "lore", "keys": [t.lower(), "bell"], "summary": f"The {t}.", "content": "Old."}
                for t in ("Brass Bell", "Sea Gate")
            ]
        )
    return "OK"


def _with_writers(s, fake) -> list[tuple[str, str, str, dict | None]]:
    """The writers' routes, with the fake provider as every channel's connection."""
    fake.default(_writers_answer)
    profile = {"id": "fake", "name": "Fake", "provider": "openai", "flavor": "custom", "model": "m"}
    settings = settings_from_mapping(
        {
            "connection_profiles": [profile | {"base_url": fake.url + "/v1"}],
            "aiSearchProfileId": "fake",
            "aiNotepadEnabled": True,
        }
    )
    s.thread.call(s.engine.apply_settings(settings), timeout=30)
    chat = messages("tamsin rings the bell", "the bell tolls")
    run = s.client.post(f"{API}/chats/c1/suggestions", json={"messages": chat})
    assert run.status_code == 200, run.text
    first, second = (p["id"] for p in run.json()["suggestions"])
    return [
        ("get", f"{API}/writers", "/writers", None),
        ("put", f"{API}/writers", "/writers", {"ai_notepad_mode": "tag", "scribe_enabled": False}),
        ("post", f"{API}/review", "/review", {"question": "what is missing?", "context_tokens": 100000}),
        ("post", f"{API}/chats/c1/scribe", "/chats/{chat_id}/scribe", {"messages": chat, "focus": "the bell"}),
        ("get", f"{API}/chats/c1/scribe", "/chats/{chat_id}/scribe", None),
        ("delete", f"{API}/chats/c1/scribe", "/chats/{chat_id}/scribe", None),
        ("post", f"{API}/chats/c1/suggestions", "/chats/{chat_id}/suggestions", {"messages": chat, "auto": True}),
        ("get", f"{API}/chats/c1/suggestions", "/chats/{chat_id}/suggestions", None),
        ("get", f"{API}/suggestions?chat_id=c1", "/suggestions", None),
        ("post", f"{API}/suggestions/{first}/accept", "/suggestions/{suggestion_id}/accept", {"keys": ["brass"]}),
        ("post", f"{API}/suggestions/{second}/reject", "/suggestions/{suggestion_id}/reject", None),
        (
            "post",
            f"{API}/chats/c1/notes",
            "/chats/{chat_id}/notes",
            {"message": 1, "text": "x<dle-notes>n</dle-notes>"},
        ),
        ("get", f"{API}/chats/c1/notepad", "/chats/{chat_id}/notepad", None),
        ("delete", f"{API}/chats/c1/notes?message=1", "/chats/{chat_id}/notes", None),
        ("delete", f"{API}/chats/c1/notepad", "/chats/{chat_id}/notepad", None),
    ]


def _with_worldinfo(s) -> list[tuple[str, str, str, dict | None]]:
    """The World Info routes, with a book SillyTavern exported; the undo takes back an import made here."""
    book = json.loads((WI_FIXTURES / "st-1.19.0" / "Harbour Lore.json").read_text(encoding="utf-8"))
    body = {"book": book, "name": "Harbour Lore", "folder": "WI"}
    made = s.client.post(f"{API}/worldinfo/import", json=body | {"confirm": True})
    assert made.status_code == 200, made.text
    wi = "/worldinfo"
    return [
        ("post", f"{API}{wi}/import/preview", f"{wi}/import/preview", body | {"folder": "WI 2"}),
        ("post", f"{API}{wi}/import", f"{wi}/import", body | {"folder": "WI 2", "confirm": True}),
        ("post", f"{API}{wi}/import/undo", f"{wi}/import/undo", {"batch": made.json()["batch"]}),
        ("get", f"{API}{wi}/export?folder=WI%202", f"{wi}/export", None),
    ]


def test_live_answers_match_the_documented_schemas(busy_server, ai_fake):
    s, c = busy_server, busy_server.client
    entries = c.get(f"{API}/entries").json()
    some = entries["entries"][0]
    calls = [
        ("get", f"{API}/status", "/status", None),
        ("get", f"{API}/entries", "/entries", None),
        ("get", f"{API}/entries?q=zzz", "/entries", None),
        ("get", f"{API}/entries/{some['vault']}/{some['path']}", "/entries/{vault}/{path}", None),
        ("get", f"{API}/health", "/health", None),
        ("get", f"{API}/skipped", "/skipped", None),
        ("post", f"{API}/sync", "/sync", None),
        (
            "post",
            f"{API}/retrieve",
            "/retrieve",
            {"chat_id": "c1", "messages": messages("a", "b", "tamsin bell omen eels quay"), "dry_run": True},
        ),
        ("get", f"{API}/chats/c1", "/chats/{chat_id}", None),
        ("get", f"{API}/chats", "/chats", None),
        ("get", f"{API}/chats?limit=1", "/chats", None),
        (
            "post",
            f"{API}/bridge/hello",
            "/bridge/hello",
            {"extension_version": "1.0.0", "st_version": None, "chat_id": "c1", "character": "Tamsin"},
        ),
        ("get", f"{API}/bridge", "/bridge", None),
        ("get", f"{API}/chats/c1/records?limit=5", "/chats/{chat_id}/records", None),
        ("post", f"{API}/chats/c1-branch/fork", "/chats/{chat_id}/fork", {"from": "c1"}),
        ("get", f"{API}/openapi.json", "/openapi.json", None),
        ("get", f"{API}/ai", "/ai", None),
        ("post", f"{API}/ai/breaker/reset", "/ai/breaker/reset", None),
        ("post", f"{API}/ai/cache/clear?chat_id=c1", "/ai/cache/clear", None),
        ("post", f"{API}/ai/channels/scribe/test", "/ai/channels/{channel}/test", None),  # not set up: ok false
        ("post", f"{API}/lore/search", "/lore/search", {"queries": ["tamsin", "unknown harbour"], "reason": "asked"}),
        (
            "post",
            f"{API}/lore/flag",
            "/lore/flag",
            {"title": "unknown harbour", "reason": "r", "urgency": "high", "flag_type": "gap", "entry_title": ""},
        ),
        ("get", f"{API}/gaps", "/gaps", None),
        ("get", f"{API}/gaps?status=pending&include_hidden=1", "/gaps", None),
        ("post", f"{API}/semantic/prefetch", "/semantic/prefetch", {"messages": ["the bell under the water"]}),
    ]
    for seg, key, value in (
        ("pins", "pins", ["Omen"]),
        ("blocks", "blocks", [{"title": "Omen", "vault": "lore"}]),
        ("context", "context", {"era": "Founding", "n": 3}),
        ("folder-filter", "folder_filter", "Places"),
        ("notebook", "notebook", "note"),
    ):
        calls.append(("get", f"{API}/chats/c1/{seg}", f"/chats/{{chat_id}}/{seg}", None))
        calls.append(("put", f"{API}/chats/c1/{seg}", f"/chats/{{chat_id}}/{seg}", {key: value}))
    written = s.retrieve("c1", messages("tamsin rings the bell; omen of eels", "tamsin again", "the bell"), seed=1)
    shown: list[dict] = []
    s.engine.window.attach(shown.append)
    calls += [
        ("get", f"{API}/fields", "/fields", None),
        ("get", f"{API}/folders", "/folders", None),
        ("get", f"{API}/analytics", "/analytics", None),
        ("get", f"{API}/analytics?chat_id=c1", "/analytics", None),
        ("post", f"{API}/simulate", "/simulate", {"chat_id": "c1", "messages": messages("tamsin", "the bell")}),
        ("post", f"{API}/app/show", "/app/show", {"view": "librarian", "gap": "g1", "mode": "review"}),
        (
            "post",
            f"{API}/chats/c1/context-field",
            "/chats/{chat_id}/context-field",
            {"field": "era", "value": "Founding"},
        ),
        ("post", f"{API}/chats/c1/context-field", "/chats/{chat_id}/context-field", {"field": "era", "value": None}),
        ("put", f"{API}/chats/c1/folders", "/chats/{chat_id}/folders", {"folders": ["places"]}),
        (
            "put",
            f"{API}/chats/c1/sources",
            "/chats/{chat_id}/sources",
            {"message": 3, "swipe": 0, "record": written["record"]},
        ),
        ("get", f"{API}/chats/c1/sources?message=3", "/chats/{chat_id}/sources", None),
    ]
    calls += _with_writers(s, ai_fake)
    calls += _with_worldinfo(s)
    calls.append(("delete", f"{API}/chats/c1", "/chats/{chat_id}", None))
    seen = set()
    for method, url, doc_path, body in calls:
        if body is not None:
            check(body, _request_schema(API + doc_path, method), DOC, strict=False)
        r = c.request(method.upper(), url, json=body)
        assert r.status_code == 200, (url, r.text)
        check(r.json(), _schema_of(API + doc_path, method), DOC)
        seen.add((API + doc_path, method.upper()))
    assert seen == _documented(API + "/"), "every documented operation of our API was exercised"
    assert shown == [{"view": "librarian", "gap": "g1", "mode": "review"}]
    # a generation that injected, truncated nothing, but has verdicts of several outcomes
    gen = s.retrieve("c2", messages("tamsin rings the bell"))
    check(gen, resolve({"$ref": "#/components/schemas/Generation"}, DOC), DOC)


def test_error_answers_match_the_error_schema(server):
    c = server.client
    for method, url, body in (
        ("POST", f"{API}/retrieve", b"{"),
        ("POST", f"{API}/retrieve", b""),
        ("GET", f"{API}/entries/lore/Nope.md", None),
        ("PUT", f"{API}/chats/x/pins", b'{"pins": 5}'),
        ("GET", f"{API}/chats/x/records?limit=x", None),
        ("GET", f"{API}/chats?limit=501", None),
        ("POST", f"{API}/bridge/hello", b'{"bogus": 1}'),
        ("POST", f"{API}/bridge/hello", b"[]"),
        ("POST", f"{API}/semantic/prefetch", b'{"messages": []}'),
        ("GET", f"{API}/no-such-route", None),
        ("POST", f"{API}/status", None),
    ):
        r = c.request(method, url, content=body)
        assert 400 <= r.status_code < 500, (url, r.status_code)
        check(r.json(), DOC["components"]["schemas"]["Error"], DOC)
    r = c.post(f"{API}/status")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "HEAD"}
    r = c.post(f"{API}/chats/x")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "DELETE"}
