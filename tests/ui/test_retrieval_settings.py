"""Settings → Retrieval, driven like a user would, on the real app and engine (a copy of the sample
vault): the filter, reset to default, values into Settings and back."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox, QGroupBox, QMessageBox

from dle_desktop.state.settings import Settings, SettingsStore
from dle_desktop.ui.settings.retrieval import RetrievalPage
from tests.ui.conftest import wait_for


def press_ok(dlg) -> None:
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.Ok).click()


def shown_groups(page: RetrievalPage) -> list[str]:
    return [box.title().replace("&&", "&") for box in page.findChildren(QGroupBox) if not box.isHidden()]


def test_the_filter_matches_our_name_dles_name_and_the_explanation(qapp):
    page = RetrievalPage(Settings())
    assert page.apply_filter("") == len(page.rows)
    assert page.apply_filter("scanDepth") == 2
    assert page.visible_names() == ["scan_depth", "ai_search_scan_depth"]
    assert shown_groups(page) == ["Matching & Budget", "AI Search"]
    page.filter.setText("max_tokens")  # typing filters, as the user sees it
    assert page.visible_names() == ["max_tokens_budget"]
    page.filter.setText("cut SENTENCE")  # every word, any case, from the explanation
    assert page.visible_names() == ["max_tokens_budget"]
    page.filter.setText("semantic")  # settings edited on another page are found, and say where
    assert page.visible_names() == [
        "semantic_enabled",
        "semantic_top_k",
        "semantic_min_score",
        "semantic_rrf_k",
        "semantic_relative_margin",
        "semantic_last_weight",
        "fix_semantic_budget",
    ]
    assert page.rows["semantic_top_k"].control.text() == "Edit on the Embeddings page"
    page.filter.setText("no such setting")
    assert page.visible_names() == [] and shown_groups(page) == []
    assert not page.nothing.isHidden() and "no such setting" in page.nothing.text()
    page.filter.clear()
    assert page.nothing.isHidden() and len(page.visible_names()) == len(page.rows)


def test_reset_to_default_per_row(qapp):
    page = RetrievalPage(Settings().replace(scan_depth=9, injection_template="{{content}}", match_whole_words=True))
    rows = page.rows
    assert all(rows[n].reset.isEnabled() for n in ("scan_depth", "injection_template", "match_whole_words"))
    assert not rows["max_entries"].reset.isEnabled()  # already the default
    for name in ("scan_depth", "injection_template", "match_whole_words"):
        rows[name].reset.click()
        assert not rows[name].reset.isEnabled()
    assert {n: page.values()[n] for n in ("scan_depth", "injection_template", "match_whole_words")} == {
        "scan_depth": 4,
        "injection_template": Settings().injection_template,
        "match_whole_words": False,
    }
    rows["max_entries"].editor.setValue(25)
    assert rows["max_entries"].reset.isEnabled()


def test_values_round_trip_into_settings_and_apply_in_place(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    engine = desk.runtime.engine
    qloop.run_until_complete(wait_for(lambda: engine.last_sync is not None, what="the first sync"))
    snapshot, last_sync = engine.snapshot, engine.last_sync
    dlg = desk.open_settings(page="retrieval")
    assert dlg.current_page() == "retrieval"
    rows = dlg.retrieval.rows
    rows["scan_depth"].editor.setValue(12)
    rows["fuzzy_search_enabled"].editor.setChecked(True)
    rows["fuzzy_search_min_score"].editor.setValue(1.25)
    rows["injection_position"].editor.setCurrentIndex(
        rows["injection_position"].editor.findText("Before the main prompt")
    )
    rows["injection_template"].editor.setPlainText("[{{title}}]\n{{content}}")
    rows["contextual_gating_tolerance"].editor.setCurrentText("lenient")
    rows["fix_guide_leak"].editor.setChecked(False)
    want = dict(
        scan_depth=12,
        fuzzy_search_enabled=True,
        fuzzy_search_min_score=1.25,
        injection_position=2,
        injection_template="[{{title}}]\n{{content}}",
        contextual_gating_tolerance="lenient",
        fix_guide_leak=False,
    )
    built = dlg.build_settings()
    assert {k: getattr(built, k) for k in want} == want
    press_ok(dlg)

    saved = SettingsStore(desk.runtime.ctx.paths.settings_file).load()
    assert {k: getattr(saved, k) for k in want} == want
    status = desk.window.statusBar()
    qloop.run_until_complete(wait_for(lambda: status.currentMessage().startswith("Settings saved"), what="applied"))
    # Retrieval-only: the same engine and index (no re-sync, the vault is still the one it had).
    assert desk.runtime.engine is engine and engine.snapshot is snapshot and engine.last_sync is last_sync
    assert {k: getattr(engine.retrieval.config, k) for k in want} == want
    assert status.currentMessage() == "Settings saved (in use from the next generation)"

    again = desk.open_settings(page="retrieval").retrieval
    assert {k: again.rows[k].value() for k in want} == want
    again.window().reject()


def test_an_empty_tag_is_refused_and_nothing_is_lost(make_desktop, vault_copy, qloop, monkeypatch):
    desk = make_desktop(vault_copy)
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    dlg = desk.open_settings(page="general")
    dlg.retrieval.rows["scan_depth"].editor.setValue(6)
    dlg.retrieval.rows["lorebook_tag"].editor.setText("  ")
    press_ok(dlg)
    assert warned == ["Lorebook tag cannot be empty: notes are recognised by it."]
    assert dlg.isVisible() and dlg.current_page() == "retrieval"
    assert dlg.retrieval.rows["scan_depth"].value() == 6  # the other edits are still there
    dlg.reject()


def test_the_embeddings_pointer_opens_that_page(make_desktop, vault_copy, qloop):
    desk = make_desktop(vault_copy)
    dlg = desk.open_settings(page="retrieval")
    dlg.retrieval.rows["semantic_enabled"].control.click()
    assert dlg.current_page() == "embeddings"
    dlg.reject()
