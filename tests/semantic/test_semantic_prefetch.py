"""Semantic prefetch (`POST /api/dle/v1/semantic/prefetch`, sent by the SillyTavern bridge when a
reply arrives and while the user types): the messages are embedded in the background, the next
generation's lookup finds them cached, an embedding already running for a text is joined rather
than repeated, and bad bodies are refused with nothing embedded."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import numpy as np
import pytest

from dle_desktop.core.pipeline.semantic_query import clean_message
from dle_desktop.state.settings import Settings
from dle_desktop.vectors.vault_embeddings import VaultEmbeddings
from tests.retrieval._support import LiveServer
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_vault"
API = "/api/dle/v1"
REPLY = "Rook shrugs. ((OOC: short reply)) The ferry leaves at dawn, if the murk lifts."
DRAFT = "Then I will row out to the bell myself, tonight, at slack water."


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf")


@pytest.fixture
def live(tmp_path, tiny_model):
    vault = Path(shutil.copytree(SAMPLE, tmp_path / "vault"))
    server = LiveServer(
        vault,
        tmp_path / "data",
        Settings().replace(semantic_enabled=True, embedding_model_path=str(tiny_model), semantic_min_score=-1.0),
    )
    server.thread.call(server.engine.semantic.wait_idle(), timeout=300)
    yield server
    server.close()


def vault_embeddings(live: LiveServer) -> VaultEmbeddings:
    return live.engine.semantic._vault_embeddings()


def settle(live: LiveServer) -> None:
    async def done():
        tasks = list(live.engine.semantic._prefetches)
        if tasks:
            await asyncio.gather(*tasks)

    live.thread.call(done(), timeout=60)


def test_prefetched_messages_are_cached_for_the_next_generation(live):
    r = live.client.post(f"{API}/semantic/prefetch", json={"messages": [REPLY, DRAFT]})
    assert r.status_code == 200 and r.json() == {"queued": 2}
    settle(live)
    ve = vault_embeddings(live)
    assert ve.prefetched == 2
    assert clean_message(REPLY) in ve._queries and "OOC" not in clean_message(REPLY)  # cleaned as the query is
    misses = ve.query_cache_misses
    out = live.retrieve(
        "c1", [{"name": "Rook", "is_user": False, "mes": REPLY}, {"name": "Mira", "is_user": True, "mes": DRAFT}]
    )
    assert any(v["stage"] == "semantic" for v in out["verdicts"])
    assert ve.query_cache_misses == misses  # nothing new to embed: both came from the prefetch


def test_a_prefetch_sent_twice_embeds_once(live):
    for _ in range(2):
        assert live.client.post(f"{API}/semantic/prefetch", json={"messages": [DRAFT]}).json() == {"queued": 1}
    settle(live)
    assert vault_embeddings(live).prefetched == 1


@pytest.mark.parametrize(
    "body, why",
    [
        ({}, "messages must be a list"),
        ({"messages": []}, "messages must be a list"),
        ({"messages": ["a", "b", "c", "d", "e"]}, "messages must be a list"),
        ({"messages": [42]}, "messages[0] must be text"),
        ({"messages": ["x" * 50_001]}, "the limit is 50000"),
        ({"messages": ["ok"], "extra": 1}, "send an object"),
        (["not", "an", "object"], "send an object"),
    ],
)
def test_bad_bodies_are_refused_and_nothing_is_embedded(live, body, why):
    r = live.client.post(f"{API}/semantic/prefetch", json=body)
    assert r.status_code == 400 and why in r.json()["error"]
    settle(live)
    assert vault_embeddings(live).prefetched == 0


def test_with_semantic_search_off_nothing_is_queued(tmp_path):
    vault = Path(shutil.copytree(SAMPLE, tmp_path / "vault"))
    server = LiveServer(vault, tmp_path / "data", Settings())
    try:
        r = server.client.post(f"{API}/semantic/prefetch", json={"messages": [DRAFT]})
        assert r.status_code == 200 and r.json() == {"queued": 0, "reason": "semantic search is off"}
    finally:
        server.close()


class CountingEmbedder:
    """A real (in-process, deterministic) embedder that records every text it is asked for and
    holds each call until released, so a lookup can arrive while a prefetch runs."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release = asyncio.Event()

    async def embed(self, texts, *, query=False):
        self.calls.append(list(texts))
        await self.release.wait()
        rng = np.random.default_rng(len(self.calls))
        v = rng.standard_normal((len(texts), 8)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_a_lookup_joins_the_embedding_a_prefetch_started():
    async def go():
        emb = CountingEmbedder()
        ve = VaultEmbeddings(store=None, embedder=emb)
        warm = asyncio.ensure_future(ve.warm(["the bell under the water"]))
        await asyncio.sleep(0)
        lookup = asyncio.ensure_future(ve.query_vectors(["the bell under the water", "a new message"]))
        await asyncio.sleep(0)
        emb.release.set()
        vecs = await lookup
        await warm
        return emb.calls, vecs, ve

    calls, vecs, ve = asyncio.run(go())
    assert calls == [["the bell under the water"], ["a new message"]]  # the shared text embedded once
    assert len(vecs) == 2 and ve.query_cache_hits == 1 and ve.prefetched == 1
