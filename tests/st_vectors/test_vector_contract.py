"""The seven /api/vector/* routes against st-wire-contracts.md §1.2, on a live server with the real
local embedder: every example request/response, with the source settings in the body (ST 1.13+)
and in X-* headers (ST 1.12), and TauriTavern's fixes (§2.2) where we adopt them.

Transports:
  * transformers  - our local llama.cpp embedder;
  * llamacpp/vllm/ollama (1.13 body, 1.12 headers) - `apiUrl` pointing at OUR OWN server's
    embedding endpoints, exactly like ST would (needs the remote embedders of vectors/remote.py);
  * koboldcpp     - vectors precomputed through our own /api/extra/embeddings, as ST's browser does.
The exact example responses are reproduced with precomputed (designed) vectors, since the tiny test
model's weights are random and give no meaningful similarities."""

from __future__ import annotations

import json
import math

import pytest

from dle_desktop.vectors.source_settings import SourceSettings

from ._support import (
    BREAD,
    CAPITAL,
    CHAT_ID,
    DRAGON,
    EXAMPLE_ITEMS,
    FILE_ID,
    KINGDOM,
    RED_DRAGON,
    WORLD_ID,
    item,
    items_of,
)


def remote_available(source: str = "llamacpp") -> bool:
    """Whether vectors/remote.py provides an embedder for this ST source (it is built alongside)."""
    try:
        from dle_desktop.state.secrets import SecretStore
        from dle_desktop.vectors.remote import embedder_for_st_source
    except ImportError:
        return False
    settings = SourceSettings(source=source, api_url="http://127.0.0.1:9", model="m", extras_url="http://127.0.0.1:9")
    try:
        return embedder_for_st_source(settings, secrets=SecretStore(use_keyring=False)) is not None
    except Exception:  # noqa: BLE001 - any failure means the source is not available here
        return False


TRANSPORTS = [
    "transformers",
    "koboldcpp",
    "llamacpp-1.13",
    "llamacpp-1.12",
    "vllm-1.13",
    "vllm-1.12",
    "ollama-1.13",
    "ollama-1.12",
    "extras-1.13",
    "extras-1.12",
]


def source(st, transport: str, texts=()) -> tuple[dict, dict]:
    """(body fields, headers) for a transport; `texts` are what the request will need embedded."""
    name = transport.split("-")[0]
    if name not in ("transformers", "koboldcpp") and not remote_available(name):
        pytest.skip(f"vectors/remote.py does not provide a {name} embedder (yet)")
    if transport == "transformers":
        return {"source": "transformers"}, {}
    if transport == "koboldcpp":
        return st.kobold_body(list(texts)), {}
    if transport == "llamacpp-1.13":
        return {"source": "llamacpp", "apiUrl": st.url}, {}
    if transport == "llamacpp-1.12":
        return {"source": "llamacpp"}, {"X-LlamaCpp-URL": st.url}
    if transport == "vllm-1.13":
        return {"source": "vllm", "apiUrl": st.url + "/v1", "model": "dle-local"}, {}
    if transport == "vllm-1.12":
        return {"source": "vllm"}, {"X-Vllm-URL": st.url + "/v1", "X-Vllm-Model": "dle-local"}
    if transport == "ollama-1.13":
        return {"source": "ollama", "apiUrl": st.url, "model": "dle-local", "keep": True}, {}
    if transport == "ollama-1.12":
        return {"source": "ollama"}, {"X-Ollama-URL": st.url, "X-Ollama-Model": "dle-local", "X-Ollama-Keep": "true"}
    if transport == "extras-1.13":
        return {"source": "extras", "extrasUrl": st.url, "extrasKey": "sekrit"}, {}
    if transport == "extras-1.12":
        return {"source": "extras"}, {"X-Extras-Url": st.url, "X-Extras-Key": "sekrit"}
    raise AssertionError(transport)


def unit(*xs: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in xs))
    return [x / n for x in xs]


def at_cosine(c: float, dims: int = 4, axis: int = 1) -> list[float]:
    """A unit vector at cosine `c` from e0 (the designed query vector)."""
    v = [0.0] * dims
    v[0] = c
    v[axis] = math.sqrt(max(0.0, 1 - c * c))
    return v


QUERY = [1.0, 0.0, 0.0, 0.0]


def designed(model: str, vectors: dict[str, list[float]], source: str = "webllm") -> dict:
    return {"source": source, "model": model, "embeddings": vectors}


# -- list / insert / delete (the §1.2 examples, every transport) -----------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_insert_delete_examples(st, transport):
    """§1.2 list/insert/delete, with the example's own chat id, items and hashes."""
    cid = f"{CHAT_ID} [{transport}]"  # one example collection per transport on the shared server
    src, headers = source(st, transport)
    assert st.json("list", {"collectionId": cid, **src}, headers) == []

    src, headers = source(st, transport, [i["text"] for i in EXAMPLE_ITEMS])
    st.ok("insert", {"collectionId": cid, **src, "items": EXAMPLE_ITEMS}, headers)
    src, headers = source(st, transport)
    r = st.post("list", {"collectionId": cid, **src}, headers)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json; charset=utf-8"
    assert r.text == "[4522783205579122,2025268282665900,3363174424249661]"

    st.ok("delete", {"collectionId": cid, **src, "hashes": [2025268282665900]}, headers)
    assert st.json("list", {"collectionId": cid, **src}, headers) == [4522783205579122, 3363174424249661]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_item_with_empty_text_inserts_alone(st, cid, transport):
    # A batch of one empty text: our Ollama endpoint used to answer it with no embedding, and
    # the insert (ST's Ollama source, or our own Ollama client) failed with a 500.
    item = {"hash": 777, "text": "", "index": 0}
    src, headers = source(st, transport, [""])
    st.ok("insert", {"collectionId": cid, **src, "items": [item]}, headers)
    src, headers = source(st, transport)
    assert st.json("list", {"collectionId": cid, **src}, headers) == [777]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_query_answers_aligned_metadata_and_hashes(st, cid, transport):
    src, headers = source(st, transport, [i["text"] for i in EXAMPLE_ITEMS])
    st.ok("insert", {"collectionId": cid, **src, "items": EXAMPLE_ITEMS}, headers)
    src, headers = source(st, transport, [DRAGON])
    r = st.post("query", {"collectionId": cid, **src, "searchText": DRAGON, "topK": 3, "threshold": -1}, headers)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json; charset=utf-8"
    assert list(r.json()) == ["metadata", "hashes"]  # key order: metadata, then hashes
    out = r.json()
    assert sorted(out["hashes"]) == sorted(i["hash"] for i in EXAMPLE_ITEMS)
    assert out["hashes"] == [m["hash"] for m in out["metadata"]]
    for m in out["metadata"]:
        assert list(m) == ["hash", "text", "index"]
        assert m in EXAMPLE_ITEMS
    if transport != "transformers":  # documents and the search text are embedded alike: the same text scores 1.0
        assert out["hashes"][0] == 4522783205579122


def test_insert_example_response_is_plain_text_ok(st, cid):
    r = st.post("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS})
    assert (r.status_code, r.headers["content-type"], r.content) == (200, "text/plain; charset=utf-8", b"OK")


def test_query_example_reproduced_exactly(st):
    """§1.2 /query with topK 3 and threshold 0.25. TT's fix: `hashes` is filtered by the threshold
    together with `metadata` (upstream ST would also list the bread hash)."""
    cid = CHAT_ID + " [designed]"
    vectors = {
        DRAGON: at_cosine(0.9),
        RED_DRAGON: at_cosine(0.6, axis=2),
        BREAD: at_cosine(0.1, axis=3),
        "dragon mountains": QUERY,
    }
    st.ok("insert", {"collectionId": cid, **designed("designed-4d", vectors, "koboldcpp"), "items": EXAMPLE_ITEMS})
    r = st.post(
        "query",
        {
            "collectionId": cid,
            **designed("designed-4d", vectors, "koboldcpp"),
            "searchText": "dragon mountains",
            "topK": 3,
            "threshold": 0.25,
        },
    )
    assert r.status_code == 200
    assert r.text == (
        '{"metadata":[{"hash":4522783205579122,"text":"The dragon sleeps in the northern mountains","index":0},'
        '{"hash":3363174424249661,"text":"A red dragon attacked the mountain village","index":2}],'
        '"hashes":[4522783205579122,3363174424249661]}'
    )
    # Without a threshold (default 0) every hit with a score >= 0 is listed, best first.
    out = st.json(
        "query",
        {
            "collectionId": cid,
            **designed("designed-4d", vectors, "koboldcpp"),
            "searchText": "dragon mountains",
            "topK": 3,
        },
    )
    assert out["hashes"] == [4522783205579122, 3363174424249661, 2025268282665900]


def test_query_threshold_filters_hashes_and_metadata_together(st, cid):
    texts = [f"memory {i}" for i in range(6)]
    cosines = [0.95, 0.7, 0.45, 0.3, 0.05, -0.4]
    vectors = {t: at_cosine(c) for t, c in zip(texts, cosines)} | {"q": QUERY}
    body = designed("threshold-model", vectors)
    st.ok("insert", {"collectionId": cid, **body, "items": items_of(*texts)})
    for threshold, expected in [(0.5, 2), (0.25, 4), (0.0, 5), (-1, 6), (0.96, 0), (1, 0)]:
        out = st.json("query", {"collectionId": cid, **body, "searchText": "q", "topK": 10, "threshold": threshold})
        assert len(out["hashes"]) == len(out["metadata"]) == expected, threshold
        assert out["hashes"] == [m["hash"] for m in out["metadata"]]
        assert [m["text"] for m in out["metadata"]] == texts[:expected]


def test_query_topk_and_threshold_defaults(st, cid):
    """topK = Number(topK) || 10, threshold = Number(threshold) || 0."""
    texts = [f"line {i}" for i in range(14)]
    vectors = {t: at_cosine(0.9 - 0.1 * i) for i, t in enumerate(texts)} | {"q": QUERY}  # 0.9 ... -0.4
    body = designed("defaults-model", vectors)
    st.ok("insert", {"collectionId": cid, **body, "items": items_of(*texts)})
    out = st.json("query", {"collectionId": cid, **body, "searchText": "q"})
    assert [m["text"] for m in out["metadata"]] == texts[:10]  # 10 by default; all of them score >= 0
    for k in (0, None, "0", ""):
        assert len(st.json("query", {"collectionId": cid, **body, "searchText": "q", "topK": k})["hashes"]) == 10
    assert (
        len(st.json("query", {"collectionId": cid, **body, "searchText": "q", "topK": "3"})["hashes"]) == 3
    )  # Number("3")
    out = st.json("query", {"collectionId": cid, **body, "searchText": "q", "topK": 14})
    assert [m["text"] for m in out["metadata"]] == texts[:10]  # threshold 0 drops the 4 negative scores
    out = st.json("query", {"collectionId": cid, **body, "searchText": "q", "topK": 14, "threshold": "-1"})
    assert len(out["hashes"]) == 14


def test_query_of_a_missing_collection_is_empty(st, cid):
    assert st.json("query", {"collectionId": cid, "source": "transformers", "searchText": "anything"}) == {
        "metadata": [],
        "hashes": [],
    }
    assert st.list(cid, source="transformers") == []  # ST creates it empty: it lists as empty afterwards


# -- query-multi ----------------------------------------------------------------------------------


def _eldoria(st, model="eldoria-4d", file_cos=0.5):
    vectors = {
        CAPITAL: at_cosine(0.95),
        KINGDOM: at_cosine(0.7, axis=2),
        "The harbour of Skyhold": at_cosine(file_cos),
        "Bread prices": at_cosine(0.1, axis=3),
        "capital of Eldoria": QUERY,
    }
    body = designed(model, vectors, "koboldcpp")
    st.ok("insert", {"collectionId": WORLD_ID, **body, "items": [item(KINGDOM, 0), item(CAPITAL, 1)]})
    st.ok("insert", {"collectionId": FILE_ID, **body, "items": items_of("The harbour of Skyhold", "Bread prices")})
    return body


def test_query_multi_example_reproduced_exactly(st):
    """§1.2 /query-multi: topK is global, the threshold applies, and only collections with a
    surviving hit appear; values are {hashes, metadata} in score order."""
    body = _eldoria(st)
    r = st.post(
        "query-multi",
        {
            "collectionIds": [WORLD_ID, FILE_ID],
            **body,
            "searchText": "capital of Eldoria",
            "topK": 2,
            "threshold": 0.25,
        },
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json; charset=utf-8"
    assert r.text == (
        '{"world_59964539520806":{"hashes":[4280468795193305,3243511751660667],'
        '"metadata":[{"hash":4280468795193305,"text":"The capital of Eldoria is Skyhold.","index":1},'
        '{"hash":3243511751660667,"text":"Eldoria is a kingdom of floating islands.","index":0}]}}'
    )
    st.ok("purge", {"collectionId": WORLD_ID})
    st.ok("purge", {"collectionId": FILE_ID})


def test_query_multi_top_k_is_global_and_grouped_by_collection(st):
    body = _eldoria(st, model="eldoria-global", file_cos=0.8)  # the harbour chunk now ranks second overall
    out = st.json(
        "query-multi",
        {
            "collectionIds": [FILE_ID, WORLD_ID, "missing-collection"],
            **body,
            "searchText": "capital of Eldoria",
            "topK": 3,
            "threshold": 0.25,
        },
    )
    assert list(out) == [WORLD_ID, FILE_ID]  # grouped in global score order: the best hit's collection first
    assert out[WORLD_ID]["hashes"] == [4280468795193305, 3243511751660667]
    assert out[FILE_ID]["hashes"] == [item("The harbour of Skyhold", 0)["hash"]]
    for group in out.values():
        assert list(group) == ["hashes", "metadata"]
        assert group["hashes"] == [m["hash"] for m in group["metadata"]]
    out = st.json(
        "query-multi", {"collectionIds": [WORLD_ID, FILE_ID], **body, "searchText": "capital of Eldoria", "topK": 1}
    )
    assert out == {
        WORLD_ID: {"hashes": [4280468795193305], "metadata": [{"hash": 4280468795193305, "text": CAPITAL, "index": 1}]}
    }
    out = st.json("query-multi", {"collectionIds": [WORLD_ID, FILE_ID], **body, "searchText": "capital of Eldoria"})
    assert sum(len(g["hashes"]) for g in out.values()) == 4  # default topK 10, threshold 0: all four
    out = st.json(
        "query-multi",
        {"collectionIds": [WORLD_ID, FILE_ID], **body, "searchText": "capital of Eldoria", "threshold": 0.99},
    )
    assert out == {}
    st.ok("purge", {"collectionId": WORLD_ID})
    st.ok("purge", {"collectionId": FILE_ID})


def test_query_multi_with_no_collections_is_an_empty_object(no_model):
    """TT: `collectionIds: []` → `{}`, without embedding (this server has no model at all)."""
    assert no_model.json("query-multi", {"collectionIds": [], "source": "transformers", "searchText": "x"}) == {}


@pytest.mark.parametrize("transport", ["transformers", "koboldcpp", "llamacpp-1.13", "ollama-1.12"])
def test_query_multi_embeds_once_over_real_collections(st, cid, transport):
    a, b = cid + " a", cid + " b"
    src, headers = source(st, transport, [DRAGON, BREAD, RED_DRAGON])
    st.ok("insert", {"collectionId": a, **src, "items": items_of(DRAGON, BREAD)}, headers)
    st.ok("insert", {"collectionId": b, **src, "items": items_of(RED_DRAGON)}, headers)
    src, headers = source(st, transport, [DRAGON])
    out = st.json(
        "query-multi", {"collectionIds": [a, b], **src, "searchText": DRAGON, "topK": 3, "threshold": -1}, headers
    )
    assert set(out) == {a, b}
    assert sorted(h for g in out.values() for h in g["hashes"]) == sorted(
        item(t, 0)["hash"] for t in (DRAGON, BREAD, RED_DRAGON)
    )


# -- idempotence, chunks, delete -----------------------------------------------------------------


@pytest.mark.parametrize("transport", ["transformers", "koboldcpp", "llamacpp-1.13"])
def test_reinserting_the_same_items_does_not_duplicate(st, cid, transport):
    src, headers = source(st, transport, [i["text"] for i in EXAMPLE_ITEMS])
    for _ in range(3):
        st.ok("insert", {"collectionId": cid, **src, "items": EXAMPLE_ITEMS}, headers)
    src, headers = source(st, transport)
    assert st.json("list", {"collectionId": cid, **src}, headers) == [i["hash"] for i in EXAMPLE_ITEMS]


def test_chunks_share_hash_and_index_and_delete_removes_every_chunk(st, cid):
    """message_chunk_size: one message → several items with the same hash and index, different text."""
    message = "The dragon sleeps. " * 30
    h = item(message, 0)["hash"]
    chunks = [{"hash": h, "text": message[i : i + 100], "index": 4} for i in range(0, len(message), 100)]
    other = item("Another message entirely", 5)
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": chunks + [other]})
    assert st.list(cid, source="transformers") == [h] * len(chunks) + [other["hash"]]  # duplicates listed
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": chunks[:2]})  # a retried batch
    assert len(st.list(cid, source="transformers")) == len(chunks) + 1
    st.ok("delete", {"collectionId": cid, "source": "transformers", "hashes": [h, 12345]})  # unknown hash ignored
    assert st.list(cid, source="transformers") == [other["hash"]]


def test_delete_casts_hashes_with_number(st, cid):
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS})
    st.ok("delete", {"collectionId": cid, "source": "transformers", "hashes": ["4522783205579122"]})
    assert st.list(cid, source="transformers") == [2025268282665900, 3363174424249661]
    st.ok("delete", {"collectionId": cid, "source": "transformers", "hashes": []})
    assert st.list(cid, source="transformers") == [2025268282665900, 3363174424249661]


# -- sources and scopes ---------------------------------------------------------------------------


def test_empty_source_means_transformers(st, cid):
    st.ok("insert", {"collectionId": cid, "source": "", "items": EXAMPLE_ITEMS[:1]})
    assert st.list(cid, source="transformers") == [EXAMPLE_ITEMS[0]["hash"]]
    assert st.list(cid) == [EXAMPLE_ITEMS[0]["hash"]]  # no source at all: transformers as well


def test_scopes_are_per_source_and_model(st, cid):
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS[:1]})
    st.ok(
        "insert",
        {"collectionId": cid, **designed("model-a", {BREAD: [1, 0]}, "koboldcpp"), "items": [EXAMPLE_ITEMS[1]]},
    )
    st.ok(
        "insert",
        {"collectionId": cid, **designed("model-b", {RED_DRAGON: [0, 1, 0]}, "koboldcpp"), "items": [EXAMPLE_ITEMS[2]]},
    )
    assert st.list(cid, source="transformers") == [EXAMPLE_ITEMS[0]["hash"]]
    assert st.list(cid, source="koboldcpp", model="model-a") == [EXAMPLE_ITEMS[1]["hash"]]
    assert st.list(cid, source="koboldcpp", model="model-b") == [EXAMPLE_ITEMS[2]["hash"]]
    assert st.list(cid, source="webllm", model="model-a") == []


def test_header_and_body_settings_reach_the_same_scope(st, cid):
    if not remote_available():
        pytest.skip("vectors/remote.py does not provide a llamacpp embedder (yet)")
    st.ok("insert", {"collectionId": cid, "source": "llamacpp", "apiUrl": st.url, "items": EXAMPLE_ITEMS})
    assert st.json("list", {"collectionId": cid, "source": "llamacpp"}, {"X-LlamaCpp-URL": st.url}) == [
        i["hash"] for i in EXAMPLE_ITEMS
    ]
    # ST 1.12 sends an empty body field and the header; the header fills it.
    assert st.json("list", {"collectionId": cid, "source": "llamacpp", "apiUrl": ""}, {"X-LlamaCpp-URL": st.url}) == [
        i["hash"] for i in EXAMPLE_ITEMS
    ]


# -- purge / purge-all ----------------------------------------------------------------------------


def test_purge_example_removes_every_scope_of_the_collection(st):
    kept = FILE_ID + "-other"
    st.ok("insert", {"collectionId": FILE_ID, "source": "transformers", "items": EXAMPLE_ITEMS})
    st.ok("insert", {"collectionId": FILE_ID, **st.kobold_body([DRAGON]), "items": EXAMPLE_ITEMS[:1]})
    st.ok("insert", {"collectionId": kept, "source": "transformers", "items": EXAMPLE_ITEMS})
    r = st.post("purge", {"collectionId": FILE_ID})
    assert (r.status_code, r.headers["content-type"], r.text) == (200, "text/plain; charset=utf-8", "OK")
    assert st.list(FILE_ID, source="transformers") == []
    assert st.list(FILE_ID, **st.kobold_body([])) == []
    assert st.list(kept, source="transformers") == [i["hash"] for i in EXAMPLE_ITEMS]
    st.ok("purge", {"collectionId": FILE_ID})  # a missing collection is not an error
    st.ok("purge", {"collectionId": FILE_ID, "source": "no-such-source"})  # the source is ignored, as in ST
    st.ok("purge", {"collectionId": kept})


def test_purge_all_example(fresh):
    fresh.ok("insert", {"collectionId": "a", "source": "transformers", "items": EXAMPLE_ITEMS})
    fresh.ok("insert", {"collectionId": "b", **designed("m", {DRAGON: [1, 2]}), "items": EXAMPLE_ITEMS[:1]})
    r = fresh.post("purge-all", {})
    assert (r.status_code, r.headers["content-type"], r.text) == (200, "text/plain; charset=utf-8", "OK")
    assert fresh.list("a", source="transformers") == []
    assert fresh.list("b", source="webllm", model="m") == []
    fresh.ok("purge-all", {"source": "transformers", "apiUrl": "whatever"})  # the frontend's spread body, ignored
    fresh.ok("purge-all", b"")  # no body at all
    # Still usable afterwards.
    fresh.ok("insert", {"collectionId": "a", "source": "transformers", "items": EXAMPLE_ITEMS[:1]})
    assert fresh.list("a", source="transformers") == [EXAMPLE_ITEMS[0]["hash"]]


def test_purge_all_keeps_the_model(fresh, tiny_model):
    fresh.ok("insert", {"collectionId": "a", "source": "transformers", "items": EXAMPLE_ITEMS})
    fresh.ok("purge-all", {})
    assert tiny_model.is_file()


# -- empty inputs, persistence --------------------------------------------------------------------


def test_empty_items_are_ok_without_embedding(no_model, cid):
    """TT: `items: []` → 200 without embedding (this server has no model, so embedding would fail)."""
    r = no_model.post("insert", {"collectionId": cid, "source": "transformers", "items": []})
    assert (r.status_code, r.text) == (200, "OK")
    r = no_model.post("insert", {"collectionId": cid, "source": "koboldcpp", "items": []})
    assert (r.status_code, r.text) == (200, "OK")


def test_vectors_survive_a_restart(fresh):
    fresh.ok("insert", {"collectionId": CHAT_ID, "source": "transformers", "items": EXAMPLE_ITEMS})
    before = fresh.json(
        "query", {"collectionId": CHAT_ID, "source": "transformers", "searchText": DRAGON, "threshold": -1}
    )
    fresh.restart()
    assert fresh.list(CHAT_ID, source="transformers") == [i["hash"] for i in EXAMPLE_ITEMS]
    after = fresh.json(
        "query", {"collectionId": CHAT_ID, "source": "transformers", "searchText": DRAGON, "threshold": -1}
    )
    assert after == before


def test_scopes_enabled_for_st_1_12(st):
    r = st.client.get("/api/vector/scopes-enabled")
    assert r.status_code == 200 and r.json() == {"enabled": True}


def test_json_bodies_are_compact_like_express(st, cid):
    st.ok("insert", {"collectionId": cid, "source": "transformers", "items": EXAMPLE_ITEMS[:2]})
    r = st.post("list", {"collectionId": cid, "source": "transformers"})
    assert r.text == json.dumps(st.list(cid, source="transformers"), separators=(",", ":"))


# -- ST's koboldcpp hop, served on our port too ---------------------------------------------------


def test_kobold_embed_hop_then_the_vector_routes(st, cid):
    """ST 1.13+'s browser flow for `koboldcpp`, against our port: POST /api/backends/kobold/embed
    {server, items} (here the "KoboldCpp" is our own /api/extra/embeddings), then /api/vector/*
    with `{embeddings: {text: vector}, model}`."""
    texts = [i["text"] for i in EXAMPLE_ITEMS]
    empty = st.client.post("/api/backends/kobold/embed", json={"server": st.url, "items": []}).json()
    assert empty["embeddings"] == [] and empty["model"].strip()
    r = st.client.post("/api/backends/kobold/embed", json={"server": st.url + "/some/path", "items": texts})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["model"] == empty["model"] and len(data["embeddings"]) == 3
    src = {"source": "koboldcpp", "model": data["model"], "embeddings": dict(zip(texts, data["embeddings"]))}
    st.ok("insert", {"collectionId": cid, **src, "items": EXAMPLE_ITEMS})
    assert st.list(cid, source="koboldcpp", model=empty["model"]) == [i["hash"] for i in EXAMPLE_ITEMS]
    q = st.client.post("/api/backends/kobold/embed", json={"server": st.url, "items": [DRAGON], "isQuery": True}).json()
    out = st.json(
        "query",
        {
            "collectionId": cid,
            "source": "koboldcpp",
            "model": q["model"],
            "embeddings": {DRAGON: q["embeddings"][0]},
            "searchText": DRAGON,
            "topK": 1,
        },
    )
    assert out["hashes"] == [4522783205579122]


@pytest.mark.parametrize(
    "body, status",
    [
        ({"items": ["a"]}, 400),
        ({"server": "not a url", "items": ["a"]}, 400),
        ({"server": "http://127.0.0.1:9", "items": "a"}, 400),
        ({"server": "http://127.0.0.1:9", "items": [1]}, 400),
        ({"server": "http://127.0.0.1:9", "items": ["a"]}, 500),  # nothing listens there
    ],
)
def test_kobold_embed_hop_errors(st, body, status):
    r = st.client.post("/api/backends/kobold/embed", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] is True


# -- concurrency ------------------------------------------------------------------------------------


def test_concurrent_inserts_and_queries(st, cid):
    """ST fires chat sync, file ingestion and queries at once: every insert lands, every call answers."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    def insert(n: int) -> int:
        with httpx.Client(base_url=st.url, timeout=120) as c:
            body = {
                "collectionId": cid,
                "source": "transformers",
                "items": [item(f"thread {n} message {i}", i) for i in range(10)],
            }
            return c.post("/api/vector/insert", json=body).status_code

    def query(n: int) -> int:
        with httpx.Client(base_url=st.url, timeout=120) as c:
            return c.post(
                "/api/vector/query",
                json={"collectionId": cid, "source": "transformers", "searchText": f"thread {n}", "topK": 5},
            ).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(insert, range(8))) + list(pool.map(query, range(8)))
    assert statuses == [200] * 16
    assert sorted(st.list(cid, source="transformers")) == sorted(
        item(f"thread {n} message {i}", i)["hash"] for n in range(8) for i in range(10)
    )
