"""Issue 25: an import into an Obsidian REST vault (a real HTTP server serving a real folder).
Notes are PUT through the note writer; names are checked against the server's own listing. The
REST subset has no DELETE, so a cancelled import cannot take its notes back: the preview says so
up front and the result lists each note left, with why."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from dle_desktop.vault.obsidian_rest import parse_vault_spec
from dle_desktop.vault.write_history import WriteHistory
from dle_desktop.vault.writer import NoteWriter
from dle_desktop.worldinfo import WorldInfoService
from tests.fakes.obsidian_server import FakeObsidian

from .conftest import files_under, many_entries, wi_book, wi_entry


def test_an_import_into_a_rest_vault_and_what_a_cancel_cannot_take_back(tmp_path: Path):
    folder = tmp_path / "vault"
    (folder / "Lore").mkdir(parents=True)
    (folder / "Lore" / "Harbour.md").write_text("mine\n", encoding="utf-8")
    book = WorldInfoService.read_book(
        wi_book(wi_entry(0, "Harbour", ["harbour"], "The harbour."), wi_entry(1, "Beacon", ["beacon"], "A fire.")), "B"
    )

    with FakeObsidian(folder, api_key="k") as server:
        source = parse_vault_spec(server.spec, name="rest")
        writer = NoteWriter([source], history=WriteHistory(tmp_path / "data" / "history.sqlite"))
        wi = WorldInfoService(writer, sources=lambda: [source], snapshot=lambda: None)

        async def main():
            try:
                plan = await wi.plan_import(book, vault="rest", folder="Lore", collision="rename")
                result = await wi.run_import(plan)
                cancel = threading.Event()
                many = await wi.plan_import(
                    WorldInfoService.read_book(many_entries(12), "Twelve"),
                    vault="rest",
                    folder="More",
                    collision="skip",
                )
                cancelled = await wi.run_import(
                    many, progress=lambda done, total: cancel.set() if done == 2 else None, cancel=cancel
                )
                return plan, result, cancelled
            finally:
                await source.close()

        plan, result, cancelled = asyncio.run(main())

    assert [(r.action, r.path) for r in plan.rows] == [
        ("rename", "Lore/Harbour_imported.md"),
        ("create", "Lore/Beacon.md"),
    ]
    assert any("Obsidian REST vault" in note and "cannot remove" in note for note in plan.notes)
    assert result.written == ("Lore/Harbour_imported.md", "Lore/Beacon.md")
    assert (folder / "Lore" / "Harbour_imported.md").read_text(encoding="utf-8") == plan.rows[0].text
    assert cancelled.cancelled and cancelled.removed == ()
    left = [p for p in files_under(folder) if p.startswith("More/")]
    assert 2 <= len(left) == len(cancelled.left)
    assert all("delete it in Obsidian" in line for line in cancelled.left)
