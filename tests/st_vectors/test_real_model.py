"""The §1.2 /query and /query-multi examples reproduced byte for byte with a real embedding model
(all-MiniLM-L6-v2 from ../shared/models, skipped where that folder is absent): ST configured with
source `llamacpp` pointed at our own /v1/embeddings, in the 1.13 body style and the 1.12 header
style, and the same through `transformers` (our local embedder directly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import (
    CAPITAL,
    CHAT_ID,
    EXAMPLE_ITEMS,
    FILE_ID,
    KINGDOM,
    WORLD_ID,
    StServer,
    item,
    items_of,
)

MINILM = Path(__file__).resolve().parents[3] / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"
pytestmark = pytest.mark.skipif(not MINILM.is_file(), reason="../shared/models/all-MiniLM-L6-v2-Q8_0.gguf is not here")

QUERY_RESPONSE = (
    '{"metadata":[{"hash":4522783205579122,"text":"The dragon sleeps in the northern mountains","index":0},'
    '{"hash":3363174424249661,"text":"A red dragon attacked the mountain village","index":2}],'
    '"hashes":[4522783205579122,3363174424249661]}'
)
QUERY_MULTI_RESPONSE = (
    '{"world_59964539520806":{"hashes":[4280468795193305,3243511751660667],'
    '"metadata":[{"hash":4280468795193305,"text":"The capital of Eldoria is Skyhold.","index":1},'
    '{"hash":3243511751660667,"text":"Eldoria is a kingdom of floating islands.","index":0}]}}'
)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> StServer:
    base = tmp_path_factory.mktemp("real")
    (base / "vault").mkdir()
    server = StServer(base / "data", base / "vault", MINILM)
    yield server
    server.close()


def styles(real: StServer):
    return [
        ("llamacpp 1.13", {"source": "llamacpp", "apiUrl": real.url}, {}),
        ("llamacpp 1.12", {"source": "llamacpp"}, {"X-LlamaCpp-URL": real.url}),
        ("transformers", {"source": "transformers"}, {}),
    ]


def test_query_example(real):
    for name, src, headers in styles(real):
        real.ok("insert", {"collectionId": CHAT_ID, **src, "items": EXAMPLE_ITEMS}, headers)
        r = real.post(
            "query",
            {"collectionId": CHAT_ID, **src, "searchText": "dragon mountains", "topK": 3, "threshold": 0.25},
            headers,
        )
        assert r.status_code == 200 and r.headers["content-type"] == "application/json; charset=utf-8", name
        assert r.text == QUERY_RESPONSE, name


def test_query_multi_example(real):
    for name, src, headers in styles(real):
        real.ok("insert", {"collectionId": WORLD_ID, **src, "items": [item(KINGDOM, 0), item(CAPITAL, 1)]}, headers)
        real.ok(
            "insert",
            {
                "collectionId": FILE_ID,
                **src,
                "items": items_of(
                    "Bread and cheese are sold at the market every morning.", "The weather was cold and rainy all week."
                ),
            },
            headers,
        )
        r = real.post(
            "query-multi",
            {
                "collectionIds": [WORLD_ID, FILE_ID],
                **src,
                "searchText": "capital of Eldoria",
                "topK": 2,
                "threshold": 0.25,
            },
            headers,
        )
        assert r.status_code == 200, name
        assert r.text == QUERY_MULTI_RESPONSE, name


def test_purge_then_purge_all(real):
    real.ok("purge", {"collectionId": FILE_ID})
    for _, src, headers in styles(real):
        assert real.json("list", {"collectionId": FILE_ID, **src}, headers) == []
        assert real.json("list", {"collectionId": WORLD_ID, **src}, headers) != []
    real.ok("purge-all", {})
    for _, src, headers in styles(real):
        assert real.json("list", {"collectionId": WORLD_ID, **src}, headers) == []
