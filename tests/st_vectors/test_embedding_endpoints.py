"""The embedding-backend endpoints, called with stock SillyTavern's exact request shapes
(st-wire-contracts.md §3): llama.cpp / vLLM `/v1/embeddings`, Ollama `/api/embed` and
`/api/embeddings`, KoboldCpp `/api/extra/embeddings` (no Content-Type), Extras
`/api/embeddings/compute` and `/api/modules` (CORS); node-fetch's `Connection: close`."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from dle_desktop.server.routes_vector import VECTOR_MAX_BODY_BYTES
from dle_desktop.server.security import server_token
from dle_desktop.state.settings import Settings
from tests.retrieval._support import LiveServer

from ._support import BREAD, DRAGON, NODE_FETCH_HEADERS, RED_DRAGON, keep_alive_exchange, raw_request

TEXTS = [DRAGON, BREAD, RED_DRAGON]


def node_fetch(st, path: str, body: dict, **extra_headers):
    """One request as ST 1.12.6's node-fetch v2 sends it (Connection: close, its own headers)."""
    return raw_request(st.port, "POST", path, json.dumps(body).encode(), {**NODE_FETCH_HEADERS, **extra_headers})


def unit_rows(rows) -> np.ndarray:
    arr = np.asarray(rows, dtype=np.float64)
    assert arr.ndim == 2 and arr.shape[1] > 0 and np.isfinite(arr).all()
    assert np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-4)
    return arr


# -- llama.cpp / vLLM ------------------------------------------------------------------------------


def test_llamacpp_shape(st):
    """ST: POST {"input": [...]} with no model, at most 10 texts; reads data[].index/embedding."""
    r = node_fetch(st, "/v1/embeddings", {"input": TEXTS})
    assert r.status == 200 and r.headers["content-type"].startswith("application/json")
    assert r.headers.get("connection") == "close" and r.closed
    data = json.loads(r.body)
    assert data["object"] == "list" and isinstance(data["model"], str) and data["model"]
    assert [d["index"] for d in data["data"]] == [0, 1, 2]
    assert all(d["object"] == "embedding" for d in data["data"])
    rows = unit_rows([d["embedding"] for d in data["data"]])
    assert not np.allclose(rows[0], rows[1])
    assert set(data["usage"]) == {"prompt_tokens", "total_tokens"}


def test_vllm_shape_with_model(st):
    r = node_fetch(st, "/v1/embeddings", {"input": TEXTS, "model": "BAAI/bge-m3"})
    assert r.status == 200
    assert len(json.loads(r.body)["data"]) == 3


def test_embeddings_are_deterministic_and_documents_get_no_query_prompt(st):
    one = st.client.post("/v1/embeddings", json={"input": DRAGON}).json()
    again = st.client.post("/v1/embeddings", json={"input": [BREAD, DRAGON]}).json()
    assert len(one["data"]) == 1
    repeat = st.client.post("/v1/embeddings", json={"input": DRAGON}).json()
    assert one["data"][0]["embedding"] == repeat["data"][0]["embedding"]  # alone: the same bits every time
    # packed with another short text: the same vector up to float rounding (embedder.py's contract)
    assert np.dot(one["data"][0]["embedding"], again["data"][1]["embedding"]) > 0.9999
    query = st.client.post("/v1/embeddings", json={"input": DRAGON, "input_type": "query"}).json()
    assert not np.allclose(one["data"][0]["embedding"], query["data"][0]["embedding"], atol=1e-5)


def test_base64_encoding(st):
    plain = st.client.post("/v1/embeddings", json={"input": [DRAGON]}).json()["data"][0]["embedding"]
    b64 = st.client.post("/v1/embeddings", json={"input": [DRAGON], "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(b64["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(decoded, plain)


def test_empty_input_list(st):
    r = st.client.post("/v1/embeddings", json={"input": []})
    assert r.status_code == 200 and r.json()["data"] == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"input": 5},
        {"input": [1, 2, 3]},
        {"input": [[1, 2]]},
        {"input": ["a", None]},
        {"input": "a", "model": 3},
        {"input": "a", "encoding_format": "int8"},
    ],
)
def test_openai_bad_input_is_400_in_openai_error_shape(st, body):
    r = st.client.post("/v1/embeddings", json=body)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["message"]


@pytest.mark.parametrize(
    "path", ["/v1/embeddings", "/api/embed", "/api/embeddings", "/api/extra/embeddings", "/api/embeddings/compute"]
)
@pytest.mark.parametrize("raw", [b"", b"{bad", b"[1]", b"\xff\xfe"])
def test_unreadable_bodies_are_400(st, path, raw):
    r = st.client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, (path, raw, r.text)


# -- Ollama ----------------------------------------------------------------------------------------


def test_ollama_embed_1_13_shape(st):
    body = {"input": TEXTS, "model": "mxbai-embed-large", "keep_alive": -1, "truncate": True}
    r = node_fetch(st, "/api/embed", body)
    assert r.status == 200
    data = json.loads(r.body)
    assert data["model"] == "mxbai-embed-large"
    unit_rows(data["embeddings"])
    assert len(data["embeddings"]) == 3
    # No keep_alive when keep is off; a single string input.
    data = st.client.post("/api/embed", json={"input": DRAGON, "model": "m", "truncate": True}).json()
    assert len(data["embeddings"]) == 1


def test_ollama_embed_empty_input(st):
    for body in ({"model": "m"}, {"model": "m", "input": []}, {"model": "m", "input": ""}):
        assert st.client.post("/api/embed", json=body).json() == {"model": "m", "embeddings": []}


@pytest.mark.parametrize("texts", [[""], ["", ""], [DRAGON, ""]])
def test_ollama_embed_gives_an_empty_string_in_an_array_its_embedding(st, texts):
    # Real Ollama drops only a bare `"input": ""`; array elements are embedded one for one.
    data = st.client.post("/api/embed", json={"model": "m", "input": texts}).json()
    rows = unit_rows(data["embeddings"])
    assert len(rows) == len(texts)
    alone = st.client.post("/api/embed", json={"model": "m", "input": [""]}).json()["embeddings"][0]
    assert np.allclose(rows[texts.index("")], alone, atol=1e-5)


def test_ollama_legacy_one_prompt_at_a_time_with_connection_close(st):
    """ST 1.12.6 calls /api/embeddings once per text, sequentially, each with Connection: close
    (the case that broke against a server that did not answer `Connection: close`)."""
    vectors = []
    for text in TEXTS * 4:
        r = node_fetch(st, "/api/embeddings", {"prompt": text, "model": "nomic-embed-text", "keep_alive": -1})
        assert r.status == 200
        assert r.headers.get("connection") == "close" and r.closed
        vectors.append(json.loads(r.body)["embedding"])
    unit_rows(vectors)
    assert np.allclose(vectors[0], vectors[3])
    assert st.client.post("/api/embeddings", json={"prompt": "", "model": "m"}).json() == {"embedding": []}


# -- KoboldCpp -------------------------------------------------------------------------------------


def test_koboldcpp_without_content_type(st):
    """ST's /api/backends/kobold/embed posts {"input": [...]} with only Authorization, no Content-Type."""
    r = raw_request(
        st.port,
        "POST",
        "/api/extra/embeddings",
        json.dumps({"input": TEXTS}).encode(),
        {"Authorization": "Bearer kobold-key", "Accept": "*/*", "Connection": "close"},
    )
    assert r.status == 200, r.body
    data = json.loads(r.body)
    assert isinstance(data["model"], str) and data["model"].strip()
    rows = sorted(data["data"], key=lambda d: d["index"])
    assert [d["index"] for d in rows] == [0, 1, 2]
    unit_rows([d["embedding"] for d in rows])


def test_koboldcpp_empty_input_still_names_the_model(st):
    """The browser calls it with items [] before list/delete, to learn `model` for the scope."""
    r = raw_request(st.port, "POST", "/api/extra/embeddings", b'{"input":[]}', {"Connection": "close"})
    data = json.loads(r.body)
    assert r.status == 200 and data["data"] == [] and data["model"].strip()


def test_koboldcpp_with_text_plain_content_type(st):
    r = st.client.post(
        "/api/extra/embeddings",
        content=json.dumps({"input": [DRAGON]}),
        headers={"Content-Type": "text/plain;charset=UTF-8"},
    )
    assert r.status_code == 200 and len(r.json()["data"]) == 1


# -- Extras ----------------------------------------------------------------------------------------


def test_extras_compute_batch_and_single(st):
    r = node_fetch(st, "/api/embeddings/compute", {"text": ["extras text"]}, Authorization="Bearer sekrit")
    assert r.status == 200
    data = json.loads(r.body)
    assert len(data["embedding"]) == 1
    unit_rows(data["embedding"])
    single = st.client.post("/api/embeddings/compute", json={"text": "extras text"}).json()["embedding"]
    assert isinstance(single[0], float)
    assert np.allclose(single, data["embedding"][0], atol=1e-5)


def test_extras_modules_with_cors_for_the_browser(tmp_path):
    """ST's browser fetches /api/modules itself, with the Extras key as a Bearer token: that page's
    origin must be listed and the key must be the server token; the preflight needs neither key."""
    settings = Settings().replace(server_allowed_origins=["http://localhost:8000"])
    server = LiveServer(tmp_path / "vault", tmp_path / "data", settings, sync=False)
    try:
        token = server_token(server.secrets)
        r = server.client.get(
            "/api/modules", headers={"Origin": "http://localhost:8000", "Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 200 and r.json() == {"modules": ["embeddings"]}
        # A listed page gets its own origin back (the access layer's CORS), the route's `*` otherwise.
        assert r.headers["access-control-allow-origin"] == "http://localhost:8000"
        assert server.client.get("/api/modules").headers["access-control-allow-origin"] == "*"
        r = server.client.get(
            "/api/modules", headers={"Origin": "http://localhost:8000", "Authorization": "Bearer sekrit"}
        )
        assert r.status_code == 401
        pre = server.client.options(
            "/api/modules",
            headers={
                "Origin": "http://localhost:8000",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "authorization",
                "Access-Control-Request-Private-Network": "true",
            },
        )
        assert pre.status_code == 204
        assert pre.headers["access-control-allow-origin"] == "http://localhost:8000"
        assert "GET" in pre.headers["access-control-allow-methods"]
        assert "authorization" in pre.headers["access-control-allow-headers"].lower()
        assert pre.headers["access-control-allow-private-network"] == "true"
    finally:
        server.close()


def test_only_the_browser_facing_endpoint_has_cors_of_its_own(st):
    """Without an Origin only /api/modules answers CORS; an unlisted page gets none anywhere."""
    r = st.client.post("/v1/embeddings", json={"input": "x"})
    assert "access-control-allow-origin" not in r.headers
    r = st.client.post("/v1/embeddings", json={"input": "x"}, headers={"Origin": "http://localhost:3000"})
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers


# -- connections -----------------------------------------------------------------------------------


def test_keep_alive_without_connection_close(st):
    """Without `Connection: close` the connection stays open and serves the next request."""
    body = json.dumps({"input": [DRAGON]}).encode()
    responses = keep_alive_exchange(
        st.port,
        [
            ("POST", "/v1/embeddings", body, {"Content-Type": "application/json"}),
            ("POST", "/api/embed", body, {"Content-Type": "application/json"}),
            (
                "POST",
                "/api/vector/list",
                b'{"collectionId":"ka","source":"transformers"}',
                {"Content-Type": "application/json"},
            ),
            ("POST", "/api/vector/query", b'{"collectionId":"ka"}', {"Content-Type": "application/json"}),  # a 400
            ("GET", "/api/modules", None, {}),
        ],
    )
    assert [r.status for r in responses] == [200, 200, 200, 400, 200]
    assert all(r.headers.get("connection", "").lower() != "close" for r in responses)


def test_connection_close_then_an_immediate_new_request(st):
    """node-fetch: a request with `Connection: close`, answered and closed, then at once the next one."""
    for path, body in [
        ("/v1/embeddings", {"input": [DRAGON]}),
        ("/api/vector/list", {"collectionId": "cc", "source": "transformers"}),
        ("/api/vector/insert", {"collectionId": "cc", "source": "transformers", "items": []}),
        ("/api/vector/query", {"collectionId": "cc"}),
    ] * 3:
        r = node_fetch(st, path, body)
        assert r.status in (200, 400)
        assert r.headers.get("connection") == "close" and r.closed


def test_host_check_on_the_embedding_endpoints(st):
    for path in ("/v1/embeddings", "/api/embed", "/api/extra/embeddings"):
        r = st.client.post(path, json={"input": "x"}, headers={"Host": "attacker.example:8765"})
        assert r.status_code == 403
    assert st.client.get("/api/modules", headers={"Host": "attacker.example"}).status_code == 403


def test_oversized_body_is_413(st):
    """Over the route's 32 MiB: the body is read to its end and thrown away, then a clean 413."""
    body = json.dumps({"input": ["x" * 1000] * 34_000}).encode()
    assert len(body) > VECTOR_MAX_BODY_BYTES
    r = st.client.post("/v1/embeddings", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "over the limit" in r.json()["error"]["message"]
    # Over the server-wide limit, declared only: refused at once, before any body is sent.
    raw = raw_request(
        st.port,
        "POST",
        "/v1/embeddings",
        None,
        {"Content-Type": "application/json", "Content-Length": str(100 * 1024 * 1024)},
        timeout=10,
        close_wait=0.1,
    )
    assert raw.status == 413


def test_models_list(st):
    data = st.client.get("/v1/models").json()
    assert data["object"] == "list" and len(data["data"]) == 1 and data["data"][0]["id"]


# -- no model ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/embeddings", {"input": ["x"]}),
        ("/api/embed", {"input": ["x"], "model": "m"}),
        ("/api/embeddings", {"prompt": "x", "model": "m"}),
        ("/api/extra/embeddings", {"input": ["x"]}),
        ("/api/extra/embeddings", {"input": []}),
        ("/api/embeddings/compute", {"text": ["x"]}),
    ],
)
def test_no_model_configured_is_503_with_a_clear_message(no_model, path, body):
    r = no_model.client.post(path, json=body)
    assert r.status_code == 503, r.text
    assert "embedding_model_path" in r.text
    assert no_model.client.get("/api/modules").status_code == 200


# -- a real Node client --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["close", "keepalive"])
def test_node_20_back_to_back_requests(st, mode):
    """ST's server under Node (the `socket hang up` gotcha of §3): 50 back-to-back requests through
    Node's keep-alive global agent, with node-fetch's `Connection: close` and without it."""
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = Path(__file__).with_name("node_client.js")
    done = subprocess.run([node, str(script), str(st.port), mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["errors"] == [] and summary["statuses"] == [200] and summary["count"] == 50, summary
    if mode == "close":
        assert summary["connection"] == ["close"]  # told, Node does not reuse a socket we close
    else:
        assert "close" not in summary["connection"]  # kept alive and reused
