"""Issue 21.15: Settings → Retrieval lists the settings edited elsewhere (semantic search on the
Embeddings page, AI search in the Channels view) with their current value next to the pointer,
and the value follows an edit made on the Embeddings page of the same dialog."""

from __future__ import annotations

from dle_desktop.state.settings import Settings
from dle_desktop.ui.settings.retrieval import ELSEWHERE, RetrievalPage
from tests.ui.semantic_support import settings_for, tiny_model  # noqa: F401 - fixture


def now(page: RetrievalPage, name: str) -> str:
    return page.rows[name].current.text()


def test_every_row_edited_elsewhere_shows_its_value_beside_the_pointer(qapp):
    page = RetrievalPage(Settings().replace(ai_search_enabled=True, ai_search_mode="ai-only", semantic_top_k=7))
    elsewhere = [row for row in page.rows.values() if not row.editable]
    assert elsewhere and all(row.current.text() for row in elsewhere)
    assert all(row.control.text() in ELSEWHERE.values() for row in elsewhere)
    assert now(page, "semantic_enabled") == "Off"
    assert now(page, "semantic_top_k") == "7 (not used while semantic search is off)"
    assert now(page, "ai_search_enabled") == "On"
    assert now(page, "ai_search_mode") == "ai-only"
    assert now(page, "ai_confidence_threshold") == "low"
    assert now(page, "hierarchical_aggressiveness") == "0.8"


def test_semantic_rows_say_on_with_the_model_and_follow_the_embeddings_page(make_desktop, vault_copy, tiny_model):
    settings = settings_for(
        vault_copy, semantic_enabled=True, embedding_model_path=str(tiny_model), semantic_last_weight=0.25
    )
    desk = make_desktop(vault_copy, settings=settings)
    dlg = desk.open_settings(page="retrieval")
    page = dlg.retrieval
    assert now(page, "semantic_enabled") == "On, model tiny"
    assert now(page, "semantic_last_weight") == "0.25"
    assert now(page, "semantic_min_score") == "0.2"
    dlg.retrieval.rows["semantic_enabled"].control.click()  # to the Embeddings page, where it is edited
    assert dlg.current_page() == "embeddings"
    dlg.embeddings.use_default.setChecked(True)
    dlg.embeddings.last_weight.setValue(0.75)
    dlg.show_page("retrieval")
    assert now(page, "semantic_enabled") == "On, model Qwen3-Embedding-0.6B"
    assert now(page, "semantic_last_weight") == "0.75"
    dlg.show_page("embeddings")
    dlg.embeddings.semantic.setChecked(False)
    dlg.show_page("retrieval")
    assert now(page, "semantic_enabled") == "Off"
    assert now(page, "semantic_last_weight") == "0.75 (not used while semantic search is off)"
    dlg.reject()
