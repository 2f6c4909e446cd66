"""World Info in and out of the vault with a real SillyTavern, in a real Chromium, against DLE
Desktop's `serve` and the fake LLM that records every prompt:

- a book SillyTavern itself exported (tests/fixtures/worldinfo/st, made by this SillyTavern
  version) is imported into SillyTavern through its own World Info import, then into the vault with
  the bridge's `/dle-import` (pick, preview, confirm), and the bridge injects an imported entry by
  its key; the result popup's Undo takes a whole import back;
- the sample vault exported as a book (`dle-desktop wi export`) is imported with SillyTavern's own
  World Info import, switched on globally, and with the bridge off SillyTavern's own engine puts a
  keyed entry into the prompt.

Each test leaves SillyTavern and the vault as it found them (the book switched off, the import
undone), so the other files' prompts stay as they expect."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dle_desktop.state.paths import sample_vault_dir
from tests.e2e.sillytavern.dle_server import REPO_ROOT, DleServer
from tests.e2e.sillytavern.sillytavern import st_version
from tests.e2e.sillytavern.test_bridge import close_popups, popup_text, prompt_for, run_command, text_of, token
from tests.fakes.ai_provider import FakeAiProvider

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "worldinfo" / "st"
BOOK_NAME = "Harbour Lore"
DIALOG_OK = "dialog[open] .popup-button-ok"


def exported_book(tmp: Path) -> Path:
    """The book this SillyTavern version exported (1.19.0's for a version without fixtures)."""
    folder = FIXTURES / f"st-{st_version()}"
    source = (folder if folder.is_dir() else FIXTURES / "st-1.19.0") / f"{BOOK_NAME}.json"
    target = tmp / source.name
    target.write_bytes(source.read_bytes())
    return target


def world_names(page) -> list[str]:
    return page.evaluate(
        """() => { const c = SillyTavern.getContext();
                   if (typeof c.getWorldInfoNames === 'function') return c.getWorldInfoNames();
                   return [...document.querySelectorAll('#world_editor_select option')]
                       .map(o => o.textContent.trim()).filter(Boolean); }"""
    )


def import_into_sillytavern(page, book: Path) -> str:
    """SillyTavern's own World Info import: its Import button's file input, as a person picks a file."""
    name = book.stem
    page.page.locator("#world_import_file").set_input_files(str(book))
    page.wait_js(
        f"SillyTavern to list the imported book {name!r}",
        """(name) => { const c = SillyTavern.getContext();
                       const names = typeof c.getWorldInfoNames === 'function' ? c.getWorldInfoNames()
                           : [...document.querySelectorAll('#world_editor_select option')].map(o => o.textContent.trim());
                       return names.includes(name); }""",
        arg=name,
        timeout=30,
    )
    page.dismiss_popups()
    return name


def set_global_book(page, name: str, on: bool) -> list[str]:
    """Tick or untick the book in SillyTavern's global World Info list (its "Active World(s)" box);
    the books active now."""
    return page.evaluate(
        """([name, on]) => {
            const select = $('#world_info');
            select.find('option').filter((_, o) => o.textContent.trim() === name).prop('selected', on);
            select.trigger('change');
            return select.find('option:selected').map((_, o) => o.textContent.trim()).get();
        }""",
        [name, on],
    )


def click_in_dialog(page, selector: str, what: str) -> None:
    page.wait_for(what, selector, timeout=30)
    page.page.locator(selector).last.click()


def dle_import(page, folder: str) -> str:
    """/dle-import "folder" as a person runs it: pick the book, read the preview, confirm; the
    preview's text."""
    run_command(page, f'/dle-import "{folder}"')
    popup_text(page, "Import a World Info book into DLE Desktop")
    click_in_dialog(page, f'.dle-desktop-bridge-pick[data-value="{BOOK_NAME}"]', "the book in the pick list")
    click_in_dialog(page, DIALOG_OK, "the pick popup's Preview button")
    preview = popup_text(page, f"Import “{BOOK_NAME}”", timeout=60)
    page.screenshot(f"wi-preview-{re.sub(r'[^a-z]+', '-', folder.lower())}")
    click_in_dialog(page, DIALOG_OK, "the preview's Import button")
    return preview


def test_dle_import_brings_sillytaverns_own_book_into_the_vault_and_the_bridge_injects_it(
    bridge_page, dle: DleServer, fake_llm: FakeAiProvider, tmp_path: Path
):
    book = json.loads(exported_book(tmp_path).read_text(encoding="utf-8"))
    if BOOK_NAME not in world_names(bridge_page):
        import_into_sillytavern(bridge_page, exported_book(tmp_path))
    active = set_global_book(bridge_page, BOOK_NAME, False)
    assert BOOK_NAME not in active  # only the bridge can bring its entries into the prompt

    preview = dle_import(bridge_page, "Imported WI")
    entries = len(book["entries"])
    assert f"{entries} entries → {entries} notes" in preview, preview
    assert "Imported WI/Author's Top.md" in preview and "Harbour at Night" in preview
    assert "kept for SillyTavern" in preview and "sticky" in preview  # what WI fields do here, said before
    done = popup_text(bridge_page, "notes written into", timeout=60)
    bridge_page.screenshot("wi-imported")
    assert f"{entries} notes written into" in done, done
    batch = bridge_page.evaluate(
        "() => [...document.querySelectorAll('.dle-desktop-bridge-wi-undo')].pop()?.dataset.batch ?? ''"
    )
    assert batch.startswith("wi-"), batch
    close_popups(bridge_page)
    note = dle.vault / "Imported WI" / "Author's Top.md"
    assert note.is_file() and "ST-FIX-ANTOP" in note.read_text(encoding="utf-8")

    try:
        tok = token()
        bridge_page.send(f"Pin a top note to the harbour board. {tok}", f"Fake LLM reply to {tok}.")
        body = text_of(prompt_for(fake_llm, tok))
        assert "ST-FIX-ANTOP" in body, "the imported entry's key did not bring it into the prompt"
        assert "ST-FIX-EMBOTTOM" not in body  # an entry whose key was not named stays out
        injected = bridge_page.evaluate("() => globalThis.dleDesktopBridge.state.last?.result?.injected ?? []")
        assert "Author's Top" in [i["title"] for i in injected], injected
    finally:
        undone = dle.post("/api/dle/v1/worldinfo/import/undo", {"batch": batch})
        assert undone.status_code == 200 and undone.json()["complete"], undone.text
    assert not note.exists()


def test_the_result_popups_undo_takes_the_whole_import_back(bridge_page, dle: DleServer, tmp_path: Path):
    if BOOK_NAME not in world_names(bridge_page):
        import_into_sillytavern(bridge_page, exported_book(tmp_path))
    dle_import(bridge_page, "Undo Test")
    popup_text(bridge_page, "notes written into", timeout=60)
    folder = dle.vault / "Undo Test"
    assert any(folder.glob("*.md"))
    click_in_dialog(bridge_page, ".dle-desktop-bridge-wi-undo", "the Undo button")
    said = popup_text(bridge_page, "Undone:", timeout=60)
    bridge_page.screenshot("wi-undone")
    assert "notes removed" in said and "Left as they are" not in said, said
    close_popups(bridge_page)
    assert not any(folder.glob("*.md"))


def export_sample_vault(dle: DleServer, target: Path) -> dict:
    """`dle-desktop wi export` of the bundled sample vault, as a user runs it."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dle_desktop",
            "--data-dir",
            str(target.parent / "dle-data"),
            "wi",
            "export",
            "--vault",
            str(sample_vault_dir()),
            "--out",
            str(target),
        ],
        cwd=REPO_ROOT,
        env=dle.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(target.read_text(encoding="utf-8"))


def test_the_exported_sample_vault_works_in_sillytaverns_own_engine_with_the_bridge_off(
    st_page, dle: DleServer, fake_llm: FakeAiProvider, tmp_path: Path
):
    book = export_sample_vault(dle, tmp_path / "dle-sample.json")
    wyrm = next(e for e in book["entries"].values() if e["comment"] == "Silt Wyrm")
    assert "silt wyrm" in [k.lower() for k in wyrm["key"]] and not wyrm["constant"] and not wyrm["disable"]
    marker = next(line for line in wyrm["content"].splitlines() if len(line.strip()) > 30).strip()[:60]
    assert st_page.evaluate("() => SillyTavern.getContext().extensionSettings.dle_desktop_bridge.enabled") is False

    name = import_into_sillytavern(st_page, tmp_path / "dle-sample.json")
    try:
        assert name in set_global_book(st_page, name, True)
        tok = token()
        st_page.send(f"Something moves in the mud: a silt wyrm? {tok}", f"Fake LLM reply to {tok}.")
        st_page.screenshot("wi-st-engine")
        body = text_of(prompt_for(fake_llm, tok))
        assert marker in body, f"SillyTavern's own engine did not inject the keyed entry ({marker!r})"
        assert "LORE-CONSTANT" not in body  # the bridge is off: DLE Desktop's always-on entry is not there
        other = next(e for e in book["entries"].values() if e["comment"] == "Glasseels")
        assert other["content"].strip()[:60] not in body  # an entry whose key was not named stays out
    finally:
        assert name not in set_global_book(st_page, name, False)


@pytest.fixture(autouse=True)
def _no_popup_left(request):
    yield
    for fixture in ("bridge_page", "st_page"):
        page = request.node.funcargs.get(fixture)
        if page is not None:
            close_popups(page)
