"""The per-chat state endpoints: GET/PUT pins, blocks, context, folder-filter and notebook, their
effect on the next retrieve, DELETE, and the decision records."""

from __future__ import annotations

import pytest

from dle_desktop.state.settings import Settings

from ._support import API, messages, titles, verdicts_for

EVERYTHING = "tamsin rings the bell at the quay; an omen of eels"


@pytest.mark.parametrize(
    "seg,key,empty",
    [
        ("pins", "pins", []),
        ("blocks", "blocks", []),
        ("context", "context", {}),
        ("folder-filter", "folder_filter", None),
        ("notebook", "notebook", ""),
    ],
)
def test_unknown_chat_reads_empty(server, seg, key, empty):
    r = server.client.get(f"{API}/chats/never-seen/{seg}")
    assert r.status_code == 200 and r.json() == {key: empty}


def test_get_put_round_trips(server):
    c = server.client
    assert server.put(
        "c", "pins", "pins", ["Omen", {"title": "Tamsin Reed", "vault": "lore"}, {"title": "X", "vaultSource": "v"}]
    ) == {"pins": ["Omen", {"title": "Tamsin Reed", "vault": "lore"}, {"title": "X", "vault": "v"}]}
    assert server.put("c", "blocks", "blocks", ["  Lantern Quay  "]) == {"blocks": ["Lantern Quay"]}
    assert server.put(
        "c", "context", "context", {"era": "Eel Year", "n": 3, "flag": True, "list": ["a", 2], "gone": None}
    ) == {"context": {"era": "Eel Year", "n": "3", "flag": "true", "list": ["a", "2"]}}
    assert server.put("c", "folder-filter", "folder_filter", ["/Places/", " People "]) == {
        "folder_filter": ["Places", "People"]
    }
    assert server.put("c", "folder-filter", "folder_filter", "History") == {"folder_filter": ["History"]}
    assert server.put("c", "notebook", "notebook", "Scene: 龍宮 🐉 — שלום") == {"notebook": "Scene: 龍宮 🐉 — שלום"}
    assert c.get(f"{API}/chats/c/pins").json()["pins"][0] == "Omen"
    assert c.get(f"{API}/chats/c/blocks").json() == {"blocks": ["Lantern Quay"]}
    assert c.get(f"{API}/chats/c/context").json()["context"]["flag"] == "true"
    assert c.get(f"{API}/chats/c/folder-filter").json() == {"folder_filter": ["History"]}
    assert c.get(f"{API}/chats/c/notebook").json() == {"notebook": "Scene: 龍宮 🐉 — שלום"}
    st = server.state("c")
    assert st["generation_count"] == 0 and st["blocks"] == ["Lantern Quay"] and st["folder_filter"] == ["History"]
    # Clearing: null or empty values.
    assert server.put("c", "pins", "pins", None) == {"pins": []}
    assert server.put("c", "context", "context", None) == {"context": {}}
    assert server.put("c", "folder-filter", "folder_filter", None) == {"folder_filter": None}
    assert server.put("c", "notebook", "notebook", "") == {"notebook": ""}
    # Setting one field leaves the others alone.
    assert server.state("c")["blocks"] == ["Lantern Quay"]


def test_pinned_entry_is_injected(server):
    base = server.retrieve("p0", messages("A quiet evening."), dry_run=True)
    assert titles(base) == []
    server.put("p", "pins", "pins", ["hidden archive"])  # titles match case-insensitively
    gen = server.retrieve("p", messages("A quiet evening."))
    assert titles(gen) == ["Hidden Archive"]
    assert gen["injected"][0]["matched_by"] == "(pinned)"
    assert gen["injected"][0]["priority"] == 10
    assert ("pins", "matched", "pinned in this chat (treated as constant, priority 10)") in verdicts_for(
        gen, "Hidden Archive"
    )
    # Pinned entries are exempt from strip-dedup: the next generation has it again.
    gen2 = server.retrieve("p", messages("A quiet evening.", "Still quiet."))
    assert titles(gen2) == ["Hidden Archive"]
    # A pin limited to another vault matches nothing, and says so.
    server.put("p", "pins", "pins", [{"title": "Hidden Archive", "vault": "elsewhere"}])
    gen3 = server.retrieve("p", messages("A quiet evening.", "Still quiet.", "Night."))
    assert titles(gen3) == []
    assert gen3["notes"] == ["pin 'Hidden Archive' matches no entry"]


def test_blocked_entry_is_removed(server):
    server.put("b", "blocks", "blocks", [{"title": "Tamsin Reed", "vault": "lore"}, "Lantern Quay"])
    gen = server.retrieve("b", messages("tamsin at the quay with the bell"))
    assert titles(gen) == ["Drowned Bell"]
    assert verdicts_for(gen, "Tamsin Reed")[-1] == ("blocks", "removed", "blocked in this chat")
    assert verdicts_for(gen, "Lantern Quay")[-1] == ("blocks", "removed", "blocked in this chat")
    # A block beats a pin.
    server.put("b", "pins", "pins", ["Hidden Archive"])
    server.put("b", "blocks", "blocks", ["Hidden Archive"])
    gen = server.retrieve("b", messages("tamsin at the quay with the bell", "nothing"))
    assert "Hidden Archive" not in titles(gen)


def test_context_gates_entries(server):
    msgs = messages("eels in the canal")
    assert titles(server.retrieve("g", msgs, dry_run=True)) == ["Eel Year"]  # no context: nothing gated
    server.put("g", "context", "context", {"era": "Founding"})
    gen = server.retrieve("g", msgs, dry_run=True)
    assert titles(gen) == []
    ((stage, _outcome, reason),) = [v for v in verdicts_for(gen, "Eel Year") if v[1] == "removed"]
    assert stage == "contextual gating" and "era" in reason and "Founding" in reason
    server.put("g", "context", "context", {"era": ["Founding", "eel year"]})  # match_any, case-insensitive
    assert titles(server.retrieve("g", msgs, dry_run=True)) == ["Eel Year"]
    # Entries without the field are not gated (moderate tolerance).
    server.put("g", "context", "context", {"era": "Founding"})
    assert titles(server.retrieve("g", messages("tamsin and eels"), dry_run=True)) == ["Tamsin Reed"]
    # The context in the retrieve body replaces the stored one (and is saved with the generation).
    gen = server.retrieve("g", msgs, context={"era": "Eel Year"})
    assert titles(gen) == ["Eel Year"]
    assert server.state("g")["context"] == {"era": "Eel Year"}


def test_folder_filter_limits_entries(server):
    msgs = messages("tamsin at the quay rings the bell; omen; zzz-never-said")
    server.put("f", "folder-filter", "folder_filter", ["Places"])
    gen = server.retrieve("f", msgs, seed=0, dry_run=True)
    # Places/ passes, and entries at the vault root (no folder) are never filtered.
    assert sorted(titles(gen)) == ["Hidden Archive", "Lantern Quay"]
    for title, folder in (("Tamsin Reed", "People"), ("Drowned Bell", "Artifacts")):
        stage, outcome, reason = verdicts_for(gen, title)[-1]
        assert (stage, outcome) == ("folder filter", "removed") and f"'{folder}'" in reason
    server.put("f", "folder-filter", "folder_filter", ["People", "Artifacts/"])
    assert sorted(titles(server.retrieve("f", msgs, dry_run=True))) == ["Drowned Bell", "Hidden Archive", "Tamsin Reed"]
    # folderFilter in the body (camelCase) overrides for that call only when dry.
    gen = server.retrieve("f", msgs, folderFilter=None, dry_run=True)
    assert "Lantern Quay" in titles(gen)
    assert server.state("f")["folder_filter"] == ["People", "Artifacts"]


def test_notebook_group_when_enabled(world, start_server):
    s = start_server(world, Settings(notebook_enabled=True, notebook_depth=2, notebook_role=1))
    gen = s.retrieve("n", messages("nothing to see"))
    assert gen["groups"] == []  # empty notebook: no group
    s.put("n", "notebook", "notebook", "  The party owes Tamsin three crowns.  ")
    gen = s.retrieve("n", messages("nothing to see", "still nothing"))
    (group,) = gen["groups"]
    assert group["key"] == "deeplore_notebook"
    assert (group["position"], group["depth"], group["role"]) == (1, 2, 1)
    assert group["text"] == "The party owes Tamsin three crowns."
    assert gen["injected"] == []  # the notebook is not an entry, and does not trigger keys


def test_notebook_ignored_when_disabled(server):
    server.put("n", "notebook", "notebook", "The party owes Tamsin three crowns.")
    gen = server.retrieve("n", messages("nothing to see"))
    assert gen["groups"] == []


def test_delete_resets_the_chat(server):
    server.put("d", "pins", "pins", ["Omen"])
    server.put("d", "notebook", "notebook", "x")
    server.retrieve("d", messages("the bell"))
    assert server.state("d")["generation_count"] == 1 and server.records("d")
    r = server.client.delete(f"{API}/chats/d")
    assert r.status_code == 200 and r.json() == {"chat_id": "d", "deleted": True}
    st = server.state("d")
    assert st == {
        "chat_id": "d",
        "generation_count": 0,
        "pins": [],
        "blocks": [],
        "context": {},
        "folder_filter": None,
        "notebook": "",
        "cooldowns": {},
        "counts": {},
        "analytics": {},
    }
    assert server.records("d") == []
    assert server.client.delete(f"{API}/chats/d").json() == {"chat_id": "d", "deleted": False}
    # After a reset the bell is no longer cooling down.
    assert titles(server.retrieve("d", messages("the bell", "the bell"))) == ["Drowned Bell"]


def test_records_are_the_recent_decisions(server):
    gens = [server.retrieve("r", messages(*["tamsin rings the bell"] * (i + 1))) for i in range(4)]
    recs = server.records("r", limit=3)
    assert [r["gen"] for r in recs] == [4, 3, 2]
    for rec, gen in zip(recs, reversed(gens[1:])):
        assert rec["injected"] == titles(gen)
        assert rec["verdicts"] == gen["verdicts"]
        assert rec["total_tokens"] == gen["total_tokens"]
        assert isinstance(rec["created_at"], float)
    assert recs[-1]["injected"] == [] and any(v["stage"] == "strip duplicates" for v in recs[-1]["verdicts"])
    assert len(server.records("r", limit=50)) == 4
    r = server.client.get(f"{API}/chats/r/records")
    assert [x["gen"] for x in r.json()["records"]] == [4, 3, 2, 1]  # default limit 10
    # Outside 1-50 is refused, as the OpenAPI document says (it used to be clamped silently).
    for limit in ("0", "1000"):
        assert server.client.get(f"{API}/chats/r/records", params={"limit": limit}).status_code == 400
    r = server.client.get(f"{API}/chats/r/records", params={"limit": "many"})
    assert r.status_code == 400 and "limit" in r.json()["error"]


def test_records_keep_the_newest_fifty(server):
    for i in range(55):
        server.retrieve("long", messages(*["x"] * (i + 1)))
    recs = server.records("long", limit=50)
    assert len(recs) == 50 and recs[0]["gen"] == 55 and recs[-1]["gen"] == 6
