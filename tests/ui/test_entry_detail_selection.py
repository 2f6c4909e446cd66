"""The Vault view's entry detail follows the selected visible row (issue 21, item 15): a filter that
hides the selected entry clears the detail and says so (and no other row is picked for the user),
a re-sync keeps the user's filter, and "no longer in the vault" only shows while the entry is really
gone: when its note comes back (an editor's save by delete and re-create), or turns up under a new
file name with the same title, the detail shows it again."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from dle_desktop.core.index import IndexSnapshot
from dle_desktop.ui.vault.view import VaultView
from dle_desktop.vault.indexer import VaultIndexer
from dle_desktop.vault.sources import FolderSource
from tests.ui.conftest import SAMPLE

NOTE = Path("Rules") / "Tidewriting.md"


def index(folder: Path) -> IndexSnapshot:
    loop = asyncio.SelectorEventLoop()  # not the Qt loop a qasync policy would hand out
    try:
        return loop.run_until_complete(VaultIndexer([FolderSource("vault", folder)]).sync_all()).snapshot
    finally:
        loop.close()


@pytest.fixture
def view(qtbot) -> VaultView:
    view = VaultView()
    qtbot.addWidget(view)
    view.resize(1200, 700)
    view.show()
    return view


def selected_titles(view: VaultView) -> list[str]:
    return [index.data() for index in view.table.selectionModel().selectedRows()]


def detail(view: VaultView) -> str:
    return view.detail.toPlainText()


def select(view: VaultView, snapshot: IndexSnapshot, title: str) -> str:
    uid = next(e.uid for e in snapshot.entries if e.title == title)
    assert view.select_uid(uid)
    assert selected_titles(view) == [title]
    return uid


def test_a_filter_that_hides_the_selected_entry_clears_the_detail_and_picks_no_other(view):
    snapshot = index(SAMPLE)
    view.set_snapshot(snapshot)
    uid = select(view, snapshot, "Tidewriting")
    assert "Rules/Tidewriting.md" in detail(view)

    view.filter.setText("house")  # hides Tidewriting, shows The Old Harbour among others
    assert view.proxy.rowCount() > 0
    assert view.current_uid() is None and selected_titles(view) == []
    assert "Rules/Tidewriting.md" not in detail(view) and "Old Harbour.md" not in detail(view)
    assert "Tidewriting is hidden by the filter" in detail(view)
    assert "no longer in the vault" not in detail(view)

    view.set_snapshot(snapshot)  # a re-sync meanwhile keeps the user's filter and what it hides
    assert view.filter.text() == "house"
    assert view.current_uid() is None and "Tidewriting is hidden by the filter" in detail(view)

    view.filter.setText("zzz-no-such-thing")
    assert "Rules/Tidewriting.md" not in detail(view)

    view.filter.setText("tide")  # the entry shows again: so does its detail, selected
    assert view.current_uid() == uid and selected_titles(view) == ["Tidewriting"]
    assert "Rules/Tidewriting.md" in detail(view)


def test_the_detail_shows_the_row_the_user_picks_after_a_filter(view):
    snapshot = index(SAMPLE)
    view.set_snapshot(snapshot)
    select(view, snapshot, "Tidewriting")
    view.filter.setText("house")
    harbour = select(view, snapshot, "The Old Harbour")
    assert "Places/Old Harbour.md" in detail(view)
    view.filter.clear()  # the later choice wins over the one the filter hid
    assert view.current_uid() == harbour and "Places/Old Harbour.md" in detail(view)


def test_no_longer_in_the_vault_only_while_the_note_is_gone(view, tmp_path):
    folder = tmp_path / "vault"
    shutil.copytree(SAMPLE, folder)
    before = index(folder)
    view.set_snapshot(before)
    uid = select(view, before, "Tidewriting")

    text = (folder / NOTE).read_text(encoding="utf-8")
    (folder / NOTE).unlink()  # an editor saving by delete and re-create: first the note is gone
    view.set_snapshot(index(folder))
    assert "Tidewriting is no longer in the vault" in detail(view)
    assert view.current_uid() is None and selected_titles(view) == []

    (folder / NOTE).write_text(text, encoding="utf-8")
    view.set_snapshot(index(folder))
    assert view.current_uid() == uid and selected_titles(view) == ["Tidewriting"]
    assert "no longer in the vault" not in detail(view) and "Rules/Tidewriting.md" in detail(view)


def test_a_renamed_note_with_the_same_title_is_followed(view, tmp_path):
    folder = tmp_path / "vault"
    shutil.copytree(SAMPLE, folder)
    before = index(folder)
    view.set_snapshot(before)
    select(view, before, "Tidewriting")

    (folder / NOTE).rename(folder / "Rules" / "Tide writing (renamed).md")
    after = index(folder)
    assert any(e.title == "Tidewriting" for e in after.entries)  # the title is in the frontmatter
    view.set_snapshot(after)
    assert selected_titles(view) == ["Tidewriting"]
    assert "no longer in the vault" not in detail(view)
    assert "Rules/Tide writing (renamed).md" in detail(view)


def test_a_note_that_really_left_says_so_until_another_entry_is_picked(view, tmp_path):
    folder = tmp_path / "vault"
    shutil.copytree(SAMPLE, folder)
    before = index(folder)
    view.set_snapshot(before)
    select(view, before, "Tidewriting")
    (folder / NOTE).unlink()
    after = index(folder)
    view.set_snapshot(after)
    assert "Tidewriting is no longer in the vault" in detail(view)
    assert "Tidewriting" not in [view.proxy.index(r, 0).data() for r in range(view.proxy.rowCount())]
    select(view, after, "The Old Harbour")
    assert "no longer in the vault" not in detail(view) and "Places/Old Harbour.md" in detail(view)


def test_a_filter_keystroke_that_keeps_the_entry_shown_does_not_lay_its_page_out_again(view, tmp_path):
    folder = tmp_path / "vault"
    shutil.copytree(SAMPLE, folder)
    snapshot = index(folder)
    view.set_snapshot(snapshot)
    tide = next(e for e in snapshot.entries if e.title == "Tidewriting")
    assert view.select_uid(tide.uid)
    laid_out = []
    real = view.detail.setHtml
    view.detail.setHtml = lambda html: (laid_out.append(html), real(html))  # type: ignore[method-assign]  # counts the layouts
    for text in ("t", "ti", "tid", "tide"):
        view.filter.setText(text)
    assert laid_out == []  # the same entry, the same page
    assert "Tidewriting" in view.detail.toPlainText()
    view.filter.setText("tidez")  # hides it: the page says so
    assert len(laid_out) == 1 and "hidden by the filter" in view.detail.toPlainText()
    view.filter.clear()
    assert len(laid_out) == 2 and "Tidewriting" in view.detail.toPlainText()
    view.set_snapshot(index(folder))  # a new index: its own page, made anew
    assert len(laid_out) == 3
