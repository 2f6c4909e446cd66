"""One rule for an empty model (issue 9, item 9): the profile editor, the profile itself and
every channel agree on which servers may be left to answer with the model they have loaded."""

from __future__ import annotations

import pytest

from dle_desktop.ai.channels import resolve_channel
from dle_desktop.ai.types import OPENAI_FLAVORS, PROVIDERS
from dle_desktop.state.settings import settings_from_mapping
from dle_desktop.ui.channels.profile_editor import ProfileEditor

KINDS = [("openai", f) for f in OPENAI_FLAVORS] + [(p, p) for p in PROVIDERS if p != "openai"]


@pytest.mark.parametrize(("provider", "flavor"), KINDS)
def test_an_empty_model_is_accepted_exactly_where_the_editor_says_so(qapp, provider, flavor):
    ed = ProfileEditor(None, taken_names=set(), taken_ids=set(), key_state="none", persistent=True)
    try:
        ed.name.setText("Server")
        ed.provider.setCurrentIndex(ed.provider.findData(provider))
        if provider == "openai":
            ed.flavor.setCurrentIndex(ed.flavor.findData(flavor))
        ed.base_url.setText("https://res.openai.azure.com" if flavor == "azure" else "http://127.0.0.1:9/v1")
        ed.model.clear()
        described_optional = "whatever model the server has loaded" in ed.model.placeholderText()
        assert ed.save_button.isEnabled() == described_optional, ed.problem.text()
        if not described_optional:
            return
        settings = settings_from_mapping({"connection_profiles": [ed.raw()], "aiSearchProfileId": ed.raw()["id"]})
        for channel in ("ai_search", "scribe", "librarian"):
            r = resolve_channel(settings, channel)
            assert r.problem is None and r.model == "", (channel, r.problem)
    finally:
        ed.deleteLater()
