"""The World Info routes on a live server (a real engine, vault folder, note writer and write
history): a book exported by a real SillyTavern previewed without a write, imported as the
preview showed it, undone as one batch, and the vault exported back as a book; bad input gets a
clear message and leaves the vault as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dle_desktop.state.settings import Settings
from tests.retrieval._support import LiveServer, write_world

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "worldinfo" / "st"
BOOK = json.loads((FIXTURES / "st-1.19.0" / "Harbour Lore.json").read_text(encoding="utf-8"))
API = "/api/dle/v1/worldinfo"


def _notes(vault: Path) -> dict[str, str]:
    return {p.relative_to(vault).as_posix(): p.read_text(encoding="utf-8") for p in sorted(vault.rglob("*.md"))}


@pytest.fixture
def live(tmp_path: Path):
    server = LiveServer(write_world(tmp_path / "vault"), tmp_path / "data", Settings())
    yield server
    server.close()


def _preview(live: LiveServer, **extra) -> dict:
    body = {"book": BOOK, "name": "Harbour Lore", "folder": "Imported", **extra}
    answer = live.client.post(f"{API}/import/preview", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_preview_shows_every_entry_and_writes_nothing(live):
    before = _notes(live.vault)
    preview = _preview(live)
    assert _notes(live.vault) == before
    assert preview["book"] == "Harbour Lore" and preview["kind"] == "world-info"
    assert [r["uid"] for r in preview["rows"]] == [str(i) for i in range(len(BOOK["entries"]))]
    assert preview["writes"] == len(BOOK["entries"]) == sum(preview["counts"].values())
    harbour = preview["rows"][0]
    assert harbour["title"] == "Harbour at Night" and harbour["path"] == "Imported/Harbour at Night.md"
    assert "sticky" in harbour["kept"] and any("sticky 3" in w for w in harbour["warnings"])
    assert harbour["text"].startswith("---\n") and "ST-FIX-HARBOUR" in harbour["text"]
    assert any("priority" in n for n in preview["notes"])
    assert len(preview["digest"]) == 64


def test_the_import_writes_what_the_preview_showed_and_one_undo_takes_it_back(live):
    before = _notes(live.vault)
    preview = _preview(live)
    done = live.client.post(
        f"{API}/import",
        json={"book": BOOK, "name": "Harbour Lore", "folder": "Imported", "confirm": True, "digest": preview["digest"]},
    )
    assert done.status_code == 200, done.text
    result = done.json()
    assert result["batch"].startswith("wi-") and not result["cancelled"]
    after = _notes(live.vault)
    shown = {r["path"]: r["text"] for r in preview["rows"] if r["action"] != "skip"}
    assert sorted(result["written"]) == sorted(shown)
    assert {p: after[p] for p in shown} == shown  # byte for byte what the preview showed

    again = _preview(live)  # the same book again: every name is taken now
    assert again["counts"]["rename"] == len(shown)
    assert all("_imported" in r["path"] for r in again["rows"])

    undone = live.client.post(f"{API}/import/undo", json={"batch": result["batch"]})
    assert undone.status_code == 200, undone.text
    assert undone.json()["complete"] and sorted(undone.json()["undone"]) == sorted(shown)
    assert _notes(live.vault) == before
    twice = live.client.post(f"{API}/import/undo", json={"batch": result["batch"]})
    assert twice.status_code == 403 and "already undone" in twice.json()["error"]


def test_an_import_whose_plan_changed_since_the_preview_writes_nothing(live):
    preview = _preview(live)
    (live.vault / "Imported").mkdir()
    (live.vault / "Imported" / "Ember Blade.md").write_text("# Ember Blade\n\nmine\n", encoding="utf-8")
    before = _notes(live.vault)
    stale = live.client.post(
        f"{API}/import",
        json={"book": BOOK, "name": "Harbour Lore", "folder": "Imported", "confirm": True, "digest": preview["digest"]},
    )
    assert stale.status_code == 409 and "preview the import again" in stale.json()["error"]
    assert _notes(live.vault) == before


def test_cards_exported_by_sillytavern_are_previewed_with_their_embedded_book(live):
    for name in ("Harbour Keeper.json", "Harbour Keeper.v2.json", "Harbour Keeper.v3.json"):
        card = json.loads((FIXTURES / "st-1.12.14" / name).read_text(encoding="utf-8"))
        answer = live.client.post(f"{API}/import/preview", json={"book": card})
        assert answer.status_code == 200, answer.text
        preview = answer.json()
        assert preview["kind"] == ("card-v2" if name.endswith("v2.json") else "card-v3")
        assert preview["book"] == "Harbour Lore"  # the embedded book's own name
        assert len(preview["rows"]) == len(card["data"]["character_book"]["entries"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"book": "not a book"}, "book is no lorebook"),
        ({"book": {"name": "x"}}, "book is no lorebook"),
        ({"book": [1, 2]}, "book is no lorebook"),
        ({}, "book is required"),
        ({"book": BOOK, "folder": "../outside"}, "is not a folder inside the vault"),
        ({"book": BOOK, "folder": ".hidden"}, "is not a folder inside the vault"),
        ({"book": BOOK, "on_collision": "merge"}, "on_collision must be one of"),
        ({"book": BOOK, "surprise": 1}, "unknown field(s): surprise"),
    ],
)
def test_bad_previews_get_a_clear_message(live, body, message):
    answer = live.client.post(f"{API}/import/preview", json=body)
    assert answer.status_code == 400
    assert message in answer.json()["error"]


def test_bad_imports_write_nothing(live):
    before = _notes(live.vault)
    for body, status, message in [
        ({"book": BOOK}, 400, "confirm is required"),
        ({"book": BOOK, "confirm": False}, 400, "confirm must be true"),
        ({"book": BOOK, "confirm": True, "digest": "abc"}, 400, "digest must be the preview's"),
        ({"book": BOOK, "confirm": True, "vault": "nowhere"}, 404, "no vault is named 'nowhere'"),
    ]:
        answer = live.client.post(f"{API}/import", json=body)
        assert (answer.status_code, message in answer.json()["error"]) == (status, True), answer.text
    assert _notes(live.vault) == before
    missing = live.client.post(f"{API}/import/undo", json={"batch": "wi-20260101-000000-0123abcd"})
    assert missing.status_code == 404 and "no import" in missing.json()["error"]
    bad = live.client.post(f"{API}/import/undo", json={"batch": "../etc"})
    assert bad.status_code == 400 and "batch must be" in bad.json()["error"]


def test_a_card_whose_book_is_damaged_is_a_problem_in_the_preview(live):
    card = {"spec": "chara_card_v2", "data": {"name": "X", "character_book": {"entries": []}}}
    preview = live.client.post(f"{API}/import/preview", json={"book": card}).json()
    assert preview["rows"] == [] and any("no entries to import" in p for p in preview["problems"])


def test_the_vault_exports_as_a_book_with_its_report(live):
    everything = live.client.get(f"{API}/export")
    assert everything.status_code == 200, everything.text
    book, report = everything.json()["book"], everything.json()["report"]
    assert isinstance(book["entries"], dict) and len(book["entries"]) == report["entries"] > 0
    for entry in book["entries"].values():
        assert {"uid", "key", "keysecondary", "comment", "content", "order", "position"} <= set(entry)
    nothing = live.client.get(f"{API}/export", params={"folder": "No Such Folder"})
    assert nothing.status_code == 404 and "nothing to export" in nothing.json()["error"]
    bad = live.client.get(f"{API}/export", params={"folder": "../up"})
    assert bad.status_code == 400 and "is not a folder inside the vault" in bad.json()["error"]


def test_a_book_over_50_mb_is_refused_unread(live):
    before = _notes(live.vault)
    huge = b'{"book": {"entries": {"0": {"key": ["x"], "content": "' + b"x" * (51 * 1024 * 1024) + b'"}}}}'
    answer = live.client.post(f"{API}/import/preview", content=huge, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert "at most 50 MB" in answer.json()["error"] and "nothing was imported" in answer.json()["error"]
    assert _notes(live.vault) == before
