"""A collection is found again whatever a source's URL spells the same server as (issue 9,
item 12): localhost / 127.0.0.1 / [::1] / 0.0.0.0, a default port, a trailing slash or /v1, and
our own server under a new port; scopes written before endpoints were canonical are found too."""

from __future__ import annotations

import numpy as np
import pytest

from dle_desktop.vectors.contracts import StoredItem
from dle_desktop.vectors.remote import embedder_for_st_source
from dle_desktop.vectors.source_settings import OWN_SERVER, parse_source_settings, scope_endpoint

from ._support import EXAMPLE_ITEMS

HASHES = sorted(i["hash"] for i in EXAMPLE_ITEMS)


@pytest.mark.parametrize(
    ("source", "url", "canonical"),
    [
        ("llamacpp", "http://localhost:8080", "http://127.0.0.1:8080"),
        ("llamacpp", "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("vllm", "http://[::1]:8000/v1", "http://127.0.0.1:8000"),
        ("ollama", "http://0.0.0.0:11434/api", "http://127.0.0.1:11434"),
        ("ollama", "HTTP://LocalHost.:80/", "http://127.0.0.1"),
        ("extras", "http://127.0.0.5:5100/extras", "http://127.0.0.1:5100"),
        ("llamacpp", "http://localhost:8765/v1", OWN_SERVER),
        ("ollama", "http://[::ffff:127.0.0.1]:8765", OWN_SERVER),
        ("llamacpp", "http://192.168.1.20:8080/v1", "http://192.168.1.20:8080"),  # a LAN address stays itself
        ("openai", "https://api.openai.com/v1/", "https://api.openai.com/v1"),  # a path that matters stays
    ],
)
def test_spellings_of_one_server_make_one_scope_endpoint(source, url, canonical):
    assert scope_endpoint(source, url, own_port=8765) == canonical


def insert(st, cid, api_url: str) -> None:
    st.ok("insert", {"collectionId": cid, "source": "llamacpp", "apiUrl": api_url, "items": EXAMPLE_ITEMS})


@pytest.mark.parametrize("spelling", ["http://localhost:{port}", "http://[::1]:{port}/", "http://0.0.0.0:{port}/v1"])
def test_the_same_server_spelled_another_way_finds_the_collection(st, cid, spelling):
    insert(st, cid, st.url)
    assert sorted(st.list(cid, source="llamacpp", apiUrl=spelling.format(port=st.port))) == HASHES


def test_our_own_server_keeps_its_collections_when_its_port_changes(fresh, cid):
    insert(fresh, cid, f"http://localhost:{fresh.port}")
    old_port = fresh.port
    fresh.restart()  # a new free port, as after changing server_port
    assert fresh.port != old_port
    assert sorted(fresh.list(cid, source="llamacpp", apiUrl=fresh.url)) == HASHES


def test_a_collection_stored_under_the_old_spelling_is_still_found(fresh, cid):
    # What versions before canonical endpoints stored: the URL exactly as ST sent it.
    old_url = f"http://localhost:{fresh.port}/"
    old_key = embedder_for_st_source(parse_source_settings({"source": "llamacpp", "apiUrl": old_url})).profile.key()
    assert "endpoint=http://localhost:" in old_key
    store = fresh.engine.vectors.get_store()
    store.insert(
        cid, "llamacpp", old_key, [StoredItem(hash=5, index=0, text="from before")], np.eye(1, 64, dtype=np.float32)
    )
    assert fresh.list(cid, source="llamacpp", apiUrl=fresh.url) == [5]
    insert(fresh, cid, fresh.url)  # new items join the old scope rather than starting a new one
    assert sorted(fresh.list(cid, source="llamacpp", apiUrl=f"http://127.0.0.1:{fresh.port}")) == sorted([5, *HASHES])
    assert [c["profile_key"] for c in store.collections() if c["collection"] == cid] == [old_key]
