"""Vaults given with --vault belong to the session: Settings → OK keeps them, and the Vaults page
says which vaults are open and where each came from (saved, command line, the bundled sample)."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox

from dle_desktop.state.settings import Settings
from tests.ui.conftest import wait_for


def press_ok(dlg) -> None:
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok).click()


def table_rows(dlg) -> list[tuple[str, str, str]]:
    t = dlg.table
    return [(t.item(r, 1).text(), t.item(r, 3).text(), t.item(r, 4).text()) for r in range(t.rowCount())]


def roots(desk) -> list[str]:
    return [s.describe() for s in desk.runtime.engine.sources]


def test_settings_ok_keeps_the_command_line_vault(make_desktop, vault_copy, qloop):
    """Pressing OK (no changes) replaced a --vault PATH with the sample vault."""
    desk = make_desktop(None, command_line=[str(vault_copy)])
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        press_ok(desk.open_settings())
        await desk.apply_task  # applied in the background (nothing changed: the engine may stay)
        assert roots(desk) == [str(vault_copy.resolve())]
        assert not desk.runtime.engine.using_sample_vault
        await wait_for(lambda: view.model.rowCount() == 61)
        assert "sample vault" not in desk.window.index_label.text()

    qloop.run_until_complete(scenario())


def test_vaults_page_says_where_each_vault_came_from(make_desktop, vault_copy, tmp_path, qloop):
    saved_dir = tmp_path / "saved-vault"
    saved_dir.mkdir()
    settings = Settings().replace(vaults=[{"name": "Saved", "kind": "folder", "path": str(saved_dir)}])
    desk = make_desktop(None, command_line=[str(vault_copy)], settings=settings)
    dlg = desk.open_settings()
    assert table_rows(dlg) == [
        ("Saved", str(saved_dir.resolve()), "saved · not in use now"),
        ("vault", str(vault_copy.resolve()), "command line · this session"),
    ]
    assert "--vault" in dlg.session_note.text()
    # The command-line row is shown, not edited: selecting it selects no saved vault.
    dlg.table.selectRow(1)
    dlg.remove_selected()
    assert [v.name for v in dlg.build_settings().vaults] == ["Saved"]
    dlg.reject()


def test_first_run_vaults_page_shows_the_open_sample_vault(make_desktop, qloop):
    """On a first run the page was empty although the sample vault was open."""
    desk = make_desktop(None, command_line=[])
    assert desk.runtime.engine.using_sample_vault
    dlg = desk.open_settings()
    rows = table_rows(dlg)
    assert len(rows) == 1 and rows[0][0] == "Sample vault" and rows[0][2] == "bundled sample"
    assert dlg.build_settings().vaults == ()  # shown, never saved
    dlg.add_folder(str(dlg.sample_folder))  # once a vault is added, the sample no longer opens
    assert [r[2] for r in table_rows(dlg)] == ["saved"]
    dlg.reject()


def test_adding_a_folder_during_a_command_line_session_opens_it_too(make_desktop, vault_copy, tmp_path, qloop):
    from dle_desktop.state.settings import SettingsStore

    mine = tmp_path / "my-vault"
    mine.mkdir()
    (mine / "Ada.md").write_text("---\ntags: [lorebook]\nkeys: [Ada]\n---\n# Ada\nAn engineer.\n", encoding="utf-8")
    desk = make_desktop(None, command_line=[str(vault_copy)])
    view = desk.window.vault_view

    async def scenario():
        await wait_for(lambda: view.model.rowCount() == 61)
        desk.add_vault_folder(str(mine))
        await wait_for(lambda: view.model.rowCount() == 62, what="both vaults open")
        assert sorted(roots(desk)) == sorted([str(vault_copy.resolve()), str(mine.resolve())])
        saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
        assert [v.path for v in saved.vaults] == [str(mine.resolve())]  # the command-line vault is not saved
        sources = [r[2] for r in table_rows(desk.open_settings())]
        assert sources == ["saved", "command line · this session"]

    qloop.run_until_complete(scenario())
