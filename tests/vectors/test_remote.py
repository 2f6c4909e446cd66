"""Remote embedding sources against fake providers that are real loopback HTTP servers speaking
each wire format: good answers, refused keys, rate limits, server errors, broken JSON, wrong
shapes and slow answers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from dle_desktop.logging_setup import scrub
from dle_desktop.state.secrets import SecretStore
from dle_desktop.vectors.contracts import EmbeddingError
from dle_desktop.vectors.embedder import QWEN3_QUERY_INSTRUCTION
from dle_desktop.vectors.remote import (
    PROVIDERS,
    RemoteEmbedder,
    RemoteSource,
    embedder_for_st_source,
    make_remote_embedder,
)

KEY = "sk-test-SECRET-0123456789"
DIM = 8


def vec(text: str) -> list[float]:
    """A deterministic, text-dependent, unnormalised vector."""
    h = hashlib.sha256(text.encode()).digest()
    return [float(b) - 100.0 for b in h[:DIM]]


def texts_of(kind: str, body: dict) -> list[str]:
    if kind in ("cohere", "nomic"):
        return body["texts"]
    if kind == "google":
        return [r["content"]["parts"][0]["text"] for r in body["requests"]]
    if kind == "extras":
        return body["text"]
    return body["input"]


def good_answer(kind: str, body: dict) -> Any:
    texts = texts_of(kind, body)
    vs = [vec(t) for t in texts]
    if kind in ("openai", "llamacpp", "vllm", "mistral"):
        items = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vs)]
        return {"object": "list", "data": list(reversed(items)), "model": body.get("model", "x")}  # out of order
    if kind == "koboldcpp":
        return {"data": [[{"index": i, "embedding": v}] for i, v in enumerate(vs)], "model": "kobold-embed-model"}
    if kind in ("ollama", "nomic"):
        return {"embeddings": vs}
    if kind == "cohere":
        return {"id": "x", "embeddings": {"float": vs}, "texts": texts}
    if kind == "google":
        return {"embeddings": [{"values": v} for v in vs]}
    if kind == "extras":
        return {"embedding": vs}
    raise AssertionError(kind)


@dataclass
class Fake:
    kind: str = "openai"
    #: (status, body) to answer with; body may be bytes, or anything JSON-able; None = good answer
    reply: Callable[[dict], tuple[int, Any]] | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        fake: Fake = self.server.fake  # type: ignore[attr-defined]  # hung on the stdlib server by the fixture
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.loads(raw)
        fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if fake.delay:
            time.sleep(fake.delay)
        status, answer = fake.reply(body) if fake.reply else (200, good_answer(fake.kind, body))
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in fake.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass


@pytest.fixture
def fake():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.fake = Fake()  # type: ignore[attr-defined]  # the stdlib server carries the fixture's state to its handler
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    host, port = httpd.server_address[:2]
    httpd.fake.url = f"http://{host}:{port}"  # type: ignore[attr-defined]  # hung on the stdlib server by the fixture
    yield httpd.fake
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def secrets() -> SecretStore:
    s = SecretStore(use_keyring=False)
    for info in PROVIDERS.values():
        if info.secret_name:
            s.set(info.secret_name, KEY)
    return s


def run(coro):
    return asyncio.run(coro)


def expected_rows(texts: list[str]) -> np.ndarray:
    m = np.array([vec(t) for t in texts], dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# (kind, base URL suffix, expected request path)
WIRE = [
    ("openai", "/v1", "/v1/embeddings"),
    ("llamacpp", "/v1/", "/v1/embeddings"),
    ("vllm", "", "/v1/embeddings"),
    ("ollama", "/some/path", "/api/embed"),
    ("koboldcpp", "/api", "/api/extra/embeddings"),
    ("cohere", "", "/v1/embed"),
    ("google", "", "/v1beta/models/text-embedding-004:batchEmbedContents"),
    ("mistral", "", "/v1/embeddings"),
    ("nomic", "", "/v1/embedding/text"),
    ("extras", "", "/api/embeddings/compute"),
]


@pytest.mark.parametrize("kind, suffix, path", WIRE)
def test_each_wire_format_round_trips(fake, secrets, kind: str, suffix: str, path: str) -> None:
    fake.kind = kind
    model = {"vllm": "BAAI/bge-m3", "ollama": "nomic-embed-text"}.get(kind, "")
    e = make_remote_embedder(kind, base_url=fake.url + suffix, model=model, secrets=secrets)
    texts = ["The dragon sleeps.", "Bread and cheese.", "Queen Elara"]
    docs = run(e.embed(texts))
    np.testing.assert_allclose(docs, expected_rows(texts), atol=1e-6)
    assert docs.dtype == np.float32
    req = fake.requests[-1]
    assert req["path"] == path
    body = req["body"]
    assert texts_of(kind, body) == texts
    if kind == "google":
        assert req["headers"].get("x-goog-api-key") == KEY and "Authorization" not in req["headers"]
        assert KEY not in req["path"]
        assert {r["taskType"] for r in body["requests"]} == {"RETRIEVAL_DOCUMENT"}
        assert body["requests"][0]["model"] == "models/text-embedding-004"
    elif kind == "extras":
        assert "Authorization" not in req["headers"]  # no key given with the request
    else:
        assert req["headers"].get("Authorization") == f"Bearer {KEY}"
    if kind == "llamacpp":
        assert "model" not in body
    if kind in ("vllm", "ollama"):
        assert body["model"] == model
    if kind == "mistral":
        assert body["model"] == "mistral-embed"
    if kind == "cohere":
        assert body["input_type"] == "search_document"
    if kind == "nomic":
        assert body["task_type"] == "search_document"
    # queries: the task type says so
    run(e.embed(["who sleeps?"], query=True))
    qbody = fake.requests[-1]["body"]
    if kind == "cohere":
        assert qbody["input_type"] == "search_query"
    if kind == "nomic":
        assert qbody["task_type"] == "search_query"
    if kind == "google":
        assert qbody["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    if kind == "koboldcpp":
        assert e.reported_model == "kobold-embed-model"
    assert e.profile.endpoint == (fake.url + suffix).rstrip("/")
    assert e.profile.quantisation == "" and e.profile.max_tokens == 0


def test_query_instruction_for_servers_running_qwen3(fake, secrets) -> None:
    fake.kind = "llamacpp"
    e = RemoteEmbedder(RemoteSource("llamacpp", fake.url, query_instruction=QWEN3_QUERY_INSTRUCTION), secrets)
    run(e.embed(["where is the dragon?"], query=True))
    assert fake.requests[-1]["body"]["input"] == [QWEN3_QUERY_INSTRUCTION + "where is the dragon?"]
    run(e.embed(["a document"]))
    assert fake.requests[-1]["body"]["input"] == ["a document"]
    assert e.profile.prompt_version == "v1"
    assert make_remote_embedder("llamacpp", base_url=fake.url).profile.prompt_version == "raw"


def test_endpoint_rules_ipv6_and_credentials() -> None:
    e = make_remote_embedder("koboldcpp", base_url="http://[::1]:5001/api/v1")
    assert e.request_url == "http://[::1]:5001/api/extra/embeddings"
    c = make_remote_embedder("ollama", base_url="http://user:pw@10.0.0.2:11434/", model="m")
    assert c.request_url == "http://user:pw@10.0.0.2:11434/api/embed"
    assert c.profile.endpoint == "http://10.0.0.2:11434" and "pw" not in c.profile.key()


def test_same_model_on_two_servers_has_two_profiles(fake) -> None:
    a = make_remote_embedder("ollama", base_url="http://127.0.0.1:11434", model="m")
    b = make_remote_embedder("ollama", base_url="http://10.0.0.2:11434/", model="m")
    assert a.profile.model_id == b.profile.model_id == "m"
    assert a.profile.key() != b.profile.key()


@pytest.mark.parametrize(
    "suffix, path",
    [
        ("", "/v1/embeddings"),
        ("/v1", "/v1/embeddings"),
        ("/v1/", "/v1/embeddings"),
        ("/api/openai", "/api/openai/embeddings"),
        ("/v1/embeddings", "/v1/embeddings"),
    ],
)
def test_openai_compatible_url_rules(fake, suffix: str, path: str) -> None:
    e = make_remote_embedder("openai", base_url=fake.url + suffix, model="m")
    run(e.embed(["x"]))
    assert [r["path"] for r in fake.requests] == [path]


def test_batches_keep_order(fake, secrets) -> None:
    fake.kind = "ollama"
    e = RemoteEmbedder(RemoteSource("ollama", fake.url, model="m", batch_size=32), secrets)
    texts = [f"text {i}" for i in range(70)]
    out = run(e.embed(texts))
    assert [len(r["body"]["input"]) for r in fake.requests] == [32, 32, 6]
    np.testing.assert_allclose(out, expected_rows(texts), atol=1e-6)


def test_empty_list_sends_nothing(fake) -> None:
    out = run(make_remote_embedder("llamacpp", base_url=fake.url).embed([]))
    assert out.shape[0] == 0 and fake.requests == []


# -- failures -----------------------------------------------------------------------------------


def test_refused_key_is_401_and_the_key_never_shows(fake, secrets, caplog) -> None:
    fake.reply = lambda body: (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    e = make_remote_embedder("openai", base_url=fake.url, model="m", secrets=secrets)
    with caplog.at_level(logging.DEBUG), pytest.raises(EmbeddingError) as info:
        run(e.embed(["x"]))
    assert info.value.status == 401
    assert "the API key was refused" in str(info.value)
    assert KEY not in str(info.value) and KEY not in caplog.text
    assert scrub(f"key {KEY}") == "key ***"  # registered with the log scrubber


def test_forbidden_is_401_too(fake, secrets) -> None:
    fake.reply = lambda body: (403, {"message": "forbidden"})
    with pytest.raises(EmbeddingError) as info:
        run(make_remote_embedder("mistral", base_url=fake.url, secrets=secrets).embed(["x"]))
    assert info.value.status == 401


def test_missing_key_for_a_cloud_is_401_without_a_request(fake) -> None:
    e = make_remote_embedder("cohere", base_url=fake.url, secrets=SecretStore(use_keyring=False))
    with pytest.raises(EmbeddingError) as info:
        run(e.embed(["x"]))
    assert info.value.status == 401 and "no API key" in str(info.value)
    assert fake.requests == []


def test_rate_limit_is_429(fake, secrets) -> None:
    fake.reply = lambda body: (429, {"error": "slow down"})
    fake.headers = {"Retry-After": "7"}
    with pytest.raises(EmbeddingError) as info:
        run(make_remote_embedder("nomic", base_url=fake.url, secrets=secrets).embed(["x"]))
    assert info.value.status == 429 and "retry after 7" in str(info.value)


def test_server_error_is_502_with_its_words(fake) -> None:
    fake.reply = lambda body: (500, b"model not loaded")
    with pytest.raises(EmbeddingError) as info:
        run(make_remote_embedder("llamacpp", base_url=fake.url).embed(["x"]))
    assert info.value.status == 502 and "HTTP 500" in str(info.value) and "model not loaded" in str(info.value)


def test_broken_json_is_502(fake) -> None:
    fake.reply = lambda body: (200, b'{"data": [{"index": 0, "embedding": [1, 2')
    with pytest.raises(EmbeddingError) as info:
        run(make_remote_embedder("llamacpp", base_url=fake.url).embed(["x"]))
    assert info.value.status == 502 and "invalid JSON" in str(info.value)


def _data(*items):
    return {"data": list(items)}


WRONG_SHAPES = [
    ("openai", [1, 2, 3], "expected a JSON object"),
    ("openai", {"embeddings": [[1, 2]]}, "'data' is missing"),
    ("openai", _data({"index": 0, "embedding": [1, 2]}), "2 texts were sent but 1"),
    ("openai", _data({"index": 0, "embedding": [1, 2]}, {"index": 0, "embedding": [1, 2]}), "appears twice"),
    ("openai", _data({"index": 0, "embedding": [1, 2]}, {"index": 5, "embedding": [1, 2]}), "out of range"),
    ("openai", _data({"index": "0", "embedding": [1, 2]}, {"index": 1, "embedding": [1, 2]}), "not an integer"),
    ("openai", _data({"index": 0, "embedding": [1, "2"]}, {"index": 1, "embedding": [1, 2]}), "not a number"),
    ("openai", _data({"index": 0, "embedding": [1, True]}, {"index": 1, "embedding": [1, 2]}), "not a number"),
    ("openai", _data({"index": 0, "embedding": []}, {"index": 1, "embedding": [1, 2]}), "non-empty list"),
    ("openai", _data({"index": 0, "embedding": [[1, 2], [3, 4]]}, {"index": 1, "embedding": [1, 2]}), "token vectors"),
    ("openai", _data({"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1, 2, 3]}), "equally long"),
    ("openai", _data({"index": 0, "embedding": [0, 0]}, {"index": 1, "embedding": [1, 2]}), "zero vector"),
    ("openai", _data({"index": 0}, {"index": 1, "embedding": [1, 2]}), "no 'embedding'"),
    ("ollama", {"embedding": [1, 2]}, "'embeddings' is missing"),
    ("ollama", {"embeddings": [[1, 2]]}, "2 texts were sent but 1"),
    ("cohere", {"embeddings": {"int8": [[1], [2]]}}, "embeddings.float"),
    ("google", {"embeddings": [{"value": [1]}, {"values": [2]}]}, "no 'values'"),
    ("koboldcpp", {"data": "nope"}, "'data' is missing"),
    ("extras", {"embedding": [[1, 2], None]}, "not a non-empty list"),
]


@pytest.mark.parametrize("kind, answer, message", WRONG_SHAPES)
def test_wrong_shapes_are_502_naming_the_problem(fake, secrets, kind: str, answer: Any, message: str) -> None:
    fake.reply = lambda body: (200, answer)
    e = make_remote_embedder(kind, base_url=fake.url, model="m", secrets=secrets)
    with pytest.raises(EmbeddingError) as info:
        run(e.embed(["a", "b"]))
    assert info.value.status == 502
    assert message in str(info.value)


def test_nan_in_an_answer_is_refused(fake) -> None:
    fake.reply = lambda body: (200, b'{"embeddings": [[NaN, 1.0]]}')  # Python's json accepts NaN
    with pytest.raises(EmbeddingError, match="non-finite") as info:
        run(make_remote_embedder("ollama", base_url=fake.url, model="m").embed(["a"]))
    assert info.value.status == 502


def test_dimension_change_between_batches_is_refused(fake) -> None:
    calls = {"n": 0}

    def reply(body):
        calls["n"] += 1
        dim = 4 if calls["n"] == 1 else 5
        return 200, {"embeddings": [[1.0] * dim for _ in body["input"]]}

    fake.reply = reply
    e = RemoteEmbedder(RemoteSource("ollama", fake.url, model="m", batch_size=2))
    with pytest.raises(EmbeddingError, match="dimension 4"):
        run(e.embed(["a", "b", "c"]))


def test_slow_server_times_out_as_503(fake) -> None:
    fake.delay = 3.0
    e = RemoteEmbedder(RemoteSource("llamacpp", fake.url, timeout=0.5))
    t0 = time.monotonic()
    with pytest.raises(EmbeddingError) as info:
        run(e.embed(["x"]))
    assert info.value.status == 503 and "did not answer within 0.5 s" in str(info.value)
    assert time.monotonic() - t0 >= 0.5  # it waited for the timeout (a 3 s answer never came through)


def test_unreachable_server_is_503() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EmbeddingError) as info:
        run(make_remote_embedder("vllm", base_url=f"http://127.0.0.1:{port}", model="m").embed(["x"]))
    assert info.value.status == 503 and "cannot reach" in str(info.value)


def test_cancelling_the_caller_cancels_the_request(fake) -> None:
    fake.delay = 2.0
    e = make_remote_embedder("llamacpp", base_url=fake.url)

    async def main():
        task = asyncio.create_task(e.embed(["x"]))
        await asyncio.sleep(0.2)
        task.cancel()
        t0 = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    assert run(main()) < 1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "nope"}, "unknown embedding source"),
        ({"kind": "llamacpp"}, "needs a server URL"),
        ({"kind": "llamacpp", "base_url": "ftp://x"}, "http(s)"),
        ({"kind": "vllm", "base_url": "http://x"}, "needs a model"),
    ],
)
def test_bad_settings_are_400(kwargs: dict, message: str) -> None:
    with pytest.raises(EmbeddingError) as info:
        RemoteEmbedder(RemoteSource(**kwargs))
    assert info.value.status == 400 and message in str(info.value)


def test_client_survives_separate_event_loops(fake) -> None:
    e = make_remote_embedder("llamacpp", base_url=fake.url)
    for _ in range(3):  # each asyncio.run is a new loop
        assert run(e.embed(["x"])).shape == (1, DIM)


# -- SillyTavern source settings → embedder (the vector service's hook) ---------------------------


@dataclass(frozen=True)
class _St:
    source: str
    api_url: str = ""
    model: str = ""
    keep: bool = False
    extras_url: str = ""
    extras_key: str = ""


def test_st_sources_map_to_remote_embedders(fake, secrets) -> None:
    fake.kind = "ollama"
    e = embedder_for_st_source(_St("ollama", api_url=fake.url, model="nomic-embed-text", keep=True), secrets=secrets)
    assert e is not None
    run(e.embed(["x"]))
    assert fake.requests[-1]["body"]["keep_alive"] == -1 and fake.requests[-1]["path"] == "/api/embed"
    again = embedder_for_st_source(
        _St("ollama", api_url=fake.url, model="nomic-embed-text", keep=True), secrets=secrets
    )
    assert again is e  # cached: connections reused
    fake.kind = "extras"
    x = embedder_for_st_source(_St("extras", extras_url=fake.url, extras_key="sekrit-extras"), secrets=secrets)
    run(x.embed(["y"]))
    assert fake.requests[-1]["headers"]["Authorization"] == "Bearer sekrit-extras"
    for local in ("transformers", "koboldcpp", "webllm", "vertexai"):
        assert embedder_for_st_source(_St(local), secrets=secrets) is None
    openai = embedder_for_st_source(_St("openai"), secrets=secrets)
    assert openai.request_url == "https://api.openai.com/v1/embeddings" and openai.model == "text-embedding-ada-002"
    assert embedder_for_st_source(_St("palm"), secrets=secrets).source.kind == "google"
