"""Channel resolution (dle-behaviour §4.9): AI search is the root; the other five inherit its
connection (mode, profile, model, proxy URL) unless set, and always keep their own max tokens
and timeout. Problems are reported, never raised, so the Channels view can show them."""

from __future__ import annotations

import pytest

from dle_desktop.ai.channels import resolve_all, resolve_channel
from dle_desktop.errors import ConfigError
from dle_desktop.state.settings import CHANNELS, Settings, settings_from_mapping

PROFILES = [
    {
        "id": "groq",
        "name": "Groq fast",
        "provider": "openai",
        "flavor": "groq",
        "base_url": "https://api.groq.com/openai/v1",
        "model": "llama-3.1-8b-instant",
    },
    {
        "id": "claude",
        "name": "Claude",
        "provider": "anthropic",
        "base_url": "https://api.anthropic.com",
        "model": "claude-sonnet-4-5",
    },
    {
        "id": "local",
        "name": "Local",
        "provider": "openai",
        "flavor": "llamacpp",
        "base_url": "http://127.0.0.1:8080/v1",
    },
    {"id": "nomodel", "name": "Groq, no model", "provider": "openai", "flavor": "groq"},
]


def settings(**values) -> Settings:
    return settings_from_mapping({"connection_profiles": PROFILES, **values})


def test_every_channel_inherits_ai_search_by_default_with_its_own_limits():
    s = settings(aiSearchProfileId="groq")
    resolved = resolve_all(s)
    assert set(resolved) == set(CHANNELS)
    for name, r in resolved.items():
        assert r.profile is not None and r.profile.id == "groq" and r.problem is None
        assert r.inherited == (name != "ai_search")
    assert (resolved["ai_search"].max_tokens, resolved["ai_search"].timeout_s) == (1024, 20.0)
    assert (resolved["scribe"].max_tokens, resolved["scribe"].timeout_s) == (1024, 60.0)
    assert (resolved["auto_suggest"].max_tokens, resolved["auto_suggest"].timeout_s) == (2048, 30.0)
    assert (resolved["librarian"].max_tokens, resolved["librarian"].timeout_s) == (4096, 120.0)
    assert resolved["scribe"].model == "llama-3.1-8b-instant"


def test_a_channel_with_its_own_profile_and_model():
    s = settings(
        aiSearchProfileId="groq",
        scribeConnectionMode="profile",
        scribeProfileId="claude",
        scribeModel="claude-haiku-4-5",
    )
    r = resolve_channel(s, "scribe")
    assert (r.profile.id, r.model, r.inherited) == ("claude", "claude-haiku-4-5", False)


def test_inherit_takes_the_model_override_of_ai_search_unless_the_channel_has_one():
    s = settings(aiSearchProfileId="groq", aiSearchModel="llama-3.3-70b")
    assert resolve_channel(s, "optimize_keys").model == "llama-3.3-70b"
    s = s.replace(optimize_keys_model="gemma2-9b")
    assert resolve_channel(s, "optimize_keys").model == "gemma2-9b"


def test_proxy_mode_is_an_anthropic_connection_without_a_key():
    s = settings(aiSearchConnectionMode="proxy", aiSearchModel="claude-sonnet-4-5")
    r = resolve_channel(s, "ai_search")
    assert r.profile.provider == "anthropic" and r.profile.base_url == "http://127.0.0.1:42069"
    assert r.model == "claude-sonnet-4-5"
    inherited = resolve_channel(s, "librarian")
    assert inherited.mode == "proxy" and inherited.profile.base_url == "http://127.0.0.1:42069"


def test_proxy_mode_without_a_model_is_a_problem():
    r = resolve_channel(settings(aiSearchConnectionMode="proxy"), "ai_search")
    assert r.profile is None and "needs a model" in r.problem
    with pytest.raises(ConfigError, match="AI search: proxy mode needs a model"):
        r.require()


def test_st_mode_from_a_dle_settings_file_inherits_with_a_note():
    r = resolve_channel(settings(aiSearchProfileId="groq", scribeConnectionMode="st"), "scribe")
    assert r.profile.id == "groq" and r.inherited and "SillyTavern" in r.note


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({}, "no connection profile chosen"),
        ({"aiSearchProfileId": "a1b2-st-uuid"}, "does not exist"),
        ({"aiSearchProfileId": "nomodel"}, "has no model"),
    ],
)
def test_problems_are_reported_in_words(values, problem):
    r = resolve_channel(settings(**values), "ai_search")
    assert r.profile is None and problem in r.problem


def test_a_local_server_profile_without_a_model_uses_the_loaded_model():
    # The profile editor describes an empty model on llama.cpp as "whatever model the server has
    # loaded"; every channel must then accept it and send no model (issue 9, item 9).
    resolved = resolve_all(settings(aiSearchProfileId="local"))
    for r in resolved.values():
        assert r.problem is None and r.profile.id == "local" and r.model == ""
    assert resolved["librarian"].require().flavor == "llamacpp"


def test_no_profiles_at_all_says_where_to_add_one():
    assert "add one in the Channels view" in resolve_channel(Settings(), "ai_search").problem


def test_profile_ids_are_unique_and_keys_are_refused_in_the_file():
    with pytest.raises(ConfigError, match="unique"):
        settings_from_mapping({"connection_profiles": [PROFILES[0], PROFILES[0]]})
    with pytest.raises(ConfigError, match="keyring"):
        settings_from_mapping({"connection_profiles": [{**PROFILES[0], "api_key": "sk-secret"}]})
    with pytest.raises(ConfigError, match="provider"):
        settings_from_mapping({"connection_profiles": [{**PROFILES[0], "provider": "bard"}]})
    with pytest.raises(ConfigError, match="http"):
        settings_from_mapping({"connection_profiles": [{**PROFILES[0], "base_url": "ftp://x"}]})


def test_dle_channel_names_round_trip_through_the_settings_file():
    s = settings(librarianSessionMaxTokens=8000, librarianSessionTimeout=200000, autoSuggestMaxTokens=3000)
    assert (s.librarian_max_tokens, s.librarian_timeout, s.auto_suggest_max_tokens) == (8000, 200000, 3000)
    assert settings_from_mapping(s.to_json()) == s


def test_dle_v1_librarian_session_model_is_read_as_the_librarian_model():
    assert settings_from_mapping({"librarianSessionModel": "claude-haiku-4-5"}).librarian_model == "claude-haiku-4-5"
