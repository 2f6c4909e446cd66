"""The lore API for tool-calling models (POST /lore/search, /lore/flag) and the gap records it
leaves (GET /gaps), on a real engine and server on 127.0.0.1: misses and flags become records and
merge as DLE's do, a hit comes back in full with its linked entries, guides and excluded titles
never come back, bad bodies and refused clients record nothing, and the records are the
Librarian's own (one store, one file)."""

from __future__ import annotations

import json
import socket

import pytest

from dle_desktop.librarian.gaps import GapStore
from dle_desktop.librarian.service import Librarian
from dle_desktop.server.schemas_lore import MAX_REASON_CHARS
from dle_desktop.server.security import server_token
from tests.conftest import lore_text
from tests.retrieval._support import API, LiveServer

ST = "http://127.0.0.1:8000"

VAULT = {
    "Places/Lantern Quay.md": lore_text(
        "Lantern Quay",
        ("quay",),
        extra="summary: The night harbour where smugglers land.",
        body="Lantern Quay is where the smugglers land after dark. Read [[Quay Style]] first. Ask [[Tamsin Reed]] "
        "at the [[Drowned Bell]]; mind the [[Omen]] and remember the [[Eel Year]].",
    ),
    "People/Tamsin Reed.md": lore_text(
        "Tamsin Reed",
        ("tamsin",),
        extra="summary: A harbour pilot who owes favours.",
        body="Tamsin Reed pilots boats through the fog.",
    ),
    "Artifacts/Drowned Bell.md": lore_text("Drowned Bell", ("bell",), body="A bell that rings under the water."),
    "Rules/Omen.md": lore_text("Omen", ("omen",), body="Omens come before storms."),
    "History/Eel Year.md": lore_text("Eel Year", ("eels",), body="The year the eels came upriver."),
    # A writing guide that matches the same words as the quay: it must never be returned.
    "Guides/Quay Style.md": lore_text(
        "Quay Style",
        tags="[lorebook, lorebook-guide]",
        body="How to write smugglers, lanterns and quay scenes: smugglers smugglers.",
    ),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    base = tmp_path_factory.mktemp("gaps")
    root = base / "vault"
    for rel, text in VAULT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    server = LiveServer(root, base / "data")
    yield server
    server.close()


def gaps(live, **params) -> list[dict]:
    r = live.client.get(f"{API}/gaps", params=params)
    assert r.status_code == 200, r.text
    return r.json()["gaps"]


def by_query(live, text: str) -> dict:
    found = [g for g in gaps(live, include_hidden="1") if g["query"] == text]
    assert len(found) == 1, found
    return found[0]


def search(live, **body) -> dict:
    r = live.client.post(f"{API}/lore/search", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_hit_comes_back_in_full_with_up_to_three_linked_entries(live):
    before = gaps(live, include_hidden="1")
    out = search(live, queries=["smugglers land after dark"])
    assert out["best"]["title"] == "Lantern Quay" and out["best"]["vault"] == "lore"
    assert out["best"]["content"].startswith("### Lantern Quay\n")
    assert "Ask Tamsin Reed at the Drowned Bell; mind the Omen" in out["best"]["content"]
    linked = out["linked"]
    assert [e["title"] for e in linked] == ["Tamsin Reed", "Drowned Bell", "Omen"]
    assert linked[0]["summary"] == "A harbour pilot who owes favours."
    assert linked[0]["manifest"].startswith('<entry name="Tamsin Reed">\nTamsin Reed (')
    assert "A harbour pilot who owes favours." in linked[0]["manifest"]
    assert out["misses"] == [] and out["gap_ids"] == []
    assert gaps(live, include_hidden="1") == before


def test_guides_and_excluded_titles_are_never_returned(live):
    # "smugglers" is in the guide (three times) and the quay: the guide would rank first.
    out = search(live, queries=["smugglers"])
    assert out["best"]["title"] == "Lantern Quay"
    assert "Quay Style" not in [out["best"]["title"], *(e["title"] for e in out["linked"])]
    out = search(live, queries=["smugglers", "harbour pilot fog"], exclude_titles=["lantern QUAY"])
    assert out["best"]["title"] == "Tamsin Reed"
    assert "Lantern Quay" not in [out["best"]["title"], *(e["title"] for e in out["linked"])]
    # Everything that matches is excluded: that is a miss like any other.
    out = search(live, queries=["smugglers"], exclude_titles=["Lantern Quay"])
    assert out["best"] is None and out["misses"] == ["smugglers"]


def test_a_miss_creates_a_gap_and_a_similar_miss_merges_into_it(live):
    out = search(live, queries=["Tamsin Reed", "glass forge of Vell"], reason="Mira asked about the forge")
    assert out["best"]["title"] == "Tamsin Reed"
    assert out["misses"] == ["glass forge of Vell"] and len(out["gap_ids"]) == 1
    gap = by_query(live, "glass forge of Vell")
    assert gap["id"] == out["gap_ids"][0]
    assert (gap["type"], gap["subtype"], gap["status"], gap["frequency"], gap["urgency"]) == (
        "search",
        "gap",
        "pending",
        1,
        "medium",
    )
    assert gap["reason"] == "Mira asked about the forge"

    again = search(live, queries=["Vell glass forge"], reason="the forge again")
    assert again["gap_ids"] == [gap["id"]]
    merged = by_query(live, "glass forge of Vell")
    assert merged["frequency"] == 2
    assert merged["reason"] == "Mira asked about the forge; the forge again"


def test_one_call_naming_a_query_twice_is_one_miss(live):
    out = search(live, queries=["obsidian lighthouse keeper", "obsidian lighthouse keeper "])
    assert out["misses"] == ["obsidian lighthouse keeper"]
    assert by_query(live, "obsidian lighthouse keeper")["frequency"] == 1


def test_a_flag_merges_with_a_miss_and_raises_its_urgency(live):
    search(live, queries=["salt witches of Morrow"])
    assert by_query(live, "salt witches of Morrow")["urgency"] == "medium"
    r = live.client.post(
        f"{API}/lore/flag", json={"title": "Morrow salt witches", "reason": "they cursed the quay", "urgency": "high"}
    )
    assert r.status_code == 200, r.text
    flagged = r.json()
    assert flagged["query"] == "salt witches of Morrow"  # merged into the miss, not a second record
    assert (flagged["type"], flagged["frequency"], flagged["urgency"]) == ("flag", 2, "high")
    assert flagged["reason"].endswith("; they cursed the quay")
    assert by_query(live, "salt witches of Morrow") == flagged


def test_an_update_flag_names_its_entry_and_stays_apart_from_gaps(live):
    r = live.client.post(
        f"{API}/lore/flag",
        json={"title": "Omen", "reason": "storms now come without omens", "flag_type": "update", "urgency": "low"},
    )
    assert r.status_code == 200, r.text
    gap = r.json()
    assert (gap["subtype"], gap["entry_title"], gap["urgency"], gap["frequency"]) == ("update", "Omen", "low", 1)
    r = live.client.post(f"{API}/lore/flag", json={"title": "Omen", "reason": "missing"})
    assert r.json()["subtype"] == "gap" and r.json()["id"] != gap["id"]


def test_the_list_puts_pending_first_and_filters_by_status(live):
    r = live.client.post(
        f"{API}/lore/flag", json={"title": "the tide clock", "reason": "asked twice", "urgency": "high"}
    )
    written = r.json()
    assert Librarian(live.engine).gaps.mark_written(written["id"])
    listed = gaps(live)
    statuses = [g["status"] for g in listed]
    assert statuses == sorted(statuses, key=lambda s: s != "pending") and "written" in statuses
    assert [g["id"] for g in gaps(live, status="written")] == [written["id"]]
    assert all(g["status"] == "pending" for g in gaps(live, status="pending"))
    r = live.client.get(f"{API}/gaps", params={"status": "done"})
    assert r.status_code == 400 and "status must be one of pending, written" in r.json()["error"]


def test_the_gaps_are_the_librarians_own(live):
    search(live, queries=["ferryman's debt ledger"])
    lib = Librarian(live.engine)
    assert lib.gaps is live.engine.gaps
    assert "ferryman's debt ledger" in [g.query for g in lib.gaps.list()]
    heard = []
    lib.gaps.listeners.append(lambda: heard.append(True))
    try:
        live.client.post(f"{API}/lore/flag", json={"title": "ferryman debt ledger", "reason": "who owes whom"})
    finally:
        lib.gaps.listeners.clear()
    assert heard  # what the Librarian view's Gaps panel redraws on
    # ...and the file a later start of the Librarian reads.
    on_disk = GapStore(live.paths.data_dir / "librarian" / "gaps.json").list()
    assert [(g.query, g.frequency) for g in on_disk if "ferryman" in g.query] == [("ferryman's debt ledger", 2)]


BIG = json.dumps({"queries": ["x"], "reason": "y" * 300_000}).encode()


@pytest.mark.parametrize(
    "route, body, status, problem",
    [
        ("search", b"", 400, "empty"),
        ("search", b"{queries", 400, "not valid JSON"),
        ("search", b"\xff\xfe{}", 400, "not UTF-8"),
        ("search", b'["a"]', 400, "send an object"),
        ("search", b"{}", 400, "queries is required"),
        ("search", b'{"queries": "dragons"}', 400, "queries must be a list of text"),
        ("search", b'{"queries": ["a", 2]}', 400, "queries must be a list of text"),
        ("search", b'{"queries": []}', 400, "send 1 to 4"),
        ("search", json.dumps({"queries": ["a", "b", "c", "d", "e"]}).encode(), 400, "has 5 items; send 1 to 4"),
        ("search", b'{"queries": ["  "]}', 400, "a query is blank"),
        ("search", json.dumps({"queries": ["q" * 501]}).encode(), 400, "the limit is 500"),
        ("search", b'{"queries": ["a"], "reason": 5}', 400, "reason must be text"),
        ("search", b'{"queries": ["a"], "exclude_titles": "Omen"}', 400, "exclude_titles must be a list"),
        ("search", b'{"queries": ["a"], "bogus": 1}', 400, "unknown field(s): bogus"),
        ("search", b'{"queries": ["\\ud800"]}', 400, "unpaired surrogate"),
        ("search", BIG, 400, f"reason is 300000 characters; the limit is {MAX_REASON_CHARS}"),
        ("flag", b"{}", 400, "title is required"),
        ("flag", b'{"title": "x"}', 400, "reason is required"),
        ("flag", b'{"title": " ", "reason": "r"}', 400, "title must not be blank"),
        (
            "flag",
            b'{"title": "x", "reason": "r", "urgency": "urgent"}',
            400,
            "urgency must be one of low, medium, high",
        ),
        ("flag", b'{"title": "x", "reason": "r", "flag_type": "bug"}', 400, "flag_type must be one of gap, update"),
        ("flag", b'{"title": ["x"], "reason": "r"}', 400, "title must be text"),
        ("flag", b'{"title": "x", "reason": "r", "entry_title": null}', 400, "entry_title must be text"),
    ],
)
def test_a_bad_body_is_refused_and_records_nothing(live, route, body, status, problem):
    before = gaps(live, include_hidden="1")
    r = live.client.post(f"{API}/lore/{route}", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert problem in r.json()["error"]
    assert gaps(live, include_hidden="1") == before


def test_a_huge_body_is_refused_by_the_server_limit_before_it_is_read(live):
    before = gaps(live, include_hidden="1")
    # A raw socket: the declared length is refused before a byte of the body is sent.
    with socket.create_connection(("127.0.0.1", live.port), timeout=30) as sock:
        sock.sendall(
            f"POST {API}/lore/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {65 * 1024 * 1024}\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413")
    assert gaps(live, include_hidden="1") == before


def test_refused_clients_record_nothing(live):
    before = gaps(live, include_hidden="1")
    body = {"queries": ["unseen cartographer"]}
    r = live.client.post(f"{API}/lore/search", json=body, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    r = live.client.post(
        f"{API}/lore/flag", json={"title": "unseen cartographer", "reason": "x"}, headers={"Origin": ST}
    )  # a listed origin, without the token
    assert r.status_code == 401
    r = live.client.post(f"{API}/lore/search", json=body, headers={"Origin": ST, "Authorization": "Bearer wrong"})
    assert r.status_code == 401
    r = live.client.post(f"{API}/lore/search", json=body, headers={"Host": "attacker.example"})
    assert r.status_code == 403
    assert gaps(live, include_hidden="1") == before
    # The same request from SillyTavern's page with the token goes through.
    r = live.client.post(
        f"{API}/lore/search", json=body, headers={"Origin": ST, "Authorization": f"Bearer {server_token(live.secrets)}"}
    )
    assert r.status_code == 200 and r.json()["misses"] == ["unseen cartographer"]
    assert r.headers["access-control-allow-origin"] == ST
