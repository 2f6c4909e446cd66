"""Where the server and its OpenAPI document used to disagree (a schema fuzzer found them), each
settled one way: the document's limits are enforced, values it calls valid are accepted, and a
field sent in both spellings is refused instead of one being dropped silently."""

from __future__ import annotations

import pytest

from ._support import API, messages


@pytest.mark.parametrize("limit", ["0", "51", "-1", "1.5", "x", ""])
def test_records_limit_outside_1_to_50_is_refused_not_clamped(server, limit):
    server.retrieve("c", messages("tamsin"))
    r = server.client.get(f"{API}/chats/c/records", params={"limit": limit})
    assert r.status_code == 400 and "limit must be a whole number from 1 to 50" in r.json()["error"]


def test_records_limit_at_the_bounds(server):
    server.retrieve("c", messages("tamsin"))
    server.retrieve("c", messages("tamsin", "bell"))
    assert len(server.client.get(f"{API}/chats/c/records", params={"limit": "1"}).json()["records"]) == 1
    assert len(server.client.get(f"{API}/chats/c/records", params={"limit": "50"}).json()["records"]) == 2
    assert len(server.client.get(f"{API}/chats/c/records").json()["records"]) == 2


@pytest.mark.parametrize("force", ["true", "yes", "2", ""])
def test_sync_force_other_than_0_or_1_is_refused(server, force):
    r = server.client.post(f"{API}/sync", params={"force": force})
    assert r.status_code == 400 and "force must be 0 or 1" in r.json()["error"]


def test_sync_force_0_and_1(server):
    assert server.client.post(f"{API}/sync", params={"force": "0"}).status_code == 200
    assert server.client.post(f"{API}/sync", params={"force": "1"}).status_code == 200


@pytest.mark.parametrize(
    "snake,camel,value",
    [
        ("chat_id", "chatId", "c"),
        ("folder_filter", "folderFilter", ["People"]),
        ("character_name", "characterName", "Tamsin"),
        ("dry_run", "dryRun", True),
    ],
)
def test_a_field_in_both_spellings_is_refused(server, snake, camel, value):
    body = {"chat_id": "c", "messages": messages("tamsin"), snake: value, camel: value}
    r = server.client.post(f"{API}/retrieve", json=body)
    assert r.status_code == 400 and f"give {snake} or {camel}, not both" in r.json()["error"]
    assert server.state("c")["generation_count"] == 0


def test_folder_filter_beside_folder_filter_alias_no_longer_drops_one(server):
    r = server.client.post(
        f"{API}/retrieve",
        json={"chat_id": "c", "messages": messages("tamsin"), "folder_filter": ["People"], "folderFilter": ["Places"]},
    )
    assert r.status_code == 400
    assert server.state("c")["folder_filter"] is None


def test_a_whole_swipe_id_written_as_a_json_float_is_accepted(server):
    msgs = messages("tamsin")
    msgs[0]["swipe_id"] = 2.0
    assert server.retrieve("c", msgs)["injected"]
    msgs[0]["swipe_id"] = 2.5
    r = server.client.post(f"{API}/retrieve", json={"chat_id": "c", "messages": msgs})
    assert r.status_code == 400 and "swipe_id" in r.json()["error"]


def test_a_pin_with_vault_and_vault_source_is_refused(server):
    for pin in (
        {"title": "Omen", "vault": "lore", "vaultSource": "other"},
        {"title": "Omen", "vault": "", "vaultSource": {}},
    ):
        r = server.client.put(f"{API}/chats/c/pins", json={"pins": [pin]})
        assert r.status_code == 400 and "vault" in r.json()["error"], r.text
    assert server.state("c")["pins"] == []
    assert server.put("c", "pins", "pins", [{"title": "Omen", "vaultSource": "lore"}])["pins"] == [
        {"title": "Omen", "vault": "lore"}
    ]


def test_clearing_the_ai_cache_of_an_empty_chat_id_is_refused(server):
    r = server.client.post(f"{API}/ai/cache/clear", params={"chat_id": ""})
    assert r.status_code == 400 and "chat id is empty" in r.json()["error"]
    assert server.client.post(f"{API}/ai/cache/clear").json() == {"cleared": "all"}
