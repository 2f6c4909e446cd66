"""The vault's semantic stage wired through the engine, `POST /retrieve`, the "Test a chat" dry run
and `dle-desktop match`: background embedding after each sync (progress, pause, resume), lookups
that degrade to a note instead of failing, and real meaning with the real MiniLM model when the
shared models folder is present."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dle_desktop.core.pipeline.chat_input import parse_chat_document
from dle_desktop.state.settings import Settings
from tests.retrieval._support import LiveServer
from tests.support.tiny_gguf import make_tiny_qwen3_gguf

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample_vault"
MINILM = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-Q8_0.gguf"
needs_minilm = pytest.mark.skipif(not MINILM.is_file(), reason="the shared MiniLM model is not present")

#: No keyword of the sample vault appears here; only meaning links it to the lamplighters.
HARBOUR_LIGHTS = "Who keeps the lights burning along the harbour at night?"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_qwen3_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf")


@pytest.fixture
def vault(tmp_path) -> Path:
    return Path(shutil.copytree(SAMPLE, tmp_path / "vault"))


@pytest.fixture
def servers():
    started: list[LiveServer] = []
    yield started
    for s in started:
        s.close()


def start(servers: list, vault: Path, data: Path, **settings) -> LiveServer:
    server = LiveServer(vault, data, Settings().replace(**settings))
    servers.append(server)
    return server


def visible_count(server: LiveServer) -> int:
    return sum(1 for e in server.engine.snapshot.entries if not e.guide and e.content)


def wait_idle(server: LiveServer):
    return server.thread.call(server.engine.semantic.wait_idle(), timeout=300)


def chat(text: str) -> list[dict]:
    return [{"name": "User", "is_user": True, "mes": text}]


def semantic_verdicts(generation: dict) -> list[dict]:
    return [v for v in generation["verdicts"] if v["stage"] == "semantic"]


# -- engine --------------------------------------------------------------------------------------


def test_off_by_default_embeds_nothing(servers, vault, tmp_path):
    s = start(servers, vault, tmp_path / "data")
    out = s.retrieve("c1", chat("Tell me about the lamplighters of the quay."))
    assert semantic_verdicts(out) == [] and out["notes"] == []
    status = s.client.get("/api/dle/v1/status").json()["semantic"]
    assert status["enabled"] is False and status["state"] == "off"
    assert not (tmp_path / "data" / "vectors").exists() or not any((tmp_path / "data" / "vectors").rglob("*.f32"))


def test_entries_are_embedded_in_the_background_with_progress(servers, vault, tmp_path, tiny_model):
    events: list[dict] = []
    lock = threading.Lock()
    s = start(servers, vault, tmp_path / "data", semantic_enabled=True, embedding_model_path=str(tiny_model))
    s.engine.subscribe(lambda ev: ev.kind == "semantic" and (lock.acquire(), events.append(ev.data), lock.release()))
    status = wait_idle(s)
    assert status.state == "ready" and status.error is None
    assert status.embedded == status.entries == visible_count(s)
    api = s.client.get("/api/dle/v1/status").json()["semantic"]
    assert api["state"] == "ready" and api["embedded"] == visible_count(s) and api["model"] == "tiny.gguf"

    # an edit re-embeds that entry alone
    note = vault / "Places" / "Lantern Quay.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nNew gossip on the quay.\n", encoding="utf-8")
    s.thread.call(s.engine.sync_now(), timeout=60)
    status = wait_idle(s)
    assert (status.state, status.total, status.done) == ("ready", 1, 1)
    with lock:
        progress = [(e["done"], e["total"]) for e in events if e["state"] == "embedding" and e["total"]]
    assert progress[-1] == (1, 1)


def test_embeddings_survive_a_restart(servers, vault, tmp_path, tiny_model):
    s = start(servers, vault, tmp_path / "data", semantic_enabled=True, embedding_model_path=str(tiny_model))
    wait_idle(s)
    s.restart()
    status = wait_idle(s)
    assert status.state == "ready" and status.total == 0 and status.embedded == visible_count(s)


def test_retrieve_adds_semantic_matches_with_verdicts(servers, vault, tmp_path, tiny_model):
    # the tiny model has random weights: similarities mean nothing, so every one is let through
    s = start(
        servers,
        vault,
        tmp_path / "data",
        semantic_enabled=True,
        embedding_model_path=str(tiny_model),
        semantic_min_score=-1.0,
        semantic_top_k=3,
    )
    wait_idle(s)
    out = s.retrieve("c1", chat("A quiet evening, nothing in particular."))
    matched = [v for v in semantic_verdicts(out) if v["outcome"] == "matched"]
    assert len(matched) == 3
    injected = {i["title"]: i["matched_by"] for i in out["injected"]}
    for v in matched:
        assert v["reason"].startswith("meaning close to the chat: similarity")
        if v["title"] in injected:
            assert injected[v["title"]].startswith("(semantic, score:")
    assert out["notes"] == []


def test_switched_on_in_place_the_running_engine_embeds_and_searches_and_off_stops(
    servers, vault, tmp_path, tiny_model
):
    s = start(
        servers,
        vault,
        tmp_path / "data",
        embedding_model_path=str(tiny_model),
        semantic_min_score=-1.0,
        semantic_top_k=2,
    )
    engine, snapshot = s.engine, s.engine.snapshot
    on = s.settings.replace(semantic_enabled=True)
    s.thread.call(engine.apply_settings(on), timeout=30)
    status = wait_idle(s)
    assert s.engine is engine and engine.snapshot is snapshot  # the same index, embedded in place
    assert status.state == "ready" and status.embedded == visible_count(s)
    out = s.retrieve("c1", chat("A quiet evening, nothing in particular."))
    assert len([v for v in semantic_verdicts(out) if v["outcome"] == "matched"]) == 2

    s.thread.call(engine.apply_settings(on.replace(semantic_enabled=False)), timeout=30)
    assert engine.semantic.status.state == "ready"  # nothing left running
    out = s.retrieve("c2", chat("A quiet evening, nothing in particular."))
    assert semantic_verdicts(out) == [] and out["notes"] == []


def test_without_a_model_retrieval_goes_on_and_says_why(servers, vault, tmp_path):
    s = start(servers, vault, tmp_path / "data", semantic_enabled=True)
    status = wait_idle(s)
    assert status.state == "error" and "no local embedding model" in status.error
    out = s.retrieve("c1", chat("The lamplighters walk the quay."))
    assert any("semantic search unavailable: no local embedding model" in n for n in out["notes"])
    assert semantic_verdicts(out) == []
    assert any(i["matched_by"] and not i["matched_by"].startswith("(") for i in out["injected"])  # keywords still work


def test_a_broken_model_file_is_reported_not_fatal(servers, vault, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    s = start(servers, vault, tmp_path / "data", semantic_enabled=True, embedding_model_path=str(bad))
    status = wait_idle(s)
    assert status.state == "error" and status.error
    out = s.retrieve("c1", chat("The lamplighters walk the quay."))
    assert any(n.startswith("semantic search unavailable:") for n in out["notes"])
    assert s.client.get("/api/dle/v1/status").status_code == 200


def test_pause_holds_embedding_and_lookups_still_answer(servers, vault, tmp_path, tiny_model):
    s = start(
        servers,
        vault,
        tmp_path / "data",
        semantic_enabled=True,
        embedding_model_path=str(tiny_model),
        semantic_paused=True,
        semantic_min_score=-1.0,
    )
    deadline = time.monotonic() + 60
    while s.engine.semantic.status.state != "paused" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.engine.semantic.status.state == "paused"
    out = s.retrieve("c1", chat("A quiet evening."))
    assert len(out["notes"]) == 1 and ("paused" in out["notes"][0] or "so far" in out["notes"][0])

    async def resume() -> None:
        s.engine.set_semantic_paused(False)

    s.thread.call(resume(), timeout=10)
    status = wait_idle(s)
    assert status.state == "ready" and status.embedded == visible_count(s)
    assert s.retrieve("c2", chat("A quiet evening."))["notes"] == []


def test_test_a_chat_dry_run_uses_the_semantic_stage(servers, vault, tmp_path, tiny_model):
    s = start(
        servers,
        vault,
        tmp_path / "data",
        semantic_enabled=True,
        embedding_model_path=str(tiny_model),
        semantic_min_score=-1.0,
        semantic_top_k=2,
    )
    wait_idle(s)
    doc = parse_chat_document(chat("A quiet evening, nothing in particular."))
    gens = s.thread.call(s.engine.test_chat(doc), timeout=60)
    assert len([v for v in semantic_verdicts(gens[0]) if v["outcome"] == "matched"]) == 2


@needs_minilm
def test_meaning_finds_the_lamplighters_without_any_keyword(servers, vault, tmp_path):
    s = start(servers, vault, tmp_path / "data", semantic_enabled=True, embedding_model_path=str(MINILM))
    wait_idle(s)
    out = s.retrieve("c1", chat(HARBOUR_LIGHTS))
    matched = [v["title"] for v in semantic_verdicts(out) if v["outcome"] == "matched"]
    assert "Guild of Lamplighters" in matched
    assert "Guild of Lamplighters" in [i["title"] for i in out["injected"]]


# -- the match command ---------------------------------------------------------------------------


def match(tmp_path: Path, vault: Path, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat(HARBOUR_LIGHTS)), encoding="utf-8")
    argv = [
        sys.executable,
        "-m",
        "dle_desktop",
        "--data-dir",
        str(tmp_path / "cli-data"),
        "match",
        "--vault",
        str(vault),
        "--chat",
        str(path),
        *args,
    ]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, encoding="utf-8", timeout=300)


def test_match_semantic_embeds_once_then_reuses(tmp_path, vault, tiny_model):
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"semantic_min_score": -1, "semantic_top_k": 2}), encoding="utf-8")
    first = match(tmp_path, vault, "--semantic", "--embedding-model", str(tiny_model), "--settings", str(settings))
    assert first.returncode == 0, first.stderr
    assert "embedding entries:" in first.stdout + first.stderr
    assert "[(semantic, score:" in first.stdout
    again = match(
        tmp_path, vault, "--semantic", "--embedding-model", str(tiny_model), "--settings", str(settings), "--json"
    )
    assert again.returncode == 0, again.stderr
    assert "embedding entries:" not in again.stderr  # nothing new to embed
    gen = json.loads(again.stdout)["generations"][0]
    assert len([v for v in semantic_verdicts(gen) if v["outcome"] == "matched"]) == 2 and gen["notes"] == []


def test_match_semantic_without_a_model_warns_and_still_answers(tmp_path, vault):
    out = match(tmp_path, vault, "--semantic")
    assert out.returncode == 0, out.stderr
    assert "warning: semantic search unavailable" in out.stderr
    assert "note: semantic search unavailable" in out.stdout


def test_match_rejects_a_missing_model_file(tmp_path, vault):
    out = match(tmp_path, vault, "--semantic", "--embedding-model", str(tmp_path / "nope.gguf"))
    assert out.returncode == 2 and "embedding model not found" in out.stderr


@needs_minilm
def test_match_semantic_with_minilm_finds_meaning(tmp_path, vault):
    out = match(tmp_path, vault, "--semantic", "--embedding-model", str(MINILM), "--json")
    assert out.returncode == 0, out.stderr
    gen = json.loads(out.stdout)["generations"][0]
    assert "Guild of Lamplighters" in [v["title"] for v in semantic_verdicts(gen) if v["outcome"] == "matched"]
