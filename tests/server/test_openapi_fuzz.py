"""The OpenAPI document is true: schemathesis generates requests from it (valid and invalid ones) for
every operation and sends them to a live server on 127.0.0.1 (a small vault, the tiny generated
embedding model), and every answer must be documented: its status, content type and body, with no
server error; and a wrong method must be a 405 with `Allow`.

Every route must also accept every request the document calls valid and refuse every one it calls
invalid: ours (/api/dle/v1) and the routes SillyTavern calls, whose wire format is looser (numbers
as strings through `Number()`), so their schemas say what ST sends and the server takes that.

Bounded and repeatable: a fixed seed, a few examples per operation (about 15 s on 2 cores), no
network (requests that name a remote embedding source are pointed at the local model, KoboldCpp's
hop at this server). Valid requests that name koboldcpp or webllm are pointed at the local model
too: their vectors come in the request, and no generator can make them match the texts.

The requests come from 127.0.0.1 with no `Origin`, so the server's Host/Origin checks let them
through. If the server comes to require a token, the document gets a `securitySchemes` entry
(dle_desktop/server/openapi.py says where) and this test sends the token as a header."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    missing_required_header,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from dle_desktop.server import openapi
from dle_desktop.state.settings import Settings
from dle_desktop.vectors.source_settings import KNOWN_SOURCES, PRECOMPUTED_SOURCES
from tests.retrieval._support import LiveServer, write_world

pytestmark = pytest.mark.slow  # about 15 s; runs with the suite

SEED = 20261201
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {"max-examples": 6, "database": "none"},
        # coverage: boundary values and each kind of invalid value once; fuzzing: max-examples of each mode.
        "phases": {
            "examples": {"enabled": False},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": False},
        },
        "suppress-health-check": ["all"],
    }
)
SCHEMA = schemathesis.openapi.from_dict(openapi.DOCUMENT, config=CONFIG)

ANSWER_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    unsupported_method,
    allow_header_conformance,
    missing_required_header,
]
INPUT_CHECKS = [positive_data_acceptance, negative_data_rejection]
#: Sources that would call a server or cloud (the others use our model or vectors sent in the request).
REMOTE_SOURCES = set(KNOWN_SOURCES) - {"transformers"} - PRECOMPUTED_SOURCES


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from tests.support.tiny_gguf import make_tiny_qwen3_gguf

    base = tmp_path_factory.mktemp("fuzz")
    model = Path(make_tiny_qwen3_gguf(base / "tiny-qwen3-embedding.gguf"))
    server = LiveServer(write_world(base / "vault"), base / "data", Settings(embedding_model_path=str(model)))
    yield server
    server.close()


def _offline(case, live: LiveServer) -> None:
    """Keep the run on this machine: remote embedding sources become the local model, and the
    KoboldCpp hop goes to this server's own KoboldCpp-format endpoint. An invalid request stays
    invalid: only what is not the reason it is invalid is rewritten."""
    body = case.body
    if not isinstance(body, dict):
        return
    valid = not case.meta.generation.mode.is_negative
    if case.path == "/api/backends/kobold/embed" and "server" in body:
        if valid or _is_http_url(body["server"]):
            body["server"] = live.url
    elif case.path.startswith("/api/vector/") and isinstance(body.get("source"), str):
        source = body["source"].strip()
        if source in REMOTE_SOURCES or (valid and source in PRECOMPUTED_SOURCES):
            body["source"] = "transformers"


def _is_http_url(value: object) -> bool:
    try:
        url = httpx.URL(value) if isinstance(value, str) else None
    except (httpx.InvalidURL, ValueError):
        return False
    return url is not None and url.scheme in ("http", "https") and bool(url.host)


@SCHEMA.parametrize()
def test_the_server_answers_as_its_document_says(case, live):
    _offline(case, live)
    case.call_and_validate(base_url=live.url, checks=ANSWER_CHECKS + INPUT_CHECKS, timeout=60)
