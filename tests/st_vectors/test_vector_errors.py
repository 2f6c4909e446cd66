"""Every refusal of the /api/vector/* routes: TT's JSON errors `{error: true, message, cause}` with
400 / 401 / 409 / 413 / 429 / 500, never a 500 from input, and nothing written on any error."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from dle_desktop.server.routes_vector import VECTOR_MAX_BODY_BYTES
from dle_desktop.vectors.service import MAX_INSERT_ITEMS

from ._support import DRAGON, EXAMPLE_ITEMS, items_of, raw_request

ROUTES = ("list", "insert", "delete", "query", "query-multi", "purge", "purge-all")


def kobold(model: str, vectors: dict) -> dict:
    return {"source": "koboldcpp", "model": model, "embeddings": vectors}


# -- missing fields and wrong types ---------------------------------------------------------------

MISSING = [
    ("list", {"source": "transformers"}),
    ("list", {"collectionId": "", "source": "transformers"}),
    ("list", {"collectionId": "   ", "source": "transformers"}),
    ("list", {"collectionId": None}),
    ("list", {"collectionId": ["a"]}),
    ("list", {"collectionId": {"id": "a"}}),
    ("insert", {"collectionId": "c", "source": "transformers"}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": "not an array"}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": {"hash": 1, "text": "a", "index": 0}}),
    ("insert", {"source": "transformers", "items": EXAMPLE_ITEMS}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [None]}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [{"hash": 1, "index": 0}]}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [{"hash": "1", "text": "a", "index": 0}]}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [{"hash": 1, "text": ["a"], "index": 0}]}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [{"hash": 1, "text": "a", "index": "zero"}]}),
    ("insert", {"collectionId": "c", "source": "transformers", "items": [{"hash": 1e300, "text": "a", "index": 0}]}),
    ("delete", {"collectionId": "c", "source": "transformers"}),
    ("delete", {"collectionId": "c", "source": "transformers", "hashes": 4522783205579122}),
    ("delete", {"collectionId": "c", "source": "transformers", "hashes": ["not a number"]}),
    ("delete", {"collectionId": "c", "source": "transformers", "hashes": [{"hash": 1}]}),
    ("delete", {"hashes": [1]}),
    ("query", {"collectionId": "c", "source": "transformers"}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": ""}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "  \n "}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": 42}),
    ("query", {"source": "transformers", "searchText": "x"}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "topK": -1}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "topK": 1001}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "topK": 2.5}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "topK": "lots"}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "topK": [3]}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "threshold": 1.5}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "threshold": -2}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "threshold": "high"}),
    ("query", {"collectionId": "c", "source": "transformers", "searchText": "x", "threshold": {"min": 0}}),
    ("query-multi", {"source": "transformers", "searchText": "x"}),
    ("query-multi", {"collectionIds": "c", "source": "transformers", "searchText": "x"}),
    ("query-multi", {"collectionIds": ["c", None], "source": "transformers", "searchText": "x"}),
    ("query-multi", {"collectionIds": ["c", ""], "source": "transformers", "searchText": "x"}),
    ("query-multi", {"collectionIds": ["c"], "source": "transformers"}),
    ("query-multi", {"collectionIds": ["c"], "source": "transformers", "searchText": "x", "topK": 5000}),
    ("query-multi", {"collectionIds": ["c"], "source": "transformers", "searchText": "x", "threshold": 7}),
    ("purge", {}),
    ("purge", {"collectionId": ""}),
    ("purge", {"collectionId": [1]}),
]


@pytest.mark.parametrize("route, body", MISSING, ids=[f"{r}-{i}" for i, (r, _) in enumerate(MISSING)])
def test_missing_or_wrong_fields_are_400(st, route, body):
    before = st.disk_state()
    payload = st.error(route, body, 400)
    assert payload["cause"] == "invalid_request"
    assert st.disk_state() == before


def test_nan_and_infinity_json_literals_are_400(st):
    """Python's JSON reader accepts NaN / Infinity; they are refused, never stored."""
    for literal in ("NaN", "Infinity", "-Infinity"):
        body = '{"collectionId":"c","source":"transformers","searchText":"x","threshold":%s}' % literal  # noqa: UP031 - a JSON literal: % keeps its braces as they are
        assert st.post("query", body).status_code == 400
        body = '{"collectionId":"c","source":"transformers","searchText":"x","topK":%s}' % literal  # noqa: UP031 - a JSON literal: % keeps its braces as they are
        assert st.post("query", body).status_code == 400


@pytest.mark.parametrize("route", [r for r in ROUTES if r not in ("purge", "purge-all")])
def test_unknown_source_is_400_on_every_embedding_route(st, route):
    body = {
        "collectionId": "c",
        "collectionIds": ["c"],
        "source": "nosuch",
        "items": EXAMPLE_ITEMS,
        "hashes": [1],
        "searchText": "x",
    }
    payload = st.error(route, body, 400)
    assert "unknown vector source" in payload["message"]


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b"[1,2,3]", b'"a string"', b"\xff\xfe{}", b'{"collectionId": "c"', b'{"collectionId":"\\ud800"}'],
)
@pytest.mark.parametrize("route", ROUTES)
def test_unreadable_bodies_are_400(st, route, raw):
    r = st.post(route, raw)
    assert r.status_code == 400, (route, raw, r.text)
    assert r.json()["error"] is True


def test_wrong_method_and_unknown_routes(st):
    r = st.client.get("/api/vector/list")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = st.post("no-such-route", {})
    assert r.status_code == 404 and r.json()["cause"] == "vector_endpoint_unavailable"
    assert "Unsupported vector endpoint" in r.json()["message"]
    # scopes-enabled is a route too (GET): another method is a 405 naming it, not "unsupported".
    for method in ("PUT", "POST", "DELETE"):
        r = st.client.request(method, "/api/vector/scopes-enabled")
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD", (method, r.text)


# -- precomputed vectors (koboldcpp, webllm) ------------------------------------------------------

BAD_PRECOMPUTED = [
    ("no model", {"source": "koboldcpp", "embeddings": {DRAGON: [1, 2]}}),
    ("blank model", {"source": "webllm", "model": "  ", "embeddings": {DRAGON: [1, 2]}}),
    ("no embeddings", {"source": "koboldcpp", "model": "m"}),
    ("embeddings not an object", {"source": "koboldcpp", "model": "m", "embeddings": [[1, 2]]}),
    ("text missing", {"source": "koboldcpp", "model": "m", "embeddings": {"other text": [1, 2]}}),
    ("empty vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: []}}),
    ("zero vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [0, 0, 0]}}),
    ("string in vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [1, "2"]}}),
    ("null in vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [1, None]}}),
    ("bool in vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [1, True]}}),
    ("nested vector", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [[1, 2]]}}),
    ("vector not array", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: "1,2"}}),
    ("float32 overflow", {"source": "koboldcpp", "model": "m", "embeddings": {DRAGON: [1e39, 1]}}),
]


@pytest.mark.parametrize("name, src", BAD_PRECOMPUTED, ids=[n for n, _ in BAD_PRECOMPUTED])
def test_bad_precomputed_vectors_are_400_and_write_nothing(st, cid, name, src):
    before = st.disk_state()
    st.error("insert", {"collectionId": cid, **src, "items": items_of(DRAGON)}, 400)
    st.error("query", {"collectionId": cid, **src, "searchText": DRAGON}, 400)
    assert st.disk_state() == before
    if src.get("model", "").strip():
        assert st.list(cid, source=src["source"], model=src["model"]) == []


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_or_inf_in_precomputed_vectors_is_400(st, cid, literal):
    body = (
        '{"collectionId":%s,"source":"koboldcpp","model":"m","items":[{"hash":1,"text":"t","index":0}],'  # noqa: UP031 - a JSON literal: % keeps its braces as they are
        '"embeddings":{"t":[0.5,%s,0.25]}}' % (json.dumps(cid), literal)
    )
    before = st.disk_state()
    payload = st.error("insert", body, 400)
    assert "NaN" in payload["message"] or "infinite" in payload["message"]
    assert st.disk_state() == before
    assert st.list(cid, source="koboldcpp", model="m") == []


def test_mixed_dimensions_in_one_insert_are_400(st, cid):
    src = {"source": "koboldcpp", "model": "m", "embeddings": {"a": [1, 0], "b": [1, 0, 0]}}
    st.error("insert", {"collectionId": cid, **src, "items": items_of("a", "b")}, 400)
    assert st.list(cid, source="koboldcpp", model="m") == []


def test_dimension_change_inside_a_scope_is_409_and_writes_nothing(st, cid):
    st.ok("insert", {"collectionId": cid, **kobold("m", {"a": [1, 0, 0]}), "items": items_of("a")})
    before = st.disk_state()
    payload = st.error(
        "insert",
        {"collectionId": cid, **kobold("m", {"b": [1, 0, 0, 0], "c": [0, 1, 0, 0]}), "items": items_of("b", "c")},
        409,
    )
    assert payload["cause"] == "vector_index_conflict"
    assert st.disk_state() == before
    assert st.list(cid, source="koboldcpp", model="m") == [items_of("a")[0]["hash"]]
    # The same collection under another model is another scope: any dimension is fine there.
    st.ok("insert", {"collectionId": cid, **kobold("m2", {"b": [1, 0, 0, 0]}), "items": items_of("b")})


def test_query_vector_of_another_dimension_is_a_4xx(st, cid):
    st.ok("insert", {"collectionId": cid, **kobold("m", {"a": [1, 0, 0]}), "items": items_of("a")})
    r = st.post("query", {"collectionId": cid, **kobold("m", {"q": [1, 0]}), "searchText": "q"})
    assert r.status_code in (400, 409), r.text
    assert r.json()["error"] is True


# -- sizes ----------------------------------------------------------------------------------------


def test_a_50_mb_body_is_413_and_writes_nothing(st, cid):
    filler = "x" * 1000
    items = [{"hash": i, "text": f"{filler} {i}", "index": i} for i in range(50_000)]
    body = json.dumps({"collectionId": cid, "source": "transformers", "items": items})
    assert len(body) > 50_000_000 > VECTOR_MAX_BODY_BYTES
    before = st.disk_state()
    r = st.post("insert", body)
    assert r.status_code == 413, r.text[:200]
    assert r.json()["cause"] == "request_too_large"
    assert st.disk_state() == before
    assert st.list(cid, source="transformers") == []


def test_a_huge_declared_body_is_refused_without_being_sent(st):
    raw = raw_request(
        st.port,
        "POST",
        "/api/vector/insert",
        None,
        {"Content-Type": "application/json", "Content-Length": str(200 * 1024 * 1024)},
        timeout=10,
        close_wait=0.1,
    )
    assert raw.status == 413


def test_ten_thousand_items_are_accepted(st, cid):
    """Decision: up to MAX_INSERT_ITEMS (50,000) items per insert are accepted; 10,000 is tested here
    with precomputed vectors (what the store and the routes must handle), and more are refused."""
    texts = [f"entry {i}" for i in range(10_000)]
    vectors = {t: [1.0, (i % 97) / 97.0, (i % 13) / 13.0, 0.5] for i, t in enumerate(texts)}
    st.ok("insert", {"collectionId": cid, **kobold("m4", vectors), "items": items_of(*texts)})
    listed = st.list(cid, source="koboldcpp", model="m4")
    assert len(listed) == 10_000 and set(listed) == {i["hash"] for i in items_of(*texts)}
    out = st.json(
        "query", {"collectionId": cid, **kobold("m4", {"q": [1.0, 0.0, 0.0, 0.5]}), "searchText": "q", "topK": 1000}
    )
    assert len(out["hashes"]) == 1000


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(
    not os.environ.get("DLE_SLOW_TESTS"),
    reason="embeds 10,000 texts (minutes); set DLE_SLOW_TESTS=1. 10,000 precomputed items are tested always",
)
def test_ten_thousand_items_with_the_local_model(st, cid):
    """The same through the real llama.cpp embedder (tiny model: 1 ms a text on an idle machine,
    ten times that on a busy one, hence the generous time limits)."""
    texts = [f"note {i} about the harbour" for i in range(10_000)]
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": items_of(*texts)}, timeout=850)
    assert len(st.list(cid, source="transformers")) == 10_000


def test_too_many_items_are_refused_before_embedding(st, cid):
    items = [{"hash": i, "text": "t", "index": i} for i in range(MAX_INSERT_ITEMS + 1)]
    payload = st.error("insert", {"collectionId": cid, "source": "transformers", "items": items}, 400)
    assert str(MAX_INSERT_ITEMS) in payload["message"]


# -- the embedder is missing or fails ----------------------------------------------------------------


def test_no_local_model_is_a_clear_error_and_writes_nothing(no_model, cid):
    before = no_model.disk_state()
    for route, body in [
        ("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS}),
        ("query", {"collectionId": cid, "source": "transformers", "searchText": "x"}),
        ("list", {"collectionId": cid, "source": "transformers"}),
    ]:
        payload = no_model.error(route, body, 500)
        assert payload["cause"] == "embedding_unavailable"
        assert "embedding_model_path" in payload["message"]
    assert no_model.disk_state() == before
    # Precomputed sources and the purges need no model.
    no_model.ok("insert", {"collectionId": cid, **kobold("m", {"a": [1, 2]}), "items": items_of("a")})
    no_model.ok("purge", {"collectionId": cid})
    no_model.ok("purge-all", {})


@pytest.mark.parametrize(
    "src",
    [
        {"source": "llamacpp"},
        {"source": "vllm", "apiUrl": "http://127.0.0.1:9"},
        {"source": "ollama", "apiUrl": "http://127.0.0.1:9"},
        {"source": "extras"},
    ],
)
def test_remote_sources_without_their_settings_are_400(st, cid, src):
    st.error("insert", {"collectionId": cid, **src, "items": EXAMPLE_ITEMS}, 400)


def test_unreachable_remote_is_500_and_writes_nothing(st, cid):
    from .test_vector_contract import remote_available

    if not remote_available():
        pytest.skip("vectors/remote.py does not provide a llamacpp embedder (yet)")
    before = st.disk_state()
    payload = st.error(
        "insert",
        {"collectionId": cid, "source": "llamacpp", "apiUrl": "http://127.0.0.1:9", "items": EXAMPLE_ITEMS},
        500,
    )
    assert payload["cause"] == "embedding_unavailable"
    assert st.disk_state() == before


# -- no 500 from input ------------------------------------------------------------------------------

JUNK = [None, True, 0, -1, 1.5, "", "x", [], [None], {}, {"a": None}, [[[]]], "\u0000", 2**70]


@pytest.mark.parametrize("route", ROUTES)
def test_junk_in_every_field_never_gives_a_500(request, route):
    # The purges really purge: they get a server of their own.
    st = request.getfixturevalue("fresh" if route.startswith("purge") else "st")
    fields = (
        "collectionId",
        "collectionIds",
        "items",
        "hashes",
        "searchText",
        "topK",
        "threshold",
        "source",
        "apiUrl",
        "model",
        "keep",
        "embeddings",
    )
    base = {
        "collectionId": "junk",
        "collectionIds": ["junk"],
        "items": [],
        "hashes": [],
        "searchText": "x",
        "source": "koboldcpp",
        "model": "m",
        "embeddings": {"x": [1, 0]},
    }
    before = st.disk_state()
    for field in fields:
        for value in JUNK:
            r = st.post(route, {**base, field: value})
            assert r.status_code < 500, (route, field, value, r.status_code, r.text)
    assert st.disk_state() == before  # every request was refused or wrote nothing (`items: []`)


def test_host_check_applies_to_the_vector_routes(st):
    r = st.client.post("/api/vector/list", json={"collectionId": "c"}, headers={"Host": "evil.example"})
    assert r.status_code == 403


def test_no_cors_on_the_vector_routes(st):
    """Only ST's server or a native client calls these (no Origin): no CORS answers, and a page's
    preflight is refused."""
    r = st.client.post("/api/vector/list", json={"collectionId": "c", "source": "transformers"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    r = st.client.options(
        "/api/vector/list", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    )
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers


def test_errors_keep_the_connection_usable(st):
    with httpx.Client(base_url=st.url, timeout=30) as client:
        for _ in range(3):
            assert client.post("/api/vector/query", json={"collectionId": "c"}).status_code == 400
            assert (
                client.post("/api/vector/list", json={"collectionId": "c", "source": "transformers"}).status_code == 200
            )


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://evil.example:8443", "null", "http://192.168.1.5:8000", "file://"]
)
def test_cross_site_pages_cannot_post(st, cid, origin):
    """A web page's cross-site `text/plain` POST needs no preflight: it is refused by its Origin
    (the Host is ours, so the Host check alone would let it through), and nothing is written."""
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS[:1]})
    before = st.disk_state()
    for route, body in [
        ("purge-all", {}),
        ("purge", {"collectionId": cid}),
        ("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS}),
    ]:
        r = st.client.post(
            f"/api/vector/{route}",
            content=json.dumps(body),
            headers={"Origin": origin, "Content-Type": "text/plain;charset=UTF-8"},
        )
        assert r.status_code == 403 and r.json()["cause"] == "forbidden_origin"
    for path in ("/v1/embeddings", "/api/embed", "/api/extra/embeddings", "/api/embeddings/compute"):
        r = st.client.post(path, content=b'{"input": "x", "text": "x"}', headers={"Origin": origin})
        assert r.status_code == 403
    assert st.disk_state() == before
    assert st.list(cid, source="transformers") == [EXAMPLE_ITEMS[0]["hash"]]


@pytest.mark.parametrize(
    "origin, status, cause",
    [
        ("http://localhost:8000", 401, "token_required"),
        ("http://127.0.0.1:8000", 401, "token_required"),
        ("http://[::1]:8000", 403, "forbidden_origin"),
    ],
)
def test_pages_on_loopback_are_web_pages_too(st, origin, status, cause):
    """A page on http://127.0.0.1:8000 may be SillyTavern, or anything else served there: only
    origins listed in server_allowed_origins (SillyTavern's default address is, by default) are
    let through, and only with the server token."""
    r = st.client.post(
        "/api/vector/list", json={"collectionId": "c", "source": "transformers"}, headers={"Origin": origin}
    )
    assert r.status_code == status and r.json()["cause"] == cause


def test_a_broken_model_file_fails_only_the_requests_that_need_it(tmp_path):
    from ._support import StServer

    junk = tmp_path / "broken.gguf"
    junk.write_bytes(b"this is not a GGUF file" * 100)
    (tmp_path / "vault").mkdir()
    server = StServer(tmp_path / "data", tmp_path / "vault", junk)
    try:
        payload = server.error("insert", {"collectionId": "c", "source": "transformers", "items": EXAMPLE_ITEMS}, 500)
        assert "broken" in payload["message"]
        r = server.client.post("/v1/embeddings", json={"input": ["x"]})
        assert r.status_code == 503 and "broken" in r.json()["error"]["message"]
        # Everything that needs no local model still works.
        server.ok("insert", {"collectionId": "c", **kobold("m", {"a": [1, 2]}), "items": items_of("a")})
        assert server.list("c", source="koboldcpp", model="m") == [items_of("a")[0]["hash"]]
        assert server.client.get("/api/dle/v1/status").status_code == 200
    finally:
        server.close()
