"""World Info → Import, Export and Sync in the real window (offscreen), over a real engine on a copy
of the sample vault: the preview before anything is written, the import and its one Undo, a cancel
that leaves nothing, a bad file that leaves the vault as it was, the export file, the sync list."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from tests.ui.conftest import wait_for


def book_bytes(n: int = 3) -> bytes:
    entries = {
        str(i): {
            "uid": i,
            "key": [f"lantern{i}", "lamp"],
            "keysecondary": [],
            "comment": f"Lantern {i}",
            "content": f"Lantern {i} burns on the quay.",
            "constant": False,
            "order": 100,
            "position": 1,
            "disable": False,
        }
        for i in range(n)
    }
    return json.dumps({"entries": entries}).encode("utf-8")


def md_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.md")}


def ready(desk, qloop) -> None:
    qloop.run_until_complete(wait_for(lambda: desk.runtime.engine.snapshot is not None, what="the first index"))


def read_file(desk, qloop, source: Path, folder: str | None = None):
    """World Info → Import, a file chosen as the source (and a folder), then Read: the preview."""
    dialog = desk.window.wi_actions.open_import()
    dialog.source.setCurrentIndex(1)
    dialog.file_edit.setText(str(source))
    if folder is not None:
        dialog.folder_edit.setText(folder)
    qloop.run_until_complete(dialog.read_and_plan())
    return dialog


def menu_texts(window) -> list[str]:
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "World &Info")
    return [a.text() for a in menu.actions() if a.text()]


def test_import_from_a_file_previews_writes_and_undoes_as_one(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    assert menu_texts(desk.window) == [
        "Import World Info…",
        "Undo an import…",
        "Export as World Info…",
        "Sync with SillyTavern…",
    ]
    before = md_files(vault_copy)
    source = tmp_path / "lanterns.json"
    source.write_bytes(book_bytes(3))
    dialog = read_file(desk, qloop, source, "Imported/Lanterns")
    assert dialog.model.rowCount() == 3
    assert [dialog.model.rows[i].path for i in range(3)] == [f"Imported/Lanterns/Lantern {i}.md" for i in range(3)]
    assert "3 new notes" in dialog.summary.text()
    assert md_files(vault_copy) == before  # the preview wrote nothing
    assert dialog.import_button.isEnabled() and dialog.import_button.text() == "Import 3 notes"
    assert "Lantern 0 burns on the quay." in dialog.detail.toPlainText()  # the first row's exact note

    qloop.run_until_complete(dialog.run_import())
    assert md_files(vault_copy) == before | {f"Imported/Lanterns/Lantern {i}.md" for i in range(3)}
    assert "Imported 3 notes" in dialog.summary.text()
    assert dialog.undo_button.isVisible() and dialog.summarize_button.isVisible()
    qloop.run_until_complete(
        wait_for(
            lambda: sum(e.path.startswith("Imported/Lanterns/") for e in desk.runtime.engine.snapshot.entries) == 3,
            what="the imported entries in the index",
        )
    )

    qloop.run_until_complete(dialog.undo())
    assert md_files(vault_copy) == before
    assert "Undone: 3 notes" in dialog.summary.text()


def test_a_second_import_of_the_same_book_renames_or_skips_as_chosen(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    source = tmp_path / "lanterns.json"
    source.write_bytes(book_bytes(2))
    first = read_file(desk, qloop, source, "Lanterns")
    qloop.run_until_complete(first.run_import())
    again = read_file(desk, qloop, source, "Lanterns")
    assert {r.action for r in again.model.rows} == {"rename"}
    assert all(r.path.endswith("_imported.md") for r in again.model.rows)
    again.collision.setCurrentIndex(1)  # skip
    qloop.run_until_complete(again.replan())
    assert {r.action for r in again.model.rows} == {"skip"}
    assert not again.import_button.isEnabled()


def test_a_cancelled_import_leaves_no_note(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    before = md_files(vault_copy)
    source = tmp_path / "many.json"
    source.write_bytes(book_bytes(200))
    dialog = read_file(desk, qloop, source)
    assert dialog.model.rowCount() == 200

    def cancel_once_writing(event: dict) -> None:
        if event.get("phase") == "writing":
            dialog._cancel_or_close()  # the dialog's Cancel while the bar runs

    desk.bridge.wiImport.connect(cancel_once_writing)
    qloop.run_until_complete(dialog.run_import())
    desk.bridge.wiImport.disconnect(cancel_once_writing)
    assert "cancelled" in dialog.summary.text()
    assert md_files(vault_copy) == before
    assert dialog.import_button.isEnabled()  # it can be started again


def test_a_bad_file_says_why_and_writes_nothing(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    before = md_files(vault_copy)
    broken = tmp_path / "broken.json"
    broken.write_text('{"entries": {"0": {"key": ["a"],', encoding="utf-8")
    dialog = read_file(desk, qloop, broken)
    assert "Nothing can be imported" in dialog.summary.text()
    assert "JSON" in dialog.summary.text()
    assert dialog.model.rowCount() == 0 and not dialog.import_button.isEnabled()
    png = tmp_path / "plain.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    dialog.file_edit.setText(str(png))
    qloop.run_until_complete(dialog.read_and_plan())
    assert "Nothing can be imported" in dialog.summary.text()
    assert md_files(vault_copy) == before


def test_pasted_json_is_read_like_a_file(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    dialog = desk.window.wi_actions.open_import()
    dialog.source.setCurrentIndex(2)
    dialog.paste.setPlainText(book_bytes(1).decode("utf-8"))
    qloop.run_until_complete(dialog.read_and_plan())
    assert [r.title for r in dialog.model.rows] == ["Lantern 0"]


def test_the_sample_vault_cannot_be_imported_into(make_desktop, qloop):
    desk = make_desktop(None, command_line=[])
    ready(desk, qloop)
    assert desk.bridge.using_sample_vault
    dialog = desk.window.wi_actions.open_import()
    assert dialog.vault_combo.count() == 0
    assert "read-only" in dialog.summary.text()
    assert not dialog.read_button.isEnabled()


def test_export_reports_what_is_lost_and_saves_a_book(make_desktop, vault_copy, tmp_path, qloop, monkeypatch):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    dialog = desk.window.wi_actions.open_export()
    qloop.run_until_complete(wait_for(lambda: dialog.save_button.isEnabled(), what="the export preview"))
    entries = len(desk.runtime.engine.snapshot.entries)
    guides = sum(e.guide for e in desk.runtime.engine.snapshot.entries)
    assert f"{entries - guides} entries become a World Info book" in dialog.summary.text()
    assert dialog.model.rowCount() > 0  # the sample vault uses requires, cascade links, gating...
    lost = " ".join(" ".join(line.lost) for line in dialog.model.lines)
    assert "requires" in lost
    target = tmp_path / "out" / "saffre.json"
    target.parent.mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    qloop.run_until_complete(dialog.save())
    book = json.loads(target.read_text(encoding="utf-8"))
    assert len(book["entries"]) == entries - guides
    assert "Saved" in dialog.summary.text()


def test_the_sync_dialog_lists_the_syncs_and_settles_a_conflict(make_desktop, vault_copy, tmp_path, qloop):
    from dle_desktop.state.settings.model import settings_from_mapping

    st_root = tmp_path / "st"
    (st_root / "data" / "default-user").mkdir(parents=True)
    settings = settings_from_mapping(
        {"wi_syncs": [{"book": "Saffre", "vault": "vault", "st_root": str(st_root), "enabled": True}]}
    )
    desk = make_desktop(vault_copy, settings=settings)
    ready(desk, qloop)
    book_path = st_root / "data" / "default-user" / "worlds" / "Saffre.json"
    qloop.run_until_complete(wait_for(book_path.exists, what="the synced book"))
    dialog = desk.window.wi_actions.open_sync()
    assert dialog.table.rowCount() == 1
    assert dialog.table.item(0, 1).text() == "Saffre"
    qloop.run_until_complete(wait_for(lambda: "written" in dialog.table.item(0, 4).text(), what="the outcome"))
    book = json.loads(book_path.read_text(encoding="utf-8"))
    first = next(iter(book["entries"].values()))
    first["content"] = "Edited in SillyTavern."
    book_path.write_text(json.dumps(book), encoding="utf-8")
    qloop.run_until_complete(dialog.sync_selected())
    assert "edited in SillyTavern" in dialog.table.item(0, 4).text()
    assert dialog.vault_wins.isVisible() and dialog.st_wins.isVisible()
    assert first["comment"] in dialog.detail.toPlainText()
    qloop.run_until_complete(dialog.resolve("vault"))
    assert not dialog.vault_wins.isVisible()
    assert "Edited in SillyTavern." not in book_path.read_text(encoding="utf-8")


def test_the_vault_views_context_menu_opens_them_for_the_entrys_folder(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    view = desk.window.vault_view
    view.worldInfoImportRequested.emit("Places")
    assert desk.window.wi_actions.dialog.folder_edit.text() == "Places"
    view.worldInfoExportRequested.emit("Places")
    export = desk.window.wi_actions.dialog
    qloop.run_until_complete(wait_for(lambda: export.save_button.isEnabled(), what="the folder's export preview"))
    assert export._folder() == "Places"
    places = sum(e.path.startswith("Places/") and not e.guide for e in desk.runtime.engine.snapshot.entries)
    assert export.summary.text().startswith(f"{places} entries become")


def test_the_welcome_pages_link_opens_the_import(make_desktop, vault_copy, qloop):
    from PySide6.QtCore import QUrl

    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    assert "wi:import" in desk.window.vault_view.detail.toHtml()
    desk.window.vault_view.detail.anchorClicked.emit(QUrl("wi:import"))
    assert desk.window.wi_actions.dialog.objectName() == "wi-import-dialog"


def test_an_import_is_undone_later_from_the_imports_list(make_desktop, vault_copy, tmp_path, qloop):
    desk = make_desktop(vault_copy)
    ready(desk, qloop)
    before = md_files(vault_copy)
    source = tmp_path / "lanterns.json"
    source.write_bytes(book_bytes(2))
    dialog = read_file(desk, qloop, source, "Later")
    qloop.run_until_complete(dialog.run_import())
    dialog.accept()  # the import's own dialog is gone
    imports = desk.window.wi_actions.open_imports()
    qloop.run_until_complete(imports.load())
    assert imports.table.rowCount() == 1
    assert imports.table.item(0, 1).text() == "vault: Later"
    assert imports.table.item(0, 2).text() == "2" and imports.table.item(0, 3).text() == "in the vault"
    assert imports.undo_button.isEnabled()
    qloop.run_until_complete(imports.undo_selected())
    assert md_files(vault_copy) == before
    assert imports.table.item(0, 3).text() == "undone" and not imports.undo_button.isEnabled()
    assert "Undone: 2 notes" in imports.message.text()
