"""Source settings (body for ST 1.13+, X-* headers for ST 1.12) and the route fields' rules
(ST's Number() casts and defaults, TauriTavern's validation), without a server."""

from __future__ import annotations

import math

import pytest

from dle_desktop.vectors.contracts import StoredItem
from dle_desktop.vectors.service import (
    VectorApiError,
    parse_collection_id,
    parse_collection_ids,
    parse_hashes,
    parse_items,
    parse_search_text,
    parse_threshold,
    parse_top_k,
)
from dle_desktop.vectors.source_settings import (
    KNOWN_SOURCES,
    SourceSettingsError,
    js_number,
    parse_source_settings,
)

# -- source ---------------------------------------------------------------------------------------


def test_known_sources_cover_every_st_list():
    assert set(KNOWN_SOURCES) == {
        "transformers",
        "mistral",
        "openai",
        "extras",
        "palm",
        "togetherai",
        "nomicai",
        "cohere",
        "ollama",
        "llamacpp",
        "vllm",
        "webllm",
        "koboldcpp",
        "vertexai",
        "electronhub",
        "openrouter",
        "chutes",
        "nanogpt",
        "siliconflow",
        "workers_ai",
    }


@pytest.mark.parametrize("raw", ["", None, "  "])
def test_blank_or_missing_source_means_transformers(raw):
    body = {} if raw is None else {"source": raw}
    assert parse_source_settings(body).source == "transformers"


@pytest.mark.parametrize("raw", ["nosuch", "undefined", "LLAMACPP", 5, True, ["llamacpp"]])
def test_unknown_source_is_refused(raw):
    with pytest.raises(SourceSettingsError):
        parse_source_settings({"source": raw})


def test_body_settings_1_13():
    s = parse_source_settings(
        {"source": "ollama", "apiUrl": "http://127.0.0.1:11434", "model": "mxbai-embed-large", "keep": True}
    )
    assert (s.source, s.api_url, s.model, s.keep) == ("ollama", "http://127.0.0.1:11434", "mxbai-embed-large", True)
    assert s.endpoint == "http://127.0.0.1:11434"


HEADERS_1_12 = {
    "X-LlamaCpp-URL": "http://127.0.0.1:18001",
    "X-Vllm-URL": "http://127.0.0.1:18002/v1",
    "X-Vllm-Model": "bge",
    "X-Ollama-URL": "http://127.0.0.1:11434",
    "X-Ollama-Model": "nomic",
    "X-Ollama-Keep": "true",
    "X-Extras-Url": "http://127.0.0.1:5100",
    "X-Extras-Key": "sekrit",
    "X-OpenAI-Model": "text-embedding-3-small",
    "X-Togetherai-Model": "m2-bert",
    "X-Cohere-Model": "embed-english-v3.0",
}


@pytest.mark.parametrize(
    "source, expected",
    [
        ("llamacpp", dict(api_url="http://127.0.0.1:18001")),
        ("vllm", dict(api_url="http://127.0.0.1:18002/v1", model="bge")),
        ("ollama", dict(api_url="http://127.0.0.1:11434", model="nomic", keep=True)),
        ("extras", dict(extras_url="http://127.0.0.1:5100", extras_key="sekrit")),
        ("openai", dict(model="text-embedding-3-small")),
        ("togetherai", dict(model="m2-bert")),
        ("cohere", dict(model="embed-english-v3.0")),
    ],
)
def test_header_settings_1_12(source, expected):
    s = parse_source_settings({"source": source}, HEADERS_1_12)
    for name, value in expected.items():
        assert getattr(s, name) == value, name


def test_headers_belong_to_their_source_only():
    s = parse_source_settings({"source": "vllm"}, {"X-LlamaCpp-URL": "http://127.0.0.1:1", "X-Ollama-Model": "x"})
    assert s.api_url == "" and s.model == ""


def test_body_wins_over_headers():
    s = parse_source_settings({"source": "vllm", "apiUrl": "http://body:1", "model": "body-model"}, HEADERS_1_12)
    assert (s.api_url, s.model) == ("http://body:1", "body-model")


def test_empty_body_field_falls_back_to_header():
    s = parse_source_settings({"source": "llamacpp", "apiUrl": ""}, HEADERS_1_12)
    assert s.api_url == "http://127.0.0.1:18001"


@pytest.mark.parametrize("value, keep", [("true", True), ("false", True), ("1", True), ("", False), (None, False)])
def test_ollama_keep_header_is_boolean_of_the_string(value, keep):
    headers = {} if value is None else {"X-Ollama-Keep": value}
    assert parse_source_settings({"source": "ollama"}, headers).keep is keep


@pytest.mark.parametrize(
    "body",
    [
        {"source": "llamacpp", "apiUrl": "not a url"},
        {"source": "llamacpp", "apiUrl": "ftp://x/"},
        {"source": "vllm", "apiUrl": "http://:99999"},
        {"source": "llamacpp", "apiUrl": 5},
        {"source": "vllm", "model": ["x"]},
        {"source": "ollama", "keep": "yes"},
        {"source": "koboldcpp", "embeddings": [[1, 2]]},
    ],
)
def test_bad_settings_are_refused(body):
    with pytest.raises(SourceSettingsError):
        parse_source_settings(body)


def test_invalid_header_url_is_refused():
    with pytest.raises(SourceSettingsError):
        parse_source_settings({"source": "llamacpp"}, {"X-LlamaCpp-URL": "nonsense"})


def test_endpoint_ignores_trailing_slash():
    a = parse_source_settings({"source": "llamacpp", "apiUrl": "http://127.0.0.1:8080/"})
    b = parse_source_settings({"source": "llamacpp", "apiUrl": "http://127.0.0.1:8080"})
    assert a.endpoint == b.endpoint


# -- JavaScript Number() ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (5, 5.0),
        (2.5, 2.5),
        ("7", 7.0),
        (" 3 ", 3.0),
        ("", 0.0),
        (None, 0.0),
        (True, 1.0),
        (False, 0.0),
        ("0x10", 16.0),
        ("1e2", 100.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
    ],
)
def test_js_number(value, expected):
    assert js_number(value) == expected


@pytest.mark.parametrize("value", ["abc", "nan", "inf", [1], {"a": 1}, "1,2"])
def test_js_number_nan(value):
    assert math.isnan(js_number(value))


# -- fields ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected", [(None, 10), (0, 10), ("0", 10), ("", 10), (1, 1), (3, 3), ("5", 5), (1000, 1000), (4.0, 4)]
)
def test_top_k(raw, expected):
    assert parse_top_k(raw) == expected


@pytest.mark.parametrize("raw", [-1, 1001, 2.5, "abc", math.nan, math.inf, [3], {"k": 3}, True])
def test_top_k_refused(raw):
    with pytest.raises(VectorApiError) as info:
        parse_top_k(raw)
    assert info.value.status == 400


@pytest.mark.parametrize(
    "raw, expected", [(None, 0.0), (0, 0.0), (0.25, 0.25), ("0.5", 0.5), (-1, -1.0), (1, 1.0), ("", 0.0)]
)
def test_threshold(raw, expected):
    assert parse_threshold(raw) == expected


@pytest.mark.parametrize("raw", [1.01, -1.5, math.nan, math.inf, "abc", [0.1], True])
def test_threshold_refused(raw):
    with pytest.raises(VectorApiError) as info:
        parse_threshold(raw)
    assert info.value.status == 400


def test_collection_id_rules():
    assert parse_collection_id("Seraphina - 2025-06-01@14h03m22s517ms") == "Seraphina - 2025-06-01@14h03m22s517ms"
    assert parse_collection_id(12) == "12"  # String(12)
    for bad in (None, "", "   ", [], {}, True, "x" * 2000, "a\x00b"):
        with pytest.raises(VectorApiError):
            parse_collection_id(bad)


def test_collection_ids_rules():
    assert parse_collection_ids([]) == []
    assert parse_collection_ids(["a", "b", "a", 3]) == ["a", "b", "3"]
    for bad in (None, "a", {"a": 1}, [None], [""]):
        with pytest.raises(VectorApiError):
            parse_collection_ids(bad)


def test_items_keep_only_hash_text_index():
    items = parse_items(
        [{"hash": 1, "text": "a", "index": 0, "extra": "dropped"}, {"hash": 2.0, "text": "b", "index": 1}]
    )
    assert items == [StoredItem(1, 0, "a"), StoredItem(2, 1, "b")]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {},
        "items",
        [1],
        [{"text": "a", "index": 0}],
        [{"hash": 1, "index": 0}],
        [{"hash": 1, "text": "a"}],
        [{"hash": "1", "text": "a", "index": 0}],
        [{"hash": 1.5, "text": "a", "index": 0}],
        [{"hash": True, "text": "a", "index": 0}],
        [{"hash": 1, "text": 5, "index": 0}],
        [{"hash": 2**64, "text": "a", "index": 0}],
        [{"hash": math.nan, "text": "a", "index": 0}],
    ],
)
def test_bad_items_are_refused(bad):
    with pytest.raises(VectorApiError) as info:
        parse_items(bad)
    assert info.value.status == 400


def test_hashes_go_through_number():
    assert parse_hashes([1, "2", 3.0, " 4 "]) == [1, 2, 3, 4]
    assert parse_hashes([4522783205579122, "4522783205579122"]) == [4522783205579122, 4522783205579122]
    for bad in (None, 5, "1,2", [None], ["x"], [1.5], [True], [[1]]):
        with pytest.raises(VectorApiError):
            parse_hashes(bad)


def test_search_text_rules():
    assert parse_search_text("dragon") == "dragon"
    for bad in (None, "", "  \n", 5, ["dragon"]):
        with pytest.raises(VectorApiError):
            parse_search_text(bad)
